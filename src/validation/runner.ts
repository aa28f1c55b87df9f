import { createHash } from "node:crypto";
import { open, stat } from "node:fs/promises";
import type { CatalogDocument } from "../contracts/catalog.ts";
import { SOURCE_SCHEMA_BASE, schemaRegistry } from "../contracts/schemas.ts";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import type { AntivirusScanner, ScanItem, ScanResult } from "./antivirus/scanner.ts";
import { checkAntivirusScan } from "./checks/antivirus_scan.ts";
import { checkArchiveContentPolicy } from "./checks/archive_content_policy.ts";
import { checkArtifactHash } from "./checks/artifact_hash.ts";
import { failed } from "./checks/common.ts";
import { checkDependencyContract } from "./checks/dependency_contract.ts";
import { checkDetailPage } from "./checks/detail_page.ts";
import { checkEntrypointPresence } from "./checks/entrypoint_presence.ts";
import { checkFileSignature } from "./checks/file_signature.ts";
import { checkManagerCatalogParse } from "./checks/manager_catalog_parse.ts";
import { checkManifestIdentity } from "./checks/manifest_identity.ts";
import { checkManifestSchema } from "./checks/manifest_schema.ts";
import { checkModConfigContract } from "./checks/mod_config_contract.ts";
import { checkSemanticVersion } from "./checks/semantic_version.ts";
import { checkSidecarSchema } from "./checks/sidecar_schema.ts";
import { checkTargetGameBuild } from "./checks/target_game_build.ts";
import { checkZipPathSafety } from "./checks/zip_path_safety.ts";
import { MANIFEST_JSON_LIMITS, readManifest, validateSidecar } from "./documents.ts";
import type {
  CheckContext,
  CheckFunction,
  CheckOutcome,
  CheckResult,
  GameBuildsDocument,
  InspectedEntry,
  PackageAnalysis,
  ScanVerdict,
  ValidationReport,
} from "./types.ts";
import { parseUntrustedJson } from "./untrusted-json.ts";
import { analyzeCollisions, analyzeName } from "./zip/names.ts";
import { inflateEntry, readZipStructure, type ZipCaps, type ZipFinding } from "./zip/reader.ts";
import { sniffFileType } from "./zip/sniff.ts";

/** The package-scoped checks, keyed by contract id; the report follows the policy's order. */
export const PACKAGE_CHECKS: Readonly<Record<string, CheckFunction>> = {
  sidecar_schema: checkSidecarSchema,
  manifest_schema: checkManifestSchema,
  manifest_identity: checkManifestIdentity,
  semantic_version: checkSemanticVersion,
  target_game_build: checkTargetGameBuild,
  dependency_contract: checkDependencyContract,
  zip_path_safety: checkZipPathSafety,
  antivirus_scan: checkAntivirusScan,
  file_signature: checkFileSignature,
  archive_content_policy: checkArchiveContentPolicy,
  entrypoint_presence: checkEntrypointPresence,
  mod_config_contract: checkModConfigContract,
  artifact_hash: checkArtifactHash,
  detail_page: checkDetailPage,
  manager_catalog_parse: checkManagerCatalogParse,
};

export interface ValidationProgress {
  phase: "hashing" | "inspecting" | "scanning";
  doneBytes: number;
  totalBytes: number;
}

export interface ValidationInput {
  /** The package: a path (read once into memory after a size check) or the bytes themselves. */
  package: { path: string } | { bytes: Uint8Array };
  /** The untrusted sidecar as parsed JSON; undefined when none was supplied. */
  sidecar: unknown;
  /** Set when the caller could not parse the sidecar (invalid JSON, duplicate keys, ...). */
  sidecarParseError?: string;
  /** The framework validation contract (game-publishing-validation.v1.json). */
  policy: ValidationContract;
  /** The current catalog; null when unavailable (catalog-aware checks then fail closed). */
  catalog: CatalogDocument | null;
  /** The game-build compatibility matrix; null when unavailable. */
  gameBuilds: GameBuildsDocument | null;
  /** null: no scanner available, antivirus_scan fails closed. */
  scanner: AntivirusScanner | null;
  /** --no-antivirus: the scan is skipped and antivirus_scan fails (never passes). */
  antivirusDisabled?: boolean;
  onProgress?: (progress: ValidationProgress) => void;
  clock?: () => Date;
  /** Concurrent scanner requests (clamd); default 4. */
  scanConcurrency?: number;
}

