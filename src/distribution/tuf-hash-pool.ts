import { hash } from "node:crypto";
import { closeSync, openSync, readSync } from "node:fs";
import { join, sep } from "node:path";
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";

/** How a file is read besides being hashed. */
export const PARSE_NONE = 0;
/** A per-mod versions document (`api/v1/mods/{modId}/versions.json`): its `versions`. */
export const PARSE_VERSIONS = 1;
/** The catalog: each mod's id and `versions` (entry by entry where its layout allows). */
export const PARSE_CATALOG = 2;

/**
 * The releases one parsed file lists, flat, five values each: the target path of its package
 * (artifactTargetPath: its site path when the site serves it, else `external/...`), that path's bin
 * index, and the recorded packageSizeBytes, sha256 and packageUrl.
 */
export type ListedReleases = Array<string | number>;
export const RELEASE_STRIDE = 5;

/** Each file's length, sha256 (of the bytes read now) and bin index, and the releases each parsed file lists. */
export interface FileDigests {
  length(index: number): number;
  sha256(index: number): string;
  /** The bin index of the file's site path (binForTarget's, as a number: the leftmost bits of its sha256). */
  bin(index: number): number;
  /** By file index, for each file parsed that lists any. */
  listed: Map<number, ListedReleases>;
  /** Files read by this thread and by the worker (each file once: they add up to all of them). */
  reads: { main: number; worker: number };
}

/** Below this many files one thread reads them all (a worker's start-up is ~30 ms). */
export const POOL_FROM = 2_000;
/** Files one thread claims at a time. */
const BATCH = 32;
/** How long the main thread waits for the worker's last batch before it gives up on it. */
const WORKER_TIMEOUT_MS = 300_000;

// The functions below run on both threads: this module calls them, and the worker evaluates their
// source text (Function.prototype.toString), so there is one definition of what is read, hashed and
// parsed. They use nothing but their parameters and JavaScript's globals (and the `__name` helper a
// name-keeping transform inserts, which the worker defines).

/**
 * Calls `each` with each release of a `versions` array (absent or null: none): the target path of
 * its package, as artifactTargetPath (tuf-layout.ts) names it (a test holds the two together), and
 * its recorded packageSizeBytes, sha256 and packageUrl.
 */
function eachRelease(
  modId: string,
  versions: unknown,
  each: (path: string, size: number, sha256: string, url: string) => void,
): void {
  if (versions === undefined || versions === null) return;
  for (const v of versions as Iterable<Record<string, unknown>>) {
    const packageUrl = v.packageUrl as string;
    const sitePath = `downloads/mods/${modId}/${v.version}/${v.fileName}`;
    const path = packageUrl.endsWith(`/${sitePath}`)
      ? sitePath
      : `external/mods/${modId}/${v.version}/${v.fileName}`;
    each(path, v.packageSizeBytes as number, v.sha256 as string, packageUrl);
  }
}

/**
 * The catalog's mods, each parsed on its own where the document has the layout serializeDocument
 * writes ("mods" its last field, each entry an object at indent 4 whose first key is "id"; a raw
 * newline is never inside a string, so "\n    }" closes the entry): at 50,000 mods one JSON.parse of
 * the 73 MB document built an object graph of ~0.5 GB for the few fields read here. Entries must
 * follow one another exactly to the array's end; any other layout is parsed whole.
 */
export function catalogModsOf(bytes: Buffer): Array<{ id: string; versions?: unknown }> {
  const MODS_ARRAY = Buffer.from('\n  "mods": [');
  const ENTRY_START = Buffer.from('\n    {\n      "id": ');
  const ENTRY_END = Buffer.from("\n    }");
  const ARRAY_END = Buffer.from("\n  ]\n}\n");
  const whole = () => JSON.parse(bytes.toString("utf8")).mods ?? [];
  const at = bytes.indexOf(MODS_ARRAY);
  if (at === -1) return whole();
  const mods: Array<{ id: string; versions?: unknown }> = [];
  let next = at + MODS_ARRAY.length;
  if (bytes[next] === 93 /* ] */) return whole();
  for (;;) {
    if (!bytes.subarray(next, next + ENTRY_START.length).equals(ENTRY_START)) return whole();
    const end = bytes.indexOf(ENTRY_END, next + ENTRY_START.length);
    if (end === -1) return whole();
    try {
      mods.push(JSON.parse(bytes.toString("utf8", next, end + ENTRY_END.length)));
    } catch {
      return whole();
    }
    next = end + ENTRY_END.length;
    if (bytes[next] === 44 /* , */) {
      next++;
      continue;
    }
    return next + ARRAY_END.length === bytes.length && bytes.subarray(next).equals(ARRAY_END)
      ? mods
      : whole();
  }
}

