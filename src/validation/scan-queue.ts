import type { AntivirusScanner, ScanItem, ScanResult } from "./antivirus/scanner.ts";
import { tarChunks } from "./antivirus/tar-batch.ts";
import { chunksOf } from "./package-source.ts";
import type { ScanVerdict } from "./types.ts";
import type { ByteSource } from "./zip/reader.ts";

const SCAN_BATCH_BYTES = 64 * 1024 * 1024;
const SCAN_BATCH_ITEMS = 2000;
// Entries up to 1 MiB are scanned in tar batches of at most 1,000 members or 16 MiB (clamd MaxFiles
// defaults to 10,000, so a batch never hits it).
const TAR_MEMBER_MAX_BYTES = 1024 * 1024;
const TAR_BATCH_BYTES = 16 * 1024 * 1024;
const TAR_BATCH_ITEMS = 1000;

function scanFailure(error: unknown): ScanResult {
  return { status: "error", errorKind: "scanner", message: String(error) };
}

export class ScanQueue {
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

/** The scan of a whole package as a stream, begun (beginPackageScan). */
export interface BegunPackageScan {
  packageScan: Promise<ScanResult>;
  alertsOnLimits: Promise<boolean>;
  /** Settles once the scanner has been handed every byte. */
  uploaded: Promise<void>;
}

/**
 * Starts streaming the whole package to a scanner that takes streams (ClamAV looks inside it at
 * every entry), after asking it whether it reports what lies beyond its limits; null for a scanner
 * without streams. `svc validate` begins it as soon as the package is read (early-package.ts), the
 * runner otherwise (startPackageScan).
 */
export function beginPackageScan(scanner: AntivirusScanner, source: ByteSource): BegunPackageScan | null {
  if (!scanner.scanStream) return null;
  // Asked first, so that a daemon with one thread answers it before the long package scan.
  const alertsOnLimits = (scanner.alertsOnLimits?.() ?? Promise.resolve(false)).catch(() => false);
  let sent!: () => void;
  const uploaded = new Promise<void>((resolve) => {
    sent = resolve;
  });
  const chunks = function* () {
    yield* chunksOf(source);
    sent();
  };
  const packageScan = scanner.scanStream("package", chunks()).catch(scanFailure);
  return { packageScan, alertsOnLimits, uploaded };
}

/**
 * Hands the whole package to the scanner (or takes the scan begun already). Returns the package's
 * own scan (null when the scanner takes no stream: the package then waits in the queue like an
 * entry) and whether the scanner reports, rather than skips, what lies beyond its limits.
 */
export async function startPackageScan(
  queue: ScanQueue,
  scanner: AntivirusScanner,
  source: ByteSource,
  begun: BegunPackageScan | null = null,
): Promise<{ packageScan: Promise<ScanResult> | null; alertsOnLimits: Promise<boolean> }> {
  const total = source.size;
  const scan = begun ?? beginPackageScan(scanner, source);
  if (!scan) {
    const alertsOnLimits = (scanner.alertsOnLimits?.() ?? Promise.resolve(false)).catch(() => false);
    await queue.add(-1, "package", source.read(0, total));
    return { packageScan: null, alertsOnLimits };
  }
  const { packageScan, alertsOnLimits, uploaded } = scan;
  await queue.addStream(-1, "package", () => packageScan, total);
  // What follows keeps this thread busy: hand the scanner every byte first (a scanner that
  // fails early settles packageScan instead), so that it scans while we hash and inflate.
  await Promise.race([uploaded, packageScan]);
  return { packageScan, alertsOnLimits };
}
