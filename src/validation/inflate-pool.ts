import { existsSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { inflateFacts, sha256Hex, sniffWindow } from "./zip/inflate-raw.mjs";
import { type InflateVerdict, judgeInflate, type ZipEntry } from "./zip/reader.ts";

/** What the runner needs of one file entry's contents: the verdict, and when it passed its hash and sniffing window. */
export interface EntryInspection {
  verdict: InflateVerdict;
  sizeBytes: number;
  sha256: string | null;
  window: Buffer | null;
}

type Facts = { failure: "too_large" | { corrupt: string } } | { length: number; unread: number; crc: number };

interface ChunkResult {
  chunk: number;
  facts: Facts[];
  sha256: Array<string | null>;
  windows: ArrayBuffer;
  windowEnds: Int32Array;
}

/**
 * Entries per claim from the shared counter: small enough that both threads finish together, large
 * enough that a message per chunk costs nothing beside inflating it.
 */
const CHUNK_ENTRIES = 256;

/**
 * Below this many file entries a package is inflated on the main thread alone. An entry costs about
 * 20 µs to inflate, verify and hash (svc validate --timings on the bench's 20,000-entry package);
 * a worker's start-up (until it is online) took 0.14-0.68 s on the 2-core development machine at
 * load average 20-26, overlapped with hashing and the structure but still only paid for by
 * thousands of entries.
 */
export const WORKER_MIN_ENTRIES = 4000;

/**
 * Only a package up to this size gets a worker: its bytes are copied once into memory both threads
 * share (what package-source.ts reads whole anyway); a larger one keeps one thread and positional reads.
 */
export const WORKER_MAX_PACKAGE_BYTES = 16 * 1024 * 1024;

/** The worker's file beside this module; null where there is none (a bundle that left it behind). */
function workerFile(): string | null {
  try {
    const path = fileURLToPath(new URL("./inflate-worker.mjs", import.meta.url));
    return existsSync(path) ? path : null;
  } catch {
    return null;
  }
}

/** Inflates, verifies, hashes and takes the sniffing window of one entry here, as the worker does there. */
export function inspectEntry(bytes: Buffer, entry: ZipEntry): EntryInspection {
  const facts = inflateFacts(
    bytes.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize),
    entry.method,
    entry.uncompressedSize,
  );
  if ("failure" in facts)
    return { verdict: judgeInflate(entry, facts), sizeBytes: 0, sha256: null, window: null };
  const verdict = judgeInflate(entry, { length: facts.data.length, unread: facts.unread, crc: facts.crc });
  if (!verdict.ok) return { verdict, sizeBytes: facts.data.length, sha256: null, window: null };
  return {
    verdict,
    sizeBytes: facts.data.length,
    sha256: sha256Hex(facts.data),
    window: Buffer.from(sniffWindow(facts.data)),
  };
}

/**
 * Whether a second core is likely free: at least two, and the last minute's load average below
 * their number (Windows reports 0). With every core busy the worker only adds its start-up and
 * its messages: A/B pairs at load average 5-30 on the 2-core development machine measured it
 * anywhere from 0.5x to 1.9x the single thread.
 */
export function spareCore(): boolean {
  const cores = availableParallelism();
  return cores >= 2 && loadavg()[0]! < cores;
}

/**
 * The number of entries the end record of an in-memory ZIP announces (without a comment), or -1:
 * a hint for starting the worker before the structure is read; the structure decides.
 */
export function announcedEntries(bytes: Buffer): number {
  const at = bytes.length - 22;
  if (at < 0 || bytes.readUInt32LE(at) !== 0x06054b50) return -1;
  const count = bytes.readUInt16LE(at + 10);
  return count === 0xffff ? -1 : count;
}

/**
 * A worker thread that inflates a share of a package's file entries beside the main thread. Started
 * early (its start-up overlaps hashing and the structure), given the entries once the structure is
 * read; both threads then claim chunks from one shared counter, and the results are put back in
 * archive order, so the report is the one the main thread alone writes. A worker that cannot start
 * or dies leaves its chunks to the main thread.
 */
export class InflateWorker {
  private readonly shared: Buffer;
  private readonly worker: Worker;
  private failed = false;
  private readonly results = new Map<number, ChunkResult>();
  private wake: (() => void) | null = null;
  private done = false;
  private mainThreadHelps = true;
  /** Chunks the worker answered in the last finish() (what a test checks the worker did). */
  workerChunks = 0;

