import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { PGlite, type Transaction } from "@electric-sql/pglite";
import { SvcError } from "../errors.ts";
import { describeHolder, tryLock } from "./lock-file.ts";
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

/**
 * PGlite: PostgreSQL compiled to WASM, in this process. dataDir persists it on disk; null keeps it
 * in memory (tests). PGlite has one connection, so its transactions are serialised by the library:
 * the row locks the accounts code takes are then trivially held.
 *
 * PGlite does not guard its folder: two processes on one folder both start and each overwrites the
 * other's pages. The folder is therefore locked for the life of the store (released by close(), or
 * by the process dying); a second process is refused with data_dir_locked naming the holder.
 */
export async function createPgliteStore(dataDir: string | null): Promise<Store> {
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
    db = dataDir ? await PGlite.create(dataDir) : await PGlite.create();
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
