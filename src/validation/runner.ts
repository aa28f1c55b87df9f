import { createHash } from "node:crypto";
import { readSync } from "node:fs";
import { open } from "node:fs/promises";
import { sha256Hex } from "../lib/hash.ts";
import type { CatalogDocument } from "../contracts/catalog.ts";
import { SOURCE_SCHEMA_BASE } from "../contracts/schemas.ts";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import type { AntivirusScanner, ScanItem, ScanResult } from "./antivirus/scanner.ts";
import { isLimitsVerdict } from "./antivirus/limits-probe.ts";
import { tarChunks } from "./antivirus/tar-batch.ts";
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
  PackageFile,
  ScanVerdict,
  ValidationOutcome,
  ValidationReport,
} from "./types.ts";
import { policyShapeProblems } from "./policy-shape.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { analyzeCollisions, analyzeName } from "./zip/names.ts";
import {
  type ByteSource,
  bufferSource,
  inflateEntry,
  readZipStructure,
  type ZipCaps,
  type ZipFinding,
} from "./zip/reader.ts";
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
  /**
   * The package: a path (opened once and read with positional reads), the bytes themselves, or
   * any random-access source (what a test uses to watch every read).
   */
  package: { path: string } | { bytes: Uint8Array } | { source: ByteSource };
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
  /**
   * Told how long each step took, in order, as it ends: hashing the package, reading its ZIP
   * structure, the names, inspecting the entries, and each check (`svc validate --timings`).
   */
  onStepTimed?: (step: string, milliseconds: number) => void;
  clock?: () => Date;
  /** Concurrent scanner requests (clamd); default 4. */
  scanConcurrency?: number;
}

const HASH_CHUNK = 4 * 1024 * 1024;
const READ_WINDOW = 1024 * 1024;
/**
 * A package up to this size is read into memory once, as `unzip` does with its buffers: hashing,
 * the local headers and the entries then cost no further system call or copy (a package of 20,000
 * small entries was read three times over through the window). Larger ones keep positional reads,
 * so peak memory stays near Node's own plus the largest entry.
 */
const READ_WHOLE_BYTES = 16 * 1024 * 1024;
const SCAN_BATCH_BYTES = 64 * 1024 * 1024;
const SCAN_BATCH_ITEMS = 2000;
// Entries up to 1 MiB are scanned in tar batches of at most 1,000 members or 16 MiB (clamd MaxFiles
// defaults to 10,000, so a batch never hits it).
const TAR_MEMBER_MAX_BYTES = 1024 * 1024;
const TAR_BATCH_BYTES = 16 * 1024 * 1024;
const TAR_BATCH_ITEMS = 1000;

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

type OpenedPackage =
  | { source: ByteSource; close: () => Promise<void>; unchanged: () => Promise<boolean> }
  | { unreadable: { code: string; message: string }; sizeBytes: number };

/**
 * Bytes given in memory are used as they are; a path is opened once and read with positional reads
 * (hash, central directory, then entry by entry), so the package never has to sit in memory whole.
 */
