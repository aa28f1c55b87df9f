// Which code `svc` runs: the esbuild bundle (dist/svc.js) when it is at least as new as every file
// under src/, else the TypeScript sources through tsx. A stale bundle is never run: an edit to src/
// takes effect at once, and `npm run build:cli` (also run by prepare and npm test) makes it fast again.
import { existsSync, readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

function newestMtimeMs(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const mtime = entry.isDirectory() ? newestMtimeMs(path) : statSync(path).mtimeMs;
    if (mtime > newest) newest = mtime;
  }
  return newest;
}

/** True when dist/svc.js exists and no source file changed after it was built. */
export function bundleIsFresh(root = ROOT) {
  const bundle = join(root, "dist", "svc.js");
  if (!existsSync(bundle)) return false;
  const src = join(root, "src");
  return !existsSync(src) || newestMtimeMs(src) <= statSync(bundle).mtimeMs;
}

export async function loadCli(root = ROOT) {
  if (bundleIsFresh(root)) return import(pathToFileURL(join(root, "dist", "svc.js")).href);
  const { register } = await import("tsx/esm/api");
  register();
  return import(pathToFileURL(join(root, "src", "cli", "main.ts")).href);
}
