// The inflate worker (node:worker_threads): inflates, CRC-checks, hashes and sniffs a package's
// entries on the second core while the main thread reads the structure and checks the names
// (src/validation/inflate-pool.ts). It starts as soon as the package's bytes are in memory, before
// the structure is read: it walks the central directory and the local headers itself, only far
// enough to find each entry's data, and writes what it finds into memory both threads share. The
// main thread uses an entry's answer only when the entry its own reader made has the same data
// offset, sizes, CRC-32 and method, and when its inflate passed; every other entry (and every chunk
// the worker did not answer) it inflates itself, so the report is the one the main thread alone
// writes. Plain JavaScript so Node loads it as it is, in the source tree and from a bundle (whose
// import.meta points back at src/); the inflating and sniffing are zip/inflate-raw.mjs and
// zip/sniff.mjs, the same code the main thread runs.
import { hash } from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import { inflateFactsBorrowed, sniffWindow } from "./zip/inflate-raw.mjs";
import { FILE_KINDS, sniffFileType } from "./zip/sniff.mjs";

const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
/** Encryption flags (traditional, strong, masked headers): such an entry is the main thread's. */
const ENCRYPTED = 0x0001 | 0x0040 | 0x2000;

const { bytes: memory, cdOffset, cdSize, count, chunkSize, caps, shared } = workerData;
/** The package, shared with the main thread (never copied again). */
const bytes = Buffer.from(memory);
const control = new Int32Array(shared.control);
const keys = new Uint32Array(shared.keys);
const state = new Uint8Array(shared.state);
const kinds = new Uint8Array(shared.kinds);
const digests = Buffer.from(shared.digests);
const done = new Int32Array(shared.done);
const KIND_INDEX = new Map(FILE_KINDS.map((kind, i) => [kind, i]));

// DataView reads are builtins, fast before the JIT has compiled this loop (it runs once per package).
const view = new DataView(memory);
const u16 = (at) => view.getUint16(at, true);
const u32 = (at) => view.getUint32(at, true);

/**
 * Each entry's data offset, sizes, CRC-32 and method, from the central directory and its local
 * header, for the entries whose data lies whole before the directory and passes the policy's caps
 * (as the reader applies them: nothing past them is inflated here either); -1 where the walk gave
 * up. The main thread checks everything else; this only finds the bytes.
 */
function locateEntries() {
  const at = new Float64Array(count).fill(-1);
  const cdEnd = cdOffset + cdSize;
  let total = 0;
  for (let i = 0, p = cdOffset; i < count; i++) {
    if (p + 46 > cdEnd || u32(p) !== SIG_CENTRAL) break;
    const flags = u16(p + 8);
    const method = u16(p + 10);
    const crc = u32(p + 16);
    const compressedSize = u32(p + 20);
    const uncompressedSize = u32(p + 24);
    const local = u32(p + 42);
    const row = i * 5;
    p += 46 + u16(p + 28) + u16(p + 30) + u16(p + 32);
    total += uncompressedSize;
    // Past the total cap the reader inflates nothing: neither does this.
    if (total > caps.maxTotalUncompressedBytes) break;
    if (
      flags & ENCRYPTED ||
      (method !== 0 && method !== 8) ||
      (method === 0 && compressedSize !== uncompressedSize) ||
      uncompressedSize > caps.maxEntryUncompressedBytes ||
      (uncompressedSize >= caps.compressionRatioMinBytes &&
        uncompressedSize > caps.maxCompressionRatio * Math.max(compressedSize, 1)) ||
      local + 30 > cdOffset ||
      u32(local) !== SIG_LOCAL
    )
      continue;
    const dataOffset = local + 30 + u16(local + 26) + u16(local + 28);
    if (dataOffset + compressedSize > cdOffset) continue;
    keys[row] = dataOffset;
    keys[row + 1] = compressedSize;
    keys[row + 2] = uncompressedSize;
    keys[row + 3] = crc;
    keys[row + 4] = method;
    at[i] = dataOffset;
  }
  return at;
}

/** Inflates, verifies, hashes and sniffs the entries of one chunk; state 1 marks each that passed. */
function inspectChunk(at, chunk) {
  const first = chunk * chunkSize;
  const last = Math.min(count, first + chunkSize);
  for (let i = first; i < last; i++) {
    // The main thread found the layout unsafe: it inflates nothing, and nothing more is done here.
    if (Atomics.load(control, 1) !== 0) return;
    if (at[i] < 0) continue;
    const row = i * 5;
    const dataOffset = keys[row];
    const declared = keys[row + 2];
    const facts = inflateFactsBorrowed(
      bytes.subarray(dataOffset, dataOffset + keys[row + 1]),
      keys[row + 4],
      declared,
    );
    if (facts.failure !== undefined) continue;
    const { data } = facts;
    // Anything but a clean entry is left to the main thread, which writes the finding.
    if (facts.unread !== 0 || data.length !== declared || facts.crc !== keys[row + 3]) continue;
    const kind = KIND_INDEX.get(sniffFileType(sniffWindow(data)));
    // A kind missing from FILE_KINDS (none should be) is left to the main thread, never misnamed.
    if (kind === undefined) continue;
    kinds[i] = kind;
    // In hex, as the report has it: the main thread reads all of them as one string.
    digests.write(hash("sha256", data, "hex"), i * 64, 64, "latin1");
    state[i] = 1;
  }
}

const at = locateEntries();
const chunks = Math.ceil(count / chunkSize);
for (;;) {
  if (Atomics.load(control, 1) !== 0) break;
  const chunk = Atomics.add(control, 0, 1);
  if (chunk >= chunks) break;
  inspectChunk(at, chunk);
  // Published with an atomic store: the main thread reads this chunk's rows only after loading it.
  Atomics.store(done, chunk, 1);
  parentPort.postMessage(chunk);
}
parentPort.postMessage(-1);
