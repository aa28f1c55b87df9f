import { randomBytes } from "node:crypto";
import {
  closeSync,
  cpSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { PGlite, type Transaction } from "@electric-sql/pglite";
import { SvcError } from "../errors.ts";
import { writeFileSynced } from "../lib/atomic-write.ts";
import { describeHolder, tryLock } from "../lib/lock-file.ts";
import type { QueryResult, SqlExecutor, Store } from "./store.ts";

function wrap(db: PGlite | Transaction): SqlExecutor {
  return {
    async query<Row>(sql: string, params: readonly unknown[] = []): Promise<QueryResult<Row>> {
      const result = await db.query<Row>(sql, params as unknown[]);
      // PGlite reports affectedRows 0 for a SELECT; pg's rowCount counts its rows. Match pg.
      return { rows: result.rows, rowCount: result.rows.length || result.affectedRows || 0 };
    },
    async exec(sql: string): Promise<void> {
      await db.exec(sql);
    },
  };
}

/** The lock file that keeps a PGlite data folder to one process (beside the database files). */
export const DATA_DIR_LOCK = "svc.lock";

/** The installed PGlite's version (its package.json is not exported: found beside its entry). */
function pgliteVersion(): string {
  let dir = dirname(createRequire(import.meta.url).resolve("@electric-sql/pglite"));
  for (;;) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      const parsed = JSON.parse(readFileSync(manifest, "utf8")) as { name?: string; version?: string };
      if (parsed.name === "@electric-sql/pglite" && parsed.version) return parsed.version;
    }
    const parent = dirname(dir);
    if (parent === dir) return "unknown";
    dir = parent;
  }
}

const PGLITE_VERSION = pgliteVersion();

/**
 * Where fresh PGlite clusters are kept to be copied: the user's cache (never a shared temporary
 * folder, where another user could plant a database). A template is the output of PGlite's initdb,
 * nothing of ours in it, so one per PGlite version serves every portal of this user.
 */
export function defaultPgliteTemplateDir(): string {
  return join(homedir(), ".cache", "svc", `pglite-${PGLITE_VERSION}`);
}

/** Written last into a template: a folder without it was left by a crash and is never copied. */
const TEMPLATE_COMPLETE = "svc-template-complete";

/** A template's cluster files into a new folder, without its completeness marker. */
function copyTemplate(folder: string, to: string): void {
  cpSync(folder, to, { recursive: true, filter: (source) => !source.endsWith(TEMPLATE_COMPLETE) });
}

/**
 * initdb is most of what opening a new PGlite database costs (about 5.5 s of CPU here, against
 * 0.4-0.7 s to copy a fresh cluster or load its dump), and the test suite and a first `npm start`
 * open many new databases. So a new database is a copy of a fresh cluster made once per PGlite
 * version: a folder for databases on disk, a tar dump (PGlite's own dumpDataDir format) for
 * in-memory ones. Templates are made in a private folder and renamed into place, so a concurrent
 * maker or a crash never leaves a half template; any failure to use one falls back to initdb.
 */
async function templateFolder(cacheDir: string): Promise<string | null> {
  const folder = join(cacheDir, "cluster");
  if (existsSync(join(folder, TEMPLATE_COMPLETE))) return folder;
  const making = join(cacheDir, `making-${process.pid}-${randomBytes(6).toString("hex")}`);
  try {
    mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
    const db = await PGlite.create(making);
    await db.close();
    writeFileSync(join(making, TEMPLATE_COMPLETE), `${PGLITE_VERSION}\n`);
    // Fails (ENOTEMPTY) when another process renamed its template first: then that one is used.
    renameSync(making, folder);
    return folder;
  } catch {
    rmSync(making, { recursive: true, force: true });
    return existsSync(join(folder, TEMPLATE_COMPLETE)) ? folder : null;
  }
}

async function templateDump(cacheDir: string): Promise<Blob | null> {
  const file = join(cacheDir, "cluster.tar");
  if (!existsSync(file)) {
    const making = `${file}.${process.pid}-${randomBytes(6).toString("hex")}`;
    const opened = `${making}.cluster`;
    try {
      // Dumped from a copy of the folder template: one initdb per PGlite version serves both kinds.
      const folder = await templateFolder(cacheDir);
      let db: PGlite;
      if (folder) {
        copyTemplate(folder, opened);
        db = await PGlite.create(opened);
      } else {
        db = await PGlite.create();
      }
      const dump = await db.dumpDataDir("none");
      await db.close();
      writeFileSync(making, new Uint8Array(await dump.arrayBuffer()));
      renameSync(making, file);
    } catch {
      rmSync(making, { force: true });
      if (!existsSync(file)) return null;
    } finally {
      rmSync(opened, { recursive: true, force: true });
    }
  }
  try {
    return new Blob([readFileSync(file)]);
  } catch {
    return null;
  }
}

