/**
 * A mod folder -> its deterministic package ZIP, refused on anything the validator would refuse in
 * the package itself (`svc pack` and the submit action's step both pack through here).
 */
import { createHash } from "node:crypto";
import { closeSync, lstatSync, openSync, readdirSync, readFileSync, readSync } from "node:fs";
import JSZip from "jszip";
import { SOURCE_SCHEMA_BASE } from "../contracts/schemas.ts";
import { MANIFEST_FILE_NAME, type ValidationContract } from "../contracts/validation-contract.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { passed } from "./checks/common.ts";
import { CHECKS, REASONS } from "./checks/index.ts";
import { CONFIG_JSON_LIMITS, MANIFEST_JSON_LIMITS, readManifest } from "./documents.ts";
import { analyzePackage } from "./package-analysis.ts";
import type {
  CheckContext,
  CheckOutcome,
  Manifest,
  PackageAnalysis,
  CompleteSidecar,
  PackageCheck,
  PackStage,
} from "./types.ts";
import { analyzeCollisions, analyzeName } from "./zip/names.ts";
import type { ZipEntry, ZipFinding } from "./zip/reader.ts";

/** 1980-01-01T00:00:00Z: the earliest time a ZIP (DOS) timestamp holds, so every tool reads the same. */
export const PACK_TIMESTAMP = new Date(Date.UTC(1980, 0, 1, 0, 0, 0));
/** Regular file, rw-r--r--, whatever the folder's modes are. */
const FILE_MODE = 0o100644;
// jszip deflates with its own JavaScript deflate (pako, pinned by the lock file), so the bytes do not
// depend on the platform's zlib; the cost is speed on incompressible data (about 6x zip(1) on random
// bytes here).
const DEFLATE_LEVEL = 6;

/** One refusal: the reason code, the check that owns it (when a check does) and what to read. */
export interface PackProblem {
  code: string;
  check: string | null;
  log: string[];
}

export type PackOutcome =
  | {
      ok: true;
      bytes: Buffer;
      sha256: string;
      manifest: Manifest;
      /** Entry names in archive order. */
      entries: string[];
      /** Entries stored uncompressed because deflating them would pass the policy's ratio cap. */
      stored: string[];
    }
  | { ok: false; problems: PackProblem[] };

export interface PackProgress {
  phase: "reading" | "compressing" | "checking";
  doneBytes: number;
  totalBytes: number;
}

