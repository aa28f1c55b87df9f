/**
 * What a portal costs its git repository (issue 24, item 10): the files and bytes on the default
 * branch, the widest directory, and the blob bytes one publication commit changes. The generated
 * portal is made a real git repository; the repository's own files are counted from its HEAD.
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

function git(cwd: string, args: string[], input?: string): string {
  return execFileSync("git", args, {
    cwd,
    encoding: "utf8",
    maxBuffer: 1024 * 1024 * 1024,
    input,
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "bench",
      GIT_AUTHOR_EMAIL: "bench@example.invalid",
      GIT_COMMITTER_NAME: "bench",
      GIT_COMMITTER_EMAIL: "bench@example.invalid",
    },
  });
}

/** A committed file: its path and size in bytes. */
export interface TrackedFile {
  path: string;
  bytes: number;
}

/** Every file of a commit with its size (`git ls-tree -r -l`). */
export function filesAt(cwd: string, rev = "HEAD"): TrackedFile[] {
  return git(cwd, ["ls-tree", "-r", "-l", "-z", rev])
    .split("\0")
    .filter((line) => line.length > 0)
    .map((line) => {
      const [meta, path] = line.split("\t") as [string, string];
      const size = meta.trim().split(/\s+/)[3] ?? "0";
      return { path, bytes: size === "-" ? 0 : Number(size) };
    });
}

/**
 * Makes the portal in root a git repository and commits `paths` (what its default branch holds:
 * records/ and portal.config.json; site/ is built by the publish job and deployed, not committed).
 */
export function commitPortal(root: string, paths: readonly string[]): void {
  writeFileSync(join(root, ".gitignore"), "/site/\n/.svc-tmp/\n");
  git(root, ["init", "-q", "-b", "main"]);
  git(root, ["add", "--", ".gitignore", ...paths]);
  git(root, ["commit", "-q", "-m", "portal"]);
}

/** Commits everything that changed under `paths` and returns the commit's changed blob bytes under them. */
export function commitAndMeasure(
  root: string,
  paths: readonly string[],
): { files: string[]; deleted: string[]; bytes: number } {
  git(root, ["add", "-A", "--", ...paths]);
  const changed = git(root, ["diff", "--cached", "--name-status", "-z", "--", ...paths])
    .split("\0")
    .filter((s) => s.length > 0);
  const files: string[] = [];
  const deleted: string[] = [];
  for (let i = 0; i < changed.length; i += 2) {
    const status = changed[i]!;
    const path = changed[i + 1]!;
    (status.startsWith("D") ? deleted : files).push(path);
  }
  git(root, ["commit", "-q", "-m", "publication", "--allow-empty"]);
  const sizes =
    files.length === 0
      ? []
      : git(
          root,
          ["cat-file", "--batch-check=%(objectsize)"],
          `${files.map((f) => `HEAD:${f}`).join("\n")}\n`,
        )
          .trim()
          .split("\n")
          .map(Number);
  return { files, deleted, bytes: sizes.reduce((a, b) => a + b, 0) };
}

/** The directory with the most entries (files and sub-directories) among these paths. */
export function widestDirectory(paths: readonly string[]): { dir: string; entries: number } {
  const children = new Map<string, Set<string>>();
  for (const path of paths) {
    const parts = path.split("/");
    for (let i = 0; i < parts.length; i++) {
      const dir = parts.slice(0, i).join("/") || ".";
      const set = children.get(dir) ?? new Set<string>();
      children.set(dir, set);
      set.add(parts[i]!);
    }
  }
  let widest = { dir: ".", entries: 0 };
  for (const [dir, set] of children) if (set.size > widest.entries) widest = { dir, entries: set.size };
  return widest;
}
