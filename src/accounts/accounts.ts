import type { Role } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import type { SqlExecutor } from "../store/store.ts";
import {
  type AccountDependencies,
  audit,
  auditOwnAccount,
  deliver,
  requireEmailDelivery,
} from "./account-dependencies.ts";
import {
  ACCOUNT_COLUMNS,
  type Account,
  type AccountRow,
  normalizeEmail,
  toAccount,
} from "./account-record.ts";
import { AUDIT_ACTIONS } from "./audit.ts";
import { verifyEmailLinkPath } from "./email.ts";
import { effectiveRoles, normalizeRoles, PRIVILEGED_ROLES } from "./roles.ts";
import { hashSecret, newId, newSecretToken } from "./secrets.ts";

/** Thrown inside the sign-up transaction to roll it back when another sign-up took the address first. */
class SignupRaceLost extends Error {}

export interface NewAccountInput {
  email: string;
  displayName: string;
  role: "player" | "modder";
}

export async function getAccount(
  deps: AccountDependencies,
  id: string,
  db: SqlExecutor = deps.store,
): Promise<Account | null> {
  const row = (await db.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id]))
    .rows[0];
  return row ? toAccount(row) : null;
}

export async function listAccounts(
  deps: AccountDependencies,
  options: { limit?: number; cursor?: string } = {},
): Promise<{
  accounts: Account[];
  nextCursor: string | null;
}> {
  const limit = Math.min(Math.max(options.limit ?? 100, 1), 500);
  const after = options.cursor ? Buffer.from(options.cursor, "base64url").toString("utf8") : "";
  const rows = (
    await deps.store.query<AccountRow>(
      `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id > $1 ORDER BY id LIMIT $2`,
      [after, limit + 1],
    )
  ).rows;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    accounts: page.map(toAccount),
    nextCursor: rows.length > limit && last ? Buffer.from(last.id).toString("base64url") : null,
  };
}

/**
 * Starts sign-up. A new and a taken address take the same path, so neither the answer nor its
 * timing tells them apart: the same lookup, two tokens drawn and hashed, one mail-system call with
 * the same fields, then one transaction of the same three statements (the account insert, which
 * a taken address turns into a no-op through ON CONFLICT; a verification token; one audit event).
 * For a taken address the owner is mailed "account_exists" with a link that verifies their own
 * account, and the caller gets an id and (return-token mode) a token that verify nothing. The
 * mail goes out before any row is written, so a failed delivery leaves nothing behind.
 * Developer auto-verify mode skips the token and the mail for new addresses: it reveals accounts
 * anyway (a new one is usable at once) and is never a production setting.
 */
export async function createAccount(
  deps: AccountDependencies,
  input: NewAccountInput,
): Promise<{
  accountId: string;
  status: "verification_sent" | "verified";
  verificationExpiresAt: string | null;
  devToken?: string;
}> {
  const delivery = requireEmailDelivery(deps);
  const now = deps.now();
  const email = input.email.trim();
  const normalized = normalizeEmail(email);
  const accountId = newId("acct", deps.random);
  const token = newSecretToken(deps.random);
  const tokenHash = hashSecret(token);
  const decoyToken = newSecretToken(deps.random);
  const autoVerify = delivery.mode === "auto-verify";
  const expiresAt = new Date(now.getTime() + deps.ttl.verificationSeconds * 1000).toISOString();
  const existing = (
    await deps.store.query<{ id: string; display_name: string }>(
      "SELECT id, display_name FROM accounts WHERE email_normalized = $1",
      [normalized],
    )
  ).rows[0];
  const response = {
    accountId,
    status: autoVerify ? ("verified" as const) : ("verification_sent" as const),
    verificationExpiresAt: autoVerify ? null : expiresAt,
    ...(delivery.mode === "return-token" ? { devToken: existing ? decoyToken : token } : {}),
  };
  const tokenAccountId = existing ? existing.id : accountId;
  const roles: Role[] = normalizeRoles(
    deps.bootstrapAdmins.has(normalized) ? [input.role, "admin"] : [input.role],
  );
  if (existing || !autoVerify) {
    await deliver(deps, delivery, {
      type: existing ? "account_exists" : "verify_email",
      to: email,
      displayName: existing ? existing.display_name : input.displayName,
      accountId: tokenAccountId,
      token,
      expiresAt,
      linkPath: verifyEmailLinkPath(tokenAccountId, token),
    });
  } else {
    deps.log(`[dev email] auto-verify: ${email} (${accountId}) is verified without a mail`);
  }
  const writeToken = existing !== undefined || !autoVerify;
  try {
    await deps.store.transaction(async (tx) => {
      const inserted = await tx.query(
        `INSERT INTO accounts (id, email, email_normalized, display_name, roles, created_at, verified_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz, $6::timestamptz)
         ON CONFLICT (email_normalized) DO NOTHING`,
        [
          accountId,
          email,
          normalized,
          input.displayName,
          roles,
          now.toISOString(),
          autoVerify ? now.toISOString() : null,
        ],
      );
      // A concurrent sign-up took the address between the lookup and the insert: same answer, nothing written.
      if (!existing && inserted.rowCount !== 1) throw new SignupRaceLost();
      if (writeToken) {
        await tx.query(
          "INSERT INTO verification_tokens (token_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3::timestamptz, $4::timestamptz)",
          [tokenHash, tokenAccountId, now.toISOString(), expiresAt],
        );
      }
      await audit(
        deps,
        tx,
        existing
          ? {
              actorAccountId: null,
              action: AUDIT_ACTIONS.accountSignupDuplicate,
              targetType: "account",
              targetId: existing.id,
            }
          : {
              actorAccountId: accountId,
              action: AUDIT_ACTIONS.accountCreated,
              targetType: "account",
              targetId: accountId,
              metadata: { roles, bootstrapAdmin: roles.includes("admin"), autoVerified: autoVerify },
            },
      );
      if (autoVerify && !existing) {
        await auditOwnAccount(deps, tx, accountId, AUDIT_ACTIONS.accountEmailVerified, {
          method: "auto_verify",
        });
      }
    });
  } catch (error) {
    if (error instanceof SignupRaceLost) return response;
    throw error;
  }
  return response;
}

