import { lstatSync } from "node:fs";
import { isAbsolute, join, resolve, sep } from "node:path";
import { sha256Hex } from "../lib/hash.ts";
import {
  inflateEntry,
  isSpecialFile,
  isSymlink,
  readZipStructure,
  type ZipCaps,
} from "../validation/zip/reader.ts";
import { DistributionError } from "./errors.ts";

export interface InstalledFile {
  path: string;
  size: number;
  sha256: string;
}
/** One entry of a version's `files` in the signed versions.json (measured by the portal's validator). */
export interface PublishedFile {
  path: string;
  sizeBytes: number;
  sha256: string;
}

/** Generous caps for extraction; validation already enforced the portal's own caps before publication. */
const EXTRACT_CAPS: ZipCaps = {
  maxEntries: 20_000,
  maxNameBytes: 512,
  maxPathDepth: 32,
  maxEntryUncompressedBytes: 1 << 30,
  maxTotalUncompressedBytes: 2 ** 32,
  maxCompressionRatio: 1000,
  compressionRatioMinBytes: 1 << 20,
};

/** Refuses any archive name that is not a plain relative path staying inside `root`. */
export function safeJoin(root: string, name: string): string {
  const bad =
    name === "" ||
    name.includes("\0") ||
    name.includes("\\") ||
    name.startsWith("/") ||
    /^[A-Za-z]:/.test(name) ||
    isAbsolute(name) ||
    name.split("/").some((s) => s === ".." || s === ".");
  const full = resolve(root, name);
  if (bad || !(full === root || full.startsWith(`${root}${sep}`))) {
    throw new DistributionError(
      "path_escape",
      `archive entry ${JSON.stringify(name)} would escape the install folder`,
    );
  }
  return full;
}

/**
 * safeJoin for a path inside an installation, then every segment below `root` that exists is
 * lstat'ed: a symbolic link anywhere on the path (a folder, the mod folder, the file itself) is
 * refused, never followed. `root` itself is the player's choice and may be a link. What does not
 * exist yet is created by the writer as a real folder.
 */
export function safeInstallPath(root: string, name: string): string {
  const full = safeJoin(root, name);
  let current = root;
  for (const segment of name.split("/")) {
    current = join(current, segment);
    let isLink: boolean;
    try {
      isLink = lstatSync(current).isSymbolicLink();
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") break;
      throw error;
    }
    if (isLink) {
      throw new DistributionError(
        "symlink_in_install",
        `${current} is a symbolic link; svc never follows one inside an installation (remove it, then run svc repair)`,
        { path: current },
      );
    }
  }
  return full;
}

/**
 * A package's file name as signed metadata gives it (`fileName` in versions.json): the contract's
 * packageFileName, one plain segment ending in .zip. It becomes `svc fetch`'s output name and a URL
 * segment of the API-key lane, so a signature does not make anything else acceptable.
 */
export function assertPlainZipName(name: unknown): string {
  if (
    typeof name !== "string" ||
    name.length < 5 ||
    name.length > 128 ||
    !/^[A-Za-z0-9][A-Za-z0-9._-]*\.zip$/.test(name) ||
    name.includes("..")
  ) {
    throw new DistributionError(
      "path_escape",
      `the signed package file name ${JSON.stringify(name)} is not one plain .zip segment`,
    );
  }
  return name;
}

/** Where `svc fetch` writes a package: directly in `outDir`, under its plain file name. */
export function packageOutputPath(outDir: string, fileName: unknown): string {
  return safeJoin(resolve(outDir), assertPlainZipName(fileName));
}

/** Reads a package with the project's safe reader and returns each file's bytes (never touching disk). */
export function readPackageFiles(bytes: Buffer, modRoot: string): Array<InstalledFile & { data: Buffer }> {
  const structure = readZipStructure(bytes, EXTRACT_CAPS);
  const files: Array<InstalledFile & { data: Buffer }> = [];
  // Names first: a single escaping entry refuses the whole package, before anything is inflated.
  for (const entry of structure.entries) {
    if (!entry.nameDecoded)
      throw new DistributionError("path_escape", "archive entry with an undecodable name");
    if (isSymlink(entry) || isSpecialFile(entry)) {
      throw new DistributionError(
        "path_escape",
        `archive entry ${JSON.stringify(entry.name)} is a link or device`,
      );
    }
    safeJoin(modRoot, entry.isDirectory ? entry.name.replace(/\/$/, "") || "." : entry.name);
  }
  if (structure.unsafeToInflate) {
    throw new DistributionError(
      "archive_invalid",
      `the package archive is unsafe to extract: ${structure.findings.map((f) => f.code).join(", ")}`,
    );
  }
  const seen = new Set<string>();
  for (const entry of structure.entries) {
    if (entry.isDirectory) continue;
    const key = entry.name.toLowerCase();
    if (seen.has(key))
      throw new DistributionError("archive_invalid", `duplicate archive entry ${entry.name}`);
    seen.add(key);
    const result = inflateEntry(bytes, entry);
    if (!result.ok) throw new DistributionError("archive_invalid", result.message);
    files.push({
      path: entry.name,
      size: result.data.length,
      sha256: sha256Hex(result.data),
      data: result.data,
    });
  }
  return files;
}

/**
 * Refuses a package whose files are not exactly the signed list: the same paths, each with the
 * listed size and sha256. Checked before anything is written under the install folder.
 */
export function matchPublishedFiles(
  modId: string,
  version: string,
  files: readonly InstalledFile[],
  published: readonly PublishedFile[],
): void {
  const listed = new Map(published.map((f) => [f.path, f]));
  const problems: Array<{ path: string; problem: "unlisted" | "missing" | "changed" }> = [];
  for (const file of files) {
    const entry = listed.get(file.path);
    if (!entry) problems.push({ path: file.path, problem: "unlisted" });
    else if (entry.sizeBytes !== file.size || entry.sha256 !== file.sha256)
      problems.push({ path: file.path, problem: "changed" });
    listed.delete(file.path);
  }
  for (const path of listed.keys()) problems.push({ path, problem: "missing" });
  if (problems.length > 0) {
    throw new DistributionError(
      "file_hash_mismatch",
      `${modId}@${version}: the package's files differ from the signed per-file hashes (${problems
        .slice(0, 5)
        .map((p) => `${p.path}: ${p.problem}`)
        .join(", ")}${problems.length > 5 ? `, and ${problems.length - 5} more` : ""})`,
      { modId, version, files: problems },
    );
  }
}