interface FolderFile {
  name: string;
  rawName: Buffer;
  /** A Buffer path, so names that are not UTF-8 still address their file. */
  path: Buffer;
  size: number;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Every file under folder with its archive name ("a/b.txt"); links are reported, never followed. */
function listFolder(folder: string): { files: FolderFile[]; problems: PackProblem[] } {
  const files: FolderFile[] = [];
  const problems: PackProblem[] = [];
  const refuse = (code: string, check: string, line: string) => problems.push({ code, check, log: [line] });
  const walk = (dir: Buffer, prefix: Buffer | null) => {
    for (const raw of readdirSync(dir, { encoding: "buffer" })) {
      const path = Buffer.concat([dir, Buffer.from("/"), raw]);
      const rawName = prefix ? Buffer.concat([prefix, Buffer.from("/"), raw]) : raw;
      let name: string;
      try {
        name = utf8.decode(rawName);
      } catch {
        refuse(
          "non_utf8_name",
          "zip_path_safety",
          `${rawName.toString("latin1")}: the name is not valid UTF-8`,
        );
        continue;
      }
      const stats = lstatSync(path);
      if (stats.isDirectory()) walk(path, rawName);
      else if (stats.isFile()) files.push({ name, rawName, path, size: stats.size });
      else
        refuse(
          "symlink_entry",
          "zip_path_safety",
          `${JSON.stringify(name)}: ${stats.isSymbolicLink() ? "is a symbolic link" : "is a special file (device, FIFO or socket)"}; a package holds only regular files`,
        );
    }
  };
  walk(Buffer.from(folder), null);
  // svc-mod.json first (a manager streaming the ZIP meets the manifest at once), then byte order:
  // the same on every machine and locale.
  files.sort((a, b) => {
    const manifestFirst = Number(b.name === MANIFEST_FILE_NAME) - Number(a.name === MANIFEST_FILE_NAME);
    return manifestFirst || Buffer.compare(a.rawName, b.rawName);
  });
  return { files, problems };
}

/** Up to limit + 1 bytes of a file: enough for the JSON limits to refuse an oversized one. */
function readHead(path: Buffer, limit: number): Buffer {
  const fd = openSync(path, "r");
  try {
    const buffer = Buffer.alloc(limit + 1);
    let got = 0;
    while (got < buffer.length) {
      const n = readSync(fd, buffer, got, buffer.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return buffer.subarray(0, got);
  } finally {
    closeSync(fd);
  }
}

/** The entry a ZIP writer makes of this file, as the validator's reader would report it. */
function plannedEntry(file: FolderFile, index: number): ZipEntry {
  return {
    index,
    rawName: file.rawName,
    name: file.name,
    nameDecoded: true,
    utf8Flag: file.rawName.some((b) => b > 0x7f),
    flags: 0,
    method: 8,
    crc32: 0,
    compressedSize: 0,
    uncompressedSize: file.size,
    localHeaderOffset: 0,
    dataOffset: 0,
    endOffset: 0,
    versionMadeBy: 0x031e,
    externalAttributes: (FILE_MODE << 16) >>> 0,
    unixMode: FILE_MODE,
    isDirectory: false,
    unicodePathName: null,
  };
}

/** The caps the validator's ZIP reader applies to declared sizes, on the sizes the files have. */
function capFindings(files: FolderFile[], policy: ValidationContract): ZipFinding[] {
  const caps = policy.package;
  const found: ZipFinding[] = [];
  if (files.length > caps.maxEntries)
    found.push({
      code: "too_many_entries",
      message: `the folder holds ${files.length} files; the cap is ${caps.maxEntries}`,
    });
  let total = 0;
  for (const file of files) {
    total += file.size;
    if (file.size > caps.maxEntryUncompressedBytes)
      found.push({
        code: "entry_too_large",
        entry: file.name,
        message: `${JSON.stringify(file.name)}: ${file.size} bytes; the per-file cap is ${caps.maxEntryUncompressedBytes}`,
      });
  }
  if (total > caps.maxTotalUncompressedBytes)
    found.push({
      code: "total_uncompressed_too_large",
      message: `the files add up to ${total} bytes; the cap is ${caps.maxTotalUncompressedBytes}`,
    });
  return found;
}

/**
 * The package-side checks, run by the validator's own functions. Pack has no sidecar yet, so the
 * manifest stands in for it: entrypoint_presence and mod_config_contract then test only that what
 * svc-mod.json names is in the package (their sidecar comparison is svc validate's job).
 */
function runPackageChecks(
  pkg: PackageAnalysis,
  policy: ValidationContract,
  checks: readonly PackageCheck[],
): PackProblem[] {
  const manifestRead = readManifest(pkg, policy.manifestFileName);
  const manifest = manifestRead.ok ? manifestRead.value : null;
  const standIn = manifest
    ? ({ entrypoints: manifest.entrypoints, modConfig: manifest.modConfig } as CompleteSidecar)
    : null;
  const results = new Map<string, CheckOutcome>([
    ["sidecar_schema", passed("sidecar_schema", ["svc pack: svc-mod.json stands in for the sidecar"])],
  ]);
  const ctx: CheckContext = {
    policy,
    sidecar: { raw: standIn, valid: standIn },
    manifest: { valid: manifest },
    catalog: null,
    gameBuilds: null,
    pkg,
    schemaBaseUrl: SOURCE_SCHEMA_BASE,
    now: PACK_TIMESTAMP.toISOString(),
    results,
    reasons: REASONS,
  };
  const problems: PackProblem[] = [];
  for (const check of checks) {
    const outcome = check.run(ctx);
    results.set(outcome.id, outcome);
    // A blocked check is reported by the check that blocked it.
    if (outcome.status === "failed" && !outcome.reasonCode?.startsWith("blocked_by_"))
      problems.push({ code: outcome.reasonCode ?? "check_error", check: outcome.id, log: outcome.log });
  }
  return problems;
}

function packChecks(stage: Exclude<PackStage, null>): PackageCheck[] {
  return CHECKS.flatMap((check) => (check.scope === "package" && check.pack === stage ? [check] : []));
}

/**
 * The checks pack runs, chosen by each check's own `pack` (validation/checks/index.ts), in the
 * registry's order: the file-list ones before a byte is written, then on the built ZIP those that
 * need its bytes first and the file-list ones again.
 */
export const FILE_LIST_CHECKS: readonly PackageCheck[] = packChecks("file_list");
export const BUILT_ZIP_CHECKS: readonly PackageCheck[] = [...packChecks("built_zip"), ...FILE_LIST_CHECKS];

/** Judges the file list before any content but the manifest and the config file is read. */
function checkFileList(files: FolderFile[], policy: ValidationContract): PackProblem[] {
  const entries = files.map(plannedEntry);
  const caps = {
    maxNameBytes: policy.package.maxNameBytes,
    maxPathDepth: policy.package.maxPathDepth,
  };
  const kept = new Map<string, Buffer>();
  const manifestFile = files.find((f) => f.name === policy.manifestFileName);
  if (manifestFile) kept.set(manifestFile.name, readHead(manifestFile.path, MANIFEST_JSON_LIMITS.maxBytes));
  const manifestJson = manifestFile
    ? parseUntrustedJson(kept.get(manifestFile.name)!, MANIFEST_JSON_LIMITS)
    : null;
  const configName = manifestJson?.ok
    ? (manifestJson.value as { modConfig?: { file?: unknown } } | null)?.modConfig?.file
    : undefined;
  const configFile = typeof configName === "string" ? files.find((f) => f.name === configName) : undefined;
  if (configFile) kept.set(configFile.name, readHead(configFile.path, CONFIG_JSON_LIMITS.maxBytes));
  const pkg: PackageAnalysis = {
    sizeBytes: null,
    sha256: null,
    unreadable: null,
    packageKind: null,
    structure: {
      entries,
      findings: capFindings(files, policy),
      unsafeToInflate: false,
      centralDirectoryOffset: 0,
      centralDirectorySize: 0,
      totalCompressedBytes: 0,
      totalUncompressedBytes: files.reduce((n, f) => n + f.size, 0),
    },
    nameFindings: [...entries.flatMap((e) => analyzeName(e, caps)), ...analyzeCollisions(entries)],
    // No entry has a content kind yet, so no content rule runs; the built ZIP is judged in full later.
    entries: entries.map((entry) => ({ entry, kind: null })),
    contentInspected: true,
    inflateFindings: [],
    files: kept,
    scan: { state: "not_run" },
  };
  return runPackageChecks(pkg, policy, FILE_LIST_CHECKS);
}

async function buildZip(
  files: FolderFile[],
  contents: Buffer[],
  stored: ReadonlySet<string>,
  onProgress: (percent: number) => void,
): Promise<Buffer> {
  const zip = new JSZip();
  // jszip keeps entries in a plain object, which would move integer-like keys ("1", "20") to the
  // front; such names have no extension and were refused above, so insertion order is archive order.
  files.forEach((file, i) => {
    zip.file(file.name, contents[i]!, {
      binary: true,
      date: PACK_TIMESTAMP,
      createFolders: false,
      unixPermissions: FILE_MODE,
      compression: stored.has(file.name) ? "STORE" : "DEFLATE",
      ...(stored.has(file.name) ? {} : { compressionOptions: { level: DEFLATE_LEVEL } }),
    });
  });
  return zip.generateAsync({ type: "nodebuffer", platform: "UNIX", streamFiles: false }, (meta) =>
    onProgress(meta.percent),
  );
}

/** Entries whose deflated form passes the ratio cap (a legitimately sparse file): they are stored instead. */
function overCompressed(pkg: PackageAnalysis, policy: ValidationContract): string[] {
  const { compressionRatioMinBytes, maxCompressionRatio } = policy.package;
  return (pkg.structure?.entries ?? [])
    .filter(
      (e) =>
        e.uncompressedSize >= compressionRatioMinBytes &&
        e.uncompressedSize > maxCompressionRatio * Math.max(e.compressedSize, 1),
    )
    .map((e) => e.name);
}

/**
 * Builds the package of a mod folder: deterministic bytes, refused (nothing returned) on anything
 * the validator would refuse in the package itself.
 */
export async function packFolder(
  folder: string,
  policy: ValidationContract,
  onProgress: (progress: PackProgress) => void = () => {},
): Promise<PackOutcome> {
  const listed = listFolder(folder);
  if (listed.problems.length > 0) return { ok: false, problems: listed.problems };
  const { files } = listed;
  const listProblems = checkFileList(files, policy);
  if (listProblems.length > 0) return { ok: false, problems: listProblems };

  const totalBytes = files.reduce((n, f) => n + f.size, 0);
  let read = 0;
  const contents = files.map((file) => {
    const bytes = readFileSync(file.path);
    // A file that changed between listing and reading would make the checks above meaningless.
    if (bytes.length !== file.size)
      throw new Error(
        `${file.name} changed while it was being packed (${file.size} -> ${bytes.length} bytes)`,
      );
    read += bytes.length;
    onProgress({ phase: "reading", doneBytes: read, totalBytes });
    return bytes;
  });
  const stored = new Set<string>();
  for (let attempt = 0; ; attempt++) {
    const bytes = await buildZip(files, contents, stored, (percent) =>
      onProgress({ phase: "compressing", doneBytes: Math.round((percent / 100) * totalBytes), totalBytes }),
    );
    const pkg = await analyzePackage({
      package: { bytes },
      sidecar: undefined,
      policy,
      catalog: null,
      gameBuilds: null,
      scanner: null,
      onProgress: (p) => onProgress({ phase: "checking", doneBytes: p.doneBytes, totalBytes: p.totalBytes }),
    });
    const problems = runPackageChecks(pkg, policy, BUILT_ZIP_CHECKS);
    const ratio = overCompressed(pkg, policy).filter((name) => !stored.has(name));
    if (attempt === 0 && ratio.length > 0 && problems.every((p) => p.code === "compression_ratio_exceeded")) {
      for (const name of ratio) stored.add(name);
      continue;
    }
    if (problems.length > 0) return { ok: false, problems };
    const manifest = readManifest(pkg, policy.manifestFileName);
    if (!manifest.ok) throw new Error("svc-mod.json passed manifest_schema but could not be read back");
    return {
      ok: true,
      bytes,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      manifest: manifest.value,
      entries: files.map((f) => f.name),
      stored: [...stored],
    };
  }
}
