/**
 * Many small entries are scanned as one ustar stream instead of one clamd request each: ClamAV
 * unpacks the tar and scans every member as its own file, so each inflated entry is still scanned
 * whole, while thousands of requests (each a temp file inside clamd) become a handful. Members get
 * generated names only; archive names never reach the scanner or the disk. A batch that is not clean
 * is rescanned member by member, so a hit is attributed to its entry.
 */
const BLOCK = 512;

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, "0")}\0`;
}

function header(name: string, size: number): Buffer {
  const h = Buffer.alloc(BLOCK, 0);
  h.write(name, 0, 100, "ascii");
  h.write(octal(0o644, 8), 100, "ascii");
  h.write(octal(0, 8), 108, "ascii");
  h.write(octal(0, 8), 116, "ascii");
  h.write(octal(size, 12), 124, "ascii");
  h.write(octal(0, 12), 136, "ascii");
  h.write("        ", 148, "ascii");
  h.write("0", 156, "ascii");
  h.write("ustar\0", 257, "ascii");
  h.write("00", 263, "ascii");
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  return h;
}

/** The tar stream of `members` as chunks (no copy of member bytes). */
export function tarChunks(members: Uint8Array[]): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  members.forEach((bytes, i) => {
    chunks.push(header(`m${String(i).padStart(6, "0")}.bin`, bytes.length), bytes);
    const pad = (BLOCK - (bytes.length % BLOCK)) % BLOCK;
    if (pad > 0) chunks.push(Buffer.alloc(pad));
  });
  chunks.push(Buffer.alloc(BLOCK * 2));
  return chunks;
}
