/** The submissions' paged listings: the moderation queue by state, and an account's own. */
import type { SqlExecutor } from "../store/store.ts";
import type { SubmissionState } from "../workflow/machine.ts";
import type { SubmissionRow } from "./service.ts";

/** The moderation queue: by state (default pending, failed, approved, hidden, superseded), oldest first, keyset-paged. */
export async function listSubmissions(
  db: SqlExecutor,
  filter: { states: readonly SubmissionState[]; limit: number; after?: { createdAt: string; id: string } },
): Promise<SubmissionRow[]> {
  const params: unknown[] = [filter.states, filter.limit];
  let where = "state = ANY($1::text[])";
  if (filter.after) {
    params.push(filter.after.createdAt, filter.after.id);
    where += " AND (created_at, id) > ($3::timestamptz, $4)";
  }
  const result = await db.query<SubmissionRow>(
    `SELECT * FROM submissions WHERE ${where} ORDER BY created_at, id LIMIT $2`,
    params,
  );
  return result.rows;
}

/**
 * An account's own submissions (every state), newest first, keyset-paged on (created_at, id):
 * creation order never changes, so a page boundary holds while rows move between states.
 * owner null lists every account's (staff only; the caller decides). Served by submissions_owner.
 */
export async function listOwnedSubmissions(
  db: SqlExecutor,
  filter: { owner: string | null; limit: number; before?: { createdAt: string; id: string } },
): Promise<SubmissionRow[]> {
  const params: unknown[] = [filter.limit];
  const where: string[] = [];
  if (filter.owner !== null) {
    params.push(filter.owner);
    where.push(`owner_account_id = $${params.length}`);
  }
  if (filter.before) {
    params.push(filter.before.createdAt, filter.before.id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length})`);
  }
  const result = await db.query<SubmissionRow>(
    `SELECT * FROM submissions ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}
       ORDER BY created_at DESC, id DESC LIMIT $1`,
    params,
  );
  return result.rows;
}