async function openPackage(source: ValidationInput["package"], maxBytes: number): Promise<OpenedPackage> {
  const tooLarge = (size: number) => ({
    unreadable: {
      code: "package_too_large",
      message: `the package is ${size} bytes; maxPackageBytes is ${maxBytes}`,
    },
    sizeBytes: size,
  });
  if ("source" in source) {
    if (source.source.size > maxBytes) return tooLarge(source.source.size);
    return { source: source.source, close: async () => {}, unchanged: async () => true };
  }
  if ("bytes" in source) {
    if (source.bytes.length > maxBytes) return tooLarge(source.bytes.length);
    const bytes = Buffer.from(source.bytes.buffer, source.bytes.byteOffset, source.bytes.byteLength);
    return { source: bufferSource(bytes), close: async () => {}, unchanged: async () => true };
  }
  const handle = await open(source.path, "r");
  const before = await handle.stat();
  if (!before.isFile() || before.size > maxBytes) {
    await handle.close();
    if (!before.isFile()) throw new Error(`${source.path} is not a regular file`);
    return tooLarge(before.size);
  }
  const fd = handle.fd;
  const size = before.size;
  const unchanged = async () => {
    const after = await handle.stat();
    return after.size === before.size && after.mtimeMs === before.mtimeMs && after.ino === before.ino;
  };
  if (size <= READ_WHOLE_BYTES) {
    const bytes = readAt(fd, size, 0, size);
    return { source: bufferSource(bytes), close: () => handle.close(), unchanged };
  }
  const direct = (offset: number, length: number): Buffer => readAt(fd, size, offset, length);
  // Entries are visited in file order, so small reads (headers, small files) are served from one
  // 1 MiB window instead of a system call each. A window is never reused, so returned slices stay valid.
  let window: { base: number; buf: Buffer } = { base: 0, buf: Buffer.alloc(0) };
  // Each pass over the entries (local headers, then contents) starts again near the front: those
  // restarts may refill the window backwards. Past this budget a backward read costs a small read
  // of its own, so hostile offsets (a central directory that points backwards and forwards) cost
  // at most this many extra megabytes, never one per entry.
  let backwardRefills = 16;
  return {
    source: {
      size,
      read(offset, length) {
        if (length > READ_WINDOW / 4) return direct(offset, length);
        if (offset < window.base || offset + length > window.base + window.buf.length) {
          if (offset < window.base + window.buf.length) {
            if (backwardRefills === 0) return direct(offset, length);
            backwardRefills--;
          }
          window = { base: offset, buf: direct(offset, Math.max(READ_WINDOW, length)) };
        }
        const start = offset - window.base;
        return window.buf.subarray(start, Math.min(start + length, window.buf.length));
      },
    },
    close: () => handle.close(),
    // Staged packages are immutable; a file that changes under the validator is an error, not a result.
    unchanged,
  };
}

function scanFailure(error: unknown): ScanResult {
  return { status: "error", errorKind: "scanner", message: String(error) };
}

