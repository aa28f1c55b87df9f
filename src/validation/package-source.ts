import { fstatSync, readSync, type Stats } from "node:fs";
import { open } from "node:fs/promises";
import type { ValidationInput } from "./types.ts";
import { type ByteSource, bufferSource } from "./zip/reader.ts";

const READ_WINDOW = 1024 * 1024;
/**
 * A package up to this size is read into memory once, as `unzip` does with its buffers: hashing,
 * the local headers and the entries then cost no further system call or copy (a package of 20,000
 * small entries was read three times over through the window). Larger ones keep positional reads,
 * so peak memory stays near Node's own plus the largest entry.
 */
export const READ_WHOLE_BYTES = 16 * 1024 * 1024;

type OpenedPackage =
  | { source: ByteSource; close: () => Promise<void>; unchanged: () => Promise<boolean> }
  | { unreadable: { code: string; message: string }; sizeBytes: number };

/**
 * Bytes given in memory are used as they are; a path is opened once and read with positional reads
 * (hash, central directory, then entry by entry), so the package never has to sit in memory whole.
 */
export async function openPackage(
  source: ValidationInput["package"],
  maxBytes: number,
): Promise<OpenedPackage> {
  const tooLarge = (size: number) => ({
    unreadable: {
      code: "package_too_large",
      message: `the package is ${size} bytes; maxPackageBytes is ${maxBytes}`,
    },
    sizeBytes: size,
  });
  if ("source" in source) {
    if (source.source.size > maxBytes) return tooLarge(source.source.size);
    return { source: source.source, close: async () => {}, unchanged: async () => true };
  }
  if ("early" in source && source.early) {
    // Opened and read whole ahead (early-package.ts openEarly), under the same caps as below.
    const { early } = source;
    return {
      source: bufferSource(early.bytes),
      close: async () => early.close(),
      unchanged: async () => sameFile(early.before, fstatSync(early.fd)),
    };
  }
  if ("bytes" in source) {
    if (source.bytes.length > maxBytes) return tooLarge(source.bytes.length);
    const bytes = Buffer.from(source.bytes.buffer, source.bytes.byteOffset, source.bytes.byteLength);
    return { source: bufferSource(bytes), close: async () => {}, unchanged: async () => true };
  }
  const handle = await open(source.path, "r");
  const before = await handle.stat();
  if (!before.isFile() || before.size > maxBytes) {
    await handle.close();
    if (!before.isFile()) throw new Error(`${source.path} is not a regular file`);
    return tooLarge(before.size);
  }
  const fd = handle.fd;
  const size = before.size;
  const unchanged = async () => sameFile(before, await handle.stat());
  if (size <= READ_WHOLE_BYTES) {
    // Into memory the inflate worker can share (inflate-pool.ts): no copy when it starts.
    const bytes = readAt(fd, size, 0, size, Buffer.from(new SharedArrayBuffer(size)));
    return { source: bufferSource(bytes), close: () => handle.close(), unchanged };
  }
  const direct = (offset: number, length: number): Buffer => readAt(fd, size, offset, length);
  // Entries are visited in file order, so small reads (headers, small files) are served from one
  // 1 MiB window instead of a system call each. A window is never reused, so returned slices stay valid.
  let window: { base: number; buf: Buffer } = { base: 0, buf: Buffer.alloc(0) };
  // Each pass over the entries (local headers, then contents) starts again near the front: those
  // restarts may refill the window backwards. Past this budget a backward read costs a small read
  // of its own, so hostile offsets (a central directory that points backwards and forwards) cost
  // at most this many extra megabytes, never one per entry.
  let backwardRefills = 16;
  return {
    source: {
      size,
      read(offset, length) {
        if (length > READ_WINDOW / 4) return direct(offset, length);
        if (offset < window.base || offset + length > window.base + window.buf.length) {
          if (offset < window.base + window.buf.length) {
            if (backwardRefills === 0) return direct(offset, length);
            backwardRefills--;
          }
          window = { base: offset, buf: direct(offset, Math.max(READ_WINDOW, length)) };
        }
        const start = offset - window.base;
        return window.buf.subarray(start, Math.min(start + length, window.buf.length));
      },
    },
    close: () => handle.close(),
    // Staged packages are immutable; a file that changes under the validator is an error, not a result.
    unchanged,
  };
}

/** Whether a file's status is the one it had when it was opened. */
function sameFile(before: Stats, after: Stats): boolean {
  return after.size === before.size && after.mtimeMs === before.mtimeMs && after.ino === before.ino;
}

/** Up to length bytes at offset of an open file of the given size (short only at its end). */
export function readAt(fd: number, size: number, offset: number, length: number, into?: Buffer): Buffer {
  const want = Math.max(0, Math.min(length, size - offset));
  const buffer = into && into.length >= want ? into : Buffer.allocUnsafe(want);
  let got = 0;
  while (got < want) {
    const n = readSync(fd, buffer, got, want - got, offset + got);
    if (n === 0) break;
    got += n;
  }
  return buffer.subarray(0, got);
}

export function* chunksOf(source: ByteSource, chunkBytes = 1 << 20): Generator<Buffer> {
  for (let at = 0; at < source.size; at += chunkBytes) yield source.read(at, chunkBytes);
}
