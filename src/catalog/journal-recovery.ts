import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import { fsyncPath } from "../lib/atomic-write.ts";
import { fsyncGroup, removeInBackground } from "./spliced-content.ts";

/**
 * The journal of atomic-files.ts's transactions and their recovery: what a crash leaves under
 * root/.svc-tmp is rolled back (before the commit point) or forward (after it). See commitFiles
 * there for the guarantees; everything here runs under the tree's lock.
 */
export const TXN_DIR = ".svc-tmp";
/** Where writers stage files (beside the tree, same filesystem) before a commit links them in. */
export const STAGING_DIR = "staging";
export const PREPARING = "txn-";
export const COMMITTED = "commit-";
export const JOURNAL = "journal.json";
/** A finished transaction's folder, kept files and all, until it is removed in the background. */
export const TRASH = "trash-";
/** A note that outlives the transactions of its tree (owed-signing.ts): recovery leaves it in place. */
export const OWED_SIGNING = "signing-owed.json";

export type JournalEntry =
  /** source: the content file's name inside the transaction folder. */
  | { op: "write"; path: string; source: string }
  | { op: "delete"; path: string }
  /**
   * Placed before the commit point; rollback removes the path only while it is still this inode,
   * and the folders the transaction made for it (dirs, deepest first) when they are empty.
   */
  | { op: "create"; path: string; ino: number; dev: number; dirs?: string[] };

export interface Journal {
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

export function safeJoin(root: string, path: string): string {
  const full = join(root, path);
  const rel = relative(root, full);
  if (rel.startsWith("..") || rel === "" || rel.split(sep).includes("..") || path.includes("\0")) {
    throw new Error(`refusing to write outside the tree: ${path}`);
  }
  return full;
}

/** Creates dir (and missing parents); every folder whose entries changed goes into touched for fsync. */
export function ensureDir(dir: string, touched: Set<string>): void {
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

export function exists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

export function removeEmptyParents(root: string, dir: string, touched: Set<string>): void {
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
export function rollForward(root: string, txn: string): void {
  const journal = readJournal(txn);
  const touched = new Set<string>();
  let kept = false;
  if (journal && !Array.isArray(journal)) {
    for (const entry of journal.entries) {
      const full = safeJoin(root, entry.path);
      if (entry.op === "write") {
        const source = join(txn, entry.source);
        if (!exists(source)) continue; // renamed into place before the interruption
        ensureDir(dirname(full), touched);
        if (keepOldFile(full, join(txn, `old-${entry.source}`))) kept = true;
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
  fsyncGroup([...touched]);
  if (kept) {
    // Out of the way at once (no longer a transaction to recover), then removed in the background.
    const trash = join(dirname(txn), `${TRASH}${process.pid}-${basename(txn)}`);
    renameSync(txn, trash);
    discardLater(trash);
  } else {
    rmSync(txn, { recursive: true, force: true });
  }
  for (const listener of treeListeners) {
    // The transaction has landed: a listener that fails must not make it look as if it had not.
    try {
      listener(root);
    } catch {}
  }
}

/** Files from this size on are kept out of the rename that replaces them (see keepOldFile). */
const KEEP_FROM = 1 << 20;

/**
 * Links the file a roll-forward is about to replace into the transaction folder, when it is large:
 * the rename then drops one of its two names instead of its last, and the blocks of the old file
 * (74 MB of catalog.json at 50,000 mods: ~60 ms of ext4 freeing them inside rename(2) on this
 * project's disk) are freed when that folder is removed, in the background. True when it linked.
 */
function keepOldFile(full: string, keep: string): boolean {
  const old = lstatSync(full, { throwIfNoEntry: false });
  if (!old?.isFile() || old.size < KEEP_FROM) return false;
  try {
    linkSync(full, keep);
    return true;
  } catch (error) {
    // Linked by a roll-forward that was interrupted: the same file, still kept.
    if ((error as NodeJS.ErrnoException).code === "EEXIST") return true;
    throw error;
  }
}

/** Trash folders this process handed to the helper and may not have seen removed yet. */
const ownTrash = new Set<string>();
let exitHooked = false;

/**
 * Has the helper remove a finished transaction's folder in the background. What is still there
 * when the process exits normally is removed then (a site folder is uploaded to Pages whole, so no
 * old document may stay behind in site/.svc-tmp); after a crash, the next recovery removes it.
 */
function discardLater(trash: string): void {
  for (const earlier of ownTrash) if (!existsSync(earlier)) ownTrash.delete(earlier);
  if (!removeInBackground(trash)) {
    rmSync(trash, { recursive: true, force: true });
    return;
  }
  if (!exitHooked) {
    exitHooked = true;
    process.once("exit", removeOwnTrash);
  }
  ownTrash.add(trash);
}

function removeOwnTrash(): void {
  for (const trash of ownTrash)
    try {
      rmSync(trash, { recursive: true, force: true });
    } catch {}
  ownTrash.clear();
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
export function rollBack(root: string, txn: string): void {
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
    } else if (name.startsWith(`${TRASH}${process.pid}-`)) {
      // This process's helper thread is removing it (rollForward).
    } else if (name.startsWith(TRASH)) {
      // Garbage of a finished transaction; another process's helper may be removing it too.
      try {
        rmSync(path, { recursive: true, force: true });
      } catch {}
    } else {
      rmSync(path, { recursive: true, force: true });
    }
  }
  return result;
}