function* chunksOf(source: ByteSource, chunkBytes = 1 << 20): Generator<Buffer> {
  for (let at = 0; at < source.size; at += chunkBytes) yield source.read(at, chunkBytes);
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
  private tar: Array<ScanItem & { order: number }> = [];
  private tarBytes = 0;
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
    if (this.scanner.scanStream && bytes.length <= TAR_MEMBER_MAX_BYTES && order >= 0) {
      this.tar.push({ order, name, bytes });
      this.tarBytes += bytes.length;
      if (this.tarBytes >= TAR_BATCH_BYTES || this.tar.length >= TAR_BATCH_ITEMS) await this.flushTar();
      return;
    }
    await this.track(this.scanOne({ order, name, bytes }));
  }

  private async track(job: Promise<void>): Promise<void> {
    this.inflight.add(job);
    void job.finally(() => this.inflight.delete(job));
    if (this.inflight.size >= this.concurrency) await Promise.race(this.inflight);
  }

  private scanOne(item: ScanItem & { order: number }): Promise<void> {
    return this.scanner
      .scan(item.name, item.bytes)
      .catch(
        (error: unknown): ScanResult => ({ status: "error", errorKind: "scanner", message: String(error) }),
      )
      .then((result) => {
        this.verdicts.push({ order: item.order, target: item.name, result });
        this.done(item.bytes.length);
      });
  }

  /** Small entries go to the scanner as one tar stream; a batch that is not clean is rescanned per entry. */
  private async flushTar(): Promise<void> {
    const items = this.tar;
    this.tar = [];
    this.tarBytes = 0;
    if (items.length === 0 || !this.scanner.scanStream) return;
    const scanStream = this.scanner.scanStream.bind(this.scanner);
    const job = scanStream(`${items.length} entries`, tarChunks(items.map((i) => i.bytes)))
      .catch(
        (error: unknown): ScanResult => ({ status: "error", errorKind: "scanner", message: String(error) }),
      )
      .then(async (result) => {
        if (result.status === "clean") {
          for (const item of items) {
            this.verdicts.push({ order: item.order, target: item.name, result });
            this.done(item.bytes.length);
          }
          return;
        }
        const before = this.verdicts.length;
        for (const item of items) await this.scanOne(item);
        // Fail closed: if no single entry reproduces the batch's answer, the batch answer stands.
        if (!this.verdicts.slice(before).some((v) => v.result.status === result.status)) {
          const first = items[0]!;
          this.verdicts.push({
            order: first.order,
            target: `${items.length} entries scanned together`,
            result,
          });
        }
      });
    await this.track(job);
  }

  /** A scan whose input is produced by `run` (a stream of the package). */
  async addStream(order: number, name: string, run: () => Promise<ScanResult>, bytes: number): Promise<void> {
    const job = run()
      .catch(
        (error: unknown): ScanResult => ({ status: "error", errorKind: "scanner", message: String(error) }),
      )
      .then((result) => {
        this.verdicts.push({ order, target: name, result });
        this.done(bytes);
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
    await this.flushTar();
    await Promise.all(this.inflight);
    return this.verdicts.sort((a, b) => a.order - b.order).map(({ target, result }) => ({ target, result }));
  }
}

/** Read, hash, parse, inflate, sniff and scan the package once; checks then only read the result. */
/** Up to length bytes at offset of an open file of the given size (short only at its end). */
export function readAt(fd: number, size: number, offset: number, length: number): Buffer {
  const want = Math.max(0, Math.min(length, size - offset));
  const buffer = Buffer.allocUnsafe(want);
  let got = 0;
  while (got < want) {
    const n = readSync(fd, buffer, got, want - got, offset + got);
    if (n === 0) break;
    got += n;
  }
  return buffer.subarray(0, got);
}

/** Times consecutive steps for onStepTimed: each call ends the step running since the last one. */
function stepTimer(report: ValidationInput["onStepTimed"]): (step: string) => void {
  if (!report) return () => {};
  let last = performance.now();
  return (step) => {
    const now = performance.now();
    report(step, now - last);
    last = now;
  };
}

export async function analyzePackage(
  input: ValidationInput,
  stepDone = stepTimer(input.onStepTimed),
): Promise<PackageAnalysis> {
  const opened = await openPackage(input.package, input.policy.package.maxPackageBytes);
  if ("unreadable" in opened) {
    return {
      sizeBytes: opened.sizeBytes,
      sha256: null,
      unreadable: opened.unreadable,
      packageKind: null,
      structure: null,
      nameFindings: [],
      entries: [],
      contentInspected: false,
      inflateFindings: [],
      files: new Map(),
      installFiles: [],
      scan: { state: input.antivirusDisabled ? "disabled" : input.scanner ? "not_run" : "not_configured" },
    };
  }
  try {
    const analysis = await analyzeSource(input, opened.source, stepDone);
    if (!(await opened.unchanged())) throw new Error("the package file changed while it was being validated");
    return analysis;
  } finally {
    await opened.close();
  }
}

async function analyzeSource(
  input: ValidationInput,
  source: ByteSource,
  stepDone: (step: string) => void,
): Promise<PackageAnalysis> {
  const policy = input.policy;
  const progress = input.onProgress ?? (() => {});
  const reportsProgress = input.onProgress !== undefined;
  const scanState = input.antivirusDisabled ? "disabled" : input.scanner ? null : "not_configured";
  const total = source.size;
  const scanner = input.scanner;
  let scanTotal = total;
  const queue =
    scanner && !scanState
      ? new ScanQueue(scanner, Math.max(1, input.scanConcurrency ?? 4), (done) =>
          progress({ phase: "scanning", doneBytes: done, totalBytes: scanTotal }),
        )
      : null;
  // The scanner is the long pole: it gets the package before anything else happens here.
  let packageScan: Promise<ScanResult> | null = null;
  let alertsOnLimits = Promise.resolve(false);
  if (queue && scanner) {
    // Asked first, so that a daemon with one thread answers it before the long package scan.
    alertsOnLimits = (scanner.alertsOnLimits?.() ?? alertsOnLimits).catch(() => false);
    // The whole package is scanned as one stream; ClamAV looks inside it at every entry.
    if (scanner.scanStream) {
      let sent!: () => void;
      const uploaded = new Promise<void>((resolve) => {
        sent = resolve;
      });
      const chunks = function* () {
        yield* chunksOf(source);
        sent();
      };
      packageScan = scanner.scanStream("package", chunks()).catch(scanFailure);
      await queue.addStream(-1, "package", () => packageScan!, total);
      // What follows keeps this thread busy: hand the scanner every byte first (a scanner that
      // fails early settles packageScan instead), so that it scans while we hash and inflate.
      await Promise.race([uploaded, packageScan]);
    } else await queue.add(-1, "package", source.read(0, total));
  }
  const hash = createHash("sha256");
  let hashed = 0;
  for (const chunk of chunksOf(source, HASH_CHUNK)) {
    hash.update(chunk);
    hashed += chunk.length;
    progress({ phase: "hashing", doneBytes: hashed, totalBytes: total });
  }
  const sha256 = hash.digest("hex");
  const packageKind = sniffFileType(
    tailAware(source.read(0, 4096), source.read(Math.max(0, total - 4096), 4096), total),
  );
  stepDone("hash the package");
  const caps = zipCapsFromPolicy(policy);
  const structure = readZipStructure(source, caps);
  stepDone("read the ZIP structure");
  const nameFindings: ZipFinding[] = [];
  for (const entry of structure.entries) {
    const found = analyzeName(entry, caps);
    if (found.length > 0) nameFindings.push(...found);
  }
  for (const finding of analyzeCollisions(structure.entries)) nameFindings.push(finding);
  stepDone("check the names");
  const entries: InspectedEntry[] = structure.entries.map((entry) => ({ entry, kind: null }));
  const inflateFindings: ZipFinding[] = [];
  const files = new Map<string, Buffer>();
  const installFiles: PackageFile[] = [];

  // That scan stands for the entries only when the scanner sees the same entries we do (a sound
  // layout) and would report, not skip, what lies beyond its limits. Otherwise every entry is also
  // scanned on its own below (a scanner round trip per batch of small entries).
  const soundLayout = !structure.unsafeToInflate && structure.findings.length === 0;
  const entriesInsidePackage = packageScan !== null && soundLayout && (await alertsOnLimits);
  if (queue && !entriesInsidePackage) scanTotal += structure.totalUncompressedBytes;

  if (!structure.unsafeToInflate) {
    const manifestName = policy.manifestFileName;
    const manifestEntry = entries.find((e) => e.entry.name === manifestName && !e.entry.isDirectory);
    let manifestBytes: Buffer | undefined;
    if (manifestEntry) {
      const r = inflateEntry(source, manifestEntry.entry);
      if (r.ok) manifestBytes = r.data;
    }
    const keep = configFileNames(input.sidecar, manifestBytes);
    keep.add(manifestName);
    let inspected = 0;
    for (const item of entries) {
      const { entry } = item;
      if (entry.isDirectory) continue;
      const result = inflateEntry(source, entry);
      inspected += entry.compressedSize;
      if (reportsProgress) progress({ phase: "inspecting", doneBytes: inspected, totalBytes: total });
      if (!result.ok) {
        inflateFindings.push({ code: result.code, entry: entry.name, message: result.message });
        continue;
      }
      const data = result.data;
      // Hashed from the buffer just inflated for the CRC and the scanner: the per-file hashes a
      // manager verifies an installation with cost no second read of the package.
      installFiles.push({
        path: entry.name,
        sizeBytes: data.length,
        sha256: sha256Hex(data),
      });
      item.kind = sniffFileType(
        data.length <= 4096
          ? data
          : tailAware(data.subarray(0, 4096), data.subarray(data.length - 4096), data.length),
      );
      // First one wins, as for the manifest above; duplicates fail zip_path_safety anyway.
      if (keep.has(entry.name) && !files.has(entry.name)) files.set(entry.name, Buffer.from(data));
      if (queue && !entriesInsidePackage) await queue.add(entry.index, JSON.stringify(entry.name), data);
    }
    // A finding inside the package is attributed: its entries are scanned one by one so the log
    // names the infected ones. A limits finding is about the package as a whole and needs none.
    const packageVerdict = entriesInsidePackage && packageScan ? await packageScan : null;
    if (queue && packageVerdict?.status === "infected" && !isLimitsVerdict(packageVerdict)) {
      for (const { entry } of entries) {
        if (entry.isDirectory) continue;
        const again = inflateEntry(source, entry);
        if (again.ok) await queue.add(entry.index, JSON.stringify(entry.name), again.data);
      }
    }
  }
  if (!structure.unsafeToInflate) stepDone("inflate, verify and hash the entries");
  const contentInspected = !structure.unsafeToInflate && inflateFindings.length === 0;
  let scan: PackageAnalysis["scan"];
  if (scanState) scan = { state: scanState };
  else if (queue && scanner) {
    scan = {
      state: "ran",
      scanner: scanner.description,
      verdicts: await queue.drain(),
      complete: contentInspected,
      entryCoverage: entriesInsidePackage ? "package" : "each",
    };
  } else scan = { state: "not_run" };
  if (queue) stepDone("wait for the antivirus scanner");
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
    installFiles,
    scan,
  };
}

