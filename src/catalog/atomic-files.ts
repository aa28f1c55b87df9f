import { randomBytes } from "node:crypto";
import {
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, sep } from "node:path";
import { SvcError } from "../errors.ts";
import { fsyncPath } from "../lib/atomic-write.ts";
import { describeHolder, removeLeftovers, waitForLock } from "../lib/lock-file.ts";
import {
  COMMITTED,
  ensureDir,
  exists,
  JOURNAL,
  type Journal,
  type JournalEntry,
  OWED_SIGNING,
  PREPARING,
  type RecoveryResult,
  recoverTransactions,
  rollBack,
  rollForward,
  STAGING_DIR,
  safeJoin,
  TXN_DIR,
} from "./journal-recovery.ts";
import {
  commitHelperRunning,
  type FileDigest,
  fsyncGroup,
  type PendingFsync,
  startFsync,
  isSpliced,
  type PendingWrite,
  type SplicedContent,
  splicedLength,
  startSplicedWrite,
  writeContent,
} from "./spliced-content.ts";

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
export type { FileDigest, SplicedContent } from "./spliced-content.ts";
export { isSpliced } from "./spliced-content.ts";
export type { RecoveryResult } from "./journal-recovery.ts";
export { onTreeChanged, recoverTransactions } from "./journal-recovery.ts";

export type FileContent = string | Uint8Array | SplicedContent;

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
   * a signing publication then signs them without reading megabytes back. A predicate measures
   * only the paths it accepts (a signer's targets: the home page is none).
   */
  digests?: boolean | ((path: string) => boolean);
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

/** Spliced files from this size on are written by the commit's helper thread. */
const HELPED_FROM = 4 << 20;

/** Files from this size on are fsynced as soon as they are written, while the commit goes on. */
const SYNC_AT_ONCE_FROM = 1 << 20;

function contentLength(content: FileContent): number {
  if (isSpliced(content)) return splicedLength(content);
  return typeof content === "string" ? content.length : content.byteLength;
}

/** The index in contents of the largest spliced file worth a thread of its own, or -1. */
function largestSplice(contents: readonly FileContent[]): number {
  let best = -1;
  let bestLength = HELPED_FROM - 1;
  contents.forEach((content, i) => {
    if (!isSpliced(content)) return;
    const length = splicedLength(content);
    if (length > bestLength) {
      best = i;
      bestLength = length;
    }
  });
  return best;
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
  const measures = (i: number) =>
    typeof options.digests === "function" ? options.digests(entries[i]!.path) : options.digests === true;
  // Every new file of the journal folder, fsynced together (with the journal and its folder) before
  // the tree changes.
  const unsynced: string[] = [];
  // The largest spliced file is hashed on the helper thread, which writes half of it, while this
  // thread writes the other half and the other files (at 50,000 mods catalog.json is 74 MB and the
  // rest of a publication ~50 MB).
  const helped = largestSplice(contents);
  let pending: PendingWrite | null = null;
  const syncing: PendingFsync[] = [];
  try {
    if (helped !== -1) {
      pending = startSplicedWrite(
        join(txn, `w${helped}`),
        contents[helped] as SplicedContent,
        measures(helped),
      );
      // This thread wrote its half: to the device with it, while the other files are written.
      if (pending) syncing.push(startFsync([join(txn, `w${helped}`)]));
    }
    for (const [i, content] of contents.entries()) {
      if (i === helped && pending) continue;
      const file = join(txn, `w${i}`);
      const digest = writeContent(file, content, measures(i));
      // A large file goes to the device while the next one is written.
      if (commitHelperRunning() && contentLength(content) >= SYNC_AT_ONCE_FROM)
        syncing.push(startFsync([file]));
      else unsynced.push(file);
      // Writes are the journal's first entries, in contents' order.
      if (digest) digests!.set(entries[i]!.path, digest);
    }
    if (pending) {
      const pendingWrite = pending;
      pending = null;
      const digest = pendingWrite.wait();
      if (digest) digests!.set(entries[helped]!.path, digest);
    }
    for (const sync of syncing.splice(0)) sync.wait();
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
    fsyncGroup([...unsynced, join(txn, JOURNAL), txn, ...touched]);
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
    fsyncGroup([...touched]);
    options.beforeCommit?.({ paths: entries.map((e) => e.path) });
  } catch (error) {
    // The helper may still be writing into the transaction folder: it finishes before the folder goes.
    for (const work of [pending, ...syncing])
      try {
        work?.wait();
      } catch {}
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
