import { createHash } from "node:crypto";
import { closeSync, fstatSync, openSync, readSync, writeSync } from "node:fs";
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import { fsyncPath } from "../lib/atomic-write.ts";
import { FSYNC_LANES_SOURCE, type FsyncFailure, throwFsyncFailures } from "../lib/fsync-many.ts";

/**
 * A file made of byte ranges of another file and new bytes, written by copying the ranges in chunks
 * (never the whole source in memory): how a publication rewrites an index document that lists every
 * mod with one entry spliced in. The source is read at commit time, under the tree's lock, and must
 * still be the file the ranges were measured on (`expect`: else the commit fails, changing nothing).
 * A spliced file is always written (the caller made it because it differs), never compared.
 */
export interface SplicedContent {
  splice: {
    source: string;
    expect: { size: number; mtimeMs: number; ino: number };
    parts: ReadonlyArray<Uint8Array | { start: number; end: number }>;
  };
}

export function isSpliced(content: unknown): content is SplicedContent {
  return typeof content === "object" && content !== null && "splice" in content;
}

/** The length and sha256 of a file as a commit wrote it (what a signer would read back). */
export interface FileDigest {
  length: number;
  sha256: string;
}

/** Bytes a spliced file's length comes to (its ranges and its new bytes). */
export function splicedLength(content: SplicedContent): number {
  let length = 0;
  for (const part of content.splice.parts)
    length += part instanceof Uint8Array ? part.byteLength : part.end - part.start;
  return length;
}

/** Bytes copied per read of a spliced file's source. */
const SPLICE_CHUNK = 1 << 20;

/**
 * Writes one content file of a transaction (not yet fsynced: the commit syncs them all at once) and,
 * when asked, returns its digest measured from the very bytes written.
 */
export function writeContent(
  file: string,
  content: string | Uint8Array | SplicedContent,
  digest: boolean,
): FileDigest | null {
  if (isSpliced(content)) return writeParts(file, content, null, digest);
  const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  const fd = openSync(file, "w");
  try {
    let offset = 0;
    while (offset < bytes.byteLength) offset += writeSync(fd, bytes, offset);
  } finally {
    closeSync(fd);
  }
  return digest
    ? { length: bytes.byteLength, sha256: createHash("sha256").update(bytes).digest("hex") }
    : null;
}

/**
 * Writes a splice's bytes into file: the whole file (`at` null: created or truncated), or into an
 * existing file from byte `at` on (startSplicedWrite's second half).
 */
function writeParts(
  file: string,
  content: SplicedContent,
  at: number | null,
  digest = false,
): FileDigest | null {
  const hash = digest ? createHash("sha256") : null;
  let position = at ?? 0;
  let length = 0;
  const fd = openSync(file, at === null ? "w" : "r+");
  try {
    const put = (bytes: Uint8Array) => {
      let offset = 0;
      while (offset < bytes.byteLength)
        offset += writeSync(fd, bytes, offset, bytes.byteLength - offset, position + offset);
      hash?.update(bytes);
      position += bytes.byteLength;
      length += bytes.byteLength;
    };
    const { source, expect, parts } = content.splice;
    const from = openSync(source, "r");
    try {
      const now = fstatSync(from);
      if (now.size !== expect.size || now.mtimeMs !== expect.mtimeMs || now.ino !== expect.ino)
        throw new Error(`${source} changed after the splice was measured; nothing was written`);
      const chunk = Buffer.allocUnsafe(SPLICE_CHUNK);
      for (const part of parts) {
        if (part instanceof Uint8Array) {
          put(part);
          continue;
        }
        for (let at = part.start; at < part.end; ) {
          const n = readSync(from, chunk, 0, Math.min(SPLICE_CHUNK, part.end - at), at);
          if (n === 0) throw new Error(`${source} ended before byte ${part.end}`);
          put(chunk.subarray(0, n));
          at += n;
        }
      }
    } finally {
      closeSync(from);
    }
  } finally {
    closeSync(fd);
  }
  return hash ? { length, sha256: hash.digest("hex") } : null;
}

