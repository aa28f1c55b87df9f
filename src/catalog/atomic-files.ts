import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fstatSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { SvcError } from "../errors.ts";
import { fsyncPath } from "../lib/atomic-write.ts";
import { fsyncAll } from "../lib/fsync-many.ts";
import { describeHolder, removeLeftovers, waitForLock } from "../lib/lock-file.ts";

/**
 * Multi-file commits that are all-or-nothing, with one durable commit point, the way a database
 * commits: a write-ahead journal in `.svc-tmp/txn-{id}/` holds every new file (written and fsynced
 * there) and the list of changes; create-only files (artifacts) are hard-linked into place before
 * the commit point, everything else after it. The commit point is one rename of the transaction
 * folder to `.svc-tmp/commit-{id}/`, made durable by an fsync of `.svc-tmp`:
 *
 * - before it, the tree holds only new create-only files; recovery removes them (only if they are
 *   still the inode the journal names) and drops the journal: the complete old state;
 * - after it, recovery rolls forward: every content file still in the journal folder is renamed into
 *   place, every listed deletion done, the touched folders fsynced, then the journal removed: the
 *   complete new state. A content file that is gone was already renamed, so a roll-forward that is
 *   itself interrupted is finished by the next one.
 *
 * Recovery must run under the tree's lock (withPublishLock), before anything reads or writes the
 * tree: commitFiles recovers first itself, so its caller must hold the lock (or own the tree alone).
 * Paths in the tree stay stable, so git sees ordinary file changes.
 *
 * DESIGN.md suggested a generation directory behind one swapped link. The committed site must be
 * an ordinary tree for git and Pages, and a journal of per-file renames gives the same guarantee
 * for writers. Readers are not isolated: the local server and Pages serve files one at a time, so
 * during the roll-forward (microseconds locally; one git push on GitHub is atomic anyway) a reader
 * may see one document new and its neighbour old. Every single file is always whole (rename), and a
 * manager that must see one consistent set reads through TUF, whose snapshot is signed after the
 * commit and pins every document's hash.
 */
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

export type FileContent = string | Uint8Array | SplicedContent;

export function isSpliced(content: FileContent | { stagedFile: string }): content is SplicedContent {
  return typeof content === "object" && "splice" in content;
}

/** The length and sha256 of a file as a commit wrote it (what a signer would read back). */
export interface FileDigest {
  length: number;
  sha256: string;
}

export interface FileChanges {
  write: ReadonlyMap<string, FileContent>;
  /**
   * Paths in write that the caller knows differ from the file on disk (it read that file under the
   * tree's lock): written without reading the file again to compare. The others are compared, and
   * one with the same bytes is left alone.
   */
  changed?: ReadonlySet<string>;
  delete?: readonly string[];
  /**
   * Files that must not exist yet (immutable artifacts): created, never replaced. Content is bytes or
   * a file the caller staged on the same filesystem; a staged file is hard-linked, so the inode the
   * caller hashed is the inode that lands. An existing path fails the whole commit with FileExistsError.
   */
  create?: ReadonlyMap<string, string | Uint8Array | { stagedFile: string }>;
}

export interface CommitOptions {
  /** Test hook: called for each change before the commit point; throwing rolls everything back. */
  beforeApply?: (index: number, path: string) => void;
  /**
   * Called with every create-only file in place, just before the commit point, with every path the
   * commit writes, creates or deletes; throwing rolls everything back.
   */
  beforeCommit?: (change: { paths: readonly string[] }) => void;
  /**
   * Measure the length and sha256 of every written file while writing it (CommitResult.digests):
   * a signing publication then signs them without reading megabytes back.
   */
  digests?: boolean;
}

/** A create-only path already exists: nothing was changed. */
export class FileExistsError extends Error {
  readonly path: string;
  constructor(path: string) {
    super(`${path} already exists and is never replaced`);
    this.name = "FileExistsError";
    this.path = path;
  }
}

export interface CommitResult {
  written: string[];
  deleted: string[];
  unchanged: number;
  /** With CommitOptions.digests: each written (not created) path's length and sha256. */
  digests?: Map<string, FileDigest>;
}

const TXN_DIR = ".svc-tmp";
/** Where writers stage files (beside the tree, same filesystem) before a commit links them in. */
const STAGING_DIR = "staging";
const PREPARING = "txn-";
const COMMITTED = "commit-";
const JOURNAL = "journal.json";
/** A note that outlives the transactions of its tree (owed-signing.ts): recovery leaves it in place. */
const OWED_SIGNING = "signing-owed.json";

