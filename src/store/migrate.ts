import type { Migration, SqlExecutor, Store } from "./store.ts";
import { ACCOUNTS_MIGRATION } from "./migrations/001-accounts.ts";
import { SUBMISSIONS_MIGRATION } from "./migrations/002-submissions.ts";
import { GITHUB_SUBMISSIONS_MIGRATION } from "./migrations/003-github-submissions.ts";
import { DELIVERY_QUEUE_MIGRATION } from "./migrations/004-delivery-queue.ts";
import { MAGIC_LINK_TOKENS_MIGRATION } from "./migrations/005-magic-link-tokens.ts";
import { UPLOAD_CREDENTIALS_MIGRATION } from "./migrations/006-upload-credentials.ts";
import { SUBMISSION_PACKAGE_FILES_MIGRATION } from "./migrations/007-submission-package-files.ts";
import { ACCOUNT_SUSPENSIONS_MIGRATION } from "./migrations/008-account-suspensions.ts";
import { DELIVERY_PAYLOAD_HASH_MIGRATION } from "./migrations/009-delivery-payload-hash.ts";

export type { Migration } from "./store.ts";

/** Every migration, in version order: the schema's whole history, one file a version. */
export const MIGRATIONS: readonly Migration[] = [
  ACCOUNTS_MIGRATION,
  SUBMISSIONS_MIGRATION,
  GITHUB_SUBMISSIONS_MIGRATION,
  DELIVERY_QUEUE_MIGRATION,
  MAGIC_LINK_TOKENS_MIGRATION,
  UPLOAD_CREDENTIALS_MIGRATION,
  SUBMISSION_PACKAGE_FILES_MIGRATION,
  ACCOUNT_SUSPENSIONS_MIGRATION,
  DELIVERY_PAYLOAD_HASH_MIGRATION,
];

/** Any constant works; it only has to be the same for every instance of the portal. */
const MIGRATION_LOCK_KEY = 0x5_7c_0001;

/** Applies pending migrations; returns the versions applied now. Safe to call on every start. */
export async function migrate(
  store: Store,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> {
  checkOrder(migrations);
  return store.transaction(async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await tx.exec(
      "CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
    );
    const applied = new Set((await appliedVersions(tx)).map((row) => row.version));
    const now: number[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      await tx.exec(migration.sql);
      await tx.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
        migration.version,
        migration.name,
      ]);
      now.push(migration.version);
    }
    return now;
  });
}

async function appliedVersions(tx: SqlExecutor): Promise<Array<{ version: number }>> {
  return (await tx.query<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version")).rows;
}

function checkOrder(migrations: readonly Migration[]): void {
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new Error(`migration ${migration.name} has version ${migration.version}, expected ${index + 1}`);
    }
  });
}
