import * as zlib from "node:zlib";

type Crc32 = (data: Uint8Array, initial?: number) => number;

let table: Uint32Array | undefined;

function tableCrc32(data: Uint8Array, initial = 0): number {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = (initial ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) crc = table[(crc ^ data[i]!) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

// zlib.crc32 arrived in Node 20.15/22.2 and runs at memory speed; the table version is only a
// fallback for older runtimes, about 20x slower.
const native = (zlib as unknown as { crc32?: Crc32 }).crc32;

/** CRC-32 (ISO-HDLC, as used by ZIP) of `data`, continuing from `initial`. */
export const crc32: Crc32 = typeof native === "function" ? (d, i = 0) => native(d, i) >>> 0 : tableCrc32;

/** Exposed so a test can prove both implementations agree. */
export const crc32Table: Crc32 = tableCrc32;
export const hasNativeCrc32 = typeof native === "function";