type JournalEntry =
  /** source: the content file's name inside the transaction folder. */
  | { op: "write"; path: string; source: string }
  | { op: "delete"; path: string }
  /**
   * Placed before the commit point; rollback removes the path only while it is still this inode,
   * and the folders the transaction made for it (dirs, deepest first) when they are empty.
   */
  | { op: "create"; path: string; ino: number; dev: number; dirs?: string[] };

interface Journal {
  version: 2;
  entries: JournalEntry[];
}

/** Journals written before the commit point existed: an array with backups to restore. */
interface LegacyEntry {
  path: string;
  next: string | null;
  backup: string | null;
  create?: boolean;
}

function safeJoin(root: string, path: string): string {
  const full = join(root, path);
  const rel = relative(root, full);
  if (rel.startsWith("..") || rel === "" || rel.split(sep).includes("..") || path.includes("\0")) {
    throw new Error(`refusing to write outside the tree: ${path}`);
  }
  return full;
}

/** Bytes copied per read of a spliced file's source. */
const SPLICE_CHUNK = 1 << 20;

/**
 * Writes one content file of a transaction (not yet fsynced: the commit syncs them all at once) and,
 * when asked, returns its digest measured from the very bytes written.
 */
function writeContent(file: string, content: FileContent, digest: boolean): FileDigest | null {
  const hash = digest ? createHash("sha256") : null;
  let length = 0;
  const fd = openSync(file, "w");
  try {
    const put = (bytes: Uint8Array) => {
      let offset = 0;
      while (offset < bytes.byteLength) offset += writeSync(fd, bytes, offset);
      hash?.update(bytes);
      length += bytes.byteLength;
    };
    if (!isSpliced(content)) {
      put(typeof content === "string" ? Buffer.from(content, "utf8") : content);
    } else {
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
    }
  } finally {
    closeSync(fd);
  }
  return hash ? { length, sha256: hash.digest("hex") } : null;
}

function sameBytes(path: string, content: FileContent): boolean {
  if (isSpliced(content)) return false;
  let size: number;
  try {
    size = statSync(path).size;
  } catch {
    return false;
  }
  // A different size settles it without reading the file (index documents are megabytes).
  const length = typeof content === "string" ? Buffer.byteLength(content, "utf8") : content.byteLength;
  if (size !== length) return false;
  const current = readFileSync(path);
  const next =
    typeof content === "string"
      ? Buffer.from(content, "utf8")
      : Buffer.from(content.buffer, content.byteOffset, content.byteLength);
  return current.equals(next);
}

/** Creates dir (and missing parents); every folder whose entries changed goes into touched for fsync. */
function ensureDir(dir: string, touched: Set<string>): void {
  if (existsSync(dir)) return;
  let existing = dirname(dir);
  const created = [dir];
  while (!existsSync(existing)) {
    created.push(existing);
    existing = dirname(existing);
  }
  mkdirSync(dir, { recursive: true });
  touched.add(existing);
  for (const d of created) touched.add(d);
}

/**
 * The folders a create-only file still needs (root-relative, deepest first): a crash between their
 * mkdir and the link leaves them empty, and rollback must take them away again, or the tree is not
 * the old one (an empty version folder once blocked its version for good).
 */
function missingDirs(root: string, path: string): string[] {
  const dirs: string[] = [];
  for (let dir = dirname(safeJoin(root, path)); !exists(dir); dir = dirname(dir)) {
    if (relative(root, dir) === "" || relative(root, dir).startsWith("..")) break;
    dirs.push(relative(root, dir).split(sep).join("/"));
  }
  return dirs;
}

function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

