import { join } from "node:path";

/**
 * A project's folders (portal.config.json, records/, site/). In a module of its own so a command
 * that only needs the paths (svc import before it begins the antivirus scan) does not load the
 * site's renderer with them.
 */
export interface ProjectPaths {
  root: string;
  configPath: string;
  recordsDir: string;
  siteDir: string;
}

export function projectPaths(root: string, overrides: Partial<ProjectPaths> = {}): ProjectPaths {
  return {
    root,
    configPath: overrides.configPath ?? join(root, "portal.config.json"),
    recordsDir: overrides.recordsDir ?? join(root, "records"),
    siteDir: overrides.siteDir ?? join(root, "site"),
  };
}