/**
 * The commit's helper thread: it writes (copies, hashes and fsyncs) a large spliced file while the
 * committing thread writes the others, and fsyncs a group of paths concurrently (libuv's pool runs
 * four at once, and the filesystem commits concurrent fsyncs together: on this project's VM disk one
 * fsync costs ~1.5-4 ms, almost all of it waiting for the device). One thread per process, started
 * on first use and kept (unref'd: it never keeps a process alive), so a long-running portal pays its
 * ~30 ms start-up once and a fresh `svc import` pays it while it renders.
 *
 * CommonJS evaluated by the worker (no file to ship beside a bundle). Every job is answered, errors
 * included, and the answer counted in `flag` before it is notified, so a waiting thread always wakes.
 */
const HELPER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { createHash } = require("node:crypto");
const fs = require("node:fs");
const { port, flag, chunkSize, kickBytes } = workerData;
function answer(reply) {
  port.postMessage(reply);
  Atomics.add(flag, 0, 1);
  Atomics.notify(flag, 0);
}
function fail(error) {
  return { code: (error && error.code) || null, message: String((error && error.message) || error) };
}
// Writes the file's bytes below writeUpTo (the committing thread writes the rest) and hashes all
// of them, from the source: in slices of kickBytes, each handed to the device at once (an
// fdatasync on libuv's pool while the next slice is copied, the way sync_file_range would), so the
// final fsync waits for the last slice only; between slices the thread takes other jobs (fsyncs
// the committing thread asks for while this copy runs).
async function write(job) {
  const { file, source, expect, parts, digest, writeUpTo } = job;
  const hash = digest ? createHash("sha256") : null;
  let length = 0;
  const handle = await fs.promises.open(file, "r+");
  const fd = handle.fd;
  const kicks = [];
  let unkicked = 0;
  try {
    const put = (bytes) => {
      const writing = Math.max(0, Math.min(bytes.byteLength, writeUpTo - length));
      let offset = 0;
      while (offset < writing) offset += fs.writeSync(fd, bytes, offset, writing - offset, length + offset);
      if (hash) hash.update(bytes);
      length += bytes.byteLength;
      unkicked += writing;
    };
    const kick = async () => {
      if (unkicked < kickBytes) return;
      unkicked = 0;
      kicks.push(handle.datasync().catch(() => {}));
      await new Promise((resolve) => setImmediate(resolve));
    };
    const from = fs.openSync(source, "r");
    try {
      const now = fs.fstatSync(from);
      if (now.size !== expect.size || now.mtimeMs !== expect.mtimeMs || now.ino !== expect.ino)
        throw new Error(source + " changed after the splice was measured; nothing was written");
      const chunk = Buffer.allocUnsafe(chunkSize);
      for (const part of parts) {
        if (!hash && length >= writeUpTo) break;
        if (part instanceof Uint8Array) { put(part); continue; }
        for (let at = part.start; at < part.end; ) {
          const n = fs.readSync(from, chunk, 0, Math.min(chunkSize, part.end - at), at);
          if (n === 0) throw new Error(source + " ended before byte " + part.end);
          put(chunk.subarray(0, n));
          at += n;
          await kick();
        }
      }
    } finally {
      fs.closeSync(from);
    }
    await Promise.all(kicks);
    await handle.sync();
  } finally {
    await Promise.all(kicks);
    await handle.close();
  }
  return hash ? { length, sha256: hash.digest("hex") } : null;
}
${FSYNC_LANES_SOURCE}
async function syncAll(paths, lanes) {
  const errors = [];
  await fsyncLanes(paths, lanes, (path, error) => errors.push({ path, ...fail(error) }));
  return errors;
}
port.on("message", (job) => {
  if (job.kind === "remove") {
    // Not answered: nobody waits for garbage to go.
    fs.promises.rm(job.path, { recursive: true, force: true }).catch(() => {});
    return;
  }
  if (job.kind === "write") {
    write(job).then(
      (digest) => answer({ id: job.id, digest }),
      (error) => answer({ id: job.id, error: fail(error) }),
    );
    return;
  }
  syncAll(job.paths, job.lanes).then(
    (errors) => answer({ id: job.id, errors }),
    (error) => answer({ id: job.id, errors: [{ path: "", ...fail(error) }] }),
  );
});
`;

/** Bytes the helper copies before it hands them to the device (see HELPER_SOURCE). */
const KICK_BYTES = 8 << 20;

/** How long a synchronous caller waits for the helper before it gives up on it. */
const HELPER_TIMEOUT_MS = 120_000;
/**
 * From this many paths an fsync group starts the helper when it is not running yet (its start-up,
 * ~30 ms, is worth ~10 fsyncs in turn; src/lib/fsync-many.ts measured the same threshold).
 */
const START_FOR_FSYNCS = 24;
/** fsyncs the helper runs at once (libuv's default pool has four threads). */
const FSYNC_LANES = 8;

interface HelperReply {
  id: number;
  digest?: FileDigest | null;
  error?: { code: string | null; message: string };
  errors?: FsyncFailure[];
}

interface Helper {
  port: MessagePort;
  flag: Int32Array;
  /** Answers received while waiting for another job's. */
  early: Map<number, HelperReply>;
  nextId: number;
}

/** The process's helper; null once it could not be started (then everything runs on this thread). */
let helper: Helper | null | undefined;

function startHelper(): Helper | null {
  if (helper !== undefined) return helper;
  helper = null;
  try {
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(HELPER_SOURCE, {
      eval: true,
      workerData: { port: port2, flag, chunkSize: SPLICE_CHUNK, kickBytes: KICK_BYTES },
      transferList: [port2],
      // The helper needs nothing of the parent's flags (a --cpu-prof, a loader) or its stdin.
      execArgv: [],
      stdin: false,
    });
    worker.unref();
    // A helper that dies is simply not used again: the thread waiting on it times out or sees the
    // answer count stop moving; the next commit starts a new one.
    worker.on("error", () => {
      if (helper?.port === port1) helper = undefined;
    });
    worker.on("exit", () => {
      if (helper?.port === port1) helper = undefined;
    });
    port1.unref();
    helper = { port: port1, flag, early: new Map(), nextId: 1 };
  } catch {
    // No worker threads here (a restricted runtime): the same work, on this thread.
    helper = null;
  }
  return helper;
}

/**
 * Starts the helper thread now, so that its start-up overlaps the caller's own work (a publication
 * calls this before it renders, and its commit then finds the helper ready).
 */
export function warmCommitHelper(): void {
  startHelper();
}

/** Whether the helper is running (a caller then hands it work it would not start it for). */
export function commitHelperRunning(): boolean {
  return Boolean(helper);
}

function post(job: Record<string, unknown>): { helper: Helper; id: number } | null {
  const h = startHelper();
  if (!h) return null;
  const id = h.nextId++;
  h.port.postMessage({ ...job, id });
  return { helper: h, id };
}

/** Waits (blocking this thread) for the helper's answer to job id; null when it never came. */
function waitFor(h: Helper, id: number): HelperReply | null {
  const deadline = Date.now() + HELPER_TIMEOUT_MS;
  for (;;) {
    const early = h.early.get(id);
    if (early) {
      h.early.delete(id);
      return early;
    }
    const seen = Atomics.load(h.flag, 0);
    const message = receiveMessageOnPort(h.port);
    if (message) {
      const reply = message.message as HelperReply;
      if (reply.id === id) return reply;
      h.early.set(reply.id, reply);
      continue;
    }
    const left = deadline - Date.now();
    if (left <= 0) return null;
    Atomics.wait(h.flag, 0, seen, left);
  }
}

/**
 * A content file the helper and this thread are writing; `wait` returns its digest once the
 * helper's part is written and fsynced (this thread's part is fsynced by the caller).
 */
export interface PendingWrite {
  wait(): FileDigest | null;
}

/** The parts of a splice that make its bytes [from, to), in order. */
function sliceParts(
  parts: SplicedContent["splice"]["parts"],
  from: number,
  to: number,
): SplicedContent["splice"]["parts"] {
  const out: Array<Uint8Array | { start: number; end: number }> = [];
  let at = 0;
  for (const part of parts) {
    const length = part instanceof Uint8Array ? part.byteLength : part.end - part.start;
    const lo = Math.max(from, at);
    const hi = Math.min(to, at + length);
    if (lo < hi)
      out.push(
        part instanceof Uint8Array
          ? part.subarray(lo - at, hi - at)
          : { start: part.start + (lo - at), end: part.start + (hi - at) },
      );
    at += length;
  }
  return out;
}

/**
 * Starts writing a spliced file with the helper thread, or returns null when there is no helper
 * (the caller writes it itself). The two threads share the copy: the helper writes the first half
 * and hashes the whole file from its source (hashing is the larger half of the work, and one
 * file's sha256 cannot be split), this thread writes the second half before it returns. The caller
 * must fsync the file and `wait` before it relies on it; an error (a source that changed) is
 * thrown here or by `wait`.
 */
export function startSplicedWrite(
  file: string,
  content: SplicedContent,
  digest: boolean,
): PendingWrite | null {
  const { source, expect, parts } = content.splice;
  const length = splicedLength(content);
  const half = Math.floor(length / 2);
  if (!startHelper()) return null;
  // Made here, so that neither thread's part can truncate the other's.
  closeSync(openSync(file, "w"));
  const posted = post({ kind: "write", file, source, expect, parts: [...parts], digest, writeUpTo: half });
  if (!posted) return null;
  const pending: PendingWrite = {
    wait() {
      const reply = waitFor(posted.helper, posted.id);
      if (!reply) {
        helper = undefined;
        throw new Error(`the commit helper did not write ${file} within ${HELPER_TIMEOUT_MS} ms`);
      }
      if (reply.error) {
        const error = new Error(reply.error.message) as NodeJS.ErrnoException;
        if (reply.error.code) error.code = reply.error.code;
        throw error;
      }
      return reply.digest ?? null;
    },
  };
  try {
    writeParts(file, { splice: { source, expect, parts: sliceParts(parts, half, length) } }, half);
  } catch (error) {
    // The helper is still writing into the file: it finishes before the caller removes it.
    try {
      pending.wait();
    } catch {}
    throw error;
  }
  return pending;
}

/**
 * Removes a folder on the helper thread without waiting for it (false when there is no helper, and
 * the caller removes it itself): a finished transaction's folder holding the old index documents,
 * whose blocks the filesystem frees slowly. A process that exits first leaves it to the next
 * recovery.
 */
export function removeInBackground(path: string): boolean {
  const h = startHelper();
  if (!h) return false;
  h.port.postMessage({ kind: "remove", path, id: 0 });
  return true;
}

/**
 * Makes every path's data and entry durable, as fsyncPath does each (a path already gone has nothing
 * to sync; a folder a platform will not fsync is skipped), concurrently on the helper thread while
 * this one waits; the order among them is not defined, so a caller that needs one durable before
 * another makes two calls. One path, or no helper: each in turn on this thread.
 */
export function fsyncGroup(paths: readonly string[]): void {
  if (paths.length === 0) return;
  // A short-lived process with a few paths does not start a thread for them (warmCommitHelper does).
  const worthIt = paths.length >= START_FOR_FSYNCS || (paths.length > 1 && helper);
  if (worthIt) startFsync(paths).wait();
  else for (const path of paths) fsyncPath(path);
}

/** An fsync group under way on the helper; `wait` returns once every path is durable, or throws. */
export interface PendingFsync {
  wait(): void;
}

/**
 * Starts fsyncing paths on the helper and returns at once, so that the device writes them while
 * this thread goes on (a commit writes its next file); without a helper, fsyncs them here first.
 */
export function startFsync(paths: readonly string[]): PendingFsync {
  const posted = paths.length > 0 ? post({ kind: "fsync", paths: [...paths], lanes: FSYNC_LANES }) : null;
  if (!posted) {
    for (const path of paths) fsyncPath(path);
    return { wait() {} };
  }
  return { wait: () => settleFsync(posted, paths) };
}

function settleFsync(posted: { helper: Helper; id: number }, paths: readonly string[]): void {
  const reply = waitFor(posted.helper, posted.id);
  if (!reply) {
    helper = undefined;
    for (const path of paths) fsyncPath(path);
    return;
  }
  throwFsyncFailures(reply.errors ?? []);
}
