import { createHash } from "node:crypto";
import { sha256Hex } from "../lib/hash.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { isLimitsVerdict } from "./antivirus/limits-probe.ts";
import { MANIFEST_JSON_LIMITS } from "./documents.ts";
import { startInflateWorker, zipCapsFromPolicy } from "./early-package.ts";
import type { InflateWorker } from "./inflate-pool.ts";
import { chunksOf, openPackage } from "./package-source.ts";
import { ScanQueue, startPackageScan } from "./scan-queue.ts";
import type {
  InspectedEntry,
  InventoryFile,
  PackageAnalysis,
  PackageFile,
  ValidationInput,
} from "./types.ts";
import { analyzeCollisions, analyzeName } from "./zip/names.ts";
import {
  type ByteSource,
  inflateEntry,
  inflateEntryBorrowed,
  readZipStructure,
  type ZipFinding,
} from "./zip/reader.ts";
import { sniffWindow, tailAware } from "./zip/inflate-raw.mjs";
import { type FileKind, sniffFileType } from "./zip/sniff.ts";

const HASH_CHUNK = 4 * 1024 * 1024;

export { zipCapsFromPolicy };

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

/** Times consecutive steps for onStepTimed: each call ends the step running since the last one. */
export function stepTimer(report: ValidationInput["onStepTimed"]): (step: string) => void {
  if (!report) return () => {};
  let last = performance.now();
  return (step) => {
    const now = performance.now();
    report(step, now - last);
    last = now;
  };
}

/** Read, hash, parse, inflate, sniff and scan the package once; checks then only read the result. */
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
  const worker = inflateWorkerFor(input, opened.source);
  try {
    const analysis = await analyzeSource(input, opened.source, stepDone, worker);
    if (!(await opened.unchanged())) throw new Error("the package file changed while it was being validated");
    return analysis;
  } finally {
    // Not awaited: an idle worker's end is no part of the result.
    void worker?.close();
    await opened.close();
  }
}

/**
 * The inflate worker for this package, started before anything else is read (or already started
 * with the package, early-package.ts): it finds the entries' data itself and inflates while this
 * thread hashes the package, reads the structure and checks the names; null when the package stays
 * on one thread.
 */
function inflateWorkerFor(input: ValidationInput, source: ByteSource): InflateWorker | null {
  if ("early" in input.package && input.package.early) return input.package.early.worker;
  if (!source.bytes) return null;
  const scanned = Boolean(input.scanner) && !input.antivirusDisabled;
  return startInflateWorker(source.bytes, input.policy, input.inflateWorker, scanned);
}

async function analyzeSource(
  input: ValidationInput,
  source: ByteSource,
  stepDone: (step: string) => void,
  worker: InflateWorker | null,
): Promise<PackageAnalysis> {
  const workerMode = input.inflateWorker ?? "auto";
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
  const { packageScan, alertsOnLimits } =
    queue && scanner
      ? await startPackageScan(
          queue,
          scanner,
          source,
          "early" in input.package ? (input.package.early?.scan ?? null) : null,
        )
      : { packageScan: null, alertsOnLimits: Promise.resolve(false) };
  const hashPackage = () => {
    const hash = createHash("sha256");
    let hashed = 0;
    for (const chunk of chunksOf(source, HASH_CHUNK)) {
      hash.update(chunk);
      hashed += chunk.length;
      progress({ phase: "hashing", doneBytes: hashed, totalBytes: total });
    }
    stepDone("hash the package");
    return hash.digest("hex");
  };
  // With a worker, the package is hashed while the worker inflates (below); without, first.
  let sha256 = worker ? null : hashPackage();
  const packageKind = sniffFileType(
    tailAware(source.read(0, 4096), source.read(Math.max(0, total - 4096), 4096), total),
  );
  const caps = zipCapsFromPolicy(policy);
  const structure = readZipStructure(source, caps);
  stepDone("read the ZIP structure");

  // That scan stands for the entries only when the scanner sees the same entries we do (a sound
  // layout) and would report, not skip, what lies beyond its limits. Otherwise every entry is also
  // scanned on its own below (a scanner round trip per batch of small entries).
  const soundLayout = !structure.unsafeToInflate && structure.findings.length === 0;
  const entriesInsidePackage = packageScan !== null && soundLayout && (await alertsOnLimits);
  if (queue && !entriesInsidePackage) scanTotal += structure.totalUncompressedBytes;
  // The worker's answers are used unless nothing is inflated, or each entry's bytes go to the
  // scanner one by one (they would have to come back from the worker).
  const parallel =
    worker !== null && !structure.unsafeToInflate && !(queue && !entriesInsidePackage) ? worker : null;
  if (worker && !parallel) worker.abandon();
  sha256 ??= hashPackage();
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
  const inventory: InventoryFile[] = [];

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
    const scansEachEntry = queue !== null && !entriesInsidePackage;
    const record = (item: InspectedEntry, file: PackageFile, signature: FileKind) => {
      installFiles.push(file);
      item.kind = signature;
      inventory.push({ path: file.path, sizeBytes: file.sizeBytes, sha256: file.sha256, signature });
    };
    if (parallel) {
      const inspections = await parallel.finish(structure.entries, {
        mainThreadHelps: workerMode !== "worker_only",
        onChunk: (compressed) => {
          inspected += compressed;
          if (reportsProgress) progress({ phase: "inspecting", doneBytes: inspected, totalBytes: total });
        },
      });
      for (const item of entries) {
        const { entry } = item;
        const inspection = inspections[entry.index];
        if (!inspection) continue;
        const { verdict } = inspection;
        if (!verdict.ok) {
          inflateFindings.push({ code: verdict.code, entry: entry.name, message: verdict.message });
          continue;
        }
        record(
          item,
          { path: entry.name, sizeBytes: inspection.sizeBytes, sha256: inspection.sha256! },
          inspection.kind!,
        );
        if (keep.has(entry.name) && !files.has(entry.name)) {
          const again = inflateEntry(source, entry);
          if (again.ok) files.set(entry.name, Buffer.from(again.data));
        }
      }
    }
    for (const item of parallel ? [] : entries) {
      const { entry } = item;
      if (entry.isDirectory) continue;
      // Borrowed unless the scanner queues each entry's bytes: the data is hashed and sniffed here,
      // and copied where it is kept.
      const result = scansEachEntry ? inflateEntry(source, entry) : inflateEntryBorrowed(source, entry);
      inspected += entry.compressedSize;
      if (reportsProgress) progress({ phase: "inspecting", doneBytes: inspected, totalBytes: total });
      if (!result.ok) {
        inflateFindings.push({ code: result.code, entry: entry.name, message: result.message });
        continue;
      }
      const data = result.data;
      // Hashed from the buffer just inflated for the CRC and the scanner: the per-file hashes a
      // manager verifies an installation with cost no second read of the package.
      record(
        item,
        { path: entry.name, sizeBytes: data.length, sha256: sha256Hex(data) },
        sniffFileType(sniffWindow(data)),
      );
      // First one wins, as for the manifest above; duplicates fail zip_path_safety anyway.
      if (keep.has(entry.name) && !files.has(entry.name)) files.set(entry.name, Buffer.from(data));
      if (scansEachEntry) await queue.add(entry.index, JSON.stringify(entry.name), data);
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
    inventory,
    scan,
  };
}
