import type { RuntimeSettings } from "../config/settings.ts";
import { migrate } from "./migrations.ts";
import { createPgliteStore } from "./pglite-store.ts";
import { createPostgresStore } from "./postgres-store.ts";
import type { Store } from "./store.ts";

export type { Migration } from "./migrations.ts";
export { MIGRATIONS, migrate } from "./migrations.ts";
export { createPgliteStore } from "./pglite-store.ts";
export { createPostgresStore } from "./postgres-store.ts";
export type { QueryResult, SqlExecutor, Store } from "./store.ts";

/**
 * The store the settings ask for, migrated: PostgreSQL when DATABASE_URL is set, otherwise PGlite
 * persisted under settings.dataDir (default .data/).
 */
export async function createStore(
  settings: Pick<RuntimeSettings, "databaseUrl" | "dataDir">,
): Promise<Store> {
  const store = settings.databaseUrl
    ? await createPostgresStore(settings.databaseUrl)
    : await createPgliteStore(settings.dataDir);
  try {
    await migrate(store);
  } catch (error) {
    await store.close().catch(() => {});
    throw error;
  }
  return store;
}