const HASH_CHUNK = 4 * 1024 * 1024;
const SCAN_BATCH_BYTES = 64 * 1024 * 1024;
const SCAN_BATCH_ITEMS = 2000;

export function zipCapsFromPolicy(policy: ValidationContract): ZipCaps {
  const p = policy.package;
  return {
    maxEntries: p.maxEntries,
    maxNameBytes: p.maxNameBytes,
    maxPathDepth: p.maxPathDepth,
    maxEntryUncompressedBytes: p.maxEntryUncompressedBytes,
    maxTotalUncompressedBytes: p.maxTotalUncompressedBytes,
    maxCompressionRatio: p.maxCompressionRatio,
    compressionRatioMinBytes: p.compressionRatioMinBytes,
  };
}

async function readPackage(
  source: ValidationInput["package"],
  maxBytes: number,
): Promise<{ bytes: Buffer } | { unreadable: { code: string; message: string }; sizeBytes: number | null }> {
  const tooLarge = (size: number) => ({
    unreadable: {
      code: "package_too_large",
      message: `the package is ${size} bytes; maxPackageBytes is ${maxBytes}`,
    },
    sizeBytes: size,
  });
  if ("bytes" in source) {
    if (source.bytes.length > maxBytes) return tooLarge(source.bytes.length);
    return { bytes: Buffer.from(source.bytes.buffer, source.bytes.byteOffset, source.bytes.byteLength) };
  }
  const info = await stat(source.path);
  if (!info.isFile()) throw new Error(`${source.path} is not a regular file`);
  if (info.size > maxBytes) return tooLarge(info.size);
  // Read at most maxBytes + 1 so a file growing under us is still caught, never read unbounded.
  const handle = await open(source.path, "r");
  try {
    const buffer = Buffer.allocUnsafe(info.size + 1);
    let total = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, total, buffer.length - total, total);
      if (bytesRead === 0) break;
      total += bytesRead;
      if (total > maxBytes) return tooLarge(total);
      if (total === buffer.length) break;
    }
    if (total > info.size) return tooLarge(total);
    return { bytes: buffer.subarray(0, total) };
  } finally {
    await handle.close();
  }
}

/** modConfig file names the sidecar or the manifest point at: the runner keeps those bytes. */
function configFileNames(sidecar: unknown, manifestBytes: Buffer | undefined): Set<string> {
  const names = new Set<string>();
  const add = (doc: unknown) => {
    const file = (doc as { modConfig?: { file?: unknown } } | null)?.modConfig?.file;
    if (typeof file === "string" && file.length <= 240) names.add(file);
  };
  add(sidecar);
  if (manifestBytes) {
    const parsed = parseUntrustedJson(manifestBytes, MANIFEST_JSON_LIMITS);
    if (parsed.ok) add(parsed.value);
  }
  return names;
}

class ScanQueue {
  readonly verdicts: Array<ScanVerdict & { order: number }> = [];
  private readonly inflight = new Set<Promise<void>>();
  private batch: Array<ScanItem & { order: number }> = [];
  private batchBytes = 0;
  scannedBytes = 0;

  constructor(
    private readonly scanner: AntivirusScanner,
    private readonly concurrency: number,
    private readonly onScanned: (bytes: number) => void,
  ) {}

  async add(order: number, name: string, bytes: Uint8Array): Promise<void> {
    if (this.scanner.scanBatch) {
      this.batch.push({ order, name, bytes });
      this.batchBytes += bytes.length;
      if (this.batchBytes >= SCAN_BATCH_BYTES || this.batch.length >= SCAN_BATCH_ITEMS) await this.flush();
      return;
    }
    const job = this.scanner
      .scan(name, bytes)
      .catch(
        (error: unknown): ScanResult => ({ status: "error", errorKind: "scanner", message: String(error) }),
      )
      .then((result) => {
        this.verdicts.push({ order, target: name, result });
        this.done(bytes.length);
      });
    this.inflight.add(job);
    void job.finally(() => this.inflight.delete(job));
    if (this.inflight.size >= this.concurrency) await Promise.race(this.inflight);
  }

  private done(bytes: number): void {
    this.scannedBytes += bytes;
    this.onScanned(this.scannedBytes);
  }

