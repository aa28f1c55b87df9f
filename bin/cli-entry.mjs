// Which code `svc` runs: the esbuild bundle (dist/svc.js) while it is fresh, else the TypeScript
// sources through tsx. A stale bundle is never run: an edit to src/ takes effect at once, and
// `npm run build:cli` (also run by prepare and npm test) makes it fast again.
//
// Fresh means: nothing the bundle was built from changed. The build records that list beside the
// bundle (dist/svc.inputs.json, written by bin/build-cli.mjs from esbuild's metafile): every file
// esbuild read, the validators copied beside the bundle and the files that steer the build, each
// with its size and mtime, and every folder under src/ with its mtime (adding, removing or renaming
// a file changes its folder's). The check stats only those: no walk over src/.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

/** The list of what the bundle was built from, beside it in dist/. */
export const BUILD_INPUTS = "svc.inputs.json";

const NO_THROW = { throwIfNoEntry: false };

/**
 * True when `path` (relative to root) still has the size and mtime recorded at the build. The path
 * is concatenated, not join()ed: over ~330 paths join() cost more than the stats themselves.
 */
function same(root, path, size, mtimeMs) {
  const stat = statSync(`${root}/${path}`, NO_THROW);
  return stat !== undefined && stat.mtimeMs === mtimeMs && (size === null || stat.size === size);
}

/**
 * True when dist/svc.js exists and nothing it was built from changed: each recorded file has its
 * recorded size and mtime, each folder under src/ its recorded mtime. No record (a bundle built
 * before the record existed, or a build that failed): not fresh.
 */
export function bundleIsFresh(root = ROOT) {
  if (!existsSync(join(root, "src"))) return existsSync(join(root, "dist", "svc.js"));
  let inputs;
  try {
    inputs = JSON.parse(readFileSync(join(root, "dist", BUILD_INPUTS), "utf8"));
  } catch {
    return false;
  }
  if (!Array.isArray(inputs?.files) || !Array.isArray(inputs?.dirs)) return false;
  for (const [path, size, mtimeMs] of inputs.files) if (!same(root, path, size, mtimeMs)) return false;
  for (const [path, mtimeMs] of inputs.dirs) if (!same(root, path, null, mtimeMs)) return false;
  return true;
}

export async function loadCli(root = ROOT) {
  if (bundleIsFresh(root)) return import(pathToFileURL(join(root, "dist", "svc.js")).href);
  const { register } = await import("tsx/esm/api");
  register();
  return import(pathToFileURL(join(root, "src", "cli", "main.ts")).href);
}
