/**
 * Child process of bench/validate/run.ts: the least a Node.js program can do to check a ZIP the way
 * `unzip -t` does and hash it the way `sha256sum` does. It hashes the file, walks the central
 * directory and, for each entry, inflates it (through one reused zlib stream, as the validator
 * does), checks its CRC-32 and hashes it (svc keeps a per-file sha256). No names, no caps, no
 * checks, no report: what is left is Node's start-up and its zlib, so this is the floor svc
 * validate's figure is measured against, beside the native tools.
 *   node bench/validate/floor.mjs PACKAGE [--timings]
 * --timings prints its steps' milliseconds as JSON (the bench sets them beside svc validate --timings).
 */
import { createHash, hash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as zlib from "node:zlib";

const started = performance.now();
const bytes = readFileSync(process.argv[2]);
createHash("sha256").update(bytes).digest("hex");
const hashed = performance.now();
const end = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
const count = bytes.readUInt16LE(end + 10);
const stream = zlib.createInflateRaw();
const handle = stream._handle;
const state = stream._writeState;
let bad = 0;
for (let i = 0, p = bytes.readUInt32LE(end + 16); i < count; i++) {
  const method = bytes.readUInt16LE(p + 10);
  const crc = bytes.readUInt32LE(p + 16);
  const compressedSize = bytes.readUInt32LE(p + 20);
  const size = bytes.readUInt32LE(p + 24);
  const local = bytes.readUInt32LE(p + 42);
  p += 46 + bytes.readUInt16LE(p + 28) + bytes.readUInt16LE(p + 30) + bytes.readUInt16LE(p + 32);
  const start = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
  const compressed = bytes.subarray(start, start + compressedSize);
  let data = compressed;
  if (method === 8) {
    handle.reset();
    const out = Buffer.allocUnsafe(size + 2);
    handle.writeSync(zlib.constants.Z_FINISH, compressed, 0, compressed.length, out, 0, out.length);
    data = out.subarray(0, out.length - state[0]);
  }
  if (zlib.crc32(data) >>> 0 !== crc) bad++;
  hash("sha256", data, "hex");
}
if (bad > 0) throw new Error(`${bad} entries failed their CRC`);
if (process.argv.includes("--timings")) {
  // performance.now() counts from the process's start, so `started` is Node's own start-up.
  const steps = { start: started, hash: hashed - started, entries: performance.now() - hashed };
  process.stdout.write(`${JSON.stringify(steps)}\n`);
}