/** The sniffer reads the head (and the tail, where some formats keep their magic); never megabytes. */
function tailAware(head: Buffer, tail: Buffer, length: number): Buffer {
  if (length <= head.length) return head;
  if (length <= 8192)
    return Buffer.concat([head, tail.subarray(Math.max(0, head.length - (length - tail.length)))]);
  return Buffer.concat([head, tail]);
}

export async function runValidation(input: ValidationInput): Promise<ValidationReport> {
  return (await validatePackage(input)).report;
}

/**
 * The report and, when every entry inflated and verified, the files the package installs with
 * their sizes and sha256 from the same pass (what the publisher stores in the release record).
 */
export async function validatePackage(input: ValidationInput): Promise<ValidationOutcome> {
  const stepDone = stepTimer(input.onStepTimed);
  const clock = input.clock ?? (() => new Date());
  const startedAt = clock().toISOString();
  const schemaBaseUrl =
    typeof input.catalog?.baseUrl === "string" ? input.catalog.baseUrl : SOURCE_SCHEMA_BASE;
  const problems = policyShapeProblems(input.policy);
  const declared = Array.isArray(input.policy?.checks)
    ? input.policy.checks.filter((c) => c.scope === "package")
    : [];
  const order =
    declared.length > 0 ? declared : Object.keys(PACKAGE_CHECKS).map((id) => ({ id, required: true }));
  const sidecarResult =
    input.sidecarParseError === undefined && input.sidecar !== undefined
      ? validateSidecar(input.sidecar, schemaBaseUrl)
      : null;
  const sidecarValid = sidecarResult?.ok ? sidecarResult.value : null;
  const raw = input.sidecar as { modId?: unknown; version?: unknown } | undefined;
  const identity = {
    modId: sidecarValid?.modId ?? (typeof raw?.modId === "string" ? raw.modId : null),
    version: sidecarValid?.version ?? (typeof raw?.version === "string" ? raw.version : null),
  };

  if (problems.length > 0) {
    const checks = order.map((c) => ({ ...failed(c.id, "policy_invalid", problems), required: true }));
    const report: ValidationReport = {
      schema: "svc.validation-report.v1",
      ...identity,
      packageSha256: null,
      packageSizeBytes: null,
      passed: false,
      checks,
      startedAt,
      finishedAt: clock().toISOString(),
    };
    return { report, files: null };
  }

  stepDone("check the policy and the sidecar");
  const pkg = await analyzePackage(input, stepDone);
  const manifestRead = pkg.structure ? readManifest(pkg, input.policy.manifestFileName, schemaBaseUrl) : null;
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
    schemaBaseUrl,
    now: startedAt,
    results,
  };
  stepDone("read the manifest");
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
    stepDone(`check ${id}`);
  }
  const report: ValidationReport = {
    schema: "svc.validation-report.v1",
    ...identity,
    packageSha256: pkg.sha256,
    packageSizeBytes: pkg.sizeBytes,
    passed: checks.every((c) => !c.required || c.status === "passed"),
    checks,
    startedAt,
    finishedAt: clock().toISOString(),
  };
  return { report, files: pkg.contentInspected ? (pkg.installFiles ?? null) : null };
}