export function commitFiles(root: string, changes: FileChanges, options: CommitOptions = {}): CommitResult {
  recoverTransactions(root);
  const entries: JournalEntry[] = [];
  const contents: FileContent[] = [];
  const creates: Array<{ index: number; content: string | Uint8Array | { stagedFile: string } }> = [];
  let unchanged = 0;
  for (const [path, content] of changes.write) {
    const full = safeJoin(root, path);
    if (!changes.changed?.has(path) && sameBytes(full, content)) {
      unchanged++;
      continue;
    }
    entries.push({ op: "write", path, source: `w${contents.length}` });
    contents.push(content);
  }
  for (const [path, content] of changes.create ?? []) {
    if (changes.write.has(path)) throw new Error(`${path} is both written and created`);
    if (exists(safeJoin(root, path))) throw new FileExistsError(path);
    creates.push({ index: entries.length, content });
    entries.push({ op: "create", path, ino: 0, dev: 0 });
  }
  for (const path of changes.delete ?? []) {
    if (changes.write.has(path) || changes.create?.has(path)) continue;
    if (exists(safeJoin(root, path))) entries.push({ op: "delete", path });
  }
  if (entries.length === 0) return { written: [], deleted: [], unchanged };

  const dir = join(root, TXN_DIR);
  const id = `${Date.now()}-${randomBytes(4).toString("hex")}`;
  const txn = join(dir, `${PREPARING}${id}`);
  const touched = new Set<string>();
  ensureDir(dir, touched);
  mkdirSync(txn);
  const sources = new Map<number, string>();
  const digests = options.digests ? new Map<string, FileDigest>() : undefined;
  // Every new file of the journal folder, fsynced together (with the journal and its folder) before
  // the tree changes.
  const unsynced: string[] = [];
  try {
    for (const [i, content] of contents.entries()) {
      const file = join(txn, `w${i}`);
      const digest = writeContent(file, content, digests !== undefined);
      unsynced.push(file);
      // Writes are the journal's first entries, in contents' order.
      if (digest) digests!.set(entries[i]!.path, digest);
    }
    creates.forEach(({ index, content }, i) => {
      let source: string;
      if (typeof content === "object" && "stagedFile" in content) {
        source = content.stagedFile;
      } else {
        source = join(txn, `c${i}`);
        writeFileSync(source, content);
        unsynced.push(source);
      }
      const { ino, dev } = statSync(source);
      sources.set(index, source);
      const path = entries[index]!.path;
      entries[index] = { op: "create", path, ino, dev, dirs: missingDirs(root, path) };
    });
    // The journal is durable before the tree changes: a crash from here on is always recoverable.
    writeFileSync(join(txn, JOURNAL), JSON.stringify({ version: 2, entries } satisfies Journal));
    // Create-only files land before the commit point: the journal that undoes them must be findable.
    if (creates.length > 0) touched.add(dir);
    fsyncAll([...unsynced, join(txn, JOURNAL), txn, ...touched]);
    touched.clear();
    entries.forEach((entry, i) => {
      options.beforeApply?.(i, entry.path);
      if (entry.op !== "create") return;
      const full = safeJoin(root, entry.path);
      ensureDir(dirname(full), touched);
      // link(2) fails with EEXIST instead of replacing: the create-only guarantee holds even
      // against a writer that is not holding our lock.
      try {
        linkSync(sources.get(i)!, full);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST") throw new FileExistsError(entry.path);
        throw error;
      }
      touched.add(dirname(full));
    });
    for (const d of touched) fsyncPath(d);
    options.beforeCommit?.({ paths: entries.map((e) => e.path) });
  } catch (error) {
    rollBack(root, txn);
    throw error;
  }
  // The commit point. Before this rename recovery rolls back; after it, recovery rolls forward.
  const committed = join(dir, `${COMMITTED}${id}`);
  renameSync(txn, committed);
  fsyncPath(dir);
  rollForward(root, committed);
  return {
    written: entries.filter((e) => e.op !== "delete").map((e) => e.path),
    deleted: entries.filter((e) => e.op === "delete").map((e) => e.path),
    unchanged,
    ...(digests ? { digests } : {}),
  };
}

function removeEmptyParents(root: string, dir: string, touched: Set<string>): void {
  let current = dir;
  while (relative(root, current) !== "" && !relative(root, current).startsWith("..")) {
    try {
      if (readdirSync(current).length > 0) return;
      rmdirSync(current);
    } catch {
      return;
    }
    current = dirname(current);
    touched.add(current);
  }
}

function readJournal(txn: string): Journal | LegacyEntry[] | null {
  try {
    return JSON.parse(readFileSync(join(txn, JOURNAL), "utf8")) as Journal | LegacyEntry[];
  } catch {
    // No journal (or a torn one, which fsync-before-use rules out for a committed transaction):
    // the tree was never touched.
    return null;
  }
}

/** Completes a committed transaction; safe to repeat after an interruption at any point. */
function rollForward(root: string, txn: string): void {
  const journal = readJournal(txn);
  const touched = new Set<string>();
  if (journal && !Array.isArray(journal)) {
    for (const entry of journal.entries) {
      const full = safeJoin(root, entry.path);
      if (entry.op === "write") {
        const source = join(txn, entry.source);
        if (!exists(source)) continue; // renamed into place before the interruption
        ensureDir(dirname(full), touched);
        renameSync(source, full);
        touched.add(dirname(full));
      } else if (entry.op === "delete" && exists(full)) {
        unlinkSync(full);
        touched.add(dirname(full));
        removeEmptyParents(root, dirname(full), touched);
      }
    }
  }
  // Every rename is durable before the journal that could redo it disappears.
  for (const d of touched) fsyncPath(d);
  rmSync(txn, { recursive: true, force: true });
  for (const listener of treeListeners) {
    // The transaction has landed: a listener that fails must not make it look as if it had not.
    try {
      listener(root);
    } catch {}
  }
}

