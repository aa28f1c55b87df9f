import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

/** Every file below the given folders of root (relative paths, sorted); missing folders are skipped. */
export function listFilesUnder(root: string, folders: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    const full = join(root, rel);
    if (!existsSync(full)) return;
    if (!statSync(full).isDirectory()) {
      out.push(rel);
      return;
    }
    for (const name of readdirSync(full).sort()) walk(`${rel}/${name}`);
  };
  for (const folder of folders) walk(folder);
  return out;
}
