import { randomBytes } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { dirname, join, relative, sep } from "node:path";

/**
 * Multi-file commits that are all-or-nothing. New contents are written and fsynced beside the tree,
 * every file about to be replaced or deleted is hard-linked into the transaction as a backup, then
 * the files are renamed into place. A failure part-way rolls every path back to its old inode; a
 * transaction left behind by a crash is rolled back by recoverTransactions before anything else
 * reads or writes the tree. Paths in the tree stay stable, so git sees ordinary file changes.
 *
 * DESIGN.md suggested a generation directory behind one swapped link. The committed site must be
 * an ordinary tree for git and Pages, and a journal of per-file renames gives the same guarantee
 * for writers; the local server reads through a snapshot, so readers never see a half-applied set.
 */
export interface FileChanges {
  write: ReadonlyMap<string, string | Uint8Array>;
  delete?: readonly string[];
  /**
   * Files that must not exist yet (immutable artifacts): created, never replaced. Content is bytes or
   * a file the caller staged on the same filesystem; a staged file is hard-linked, so the inode the
   * caller hashed is the inode that lands. An existing path fails the whole commit with FileExistsError.
   */
  create?: ReadonlyMap<string, string | Uint8Array | { stagedFile: string }>;
}

export interface CommitOptions {
  /** Test hook: called before each rename; throwing simulates a failure at that point. */
  beforeApply?: (index: number, path: string) => void;
  /** Called with every change in place, before the commit point; throwing rolls everything back. */
  beforeCommit?: () => void;
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
}

/** Thrown by a beforeApply hook to simulate a crash: the transaction is left on disk, not rolled back. */
export class SimulatedCrash extends Error {}

const TXN_DIR = ".svc-tmp";
/** Where writers stage files (beside the tree, same filesystem) before a commit links them in. */
const STAGING_DIR = "staging";

interface JournalEntry {
  path: string;
  next: string | null;
  backup: string | null;
  /** Create-only: placed by link (fails if the path appeared meanwhile); rollback removes it only if it is ours. */
  create?: boolean;
}