const treeListeners = new Set<(root: string) => void>();

/**
 * Calls `listener` with the tree's root after every transaction of this process lands (commit or
 * recovery), before commitFiles returns: a reader that keeps what it read of the tree (the download
 * lane's index of public versions) forgets it at once, so a hide takes effect on the next request.
 * Returns the way to stop listening.
 */
export function onTreeChanged(listener: (root: string) => void): () => void {
  treeListeners.add(listener);
  return () => treeListeners.delete(listener);
}

/** Undoes an uncommitted transaction: only create-only files were placed, and only ours are removed. */
function rollBack(root: string, txn: string): void {
  const journal = readJournal(txn);
  if (Array.isArray(journal)) {
    rollBackLegacy(root, txn, journal);
    return;
  }
  const touched = new Set<string>();
  for (const entry of journal?.entries ?? []) {
    if (entry.op !== "create") continue;
    const full = safeJoin(root, entry.path);
    let ours = false;
    try {
      const placed = lstatSync(full);
      ours = placed.ino === entry.ino && placed.dev === entry.dev; // else someone else's file
    } catch {}
    if (ours) {
      unlinkSync(full);
      touched.add(dirname(full));
    }
    if (entry.dirs) {
      for (const dir of entry.dirs) removeEmptyDir(safeJoin(root, dir), touched);
    } else if (ours) {
      // A journal from before dirs were recorded: the empty parents, as that version did.
      removeEmptyParents(root, dirname(full), touched);
    }
  }
  for (const d of touched) fsyncPath(d);
  rmSync(txn, { recursive: true, force: true });
}

function removeEmptyDir(dir: string, touched: Set<string>): void {
  try {
    rmdirSync(dir);
  } catch (error) {
    // Not empty (another file landed there) or already gone: either way not ours to remove.
    if (["ENOTEMPTY", "EEXIST", "ENOENT"].includes((error as NodeJS.ErrnoException).code ?? "")) return;
    throw error;
  }
  touched.add(dirname(dir));
}

function rollBackLegacy(root: string, txn: string, entries: LegacyEntry[]): void {
  const touched = new Set<string>();
  for (const entry of entries) {
    const full = safeJoin(root, entry.path);
    if (entry.create) {
      if (entry.next && sameInode(full, join(txn, entry.next))) {
        unlinkSync(full);
        removeEmptyParents(root, dirname(full), touched);
      }
    } else if (entry.backup && existsSync(join(txn, entry.backup))) {
      mkdirSync(dirname(full), { recursive: true });
      renameSync(join(txn, entry.backup), full);
    } else if (!entry.backup && existsSync(full)) {
      unlinkSync(full);
      removeEmptyParents(root, dirname(full), touched);
    }
  }
  rmSync(txn, { recursive: true, force: true });
}

function sameInode(a: string, b: string): boolean {
  try {
    const sa = statSync(a);
    const sb = statSync(b);
    return sa.ino === sb.ino && sa.dev === sb.dev;
  } catch {
    return false;
  }
}

export interface RecoveryResult {
  /** Interrupted before their commit point: undone. */
  rolledBack: number;
  /** Interrupted after their commit point: completed. */
  completed: number;
}

/**
 * Finishes whatever a crash left under root/.svc-tmp: transactions before their commit point are
 * rolled back, committed ones rolled forward. Idempotent. The caller holds the tree's lock.
 */
export function recoverTransactions(root: string): RecoveryResult {
  const dir = join(root, TXN_DIR);
  const result: RecoveryResult = { rolledBack: 0, completed: 0 };
  if (!existsSync(dir)) return result;
  for (const name of readdirSync(dir).sort()) {
    // Locks and staging belong to a live writer: the lock holder clears its own staging.
    if (name.includes(".lock") || name === STAGING_DIR || name === OWED_SIGNING) continue;
    const path = join(dir, name);
    if (name.startsWith(COMMITTED)) {
      rollForward(root, path);
      result.completed++;
    } else if (name.startsWith(PREPARING)) {
      rollBack(root, path);
      result.rolledBack++;
    } else {
      rmSync(path, { recursive: true, force: true });
    }
  }
  return result;
}

