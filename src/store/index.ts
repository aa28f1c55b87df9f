import type { RuntimeSettings } from "../config/settings.ts";
import { migrate } from "./migrate.ts";
import type { PostgresStoreOptions } from "./postgres-store.ts";
import type { Store } from "./store.ts";

export type { Migration } from "./migrate.ts";
export { MIGRATIONS, migrate } from "./migrate.ts";
export type { QueryResult, SqlExecutor, Store } from "./store.ts";

/**
 * pg is loaded when a pool is opened, not when the store module is: a Vercel function's cold import
 * (docs/api.md, "Small cold starts") then parses and runs none of it before its first request.
 */
export async function createPostgresStore(url: string, options: PostgresStoreOptions = {}): Promise<Store> {
  const postgres = await import("./postgres-store.ts");
  return postgres.createPostgresStore(url, options);
}

/**
 * PGlite (16 MB of WASM) is loaded only when it is used: nothing imports pglite-store.ts statically,
 * so a Vercel function (which always has DATABASE_URL) neither loads nor ships it; vercel.json also
 * excludes the package from the functions' bundles, because the file tracer follows this import.
 */
export async function createPgliteStore(
  dataDir: string | null,
  options: { templateDir?: string | null } = {},
): Promise<Store> {
  const pglite = await import("./pglite-store.ts");
  return pglite.createPgliteStore(dataDir, options);
}

/**
 * The store the settings ask for, migrated: PostgreSQL when DATABASE_URL is set (a pool of
 * databasePoolMax connections), otherwise PGlite persisted under settings.dataDir (default .data/).
 */
export async function createStore(
  settings: Pick<RuntimeSettings, "databaseUrl" | "dataDir" | "databasePoolMax">,
): Promise<Store> {
  const store = settings.databaseUrl
    ? await createPostgresStore(settings.databaseUrl, { max: settings.databasePoolMax })
    : await createPgliteStore(settings.dataDir);
  try {
    await migrate(store);
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}
