import type { Role } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import {
  type AccountDependencies,
  audit,
  auditOwnAccount,
  deliver,
  requireEmailDelivery,
  type SessionCacheEntry,
} from "./account-dependencies.ts";
import {
  type Account,
  type AccountRow,
  copyAccount,
  iso,
  normalizeEmail,
  toAccount,
} from "./account-record.ts";
import { getAccount } from "./accounts.ts";
import { AUDIT_ACTIONS } from "./audit.ts";
import { magicLinkPath } from "./email.ts";
import { effectiveRoles } from "./roles.ts";
import { constantTimeEqual, csrfTokenFor, hashSecret, newSecretToken } from "./secrets.ts";

export interface SessionInfo {
  account: Account;
  /** Roles that take effect now (privileged roles need a verified email). */
  roles: Role[];
  csrfToken: string;
  createdAt: string;
  expiresAt: string;
}

/**
 * Sends a magic link to a verified account. Verified, unverified and unknown addresses take the
 * same path, so neither the answer nor its timing tells them apart: the same lookup, a token made
 * and hashed, one mail-system call, then one transaction of the same two statements. The token
 * insert writes one row for every address (migration 5 dropped the foreign key, so none pays a
 * lookup the others skip): born expired, so inert, unless the account was verified at the lookup,
 * and with no account for an unknown address; the audit insert records either outcome. The answer
 * is the same; in return-token mode the token of an address that cannot sign in signs nothing in.
 */
export async function requestMagicLink(
  deps: AccountDependencies,
  emailInput: string,
): Promise<{ expiresInSeconds: number; devToken?: string }> {
  const delivery = requireEmailDelivery(deps);
  const now = deps.now();
  const email = emailInput.trim();
  const normalized = normalizeEmail(email);
  const token = newSecretToken(deps.random);
  const tokenHash = hashSecret(token);
  // An unmatched address is recorded by hash only: the log must not collect strangers' emails.
  const addressHash = `sha256:${hashSecret(normalized).slice(0, 32)}`;
  const expiresAt = new Date(now.getTime() + deps.ttl.magicLinkSeconds * 1000).toISOString();
  const row = (
    await deps.store.query<{ id: string; email: string; display_name: string; verified_at: Date | null }>(
      "SELECT id, email, display_name, verified_at FROM accounts WHERE email_normalized = $1",
      [normalized],
    )
  ).rows[0];
  const eligible = row && row.verified_at !== null ? row : null;
  await deliver(
    deps,
    delivery,
    eligible
      ? {
          type: "magic_link",
          to: eligible.email,
          displayName: eligible.display_name,
          accountId: eligible.id,
          token,
          expiresAt,
          linkPath: magicLinkPath(token),
        }
      : { type: "sign_in_unavailable", to: email },
  );
  await deps.store.transaction(async (tx) => {
    await tx.query(
      `INSERT INTO magic_link_tokens (token_hash, account_id, created_at, expires_at)
       VALUES ($1, $2, $3::timestamptz, CASE WHEN $5::boolean THEN $4::timestamptz ELSE $3::timestamptz END)`,
      [tokenHash, row?.id ?? null, now.toISOString(), expiresAt, eligible !== null],
    );
    await audit(deps, tx, {
      actorAccountId: null,
      action: eligible ? AUDIT_ACTIONS.magicLinkRequested : AUDIT_ACTIONS.magicLinkUnmatched,
      targetType: eligible ? "account" : "email",
      targetId: eligible ? eligible.id : addressHash,
      metadata: eligible ? { expiresAt } : { reason: row ? "unverified" : "unknown" },
    });
  });
  return {
    expiresInSeconds: deps.ttl.magicLinkSeconds,
    ...(delivery.mode === "return-token" ? { devToken: token } : {}),
  };
}

/**
 * Redeems a magic-link token (single use, consumed atomically) for a brand-new session: a new
 * random session id at every sign-in, so an id planted before sign-in is never promoted. A
 * session the browser still presented is ended.
 */
