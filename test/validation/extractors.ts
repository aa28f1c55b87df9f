import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";

/**
 * The extractors players use, run for real on a package to see what each one makes of it: bsdtar
 * (libarchive), Info-ZIP unzip, 7-Zip and Python's zipfile. `.ci/run` installs all four; in CI
 * (`CI=true`) a missing one fails the test that needs it, elsewhere that test is skipped with the
 * Debian package to install.
 */
export interface Extractor {
  name: string;
  binary: string;
  /** The Debian package that provides it. */
  debianPackage: string;
  args(zip: string, into: string): string[];
}

export const EXTRACTORS: readonly Extractor[] = [
  {
    name: "bsdtar",
    binary: "bsdtar",
    debianPackage: "libarchive-tools",
    args: (z, d) => ["-xf", z, "-C", d],
  },
  // No -o: a question (a name met twice) is answered "n" from stdin and shows up as a missing file.
  { name: "unzip", binary: "unzip", debianPackage: "unzip", args: (z, d) => ["-q", z, "-d", d] },
  {
    name: "7z",
    binary: "7z",
    debianPackage: "p7zip-full",
    args: (z, d) => ["x", "-bso0", "-bsp0", `-o${d}`, z],
  },
  {
    name: "python",
    binary: "python3",
    debianPackage: "python3",
    args: (z, d) => ["-c", "import sys, zipfile\nzipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])", z, d],
  },
];

/** A program a test runs, and the Debian package that provides it. */
export type Tool = Pick<Extractor, "binary" | "debianPackage">;

const present = new Map<string, boolean>();

export function isInstalled(tool: Tool): boolean {
  let found = present.get(tool.binary);
  if (found === undefined) {
    found = spawnSync("sh", ["-c", `command -v ${tool.binary}`], { encoding: "utf8" }).status === 0;
    present.set(tool.binary, found);
  }
  return found;
}

/** Outside CI, a reason to skip when the tool is missing (naming its package); in CI, never. */
export function missingReason(tool: Tool, env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.CI === "true" || isInstalled(tool)) return null;
  return `${tool.binary} is not installed (Debian package ${tool.debianPackage})`;
}

/** Fails with the package to install when the tool is missing: the CI path. */
export function requireExtractor(extractor: Tool): void {
  if (!isInstalled(extractor)) {
    throw new Error(
      `${extractor.binary} is required in CI but was not found: install the Debian package ${extractor.debianPackage} (.ci/run)`,
    );
  }
}

export interface TreeNode {
  path: string;
  type: "file" | "folder" | "symlink" | "other";
  /** Permission bits with setuid, setgid and sticky. */
  mode: number;
  sizeBytes?: number;
  sha256?: string;
  target?: string;
  /** Owner, for the extractors that restore it (bsdtar run as root). */
  uid: number;
}

/** Everything under `dir`, sorted by path, as lstat sees it (links are never followed). */
export function readTree(dir: string): TreeNode[] {
  const nodes: TreeNode[] = [];
  for (const relative of (readdirSync(dir, { recursive: true }) as string[]).sort()) {
    const path = join(dir, relative);
    const stat = lstatSync(path);
    const base = { path: relative.split("\\").join("/"), mode: stat.mode & 0o7777, uid: stat.uid };
    if (stat.isSymbolicLink()) nodes.push({ ...base, type: "symlink", target: readlinkSync(path) });
    else if (stat.isDirectory()) nodes.push({ ...base, type: "folder" });
    else if (stat.isFile()) {
      const data = readFileSync(path);
      nodes.push({
        ...base,
        type: "file",
        sizeBytes: data.length,
        sha256: createHash("sha256").update(data).digest("hex"),
      });
    } else nodes.push({ ...base, type: "other" });
  }
  return nodes;
}

export interface Extraction {
  status: number | null;
  output: string;
  tree: TreeNode[];
}

/** Extract `zip` with `extractor` into a fresh folder under `work`. */
export function extract(extractor: Extractor, zip: string, work: string): Extraction {
  const into = mkdtempSync(join(work, `${extractor.name}-`));
  const run = spawnSync(extractor.binary, extractor.args(zip, into), {
    encoding: "utf8",
    input: "n\n",
    timeout: 60_000,
    // A UTF-8 locale, as on players' machines: in the C locale bsdtar refuses non-ASCII names and
    // unzip rewrites them.
    env: { ...process.env, LC_ALL: "C.UTF-8" },
  });
  // An extractor that asks nothing exits without reading the answer: writing it then fails with EPIPE.
  const error = (run.error as NodeJS.ErrnoException | undefined)?.code === "EPIPE" ? undefined : run.error;
  if (error) throw error;
  return { status: run.status, output: `${run.stdout}${run.stderr}`, tree: readTree(into) };
}
