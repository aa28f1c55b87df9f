import { mkdirSync } from "node:fs";
import { PGlite, type Transaction } from "@electric-sql/pglite";
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

/**
 * PGlite: PostgreSQL compiled to WASM, in this process. dataDir persists it on disk; null keeps it
 * in memory (tests). PGlite has one connection, so its transactions are serialised by the library:
 * the row locks the accounts code takes are then trivially held.
 */
export async function createPgliteStore(dataDir: string | null): Promise<Store> {
  if (dataDir) mkdirSync(dataDir, { recursive: true });
  const db = dataDir ? await PGlite.create(dataDir) : await PGlite.create();
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
      await db.close();
    },
  };
}