/**
 * The leftmost 32 bits of the sha256 of `text` as UTF-8: where a target path's bin is (binForTarget
 * takes its leftmost BIN_BIT_LENGTH bits). Computed here, in JavaScript, because node:crypto's
 * one-shot hash costs ~1-2.5 µs per call for a short string (the binding, a Buffer per digest) and a
 * full signing places ~350,000 paths: this takes ~0.3-0.6 µs. Only the bin layout depends on it (the
 * targets' own sha256 are node:crypto's); a test holds it to node:crypto on many paths.
 */
function sha256Leading32(text: string, scratch: Sha256Scratch): number {
  const K = scratch.k;
  let bytes = scratch.bytes;
  // UTF-8 needs at most 3 bytes per UTF-16 unit; + 9 for the padding's 0x80 and length, + a block.
  if (bytes.length < text.length * 3 + 73) bytes = scratch.bytes = new Uint8Array(text.length * 3 + 137);
  const length = scratch.encoder.encodeInto(text, bytes).written as number;
  const total = ((length + 9 + 63) >> 6) << 6;
  bytes.fill(0, length, total);
  bytes[length] = 0x80;
  const bits = length * 8;
  bytes[total - 5] = Math.floor(bits / 2 ** 32) & 0xff;
  bytes[total - 4] = bits >>> 24;
  bytes[total - 3] = (bits >>> 16) & 0xff;
  bytes[total - 2] = (bits >>> 8) & 0xff;
  bytes[total - 1] = bits & 0xff;
  const w = scratch.words;
  let h0 = 0x6a09e667 | 0;
  let h1 = 0xbb67ae85 | 0;
  let h2 = 0x3c6ef372 | 0;
  let h3 = 0xa54ff53a | 0;
  let h4 = 0x510e527f | 0;
  let h5 = 0x9b05688c | 0;
  let h6 = 0x1f83d9ab | 0;
  let h7 = 0x5be0cd19 | 0;
  for (let at = 0; at < total; at += 64) {
    for (let i = 0; i < 16; i++) {
      const o = at + i * 4;
      w[i] =
        ((bytes[o] as number) << 24) |
        ((bytes[o + 1] as number) << 16) |
        ((bytes[o + 2] as number) << 8) |
        (bytes[o + 3] as number);
    }
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15] as number;
      const y = w[i - 2] as number;
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = ((w[i - 16] as number) + s0 + (w[i - 7] as number) + s1) | 0;
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    let e = h4;
    let f = h5;
    let g = h6;
    let h = h7;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + (K[i] as number) + (w[i] as number)) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
    h5 = (h5 + f) | 0;
    h6 = (h6 + g) | 0;
    h7 = (h7 + h) | 0;
  }
  return h0 >>> 0;
}

const SHA256_K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

/** What sha256Leading32 reuses from call to call (and the round constants, so it names no global of this module). */
interface Sha256Scratch {
  bytes: Uint8Array;
  words: Int32Array;
  k: Int32Array;
  encoder: InstanceType<typeof TextEncoder>;
}

function sha256Scratch(k: Int32Array): Sha256Scratch {
  return { bytes: new Uint8Array(256), words: new Int32Array(64), k, encoder: new TextEncoder() };
}

/** sha256Leading32 for callers on this thread (a test compares it with node:crypto). */
export function leading32(text: string): number {
  return sha256Leading32(text, sha256Scratch(SHA256_K));
}

