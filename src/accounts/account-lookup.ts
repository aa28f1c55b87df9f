import type { SqlExecutor } from "../store/store.ts";
import { ACCOUNT_COLUMNS, type Account, type AccountRow, toAccount } from "./account-record.ts";

/**
 * Several accounts by id in one query (the review page names an uploader and each reviewer);
 * ids that name no account are absent from the map.
 */
export async function findAccounts(db: SqlExecutor, ids: readonly string[]): Promise<Map<string, Account>> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return new Map();
  const rows = await db.query<AccountRow>(
    `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ANY($1::text[])`,
    [unique],
  );
  return new Map(rows.rows.map((row) => [row.id, toAccount(row)]));
}
