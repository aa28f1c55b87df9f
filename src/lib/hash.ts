import { createHash, hash } from "node:crypto";
import { createReadStream } from "node:fs";

/** Streams a file through sha256 with 1 MiB reads: never holds a large artifact in memory twice. */
export async function hashFile(path: string): Promise<{ sha256: string; sizeBytes: number }> {
  const digest = createHash("sha256");
  let sizeBytes = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
    digest.update(chunk as Buffer);
    sizeBytes += (chunk as Buffer).length;
  }
  return { sha256: digest.digest("hex"), sizeBytes };
}

/** sha256 of bytes, or of text as UTF-8 (the bytes a document is written with). */
// One-shot hashing (Node 20.12+, below the engines floor) skips the Hash object each call would
// otherwise build: it runs for every entry of every package validated.
export function sha256Hex(data: Uint8Array | string): string {
  return hash("sha256", data, "hex");
}

/** sha256 of bytes, or of text as UTF-8, as the 32 raw bytes of the digest. */
export function sha256Bytes(data: Uint8Array | string): Buffer {
  return hash("sha256", data, "buffer");
}
