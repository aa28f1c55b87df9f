/**
 * Upload suspensions: a moderator stops an account from uploading (a malware upload, a flood), with
 * a reason; an admin lifts it. While one is in force, create_upload and the trusted-publishing
 * exchange refuse the account with account_suspended. Each suspension is a row kept as history
 * once lifted; both moves are audit events in the same transaction.
 */
import type { Role } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import type { SqlExecutor, Store } from "../store/store.ts";
import { ACCOUNT_COLUMNS, type AccountRow, iso, toAccount } from "./account-record.ts";
import { AUDIT_ACTIONS, appendAuditEvent } from "./audit.ts";
import { effectiveRoles, PRIVILEGED_ROLES } from "./roles.ts";
import { newId, type RandomBytes } from "./secrets.ts";

export interface UploadSuspension {
  id: string;
  accountId: string;
  reason: string;
  suspendedBy: string;
  suspendedAt: string;
  /** The submission the moderator suspended from, when there was one. */
  submissionId: string | null;
  liftedBy: string | null;
  liftedAt: string | null;
  liftReason: string | null;
}

interface SuspensionRow {
  id: string;
  account_id: string;
  reason: string;
  suspended_by: string;
  suspended_at: Date | string;
  submission_id: string | null;
  lifted_by: string | null;
  lifted_at: Date | string | null;
  lift_reason: string | null;
}

const COLUMNS =
  "id, account_id, reason, suspended_by, suspended_at, submission_id, lifted_by, lifted_at, lift_reason";

function toSuspension(row: SuspensionRow): UploadSuspension {
  return {
    id: row.id,
    accountId: row.account_id,
    reason: row.reason,
    suspendedBy: row.suspended_by,
    suspendedAt: iso(row.suspended_at)!,
    submissionId: row.submission_id,
    liftedBy: row.lifted_by,
    liftedAt: iso(row.lifted_at),
    liftReason: row.lift_reason,
  };
}

interface Deps {
  now: Date;
  random: RandomBytes;
}

/** The suspension in force on an account's uploads, or null. */
export async function suspensionInForce(
  db: SqlExecutor,
  accountId: string,
): Promise<UploadSuspension | null> {
  const row = (
    await db.query<SuspensionRow>(
      `SELECT ${COLUMNS} FROM account_suspensions WHERE account_id = $1 AND lifted_at IS NULL`,
      [accountId],
    )
  ).rows[0];
  return row ? toSuspension(row) : null;
}

/** Every suspension of an account, newest first (the one in force, if any, and the lifted ones). */
export async function suspensionHistory(db: SqlExecutor, accountId: string): Promise<UploadSuspension[]> {
  const rows = await db.query<SuspensionRow>(
    `SELECT ${COLUMNS} FROM account_suspensions WHERE account_id = $1 ORDER BY suspended_at DESC, id DESC`,
    [accountId],
  );
  return rows.rows.map(toSuspension);
}

/** account_suspended while a suspension is in force; what create_upload and the exchange ask first. */
export async function assertUploadsAllowed(db: SqlExecutor, accountId: string): Promise<void> {
  const suspension = await suspensionInForce(db, accountId);
  if (suspension)
    throw new SvcError(
      "account_suspended",
      `a moderator suspended this account's uploads on ${suspension.suspendedAt.slice(0, 10)}: ${suspension.reason}`,
      { details: { reason: suspension.reason, suspendedAt: suspension.suspendedAt } },
    );
}

/** The account row, locked: two moves on one account's suspension never interleave. */
async function lockedAccount(tx: SqlExecutor, accountId: string) {
  const row = (
    await tx.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1 FOR UPDATE`, [
      accountId,
    ])
  ).rows[0];
  if (!row) throw new SvcError("not_found", `no account ${accountId}`);
  return toAccount(row);
}

/**
 * Suspends an account's uploads. Moderators suspend players and modders; only an admin suspends a
 * moderator's or an admin's (a moderator could otherwise silence the people who review them), and
 * nobody suspends themselves.
 */
export async function suspendUploads(
  store: Store,
  input: {
    accountId: string;
    actor: { accountId: string; roles: readonly Role[] };
    reason: string;
    submissionId?: string;
  },
  deps: Deps,
): Promise<UploadSuspension> {
  if (input.actor.accountId === input.accountId)
    throw new SvcError("forbidden", "you cannot suspend your own uploads");
  return store.transaction(async (tx) => {
    const target = await lockedAccount(tx, input.accountId);
    const staff = effectiveRoles(target.roles, target.verifiedAt !== null).some((r) =>
      PRIVILEGED_ROLES.includes(r),
    );
    if (staff && !input.actor.roles.includes("admin"))
      throw new SvcError("forbidden", "only an admin can suspend a moderator's or an admin's uploads");
    const current = await suspensionInForce(tx, input.accountId);
    if (current)
      throw new SvcError("conflict", `account ${input.accountId}'s uploads are already suspended`, {
        details: { suspension: current },
      });
    const id = newId("sus", deps.random);
    const row = (
      await tx.query<SuspensionRow>(
        `INSERT INTO account_suspensions (id, account_id, reason, suspended_by, suspended_at, submission_id)
         VALUES ($1, $2, $3, $4, $5::timestamptz, $6) RETURNING ${COLUMNS}`,
        [
          id,
          input.accountId,
          input.reason,
          input.actor.accountId,
          deps.now.toISOString(),
          input.submissionId ?? null,
        ],
      )
    ).rows[0]!;
    await appendAuditEvent(
      tx,
      {
        actorAccountId: input.actor.accountId,
        action: AUDIT_ACTIONS.accountUploadsSuspended,
        targetType: "account",
        targetId: input.accountId,
        metadata: { suspensionId: id, reason: input.reason, submissionId: input.submissionId ?? null },
      },
      deps,
    );
    return toSuspension(row);
  });
}

/** Lifts the suspension in force (an admin's move); conflict when none is. */
export async function liftUploadSuspension(
  store: Store,
  input: { accountId: string; actorAccountId: string; reason: string },
  deps: Deps,
): Promise<UploadSuspension> {
  return store.transaction(async (tx) => {
    await lockedAccount(tx, input.accountId);
    const current = await suspensionInForce(tx, input.accountId);
    if (!current) throw new SvcError("conflict", `account ${input.accountId}'s uploads are not suspended`);
    const row = (
      await tx.query<SuspensionRow>(
        `UPDATE account_suspensions SET lifted_by = $2, lifted_at = $3::timestamptz, lift_reason = $4
         WHERE id = $1 RETURNING ${COLUMNS}`,
        [current.id, input.actorAccountId, deps.now.toISOString(), input.reason],
      )
    ).rows[0]!;
    await appendAuditEvent(
      tx,
      {
        actorAccountId: input.actorAccountId,
        action: AUDIT_ACTIONS.accountUploadsReinstated,
        targetType: "account",
        targetId: input.accountId,
        metadata: {
          suspensionId: current.id,
          reason: input.reason,
          suspendedAt: current.suspendedAt,
          suspendedBy: current.suspendedBy,
        },
      },
      deps,
    );
    return toSuspension(row);
  });
}
