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
}

export interface CommitOptions {
  /** Test hook: called before each rename; throwing simulates a failure at that point. */
  beforeApply?: (index: number, path: string) => void;
}

export interface CommitResult {
  written: string[];
  deleted: string[];
  unchanged: number;
}

/** Thrown by a beforeApply hook to simulate a crash: the transaction is left on disk, not rolled back. */
export class SimulatedCrash extends Error {}

const TXN_DIR = ".svc-tmp";

interface JournalEntry {
  path: string;
  next: string | null;
  backup: string | null;
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
  for (const path of changes.delete ?? []) {
    if (changes.write.has(path)) continue;
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
    entries.forEach((entry, i) => {
      const full = safeJoin(root, entry.path);
      if (existsSync(full)) {
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
      if (entry.next) {
        mkdirSync(dirname(full), { recursive: true });
        renameSync(join(txn, entry.next), full);
      } else {
        unlinkSync(full);
        removeEmptyParents(root, dirname(full));
      }
    });
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
      if (entry.backup && existsSync(join(txn, entry.backup))) {
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

/** Rolls back any transaction a crash left behind; finished ones are only cleaned up. */
export function recoverTransactions(root: string): { rolledBack: number } {
  const dir = join(root, TXN_DIR);
  if (!existsSync(dir)) return { rolledBack: 0 };
  let rolledBack = 0;
  for (const name of readdirSync(dir)) {
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
