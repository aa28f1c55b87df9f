import { existsSync, readdirSync, readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { inflateFactsBorrowed, sha256Hex, sniffWindow } from "./zip/inflate-raw.mjs";
import { FILE_KINDS, type FileKind, sniffFileType } from "./zip/sniff.mjs";
import { type InflateVerdict, judgeInflate, type ZipCaps, type ZipEntry } from "./zip/reader.ts";

/** What the runner needs of one file entry's contents: the verdict, and when it passed its size, hash and kind. */
export interface EntryInspection {
  verdict: InflateVerdict;
  sizeBytes: number;
  sha256: string | null;
  kind: FileKind | null;
}

/**
 * Entries per claim from the shared counter: small enough that both threads finish together, large
 * enough that a message per chunk costs nothing beside inflating it.
 */
const CHUNK_ENTRIES = 256;

/**
 * Below this many entries a package is inflated on the main thread alone. An entry costs about
 * 12 µs to inflate, verify, hash and sniff (svc validate --timings on the bench's 20,000-entry
 * package); a worker costs about 50 ms of CPU until it is online, on the other core.
 */
export const WORKER_MIN_ENTRIES = 4000;

/**
 * Only a package up to this size gets a worker: its bytes sit in memory both threads share (what
 * package-source.ts reads whole anyway); a larger one keeps one thread and positional reads.
 */
export const WORKER_MAX_PACKAGE_BYTES = 16 * 1024 * 1024;

const PASSED: InflateVerdict = { ok: true };

/** The worker's file beside this module; null where there is none (a bundle that left it behind). */
function workerFile(): string | null {
  try {
    const path = fileURLToPath(new URL("./inflate-worker.mjs", import.meta.url));
    return existsSync(path) ? path : null;
  } catch {
    return null;
  }
}

/**
 * Inflates, verifies, hashes and sniffs one entry here, as the worker does there. The data lies in
 * the thread's reused output buffer (inflateFactsBorrowed) and is used at once; the verdict is the
 * one judgeInflate writes.
 */
export function inspectEntry(bytes: Buffer, entry: ZipEntry): EntryInspection {
  const facts = inflateFactsBorrowed(
    bytes.subarray(entry.dataOffset, entry.dataOffset + entry.compressedSize),
    entry.method,
    entry.uncompressedSize,
  );
  if ("failure" in facts)
    return { verdict: judgeInflate(entry, facts), sizeBytes: 0, sha256: null, kind: null };
  const verdict = judgeInflate(entry, { length: facts.data.length, unread: facts.unread, crc: facts.crc });
  if (!verdict.ok) return { verdict, sizeBytes: facts.data.length, sha256: null, kind: null };
  return {
    verdict,
    sizeBytes: facts.data.length,
    sha256: sha256Hex(facts.data),
    kind: sniffFileType(sniffWindow(facts.data)),
  };
}

/**
 * Threads of other processes that want a core right now, from /proc/loadavg's runnable count less
 * this process's own runnable threads (this one, reading, and any of V8's helpers at work); null
 * off Linux.
 */
function runnableOthers(): number | null {
  try {
    // "0.52 0.61 0.70 2/612 12345": the fourth field's first number counts the runnable threads.
    const runnable = Number(readFileSync("/proc/loadavg", "latin1").split(" ")[3]?.split("/")[0]);
    if (!Number.isInteger(runnable)) return null;
    let own = 0;
    for (const task of readdirSync("/proc/self/task")) {
      try {
        // ".../stat": "pid (name) S ...": the state follows the name's closing parenthesis.
        const stat = readFileSync(`/proc/self/task/${task}/stat`, "latin1");
        if (stat.charAt(stat.lastIndexOf(")") + 2) === "R") own++;
      } catch {
        // A thread that ended meanwhile.
      }
    }
    return Math.max(0, runnable - Math.max(1, own));
  } catch {
    return null;
  }
}

/**
 * Whether a second core is likely free: at least two, and either no more threads runnable right now
 * than leave one idle (Linux's /proc/loadavg) or the last minute's load average below their number
 * (Windows reports 0). With every core busy the worker only adds its start-up: A/B pairs at load
 * average 5-30 on the 2-core development machine measured it anywhere from 0.5x to 1.9x the single
 * thread. The instant count is read first because the minute's average trails: a machine that was
 * busy a minute ago and is idle now has a core to spare now.
 */
export function spareCore(): boolean {
  const cores = availableParallelism();
  if (cores < 2) return false;
  const others = runnableOthers();
  if (others !== null && others <= cores - 2) return true;
  return loadavg()[0]! < cores;
}

/** Where the central directory is, from an end record that ends the bytes (no comment); null otherwise. */
export interface EndRecordHint {
  count: number;
  cdOffset: number;
  cdSize: number;
}

/**
 * The entry count and central directory an in-memory ZIP's end record announces when it has no
 * comment, or null: a hint for starting the worker before the structure is read; the structure decides.
 */
export function endRecordHint(bytes: Buffer): EndRecordHint | null {
  const at = bytes.length - 22;
  if (at < 0 || bytes.readUInt32LE(at) !== 0x06054b50 || bytes.readUInt16LE(at + 20) !== 0) return null;
  const count = bytes.readUInt16LE(at + 10);
  const cdSize = bytes.readUInt32LE(at + 12);
  const cdOffset = bytes.readUInt32LE(at + 16);
  if (count === 0xffff || cdOffset + cdSize > at) return null;
  return { count, cdOffset, cdSize };
}

/** The number of entries the end record of an in-memory ZIP announces (without a comment), or -1. */
export function announcedEntries(bytes: Buffer): number {
  return endRecordHint(bytes)?.count ?? -1;
}

/** Whether `bytes` are all of a SharedArrayBuffer (what the worker is given whole). */
function isWholeShared(bytes: Buffer): boolean {
  return (
    bytes.buffer instanceof SharedArrayBuffer &&
    bytes.byteOffset === 0 &&
    bytes.length === bytes.buffer.byteLength
  );
}

/** A copy of `bytes` in memory another thread can share, unless they already are. */
export function sharedCopy(bytes: Buffer): Buffer {
  if (isWholeShared(bytes)) return bytes;
  const shared = Buffer.from(new SharedArrayBuffer(bytes.length));
  bytes.copy(shared);
  return shared;
}

interface SharedTables {
  /** [0] the next chunk to claim, [1] nonzero once the main thread gives up on the worker. */
  control: Int32Array;
  /** Per entry: data offset, compressed size, uncompressed size, CRC-32, method (what the worker read). */
  keys: Uint32Array;
  /** Per entry: 1 when the worker inflated it and its size, stream and CRC were right. */
  state: Uint8Array;
  /** Per entry: its kind's index in FILE_KINDS. */
  kinds: Uint8Array;
  /** Per entry: its sha256 in hex, 64 bytes. */
  digests: Buffer;
  /** Per chunk: 1 once the worker has written all of it. */
  done: Int32Array;
}

function sharedTables(count: number, chunks: number): SharedTables {
  const sab = (bytes: number) => new SharedArrayBuffer(Math.max(4, bytes));
  return {
    control: new Int32Array(sab(8)),
    keys: new Uint32Array(sab(count * 5 * 4)),
    state: new Uint8Array(sab(count)),
    kinds: new Uint8Array(sab(count)),
    digests: Buffer.from(sab(count * 64)),
    done: new Int32Array(sab(chunks * 4)),
  };
}

/**
 * A worker thread that inflates a package's entries beside the main thread. Started as soon as the
 * bytes are in memory (it finds the entries' data itself, inflate-worker.mjs), so it works while the
 * main thread reads the structure and checks the names; then both threads claim chunks from one
 * shared counter, and finish() puts the answers back in archive order. An answer is used only for
 * an entry whose data offset, sizes, CRC-32 and method are those the main thread's reader found, and
 * only when it passed; the main thread inflates every other entry itself, so the outcome is the one
 * it alone gives. A worker that cannot start or dies leaves its chunks to the main thread.
 */
export class InflateWorker {
  private readonly worker: Worker;
  private readonly tables: SharedTables;
  private readonly chunks: number;
  private failed = false;
  private finished = false;
  private wake: (() => void) | null = null;
  /** Chunks the worker answered in finish(), and the entries whose answers were used (what a test checks the worker did). */
  workerChunks = 0;
  workerEntries = 0;

  private constructor(
    file: string,
    private readonly bytes: Buffer,
    private readonly count: number,
    hint: EndRecordHint,
    caps: ZipCaps,
  ) {
    this.chunks = Math.ceil(count / CHUNK_ENTRIES);
    this.tables = sharedTables(count, this.chunks);
    const t = this.tables;
    this.worker = new Worker(file, {
      workerData: {
        bytes: bytes.buffer,
        cdOffset: hint.cdOffset,
        cdSize: hint.cdSize,
        count,
        chunkSize: CHUNK_ENTRIES,
        caps: {
          maxEntryUncompressedBytes: caps.maxEntryUncompressedBytes,
          maxTotalUncompressedBytes: caps.maxTotalUncompressedBytes,
          maxCompressionRatio: caps.maxCompressionRatio,
          compressionRatioMinBytes: caps.compressionRatioMinBytes,
        },
        shared: {
          control: t.control.buffer,
          keys: t.keys.buffer,
          state: t.state.buffer,
          kinds: t.kinds.buffer,
          digests: t.digests.buffer,
          done: t.done.buffer,
        },
      },
      // Plain JavaScript: none of the parent's loaders (tsx under a test runner) is needed at its start.
      execArgv: [],
    });
    this.worker.on("message", (chunk: number) => {
      if (chunk < 0) this.finished = true;
      this.wake?.();
    });
    const fail = () => {
      this.failed = true;
      this.wake?.();
    };
    this.worker.on("error", fail);
    this.worker.on("exit", fail);
    // It keeps the process alive only while finish() waits for it: one its caller never finished
    // or closed does not hold a CLI open.
    this.worker.unref();
  }

  /**
   * A worker over these bytes (shared with it: a Buffer over a SharedArrayBuffer, see sharedCopy), or
   * null where they announce no entries in a plain end record, their caps are not numbers, or the
   * worker's file is not beside this module (a bundle elsewhere).
   */
  static start(bytes: Buffer, caps: ZipCaps): InflateWorker | null {
    const hint = endRecordHint(bytes);
    const numbers = [
      caps.maxEntries,
      caps.maxEntryUncompressedBytes,
      caps.maxTotalUncompressedBytes,
      caps.maxCompressionRatio,
      caps.compressionRatioMinBytes,
    ];
    if (!hint || hint.count === 0 || hint.count > caps.maxEntries || !numbers.every(Number.isFinite))
      return null;
    if (!isWholeShared(bytes)) return null;
    const file = workerFile();
    if (!file) return null;
    try {
      return new InflateWorker(file, bytes, hint.count, hint, caps);
    } catch {
      return null;
    }
  }

  /** Tells the worker to stop (a layout the main thread will not inflate) and ends it. */
  abandon(): void {
    Atomics.store(this.tables.control, 1, 1);
    void this.close();
  }

  /**
   * Every file entry's inspection, by entry index (undefined for folders): the main thread claims
   * the chunks the worker has not (unless `mainThreadHelps` is false), then takes the worker's.
   * `entries` is the structure's whole list, as the end record counts them; `onChunk` hears of the
   * compressed bytes of each chunk done.
   */
  async finish(
    entries: readonly ZipEntry[],
    options: { mainThreadHelps?: boolean; onChunk?: (compressedBytes: number) => void } = {},
  ): Promise<Array<EntryInspection | undefined>> {
    const out: Array<EntryInspection | undefined> = new Array(entries.length);
    const t = this.tables;
    const inline = (chunk: number) => {
      const first = chunk * CHUNK_ENTRIES;
      const last = Math.min(entries.length, first + CHUNK_ENTRIES);
      let compressed = 0;
      for (let i = first; i < last; i++) {
        const entry = entries[i]!;
        if (entry.isDirectory) continue;
        out[i] = inspectEntry(this.bytes, entry);
        compressed += entry.compressedSize;
      }
      options.onChunk?.(compressed);
    };
    // Entries the worker did not count the same way: the main thread does them all.
    if (entries.length !== this.count) {
      this.abandon();
      for (let chunk = 0; chunk * CHUNK_ENTRIES < entries.length; chunk++) inline(chunk);
      return out;
    }
    const mine = new Set<number>();
    for (; options.mainThreadHelps ?? true; ) {
      const chunk = Atomics.add(t.control, 0, 1);
      if (chunk >= this.chunks) break;
      mine.add(chunk);
      inline(chunk);
    }
    // Wait only for the chunks the worker claimed: when the main thread claimed them all (a worker
    // still starting on a loaded machine), nothing is waited for.
    // Read from the shared done flags, not from the messages: those wait in the event loop while
    // this thread works, and serve only to wake it.
    const settled = () => {
      if (this.failed || this.finished) return true;
      for (let chunk = 0; chunk < this.chunks; chunk++)
        if (!mine.has(chunk) && Atomics.load(t.done, chunk) !== 1) return false;
      return true;
    };
    if (!settled()) this.worker.ref();
    while (!settled()) {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        if (settled()) resolve();
      });
      this.wake = null;
    }
    this.worker.unref();
    // The chunks the worker finished, read once: its rows of those are all written before the
    // digests below are read.
    const answered = new Set<number>();
    for (let chunk = 0; chunk < this.chunks; chunk++)
      if (!mine.has(chunk) && Atomics.load(t.done, chunk) === 1) answered.add(chunk);
    // Every hex digest at once: one string, and each entry's sha256 a slice of it, instead of a
    // toString call per entry.
    const hex = t.digests.toString("latin1", 0, entries.length * 64);
    for (let chunk = 0; chunk < this.chunks; chunk++) {
      if (mine.has(chunk)) continue;
      // The worker died before answering this chunk: the main thread inflates it.
      if (!answered.has(chunk)) {
        inline(chunk);
        continue;
      }
      this.workerChunks++;
      const first = chunk * CHUNK_ENTRIES;
      const last = Math.min(entries.length, first + CHUNK_ENTRIES);
      let compressed = 0;
      for (let i = first; i < last; i++) {
        const entry = entries[i]!;
        if (entry.isDirectory) continue;
        compressed += entry.compressedSize;
        const row = i * 5;
        if (
          t.state[i] === 1 &&
          t.keys[row] === entry.dataOffset &&
          t.keys[row + 1] === entry.compressedSize &&
          t.keys[row + 2] === entry.uncompressedSize &&
          t.keys[row + 3] === entry.crc32 &&
          t.keys[row + 4] === entry.method
        ) {
          this.workerEntries++;
          out[i] = {
            verdict: PASSED,
            sizeBytes: entry.uncompressedSize,
            sha256: hex.slice(i * 64, i * 64 + 64),
            kind: FILE_KINDS[t.kinds[i]!]!,
          };
        } else out[i] = inspectEntry(this.bytes, entry);
      }
      options.onChunk?.(compressed);
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