/**
 * A reader of whole files into one reused buffer (grown for a larger file; dropped after one above
 * 1 MiB, the catalog): ~100,000 files read into a buffer each made ~400 MB of short-lived buffers at
 * 50,000 mods, their allocation and garbage collection a fifth of a full signing. Reads to the end
 * of the file (a read that returns 0), so the bytes are those on disk now whatever their size was.
 * The buffer it returns is valid until its next call.
 */
function fileReader(fs: {
  openSync(path: string, flags: string): number;
  readSync(fd: number, buffer: Buffer, offset: number, length: number, position: null): number;
  closeSync(fd: number): void;
}): (file: string) => Buffer {
  const SMALL = 1 << 16;
  let buffer = Buffer.allocUnsafe(SMALL);
  return (file) => {
    if (buffer.length > 1 << 20) buffer = Buffer.allocUnsafe(SMALL);
    const fd = fs.openSync(file, "r");
    try {
      let n = 0;
      for (;;) {
        if (n === buffer.length) {
          const bigger = Buffer.allocUnsafe(buffer.length * 4);
          buffer.copy(bigger, 0, 0, n);
          buffer = bigger;
        }
        const read = fs.readSync(fd, buffer, n, buffer.length - n, null);
        if (read === 0) return buffer.subarray(0, n);
        n += read;
      }
    } finally {
      fs.closeSync(fd);
    }
  };
}

/** What both threads share of one digestFiles call (workerData). */
interface PoolJob {
  /** The site folder with a trailing separator: a file is `root + path`. */
  root: string;
  /** Site paths (`api/v1/...`). */
  paths: readonly string[];
  kinds: Uint8Array;
  /** Indexes of the files claimed one by one (the catalog). */
  solo: Int32Array;
  control: Int32Array;
  lengths: Float64Array;
  digests: Uint8Array;
  bins: Uint16Array;
  binShift: number;
  batch: number;
  /** SHA-256's round constants (sha256Leading32). */
  k: Int32Array;
}

/**
 * Reads and hashes the files of claimed batches until none is left, writing each length, digest and
 * bin index into the shared arrays, and parses the files `kinds` marks from the same bytes; returns
 * how many files it read. Claims go through one shared counter, so both threads share the work
 * however its cost is spread over the files. The parsed files (`solo`: the catalog, then the
 * versions documents) are claimed from a second counter: the worker takes them first, this thread
 * after its batches. The thread that parses the catalog keeps its externally hosted releases until
 * it is done, and drops each one a versions document it parses lists at the same target path: that
 * document's entry is signed in its place (collectPlacedTargets applies the catalog's first), so at
 * 50,000 mods ~250,000 catalog releases that every versions document repeats are neither placed in
 * a bin nor passed between threads. A served release of the catalog is always kept: its bytes are
 * checked against every entry that lists it.
 */
function hashBatches(
  job: PoolJob,
  soloFirst: boolean,
  /** The file's bytes, valid until the next call. */
  read: (file: string) => Buffer,
  sha256: (data: Buffer) => Buffer,
  listed: Array<[number, ListedReleases]>,
): number {
  const { root, paths, kinds, solo, control, lengths, digests, bins, binShift, batch } = job;
  const scratch = sha256Scratch(job.k);
  const binOf = (path: string) => sha256Leading32(path, scratch) >>> binShift;
  let reads = 0;
  let catalogAt = -1;
  const catalogServed: ListedReleases = [];
  const catalogExternal = new Map<string, [number, string, string]>();
  const one = (i: number) => {
    const path = paths[i] as string;
    const bytes = read(root + path);
    reads++;
    lengths[i] = bytes.length;
    digests.set(sha256(bytes), i * 32);
    bins[i] = binOf(path);
    const kind = kinds[i];
    if (kind === 1) {
      const modId = (/^api\/v1\/mods\/([^/]+)\/versions\.json$/.exec(path) as RegExpExecArray)[1] as string;
      const out: ListedReleases = [];
      eachRelease(modId, JSON.parse(bytes.toString("utf8")).versions, (target, size, digest, url) => {
        out.push(target, binOf(target), size, digest, url);
        if (catalogAt !== -1) catalogExternal.delete(target);
      });
      if (out.length > 0) listed.push([i, out]);
    } else if (kind === 2) {
      catalogAt = i;
      for (const mod of catalogModsOf(bytes)) {
        eachRelease(mod.id, mod.versions, (target, size, digest, url) => {
          if (target.startsWith("downloads/")) catalogServed.push(target, binOf(target), size, digest, url);
          else catalogExternal.set(target, [size, digest, url]);
        });
      }
    }
  };
  const solos = () => {
    for (;;) {
      const at = Atomics.add(control, 3, 1);
      if (at >= solo.length) return;
      one(solo[at] as number);
    }
  };
  if (soloFirst) solos();
  for (;;) {
    const start = Atomics.add(control, 0, batch);
    if (start >= paths.length) break;
    const end = Math.min(start + batch, paths.length);
    for (let i = start; i < end; i++) if (kinds[i] === 0) one(i);
  }
  if (!soloFirst) solos();
  if (catalogAt !== -1) {
    const out = catalogServed;
    for (const [target, [size, digest, url]] of catalogExternal)
      out.push(target, binOf(target), size, digest, url);
    listed.push([catalogAt, out]);
  }
  return reads;
}