export async function confirmMagicLink(
  deps: AccountDependencies,
  token: string,
  previousSessionToken?: string,
): Promise<{ sessionToken: string; session: SessionInfo }> {
  const now = deps.now();
  const sessionToken = newSecretToken(deps.random);
  const expiresAt = new Date(now.getTime() + deps.ttl.sessionSeconds * 1000).toISOString();
  const account = await deps.store.transaction(async (tx) => {
    const consumed = await tx.query<{ account_id: string }>(
      `UPDATE magic_link_tokens SET consumed_at = $2::timestamptz
       WHERE token_hash = $1 AND consumed_at IS NULL AND expires_at > $2::timestamptz
       RETURNING account_id`,
      [hashSecret(token), now.toISOString()],
    );
    const accountId = consumed.rows[0]?.account_id;
    if (!accountId) return null;
    const account = await getAccount(deps, accountId, tx);
    if (!account?.verifiedAt) return null;
    if (previousSessionToken) {
      await tx.query(
        "UPDATE sessions SET ended_at = $2::timestamptz WHERE id_hash = $1 AND ended_at IS NULL",
        [hashSecret(previousSessionToken), now.toISOString()],
      );
    }
    await tx.query(
      "INSERT INTO sessions (id_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3::timestamptz, $4::timestamptz)",
      [hashSecret(sessionToken), accountId, now.toISOString(), expiresAt],
    );
    await auditOwnAccount(deps, tx, accountId, AUDIT_ACTIONS.sessionCreated, {
      method: "magic_link",
      expiresAt,
    });
    return account;
  });
  if (previousSessionToken) deps.credentials.forgetSession(hashSecret(previousSessionToken));
  if (!account) throw new SvcError("token_invalid", "the magic-link token is unknown, used or expired");
  return {
    sessionToken,
    session: {
      account,
      roles: effectiveRoles(account.roles, true),
      csrfToken: csrfTokenFor(sessionToken),
      createdAt: now.toISOString(),
      expiresAt,
    },
  };
}

/**
 * The live session behind a cookie value, or null (unknown, ended or expired). A session the
 * store confirmed is trusted from memory for the credential cache's lifetime (never past its own
 * expiry); ending it or changing the account's roles through this process evicts it at once.
 */
export async function getSession(
  deps: AccountDependencies,
  sessionToken: string,
): Promise<SessionInfo | null> {
  if (!/^[A-Za-z0-9_-]{20,100}$/.test(sessionToken)) return null;
  const idHash = hashSecret(sessionToken);
  const cached = deps.credentials.sessions.get(idHash);
  if (cached && constantTimeEqual(cached.idHash, idHash)) return sessionInfo(cached, sessionToken);
  const epoch = deps.credentials.epoch;
  const row = (
    await deps.store.query<AccountRow & { s_created_at: Date; s_expires_at: Date; id_hash: string }>(
      `SELECT a.id, a.email, a.display_name, a.roles, a.created_at, a.verified_at,
              s.created_at AS s_created_at, s.expires_at AS s_expires_at, s.id_hash
       FROM sessions s JOIN accounts a ON a.id = s.account_id
       WHERE s.id_hash = $1 AND s.ended_at IS NULL AND s.expires_at > $2::timestamptz`,
      [idHash, deps.now().toISOString()],
    )
  ).rows[0];
  if (!row || !constantTimeEqual(row.id_hash, idHash)) return null;
  const account = toAccount(row);
  const entry: SessionCacheEntry = {
    accountId: account.id,
    idHash: row.id_hash,
    account,
    roles: effectiveRoles(account.roles, account.verifiedAt !== null),
    createdAt: iso(row.s_created_at)!,
    expiresAt: iso(row.s_expires_at)!,
  };
  // An eviction that ran while the row was on its way may concern it: cache only an undisturbed read.
  if (epoch === deps.credentials.epoch) {
    deps.credentials.sessions.set(idHash, entry, new Date(entry.expiresAt).getTime());
  }
  return sessionInfo(entry, sessionToken);
}

function sessionInfo(entry: SessionCacheEntry, sessionToken: string): SessionInfo {
  return {
    account: copyAccount(entry.account),
    roles: [...entry.roles],
    csrfToken: csrfTokenFor(sessionToken),
    createdAt: entry.createdAt,
    expiresAt: entry.expiresAt,
  };
}

/** True when the header value is this session's CSRF token (constant-time). */
export function checkCsrf(sessionToken: string, header: string | undefined): boolean {
  return typeof header === "string" && constantTimeEqual(header, csrfTokenFor(sessionToken));
}

/** Ends the session server-side: the cookie value is dead from now on, wherever it was copied to. */
export async function endSession(
  deps: AccountDependencies,
  sessionToken: string,
  accountId: string,
): Promise<void> {
  const now = deps.now().toISOString();
  await deps.store.transaction(async (tx) => {
    const ended = await tx.query(
      "UPDATE sessions SET ended_at = $2::timestamptz WHERE id_hash = $1 AND account_id = $3 AND ended_at IS NULL",
      [hashSecret(sessionToken), now, accountId],
    );
    if (ended.rowCount === 1) {
      await auditOwnAccount(deps, tx, accountId, AUDIT_ACTIONS.sessionEnded, { reason: "logout" });
    }
  });
  // After the commit: a lookup between an earlier eviction and the commit would re-cache it.
  deps.credentials.forgetSession(hashSecret(sessionToken));
}
