/**
 * `svc build`'s writer: the render (site.ts) handed to a sink that compares each file with the disk
 * once, keeps only what changed (in memory up to a budget, beyond it in staging files) and commits it
 * as one transaction with the stale files removed.
 */
import { closeSync, mkdirSync, openSync, readFileSync, readSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { type CommitOptions, type CommitResult, commitFiles, type FileContent } from "./atomic-files.ts";
import { listGeneratedFiles, renderSiteFiles, type SiteInputs, type StreamedSiteInputs } from "./site.ts";

/** Reused by sameAsDisk for files up to 1 MiB, so comparing 50,000 pages allocates no buffer each. */
const scratch = { file: Buffer.allocUnsafe(1 << 20), text: Buffer.allocUnsafe(1 << 20) };

/** Whether the file at `full` has exactly the bytes of `text` (its size settles most differences unread). */
export function sameAsDisk(full: string, text: string): boolean {
  let size: number;
  try {
    size = statSync(full).size;
  } catch {
    return false;
  }
  const length = Buffer.byteLength(text, "utf8");
  if (size !== length) return false;
  if (length > scratch.file.length) return readFileSync(full).equals(Buffer.from(text, "utf8"));
  const fd = openSync(full, "r");
  try {
    for (let at = 0; at < length; ) {
      const n = readSync(fd, scratch.file, at, length - at, at);
      if (n === 0) return false;
      at += n;
    }
  } finally {
    closeSync(fd);
  }
  scratch.text.write(text, 0, "utf8");
  return scratch.file.compare(scratch.text, 0, length, 0, length) === 0;
}

/**
 * How many bytes of changed files a build holds in memory; the rest wait in staging files until the
 * commit copies them in (a first build of 50,000 mods x 5 writes about 1 GB).
 */
export const HELD_BYTES = 64 * 1024 * 1024;

/** How large one staging file grows before the next is started. */
const PACK_BYTES = 64 * 1024 * 1024;

/**
 * Changed files written one after another into a few large staging files ("packs"), each handed to
 * the commit as a spliced range of its pack: a first build stages ~150,000 files in ~16 files
 * instead of one file each (a create and an unlink apiece). A pack's identity (size, mtime, inode),
 * which the commit checks before it copies a range, is set when the pack is closed: close() before
 * the commit.
 */
class StagingPacks {
  private readonly dir: string;
  private fd: number | undefined;
  private path = "";
  private size = 0;
  private expect = { size: 0, mtimeMs: 0, ino: 0 };
  /** How many files were staged. */
  count = 0;
  private packs = 0;

  constructor(dir: string) {
    this.dir = dir;
  }

  add(text: string): FileContent {
    if (this.fd === undefined || this.size >= PACK_BYTES) this.next();
    const bytes = Buffer.from(text, "utf8");
    for (let at = 0; at < bytes.length; )
      at += writeSync(this.fd!, bytes, at, bytes.length - at, this.size + at);
    const part = { start: this.size, end: this.size + bytes.length };
    this.size += bytes.length;
    this.count++;
    return { splice: { source: this.path, expect: this.expect, parts: [part] } };
  }

  private next(): void {
    this.close();
    if (this.packs === 0) mkdirSync(this.dir, { recursive: true });
    this.path = join(this.dir, `site-${this.packs++}`);
    this.fd = openSync(this.path, "w");
    this.size = 0;
    this.expect = { size: 0, mtimeMs: 0, ino: 0 };
  }

  /** Closes the current pack and records its identity in every range handed out of it. */
  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
    const { size, mtimeMs, ino } = statSync(this.path);
    Object.assign(this.expect, { size, mtimeMs, ino });
  }
}

/**
 * `svc build`'s render and write in one pass: every file is rendered (renderSiteFiles), compared with
 * the disk once, and only the files that differ are kept, then committed as one transaction with the
 * stale ones removed (writeSite's transaction, without a second comparison). Changed files are held
 * in memory up to `heldBytes`, and beyond it written to `staging` (a folder the caller owns and
 * removes, such as stagingDir(root) under the publish lock) for the commit to copy: memory does not
 * grow with the site. From StreamedSiteInputs no mod's records are held beyond its own files, and a
 * document that lists every mod and is already on disk is compared in chunks, never made whole.
 * `files`: how many files the site has.
 */
export function renderAndWriteSite(
  inputs: SiteInputs | StreamedSiteInputs,
  siteDir: string,
  options: { commit?: CommitOptions; now?: () => Date; staging?: string; heldBytes?: number } = {},
): CommitResult & { files: number; staged: number } {
  const produced = new Set<string>();
  const write = new Map<string, FileContent>();
  const heldBytes = options.heldBytes ?? HELD_BYTES;
  const packs = options.staging === undefined ? undefined : new StagingPacks(options.staging);
  let held = 0;
  let same = 0;
  renderSiteFiles(
    inputs,
    siteDir,
    (path, text, onDisk) => {
      if (produced.has(path)) {
        // A page made again (a streamed render found that a mod it links lists nothing): the new
        // text replaces the first.
        if (!write.has(path)) same--;
        write.delete(path);
      }
      produced.add(path);
      if (onDisk === "same" || (onDisk === undefined && sameAsDisk(join(siteDir, path), text))) {
        same++;
        return;
      }
      held += text.length;
      write.set(path, packs === undefined || held <= heldBytes ? text : packs.add(text));
    },
    options.now,
    { textOfSame: false },
  );
  packs?.close();
  const stale = listGeneratedFiles(siteDir).filter((path) => !produced.has(path));
  const result = commitFiles(
    siteDir,
    { write, changed: new Set(write.keys()), delete: stale },
    options.commit,
  );
  return { ...result, unchanged: result.unchanged + same, files: produced.size, staged: packs?.count ?? 0 };
}