const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const fs = require("node:fs");
// The helper a TypeScript runner that keeps function names (tsx, esbuild's keepNames) calls inside
// the functions below; a bundle without it never calls it.
const __name = (target, value) => Object.defineProperty(target, "name", { value, configurable: true });
const { hash } = require("node:crypto");
const { port } = workerData;
${fileReader.toString()}
${sha256Scratch.toString()}
${sha256Leading32.toString()}
${eachRelease.toString()}
${catalogModsOf.toString()}
${hashBatches.toString()}
// The job comes once the signing thread has listed the files (this thread starts while it walks).
port.once("message", (job) => {
  const { paths, solo, control } = job;
  const listed = [];
  let failure = null;
  let reads = 0;
  // Started: unless the main thread already gave up waiting for this thread to start (then it has
  // claimed every batch itself, and nothing is left to do or answer).
  if (Atomics.compareExchange(control, 2, 0, 1) === 0) {
    try {
      reads = hashBatches(job, true, fileReader(fs), (data) => hash("sha256", data, "buffer"), listed);
    } catch (error) {
      // Claim what is left, so the main thread stops taking batches; it rethrows this.
      Atomics.store(control, 0, paths.length);
      Atomics.store(control, 3, solo.length);
      failure = { code: (error && error.code) || null, message: String((error && error.message) || error) };
    }
    port.postMessage({ listed, failure, reads });
    Atomics.store(control, 1, 1);
    Atomics.notify(control, 1);
  }
  port.close();
});
`;

/** A hashing worker thread, started before its files are known (while the walk lists them). */
export interface HashWorker {
  worker: Worker;
  port: MessagePort;
}

/** Starts a hashing worker (its start-up, ~30 ms, then overlaps the walk); null when none can be. */
export function startHashWorker(): HashWorker | null {
  try {
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { port: port2 },
      transferList: [port2],
      // The worker needs nothing of the parent's flags (a --cpu-prof, a loader) or its stdin.
      execArgv: [],
      stdin: false,
    });
    worker.unref();
    return { worker, port: port1 };
  } catch {
    // No worker threads here (a restricted runtime): the signing thread reads every file.
    return null;
  }
}

/** Stops a hashing worker that will get no job (or whose job failed on this thread). */
export function stopHashWorker(hashWorker: HashWorker): void {
  hashWorker.port.close();
  void hashWorker.worker.terminate();
}

/**
 * Reads and hashes every file once, on both cores: a worker thread and this one claim batches of
 * paths from a shared counter, each reading a file, hashing the bytes it read and, for a file
 * `kinds` marks, parsing the same bytes for the releases it lists; each also places the file (and
 * each release's package) in its bin, `binBits` leftmost bits of the path's sha256. Synchronous,
 * like the signing that calls it (a publication signs under the publish lock without awaiting):
 * this thread does its share, then waits for the worker's last batch. A few files, or no worker to
 * be had: this thread reads them all. A file that cannot be read fails the whole call.
 */
export function digestFiles(
  siteDir: string,
  paths: readonly string[],
  kinds: Uint8Array,
  binBits: number,
  options: {
    /** A worker already started (startHashWorker), or null for none; by default one is started for POOL_FROM files. */
    worker?: HashWorker | null;
    /** A test's: this thread only waits for the worker (which reads everything, if it starts). */
    workerOnly?: boolean;
  } = {},
): FileDigests {
  const n = paths.length;
  const shared = new SharedArrayBuffer(16 + n * 8 + n * 32 + n * 2 + n);
  // [0] next unclaimed index, [1] the worker answered, [2] worker state: 0 not started, 1 started,
  // 2 given up, [3] next unclaimed solo file.
  const control = new Int32Array(shared, 0, 4);
  const lengths = new Float64Array(shared, 16, n);
  const digests = new Uint8Array(shared, 16 + n * 8, n * 32);
  const bins = new Uint16Array(shared, 16 + n * 40, n);
  const sharedKinds = new Uint8Array(shared, 16 + n * 42, n);
  sharedKinds.set(kinds.subarray(0, n));
  // The catalog first, then the versions documents (see hashBatches).
  const soloFiles: number[] = [];
  for (let i = 0; i < n; i++) if (sharedKinds[i] === PARSE_CATALOG) soloFiles.push(i);
  for (let i = 0; i < n; i++) if (sharedKinds[i] === PARSE_VERSIONS) soloFiles.push(i);
  const solo = new Int32Array(new SharedArrayBuffer(4 * soloFiles.length));
  solo.set(soloFiles);
  const job: PoolJob = {
    root: join(siteDir, sep),
    paths,
    kinds: sharedKinds,
    solo,
    control,
    lengths,
    digests,
    bins,
    binShift: 32 - binBits,
    batch: BATCH,
    k: SHA256_K,
  };

  // The worker given (started while the files were listed), or one started now for enough files.
  let hashWorker =
    options.worker === undefined ? (n >= POOL_FROM ? startHashWorker() : null) : options.worker;
  if (hashWorker && n < POOL_FROM) {
    stopHashWorker(hashWorker);
    hashWorker = null;
  }
  hashWorker?.port.postMessage(job);
  const listed: Array<[number, ListedReleases]> = [];
  const sha256 = (data: Buffer | string) => hash("sha256", data, "buffer");
  const reads = { main: 0, worker: 0 };
  try {
    if (hashWorker && options.workerOnly) Atomics.wait(control, 1, 0, WORKER_TIMEOUT_MS);
    reads.main = hashBatches(job, false, fileReader({ openSync, readSync, closeSync }), sha256, listed);
  } catch (error) {
    Atomics.store(control, 0, n);
    Atomics.store(control, 3, solo.length);
    if (hashWorker) stopHashWorker(hashWorker);
    throw error;
  }
  // A worker that has not started by now finds nothing left to claim: it is told not to bother.
  if (hashWorker && Atomics.compareExchange(control, 2, 0, 2) === 1) {
    const answered =
      Atomics.wait(control, 1, 0, WORKER_TIMEOUT_MS) !== "timed-out" || Atomics.load(control, 1) === 1;
    const message = answered ? receiveMessageOnPort(hashWorker.port) : undefined;
    hashWorker.port.close();
    if (!message) {
      void hashWorker.worker.terminate();
      throw new Error("the hashing worker did not finish its files");
    }
    const {
      listed: theirs,
      failure,
      reads: workerReads,
    } = message.message as {
      listed: Array<[number, ListedReleases]>;
      failure: { code: string | null; message: string } | null;
      reads: number;
    };
    reads.worker = workerReads;
    if (failure) {
      const error = new Error(failure.message) as NodeJS.ErrnoException;
      if (failure.code) error.code = failure.code;
      throw error;
    }
    for (const entry of theirs) listed.push(entry);
  } else if (hashWorker) stopHashWorker(hashWorker);
  return {
    length: (index) => lengths[index]!,
    sha256: (index) => Buffer.from(digests.buffer, digests.byteOffset + index * 32, 32).toString("hex"),
    bin: (index) => bins[index]!,
    listed: new Map(listed),
    reads,
  };
}
