import type { IConfiguration } from "dependency-cruiser";

export declare const FLOORS: Readonly<Record<string, number>>;
declare const config: IConfiguration & { options: NonNullable<IConfiguration["options"]> };
export default config;
