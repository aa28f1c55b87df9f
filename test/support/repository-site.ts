/**
 * The repository's own site/ is a build output (gitignored, never committed): a test that reads it,
 * or runs a command from the repository root that does, builds it first, as `npm start` and
 * `npm test` do. The build is idempotent (a rebuild with no input change writes no byte) and runs
 * under the publish lock, so test files that ask at once do not interleave.
 */
import { join } from "node:path";
import { buildSite } from "../../src/catalog/site-build.ts";
import { projectPaths } from "../../src/catalog/site.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { REPO_ROOT } from "./repo-root.ts";

let built: Promise<string> | null = null;

/** Builds the repository's site/ (once per worker) and returns its path. */
export function repositorySite(): Promise<string> {
  built ??= (async () => {
    const paths = projectPaths(REPO_ROOT);
    await buildSite(paths, loadPortalConfig(paths.configPath));
    return join(REPO_ROOT, "site");
  })();
  return built;
}
