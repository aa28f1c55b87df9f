// The inflate worker (node:worker_threads): inflates, CRC-checks, hashes and takes the sniffing
// window of a package's file entries on the second core while the main thread checks the structure
// and the names, both claiming chunks of entries from one shared counter (src/validation/
// inflate-pool.ts). Plain JavaScript so Node loads it as it is, in the source tree and from a bundle
// (whose import.meta points back at src/); the inflating itself is zip/inflate-raw.mjs, the same
// code the main thread runs, and the main thread judges every entry's facts (reader.ts judgeInflate).
import { parentPort, workerData } from "node:worker_threads";
import { inflateFacts, sha256Hex, sniffWindow } from "./zip/inflate-raw.mjs";

/** The package, shared with the main thread (never copied again). */
const bytes = Buffer.from(workerData.bytes);

/**
 * One chunk of entries: each one's facts, and for an entry whose size, stream and CRC are right its
 * sha256 and sniffing window (all windows in one transferred buffer).
 */
function inspectChunk(table, chunk, chunkSize, count) {
  const first = chunk * chunkSize;
  const last = Math.min(count, first + chunkSize);
  const facts = [];
  const sha256 = [];
  const windows = [];
  const windowEnds = new Int32Array(last - first);
  let windowBytes = 0;
  for (let i = first; i < last; i++) {
    const row = i * 5;
    const dataOffset = table[row];
    const compressedSize = table[row + 1];
    const declared = table[row + 2];
    const expectedCrc = table[row + 3];
    const method = table[row + 4];
    const result = inflateFacts(bytes.subarray(dataOffset, dataOffset + compressedSize), method, declared);
    if (result.failure !== undefined) {
      facts.push({ failure: result.failure });
      sha256.push(null);
    } else {
      const { data, unread, crc } = result;
      facts.push({ length: data.length, unread, crc });
      if (unread === 0 && data.length === declared && crc === expectedCrc) {
        sha256.push(sha256Hex(data));
        const window = sniffWindow(data);
        windows.push(window);
        windowBytes += window.length;
      } else sha256.push(null);
    }
    windowEnds[i - first] = windowBytes;
  }
  const joined = new Uint8Array(windowBytes);
  let at = 0;
  for (const w of windows) {
    joined.set(w, at);
    at += w.length;
  }
  return { chunk, facts, sha256, windows: joined.buffer, windowEnds };
}

parentPort.on("message", (job) => {
  const table = new Float64Array(job.table);
  const next = new Int32Array(job.counter);
  const chunks = Math.ceil(job.count / job.chunkSize);
  for (;;) {
    const chunk = Atomics.add(next, 0, 1);
    if (chunk >= chunks) break;
    const result = inspectChunk(table, chunk, job.chunkSize, job.count);
    parentPort.postMessage(result, [result.windows]);
  }
  parentPort.postMessage({ done: true });
});
