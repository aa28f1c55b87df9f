import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { basename, dirname, join } from "node:path";

function writeAllAndSync(fd: number, data: Uint8Array | string): void {
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  let offset = 0;
  while (offset < bytes.length) offset += writeSync(fd, bytes, offset);
  fsyncSync(fd);
}

/**
 * Writes beside the target, fsyncs, and renames over it: a reader (or a crash) sees either the old
 * file or the new one, never half of either. The temporary name is random and created exclusively,
 * so two writers never share one, and it is removed whenever the write or the rename fails.
 */
export function writeFileAtomic(path: string, data: Uint8Array | string, mode = 0o644): void {
  const temp = join(dirname(path), `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  const fd = openSync(temp, "wx", mode);
  try {
    writeAllAndSync(fd, data);
  } catch (error) {
    closeSync(fd);
    rmSync(temp, { force: true });
    throw error;
  }
  closeSync(fd);
  try {
    renameSync(temp, path);
  } catch (error) {
    rmSync(temp, { force: true });
    throw error;
  }
}

/**
 * Writes and fsyncs a file that no reader names yet (no rename needed), making its folder.
 * `exclusive` refuses an existing file (EEXIST) instead of truncating it.
 */
export function writeFileSynced(
  path: string,
  data: Uint8Array | string,
  options: { exclusive?: boolean; mode?: number } = {},
): void {
  mkdirSync(dirname(path), { recursive: true });
  const fd = openSync(path, options.exclusive ? "wx" : "w", options.mode ?? 0o644);
  try {
    writeAllAndSync(fd, data);
  } finally {
    closeSync(fd);
  }
}

/**
 * Makes a file's or a folder's entry durable (a rename or a new name in it); a path already gone
 * has nothing to sync.
 */
export function fsyncPath(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  try {
    fsyncSync(fd);
  } catch (error) {
    // Some platforms and filesystems refuse fsync on a directory; there is nothing more to do there.
    if (!["EISDIR", "EINVAL", "EPERM", "EBADF"].includes((error as NodeJS.ErrnoException).code ?? ""))
      throw error;
  } finally {
    closeSync(fd);
  }
}