  private constructor(file: string, bytes: Buffer) {
    const memory = new SharedArrayBuffer(bytes.length);
    this.shared = Buffer.from(memory);
    bytes.copy(this.shared);
    this.worker = new Worker(file, {
      workerData: { bytes: memory },
      // Plain JavaScript: none of the parent's loaders (tsx under a test runner) is needed at its start.
      execArgv: [],
    });
    this.worker.on("message", (message: ChunkResult | { done: true }) => {
      if ("done" in message) this.done = true;
      else this.results.set(message.chunk, message);
      this.wake?.();
    });
    const fail = () => {
      this.failed = true;
      this.wake?.();
    };
    this.worker.on("error", fail);
    this.worker.on("exit", fail);
  }

  /** A worker over these bytes, or null where its file is not beside this module (a bundle elsewhere). */
  static start(bytes: Buffer): InflateWorker | null {
    const file = workerFile();
    if (!file) return null;
    try {
      return new InflateWorker(file, bytes);
    } catch {
      return null;
    }
  }

  private job: {
    entries: readonly ZipEntry[];
    counter: Int32Array;
    chunks: number;
  } | null = null;

  /** Hands the worker the file entries: it starts on them at once, while the main thread goes on. */
  begin(entries: readonly ZipEntry[], options: { mainThreadHelps?: boolean } = {}): void {
    this.mainThreadHelps = options.mainThreadHelps ?? true;
    const count = entries.length;
    const table = new Float64Array(new SharedArrayBuffer(Math.max(1, count) * 5 * 8));
    entries.forEach((e, i) => {
      table.set([e.dataOffset, e.compressedSize, e.uncompressedSize, e.crc32, e.method], i * 5);
    });
    const counter = new Int32Array(new SharedArrayBuffer(4));
    this.job = { entries, counter, chunks: Math.ceil(count / CHUNK_ENTRIES) };
    if (!this.failed)
      this.worker.postMessage({
        table: table.buffer,
        counter: counter.buffer,
        count,
        chunkSize: CHUNK_ENTRIES,
      });
  }

  /**
   * Every file entry's inspection in the order begin() was given: the main thread claims the chunks
   * the worker has not, then takes the worker's. `onEntries` hears of each chunk done.
   */
  async finish(onEntries?: (done: readonly ZipEntry[]) => void): Promise<EntryInspection[]> {
    const { entries, counter, chunks } = this.job!;
    const count = entries.length;
    const out: EntryInspection[] = new Array(count);
    const mine = new Set<number>();
    const inline = (chunk: number) => {
      const first = chunk * CHUNK_ENTRIES;
      const last = Math.min(count, first + CHUNK_ENTRIES);
      for (let i = first; i < last; i++) out[i] = inspectEntry(this.shared, entries[i]!);
      onEntries?.(entries.slice(first, last));
    };
    for (; this.mainThreadHelps; ) {
      const chunk = Atomics.add(counter, 0, 1);
      if (chunk >= chunks) break;
      mine.add(chunk);
      inline(chunk);
    }
    // Wait only for the chunks the worker claimed: when the main thread claimed them all (a worker
    // still starting on a loaded machine), nothing is waited for.
    const answered = () => this.done || this.failed || this.results.size >= chunks - mine.size;
    while (!answered()) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        if (answered()) resolve();
      });
      this.wake = null;
    }
    for (let chunk = 0; chunk < chunks; chunk++) {
      if (mine.has(chunk)) continue;
      const result = this.results.get(chunk);
      // The worker died before answering this chunk: the main thread inflates it.
      if (!result) {
        inline(chunk);
        continue;
      }
      this.workerChunks++;
      const first = chunk * CHUNK_ENTRIES;
      const windows = Buffer.from(result.windows);
      let start = 0;
      result.facts.forEach((facts, k) => {
        const entry = entries[first + k]!;
        const end = result.windowEnds[k]!;
        const sha256 = result.sha256[k] ?? null;
        out[first + k] = {
          verdict: judgeInflate(entry, facts),
          sizeBytes: "failure" in facts ? 0 : facts.length,
          sha256,
          window: sha256 === null ? null : windows.subarray(start, end),
        };
        start = end;
      });
      onEntries?.(entries.slice(first, first + result.facts.length));
    }
    return out;
  }

  /** Ends the thread; not awaited by the runner (an idle worker's end is no part of the result). */
  close(): Promise<number> {
    // A finish() after this (none in the runner) does every chunk on the main thread.
    this.failed = true;
    this.wake?.();
    this.worker.removeAllListeners("exit");
    this.worker.removeAllListeners("error");
    // An error after the end (none is expected) must not become an unhandled one.
    this.worker.on("error", () => {});
    return this.worker.terminate();
  }
}