  private async flush(): Promise<void> {
    const items = this.batch;
    this.batch = [];
    this.batchBytes = 0;
    if (items.length === 0 || !this.scanner.scanBatch) return;
    let results: ScanResult[];
    try {
      results = await this.scanner.scanBatch(items);
    } catch (error) {
      results = items.map(() => ({ status: "error", errorKind: "scanner", message: String(error) }));
    }
    items.forEach((item, i) => {
      this.verdicts.push({
        order: item.order,
        target: item.name,
        result: results[i] ?? { status: "error", errorKind: "scanner", message: "no verdict returned" },
      });
      this.done(item.bytes.length);
    });
  }

  async drain(): Promise<ScanVerdict[]> {
    await this.flush();
    await Promise.all(this.inflight);
    return this.verdicts.sort((a, b) => a.order - b.order).map(({ target, result }) => ({ target, result }));
  }
}

/** Read, hash, parse, inflate, sniff and scan the package once; checks then only read the result. */
export async function analyzePackage(input: ValidationInput): Promise<PackageAnalysis> {
  const policy = input.policy;
  const progress = input.onProgress ?? (() => {});
  const scanState = input.antivirusDisabled ? "disabled" : input.scanner ? null : "not_configured";
  const read = await readPackage(input.package, policy.package.maxPackageBytes);
  if (!("bytes" in read)) {
    return {
      sizeBytes: read.sizeBytes,
      sha256: null,
      unreadable: read.unreadable,
      packageKind: null,
      structure: null,
      nameFindings: [],
      entries: [],
      contentInspected: false,
      inflateFindings: [],
      files: new Map(),
      scan: { state: scanState ?? "not_run" },
    };
  }
  const bytes = read.bytes;
  const total = bytes.length;
  const hash = createHash("sha256");
  for (let at = 0; at < total; at += HASH_CHUNK) {
    hash.update(bytes.subarray(at, Math.min(at + HASH_CHUNK, total)));
    progress({ phase: "hashing", doneBytes: Math.min(at + HASH_CHUNK, total), totalBytes: total });
  }
  const sha256 = hash.digest("hex");
  const packageKind = sniffFileType(bytes.subarray(0, 4096));
  const caps = zipCapsFromPolicy(policy);
  const structure = readZipStructure(bytes, caps);
  const nameFindings: ZipFinding[] = [
    ...structure.entries.flatMap((e) => analyzeName(e, caps)),
    ...analyzeCollisions(structure.entries),
  ];
  const entries: InspectedEntry[] = structure.entries.map((entry) => ({ entry, kind: null }));
  const inflateFindings: ZipFinding[] = [];
  const files = new Map<string, Buffer>();

  const queue =
    input.scanner && !scanState
      ? new ScanQueue(input.scanner, Math.max(1, input.scanConcurrency ?? 4), (done) =>
          progress({
            phase: "scanning",
            doneBytes: done,
            totalBytes: total + structure.totalUncompressedBytes,
          }),
        )
      : null;
  if (queue) await queue.add(-1, "package", bytes);

  if (!structure.unsafeToInflate) {
    const manifestName = policy.manifestFileName;
    const manifestEntry = entries.find((e) => e.entry.name === manifestName && !e.entry.isDirectory);
    let manifestBytes: Buffer | undefined;
    if (manifestEntry) {
      const r = inflateEntry(bytes, manifestEntry.entry);
      if (r.ok) manifestBytes = r.data;
    }
    const keep = configFileNames(input.sidecar, manifestBytes);
    keep.add(manifestName);
    let inspected = 0;
    for (const item of entries) {
      const { entry } = item;
      if (entry.isDirectory) continue;
      const result = inflateEntry(bytes, entry);
      inspected += entry.compressedSize;
      progress({ phase: "inspecting", doneBytes: inspected, totalBytes: total });
      if (!result.ok) {
        inflateFindings.push({ code: result.code, entry: entry.name, message: result.message });
        continue;
      }
      item.kind = sniffFileType(tailAware(result.data));
      if (keep.has(entry.name)) files.set(entry.name, Buffer.from(result.data));
      if (queue) await queue.add(entry.index, JSON.stringify(entry.name), result.data);
    }
  }
  const contentInspected = !structure.unsafeToInflate && inflateFindings.length === 0;
  let scan: PackageAnalysis["scan"];
  if (scanState) scan = { state: scanState };
  else if (queue) {
    scan = {
      state: "ran",
      scanner: input.scanner!.description,
      verdicts: await queue.drain(),
      complete: contentInspected,
    };
  } else scan = { state: "not_run" };
  return {
    sizeBytes: total,
    sha256,
    unreadable: null,
    packageKind,
    structure,
    nameFindings,
    entries,
    contentInspected,
    inflateFindings,
    files,
    scan,
  };
}

