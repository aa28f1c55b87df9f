import type { Handler } from "../context.ts";
import { backendHealth } from "./backend-health.ts";

/**
 * One handler per endpoint id of the contract table. The local server and every Vercel function
 * dispatch through this map; a test keeps it in step with each endpoint's status.
 */
export const HANDLERS: Readonly<Record<string, Handler>> = {
  backend_health: backendHealth,
};
