// Plain JavaScript on purpose: the inflate worker (src/validation/inflate-worker.mjs) loads this file
// with Node alone, without a TypeScript loader (Node 20 runs no .ts), in the source tree and beside
// the CLI and action bundles alike (their import.meta points back at src/). reader.ts imports the
// same functions, so an entry inflates through one implementation whichever thread runs it. Types:
// inflate-raw.d.mts.
import * as crypto from "node:crypto";
import * as zlib from "node:zlib";

let table;

function tableCrc32(data, initial = 0) {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = (initial ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) crc = table[(crc ^ data[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

// zlib.crc32 arrived in Node 20.15/22.2 and runs at memory speed; the table version is only a
// fallback for older runtimes, about 20x slower.
const native = zlib.crc32;

/** CRC-32 (ISO-HDLC, as used by ZIP) of `data`, continuing from `initial`. */
export const crc32 = typeof native === "function" ? (d, i = 0) => native(d, i) >>> 0 : tableCrc32;

/** Exposed so a test can prove both implementations agree. */
export const crc32Table = tableCrc32;
export const hasNativeCrc32 = typeof native === "function";

/** One inflateRawSync call per entry: every entry on a runtime without the reused inflater, and large ones. */
export const inflateOneShot = (compressed, declaredSize) => {
  try {
    const result = zlib.inflateRawSync(compressed, {
      maxOutputLength: declaredSize + 1,
      // Output chunks sized to the declared size: small entries no longer allocate 16 KiB each.
      chunkSize: Math.min(Math.max(declaredSize + 1, 64), 1 << 20),
      info: true,
    });
    return { data: result.buffer, unread: compressed.length - result.engine.bytesWritten };
  } catch (error) {
    if (error?.code === "ERR_BUFFER_TOO_LARGE") return { failure: "too_large" };
    return { failure: { corrupt: error.message } };
  }
};

/** Entries up to this declared size inflate through one reused zlib stream. */
export const SMALL_ENTRY_BYTES = 256 * 1024;

let reused;

/**
 * zlib.inflateRawSync builds a zlib stream for every call and frees it after: ~10 µs an entry
 * before a byte is inflated, most of the cost of a package of 20,000 small files. This inflater
 * resets one stream per thread instead and writes each entry through the handle Node's own
 * inflateRawSync writes through (lib/zlib.js processChunkSync: writeSync into a buffer, then the two
 * counters it leaves in _writeState), with the same Z_FINISH and the same errors. Those are Node
 * internals: when a runtime lacks them this returns null and every entry takes inflateRawSync;
 * test/validation/fast-paths.test.ts checks both answer alike.
 */
export function reusedInflater() {
  if (reused !== undefined) return reused;
  const stream = zlib.createInflateRaw();
  const handle = stream._handle;
  const state = stream._writeState;
  if (
    !handle ||
    typeof handle.writeSync !== "function" ||
    typeof handle.reset !== "function" ||
    !(state instanceof Uint32Array) ||
    state.length < 2
  ) {
    reused = null;
    return null;
  }
  let error = null;
  // Errors come back through this callback during writeSync; the stream is never destroyed.
  handle.onerror = (message) => {
    error = message;
  };
  reused = (compressed, declaredSize, scratch) => {
    handle.reset();
    error = null;
    // Room for the cap and one byte past it: a full buffer means more than the cap, as for
    // inflateRawSync's maxOutputLength. A caller's scratch buffer, when it has that room, is
    // written into instead of a new one (inflateFactsBorrowed).
    const output =
      scratch !== undefined && scratch.length >= declaredSize + 2
        ? scratch.subarray(0, declaredSize + 2)
        : Buffer.allocUnsafe(declaredSize + 2);
    handle.writeSync(zlib.constants.Z_FINISH, compressed, 0, compressed.length, output, 0, output.length);
    if (error !== null) return { failure: { corrupt: error } };
    const outputLeft = state[0];
    if (outputLeft === 0) return { failure: "too_large" };
    return { data: output.subarray(0, output.length - outputLeft), unread: state[1] };
  };
  return reused;
}

/**
 * What inflating one entry's stored bytes gave: the data with its CRC-32 and how many input bytes the
 * deflate stream left unread, or why it failed. inflateEntry (reader.ts) judges these facts.
 */
export function inflateFacts(compressed, method, declaredSize) {
  if (method === 0) return { data: compressed, unread: 0, crc: crc32(compressed) };
  const inflated =
    declaredSize <= SMALL_ENTRY_BYTES
      ? (reusedInflater() ?? inflateOneShot)(compressed, declaredSize)
      : inflateOneShot(compressed, declaredSize);
  if (inflated.failure !== undefined) return inflated;
  // No CRC of data that is already wrong in size (inflateEntry reports the size first).
  const crc = inflated.unread === 0 && inflated.data.length === declaredSize ? crc32(inflated.data) : 0;
  return { data: inflated.data, unread: inflated.unread, crc };
}

/** The one output buffer inflateFactsBorrowed lends, made on first use. */
let scratch;

/**
 * inflateFacts whose data, for a deflated entry of up to SMALL_ENTRY_BYTES, lies in one output buffer
 * this thread reuses: it is valid only until the next call, so the caller hashes, checks and sniffs it
 * at once and copies what it keeps. 20,000 small entries then allocate no output buffer each (a
 * buffer and its share of an 8 KiB pool slab apiece, all garbage a moment later).
 */
export function inflateFactsBorrowed(compressed, method, declaredSize) {
  if (method === 0 || declaredSize > SMALL_ENTRY_BYTES) return inflateFacts(compressed, method, declaredSize);
  const inflater = reusedInflater();
  if (inflater === null) return inflateFacts(compressed, method, declaredSize);
  scratch ??= Buffer.allocUnsafe(SMALL_ENTRY_BYTES + 2);
  const inflated = inflater(compressed, declaredSize, scratch);
  if (inflated.failure !== undefined) return inflated;
  const crc = inflated.unread === 0 && inflated.data.length === declaredSize ? crc32(inflated.data) : 0;
  return { data: inflated.data, unread: inflated.unread, crc };
}

/** sha256 in hex, one-shot as src/lib/hash.ts hashes (this file runs in the inflate worker, untranspiled). */
export function sha256Hex(data) {
  return crypto.hash("sha256", data, "hex");
}

/**
 * The bytes the signature sniffer reads of an entry: its head (and its tail, where some formats keep
 * their magic); never megabytes.
 */
export function sniffWindow(data) {
  return data.length <= 4096
    ? data
    : tailAware(data.subarray(0, 4096), data.subarray(data.length - 4096), data.length);
}

/** The head and the tail of something `length` bytes long, without repeating the bytes they share. */
export function tailAware(head, tail, length) {
  if (length <= head.length) return head;
  if (length <= 8192)
    return Buffer.concat([head, tail.subarray(Math.max(0, head.length - (length - tail.length)))]);
  return Buffer.concat([head, tail]);
}