function fsyncFile(path: string): void {
  const fd = openSync(path, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function safeJoin(root: string, path: string): string {
  const full = join(root, path);
  const rel = relative(root, full);
  if (rel.startsWith("..") || rel === "" || rel.split(sep).includes("..") || path.includes("\0")) {
    throw new Error(`refusing to write outside the tree: ${path}`);
  }
  return full;
}

function sameBytes(path: string, content: string | Uint8Array): boolean {
  if (!existsSync(path)) return false;
  const current = readFileSync(path);
  const next = typeof content === "string" ? Buffer.from(content, "utf8") : Buffer.from(content);
  return current.equals(next);
}

export function commitFiles(root: string, changes: FileChanges, options: CommitOptions = {}): CommitResult {
  recoverTransactions(root);
  const entries: JournalEntry[] = [];
  const pendingWrites: Array<{ entry: JournalEntry; content: string | Uint8Array }> = [];
  let unchanged = 0;
  for (const [path, content] of changes.write) {
    const full = safeJoin(root, path);
    if (sameBytes(full, content)) {
      unchanged++;
      continue;
    }
    const entry: JournalEntry = { path, next: null, backup: null };
    entries.push(entry);
    pendingWrites.push({ entry, content });
  }
  const pendingCreates: Array<{
    entry: JournalEntry;
    content: string | Uint8Array | { stagedFile: string };
  }> = [];
  for (const [path, content] of changes.create ?? []) {
    if (changes.write.has(path)) throw new Error(`${path} is both written and created`);
    if (existsSync(safeJoin(root, path))) throw new FileExistsError(path);
    const entry: JournalEntry = { path, next: null, backup: null, create: true };
    entries.push(entry);
    pendingCreates.push({ entry, content });
  }
  for (const path of changes.delete ?? []) {
    if (changes.write.has(path) || changes.create?.has(path)) continue;
    if (existsSync(safeJoin(root, path))) entries.push({ path, next: null, backup: null });
  }
  if (entries.length === 0) return { written: [], deleted: [], unchanged };

  const txnName = `txn-${Date.now()}-${randomBytes(4).toString("hex")}`;
  const txn = join(root, TXN_DIR, txnName);
  mkdirSync(join(txn, "next"), { recursive: true });
  mkdirSync(join(txn, "backup"), { recursive: true });
  try {
    pendingWrites.forEach(({ entry, content }, i) => {
      entry.next = `next/${i}`;
      const file = join(txn, entry.next);
      writeFileSync(file, content);
      fsyncFile(file);
    });
    pendingCreates.forEach(({ entry, content }, i) => {
      entry.next = `create/${i}`;
      const file = join(txn, entry.next);
      mkdirSync(dirname(file), { recursive: true });
      if (typeof content === "object" && "stagedFile" in content) {
        linkSync(content.stagedFile, file);
      } else {
        writeFileSync(file, content);
        fsyncFile(file);
      }
    });
    entries.forEach((entry, i) => {
      const full = safeJoin(root, entry.path);
      if (!entry.create && existsSync(full)) {
        entry.backup = `backup/${i}`;
        linkSync(full, join(txn, entry.backup));
      }
    });
    const journal = join(txn, "journal.json");
    writeFileSync(journal, JSON.stringify(entries));
    fsyncFile(journal);
  } catch (error) {
    rmSync(txn, { recursive: true, force: true });
    throw error;
  }

  try {
    entries.forEach((entry, i) => {
      options.beforeApply?.(i, entry.path);
      const full = safeJoin(root, entry.path);
      if (entry.create) {
        mkdirSync(dirname(full), { recursive: true });
        // link(2) fails with EEXIST instead of replacing: the create-only guarantee holds even
        // against a writer that is not holding our lock.
        try {
          linkSync(join(txn, entry.next!), full);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "EEXIST") throw new FileExistsError(entry.path);
          throw error;
        }
      } else if (entry.next) {
        mkdirSync(dirname(full), { recursive: true });
        renameSync(join(txn, entry.next), full);
      } else {
        unlinkSync(full);
        removeEmptyParents(root, dirname(full));
      }
    });
    options.beforeCommit?.();
  } catch (error) {
    if (error instanceof SimulatedCrash) throw error;
    rollBack(root, txn);
    throw error;
  }
  // The rename of the transaction directory is the commit point: from here recovery deletes, not restores.
  const done = join(root, TXN_DIR, txnName.replace(/^txn-/, "done-"));
  renameSync(txn, done);
  rmSync(done, { recursive: true, force: true });
  return {
    written: entries.filter((e) => e.next).map((e) => e.path),
    deleted: entries.filter((e) => !e.next).map((e) => e.path),
    unchanged,
  };
}

function removeEmptyParents(root: string, dir: string): void {
  let current = dir;
  while (relative(root, current) !== "" && !relative(root, current).startsWith("..")) {
    try {
      if (readdirSync(current).length > 0) return;
      rmdirSync(current);
    } catch {
      return;
    }
    current = dirname(current);
  }
}

function rollBack(root: string, txn: string): void {
  const journalPath = join(txn, "journal.json");
  if (existsSync(journalPath)) {
    const entries = JSON.parse(readFileSync(journalPath, "utf8")) as JournalEntry[];
    for (const entry of entries) {
      const full = safeJoin(root, entry.path);
      if (entry.create) {
        // Only a file that is our own link is removed; a file someone else created stays.
        if (entry.next && sameInode(full, join(txn, entry.next))) {
          unlinkSync(full);
          removeEmptyParents(root, dirname(full));
        }
      } else if (entry.backup && existsSync(join(txn, entry.backup))) {
        mkdirSync(dirname(full), { recursive: true });
        renameSync(join(txn, entry.backup), full);
      } else if (!entry.backup && existsSync(full)) {
        unlinkSync(full);
        removeEmptyParents(root, dirname(full));
      }
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

/** Rolls back any transaction a crash left behind; finished ones are only cleaned up. */
export function recoverTransactions(root: string): { rolledBack: number } {
  const dir = join(root, TXN_DIR);
  if (!existsSync(dir)) return { rolledBack: 0 };
  let rolledBack = 0;
  for (const name of readdirSync(dir)) {
    // Locks and staging belong to a live writer: the lock holder clears its own staging.
    if (name.endsWith(".lock") || name === STAGING_DIR) continue;
    const path = join(dir, name);
    if (name.startsWith("txn-")) {
      rollBack(root, path);
      rolledBack++;
    } else {
      rmSync(path, { recursive: true, force: true });
    }
  }
  return { rolledBack };
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
 * Runs fn while holding an exclusive lock file under the tree (created with O_EXCL, so it works
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
  const path = join(dir, `${options.name ?? "publish"}.lock`);
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  const token = `${process.pid} ${randomBytes(8).toString("hex")} ${new Date().toISOString()}\n`;
  for (;;) {
    try {
      writeFileSync(path, token, { flag: "wx" });
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    let holder = "";
    try {
      holder = readFileSync(path, "utf8");
    } catch {
      continue;
    }
    const pid = Number(holder.split(" ")[0]);
    if (Number.isInteger(pid) && pid > 0 && !processAlive(pid)) {
      // The holder died: remove its lock only if it is still the same lock we read.
      try {
        if (readFileSync(path, "utf8") === holder) unlinkSync(path);
      } catch {
        // Someone else took it over first.
      }
      continue;
    }
    if (Date.now() > deadline) {
      throw new LockTimeoutError(path, holder.trim());
    }
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 25));
  }
  try {
    return await fn();
  } finally {
    try {
      if (readFileSync(path, "utf8") === token) unlinkSync(path);
    } catch {
      // Already gone.
    }
  }
}

export class LockTimeoutError extends Error {
  constructor(path: string, holder: string) {
    super(`timed out waiting for ${path} (held by ${holder || "unknown"})`);
    this.name = "LockTimeoutError";
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Every file below the given folders of root (relative paths, sorted); missing folders are skipped. */
export function listFilesUnder(root: string, folders: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    const full = join(root, rel);
    if (!existsSync(full)) return;
    if (!statSync(full).isDirectory()) {
      out.push(rel);
      return;
    }
    for (const name of readdirSync(full).sort()) walk(`${rel}/${name}`);
  };
  for (const folder of folders) walk(folder);
  return out;
}