/**
 * Present while a data folder's first cluster is being made (copied from the template or by
 * initdb), removed once PGlite has opened it: a folder that still has it was left by a kill during
 * the first start, and is remade instead of failing every later start. A folder with neither this
 * nor a cluster is new; a folder made before this marker existed has a cluster and no marker.
 */
export const DATA_DIR_CREATING = "svc-cluster-creating";

/** True when dataDir holds no database yet (only, perhaps, our lock file), or a half-made first one. */
function isNewDataDir(dataDir: string): boolean {
  const names = readdirSync(dataDir);
  if (names.includes(DATA_DIR_CREATING)) {
    for (const name of names)
      if (name !== DATA_DIR_LOCK) rmSync(join(dataDir, name), { recursive: true, force: true });
    return true;
  }
  return names.every((name) => name === DATA_DIR_LOCK);
}

/** Marks dataDir as being made; the mark is durable before any cluster file is written. */
function markCreating(dataDir: string): void {
  writeFileSynced(join(dataDir, DATA_DIR_CREATING), `${process.pid}\n`);
  syncFolder(dataDir);
}

function markCreated(dataDir: string): void {
  rmSync(join(dataDir, DATA_DIR_CREATING), { force: true });
  syncFolder(dataDir);
}

function syncFolder(dir: string): void {
  const fd = openSync(dir, "r");
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

async function openPglite(dataDir: string | null, templateDir: string | null): Promise<PGlite> {
  if (!templateDir) {
    if (!dataDir) return PGlite.create();
    if (!isNewDataDir(dataDir)) return PGlite.create(dataDir);
    markCreating(dataDir);
    const db = await PGlite.create(dataDir);
    markCreated(dataDir);
    return db;
  }
  if (!dataDir) {
    const dump = await templateDump(templateDir);
    if (dump) {
      try {
        return await PGlite.create({ loadDataDir: dump });
      } catch {
        rmSync(join(templateDir, "cluster.tar"), { force: true });
      }
    }
    return PGlite.create();
  }
  if (!isNewDataDir(dataDir)) return PGlite.create(dataDir);
  markCreating(dataDir);
  const folder = await templateFolder(templateDir);
  if (folder) {
    try {
      copyTemplate(folder, dataDir);
      const db = await PGlite.create(dataDir);
      markCreated(dataDir);
      return db;
    } catch {
      // A template that does not open is dropped; the database is made the slow way.
      rmSync(folder, { recursive: true, force: true });
      for (const name of readdirSync(dataDir)) {
        if (name !== DATA_DIR_LOCK && name !== DATA_DIR_CREATING)
          rmSync(join(dataDir, name), { recursive: true, force: true });
      }
    }
  }
  const db = await PGlite.create(dataDir);
  markCreated(dataDir);
  return db;
}

/**
 * PGlite: PostgreSQL compiled to WASM, in this process. dataDir persists it on disk; null keeps it
 * in memory (tests). PGlite has one connection, so its transactions are serialised by the library:
 * the row locks the accounts code takes are then trivially held.
 *
 * PGlite does not guard its folder: two processes on one folder both start and each overwrites the
 * other's pages. The folder is therefore locked for the life of the store (released by close(), or
 * by the process dying); a second process is refused with data_dir_locked naming the holder.
 */
export async function createPgliteStore(
  dataDir: string | null,
  options: { templateDir?: string | null } = {},
): Promise<Store> {
  const templateDir = options.templateDir === undefined ? defaultPgliteTemplateDir() : options.templateDir;
  let unlock = () => {};
  if (dataDir) {
    mkdirSync(dataDir, { recursive: true });
    const lock = tryLock(join(dataDir, DATA_DIR_LOCK), "PGlite data folder");
    if (!lock.ok) {
      throw new SvcError(
        "data_dir_locked",
        `${dataDir} is in use by ${describeHolder(lock.holder)}: one process per data folder (stop it, or set SVC_DATA_DIR to another folder)`,
        { details: { dataDir, holder: lock.holder } },
      );
    }
    unlock = lock.release;
  }
  let db: PGlite;
  try {
    db = await openPglite(dataDir, templateDir);
  } catch (error) {
    unlock();
    throw error;
  }
  const base = wrap(db);
  return {
    kind: "pglite",
    description: dataDir ? `PGlite at ${dataDir}` : "PGlite in memory",
    query: base.query,
    exec: base.exec,
    transaction(fn) {
      return db.transaction((tx) => fn(wrap(tx)));
    },
    async close() {
      try {
        await db.close();
      } finally {
        unlock();
      }
    },
  };
}
