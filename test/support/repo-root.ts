import { join } from "node:path";

/** The repository's root folder (portal.config.json, actions/, .github/, schemas/). */
export const REPO_ROOT = join(import.meta.dirname, "..", "..");