/** Consumes a verification token of this account (single use, atomically). */
export async function verifyEmail(
  deps: AccountDependencies,
  accountId: string,
  token: string,
): Promise<Account> {
  const now = deps.now().toISOString();
  const account = await deps.store.transaction(async (tx) => {
    const consumed = await tx.query<{ account_id: string }>(
      `UPDATE verification_tokens SET consumed_at = $3::timestamptz
       WHERE token_hash = $1 AND account_id = $2 AND consumed_at IS NULL AND expires_at > $3::timestamptz
       RETURNING account_id`,
      [hashSecret(token), accountId, now],
    );
    if (consumed.rowCount !== 1) return null;
    const row = (
      await tx.query<AccountRow>(
        `UPDATE accounts SET verified_at = COALESCE(verified_at, $2::timestamptz), updated_at = $2::timestamptz
         WHERE id = $1 RETURNING ${ACCOUNT_COLUMNS}`,
        [accountId, now],
      )
    ).rows[0]!;
    await auditOwnAccount(deps, tx, accountId, AUDIT_ACTIONS.accountEmailVerified, { method: "email_token" });
    return toAccount(row);
  });
  // Verification changes which roles take effect, and cached credentials carry them.
  if (account) deps.credentials.forgetAccount(accountId);
  if (!account) {
    throw new SvcError(
      "token_invalid",
      "the verification token is unknown, used, expired or for another account",
    );
  }
  return account;
}

/**
 * Replaces the role set of an account. Serialised on a lock row so that two admins demoting each
 * other at the same moment cannot both succeed: the second sees the first's change, and either
 * is no longer an admin (forbidden) or would remove the last verified admin (last_admin).
 */
export async function updateRoles(
  deps: AccountDependencies,
  actorAccountId: string,
  targetAccountId: string,
  rolesInput: readonly Role[],
): Promise<Account> {
  const roles = normalizeRoles(rolesInput);
  if (roles.length === 0) throw new SvcError("invalid_payload", "an account needs at least one role");
  const now = deps.now().toISOString();
  const updated = await deps.store.transaction(async (tx) => {
    await tx.query("SELECT name FROM store_locks WHERE name = 'account_roles' FOR UPDATE");
    const actor = await getAccount(deps, actorAccountId, tx);
    if (!actor || !effectiveRoles(actor.roles, actor.verifiedAt !== null).includes("admin")) {
      throw new SvcError("forbidden", "only a verified admin can change roles");
    }
    const target = await getAccount(deps, targetAccountId, tx);
    if (!target) throw new SvcError("not_found", `no account ${targetAccountId}`);
    const privileged = roles.filter((role) => PRIVILEGED_ROLES.includes(role));
    if (privileged.length > 0 && !target.verifiedAt) {
      throw new SvcError("account_not_verified", "privileged roles need a verified email address", {
        details: { roles: privileged },
      });
    }
    const wasAdmin = target.verifiedAt !== null && target.roles.includes("admin");
    if (wasAdmin && !roles.includes("admin")) {
      const admins = await tx.query<{ n: string }>(
        "SELECT count(*)::text AS n FROM accounts WHERE 'admin' = ANY(roles) AND verified_at IS NOT NULL",
      );
      if (Number(admins.rows[0]?.n ?? 0) <= 1) {
        throw new SvcError("last_admin", "the last verified admin cannot lose the admin role");
      }
    }
    const row = (
      await tx.query<AccountRow>(
        `UPDATE accounts SET roles = $2, updated_at = $3::timestamptz WHERE id = $1 RETURNING ${ACCOUNT_COLUMNS}`,
        [targetAccountId, roles, now],
      )
    ).rows[0]!;
    await audit(deps, tx, {
      actorAccountId,
      action: AUDIT_ACTIONS.accountRolesUpdated,
      targetType: "account",
      targetId: targetAccountId,
      metadata: { before: target.roles, after: roles },
    });
    return toAccount(row);
  });
  // Cached sessions and keys carry the old roles: on this process the change applies at once.
  deps.credentials.forgetAccount(targetAccountId);
  return updated;
}