/**
 * Whether a transaction is in progress or was left by a crash, in the project or the site (a cheap
 * look, no lock): a reader that finds one takes the publish lock first, which waits for a live
 * writer or recovers a dead one's work.
 */
export function hasPendingTransactions(tree: PublishedTree): boolean {
  return [tree.root, tree.siteDir].some((root) => {
    const dir = join(root, TXN_DIR);
    return (
      existsSync(dir) &&
      readdirSync(dir).some((name) => name.startsWith(PREPARING) || name.startsWith(COMMITTED))
    );
  });
}

/**
 * For a reader that does its work before taking the lock (validation, downloads): finishes a
 * transaction a crash left (or waits for a live writer) so that it reads a complete state.
 */
export async function recoverPending(tree: PublishedTree, options: PublishLockOptions = {}): Promise<void> {
  if (hasPendingTransactions(tree)) await withPublishLock(tree, () => undefined, options);
}

/** Where owed-signing.ts notes the targets a committed change still owes a signature (see there). */
export function owedSigningPath(root: string): string {
  return join(root, TXN_DIR, OWED_SIGNING);
}

/** A private folder on the tree's filesystem for files a commit will link in (see FileChanges.create). */
export function stagingDir(root: string): string {
  return join(root, TXN_DIR, STAGING_DIR);
}

export interface LockOptions {
  /** Give up after this long (default 60 s): the error names the holder. */
  timeoutMs?: number;
  pollMs?: number;
  name?: string;
}

/**
 * Runs fn while holding an exclusive lock file under the tree (see src/store/lock-file.ts: it works
 * across processes as well as between async callers of one process). A lock whose holder process is
 * gone is taken over; a live holder is waited for.
 */
export async function withTreeLock<T>(
  root: string,
  fn: () => Promise<T> | T,
  options: LockOptions = {},
): Promise<T> {
  const dir = join(root, TXN_DIR);
  mkdirSync(dir, { recursive: true });
  const name = options.name ?? "publish";
  const path = join(dir, `${name}.lock`);
  const lock = await waitForLock(path, `${name} lock`, {
    timeoutMs: options.timeoutMs ?? 60_000,
    ...(options.pollMs ? { pollMs: options.pollMs } : {}),
  });
  if (!lock.ok) throw new LockTimeoutError(path, describeHolder(lock.holder));
  removeLeftovers(path);
  try {
    return await fn();
  } finally {
    lock.release();
  }
}

export class LockTimeoutError extends Error {
  constructor(path: string, holder: string) {
    super(`timed out waiting for ${path} (held by ${holder})`);
    this.name = "LockTimeoutError";
  }
}

export interface PublishedTree {
  /** The project root: publication transactions and the publish lock live in root/.svc-tmp. */
  root: string;
  /** The site root: `svc build` commits its own transactions there (site/.svc-tmp). */
  siteDir: string;
}

export interface PublishLockOptions {
  timeoutMs?: number;
  /** Called with what recovery did, when it did anything. */
  onRecovered?: (result: RecoveryResult) => void;
}

/**
 * The entry every command and route that reads or writes the published tree goes through: takes the
 * publish lock (waiting for another publisher; conflict after the timeout, naming the holder),
 * recovers any interrupted transaction of the project and of the site, clears staging left by a
 * dead publisher, then runs fn. Recovery always ends in the complete old or the complete new state.
 */
export async function withPublishLock<T>(
  tree: PublishedTree,
  fn: (recovered: RecoveryResult) => Promise<T> | T,
  options: PublishLockOptions = {},
): Promise<T> {
  try {
    return await withTreeLock(
      tree.root,
      async () => {
        const site = recoverTransactions(tree.siteDir);
        const project = recoverTransactions(tree.root);
        const recovered = {
          rolledBack: site.rolledBack + project.rolledBack,
          completed: site.completed + project.completed,
        };
        if (recovered.rolledBack + recovered.completed > 0) options.onRecovered?.(recovered);
        // Staging left by a publisher that died is garbage: only the lock holder stages.
        const staging = stagingDir(tree.root);
        if (existsSync(staging)) rmSync(staging, { recursive: true, force: true });
        try {
          return await fn(recovered);
        } finally {
          if (existsSync(staging)) rmSync(staging, { recursive: true, force: true });
        }
      },
      { timeoutMs: options.timeoutMs ?? 60_000 },
    );
  } catch (error) {
    if (error instanceof LockTimeoutError) throw new SvcError("conflict", error.message);
    throw error;
  }
}