/** The sniffer reads the head (and the tail, where some formats keep their magic); no need to pass megabytes. */
function tailAware(data: Buffer): Buffer {
  if (data.length <= 8192) return data;
  return Buffer.concat([data.subarray(0, 4096), data.subarray(data.length - 4096)]);
}

function policyProblems(policy: unknown): string[] {
  const result = schemaRegistry(SOURCE_SCHEMA_BASE).validate("game-publishing-validation", policy);
  return result.ok ? [] : result.issues.slice(0, 20).map((i) => `policy${i.path}: ${i.message}`);
}

export async function runValidation(input: ValidationInput): Promise<ValidationReport> {
  const clock = input.clock ?? (() => new Date());
  const startedAt = clock().toISOString();
  const problems = policyProblems(input.policy);
  const declared = Array.isArray(input.policy?.checks)
    ? input.policy.checks.filter((c) => c.scope === "package")
    : [];
  const order =
    declared.length > 0 ? declared : Object.keys(PACKAGE_CHECKS).map((id) => ({ id, required: true }));
  const sidecarResult =
    input.sidecarParseError === undefined && input.sidecar !== undefined
      ? validateSidecar(input.sidecar)
      : null;
  const sidecarValid = sidecarResult?.ok ? sidecarResult.value : null;
  const raw = input.sidecar as { modId?: unknown; version?: unknown } | undefined;
  const identity = {
    modId: sidecarValid?.modId ?? (typeof raw?.modId === "string" ? raw.modId : null),
    version: sidecarValid?.version ?? (typeof raw?.version === "string" ? raw.version : null),
  };

  if (problems.length > 0) {
    const checks = order.map((c) => ({ ...failed(c.id, "policy_invalid", problems), required: true }));
    return {
      schema: "svc.validation-report.v1",
      ...identity,
      packageSha256: null,
      packageSizeBytes: null,
      passed: false,
      checks,
      startedAt,
      finishedAt: clock().toISOString(),
    };
  }

  const pkg = await analyzePackage(input);
  const manifestRead = pkg.structure ? readManifest(pkg, input.policy.manifestFileName) : null;
  const results = new Map<string, CheckOutcome>();
  const ctx: CheckContext = {
    policy: input.policy,
    sidecar: {
      raw: input.sidecar,
      valid: sidecarValid,
      ...(input.sidecarParseError !== undefined ? { parseError: input.sidecarParseError } : {}),
    },
    manifest: { valid: manifestRead?.ok ? manifestRead.value : null },
    catalog: input.catalog,
    gameBuilds: input.gameBuilds,
    pkg,
    now: startedAt,
    results,
  };
  const checks: CheckResult[] = [];
  for (const { id, required } of order) {
    const fn = PACKAGE_CHECKS[id];
    let outcome: CheckOutcome;
    if (!fn) {
      outcome = failed(id, "check_error", [
        `the policy lists check ${id}, which this validator does not implement`,
      ]);
    } else {
      try {
        outcome = fn(ctx);
      } catch (error) {
        outcome = failed(id, "check_error", [
          `internal error: ${error instanceof Error ? error.message : String(error)}`,
        ]);
      }
    }
    // A required check is passed or failed; "skipped" can never count as a pass.
    if (required && outcome.status === "skipped") {
      outcome = failed(id, "check_error", [...outcome.log, "a required check did not run"]);
    }
    results.set(id, outcome);
    checks.push({ ...outcome, required });
  }
  return {
    schema: "svc.validation-report.v1",
    ...identity,
    packageSha256: pkg.sha256,
    packageSizeBytes: pkg.sizeBytes,
    passed: checks.every((c) => !c.required || c.status === "passed"),
    checks,
    startedAt,
    finishedAt: clock().toISOString(),
  };
}
