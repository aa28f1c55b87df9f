import type { RateLimitBucket, Role } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import type { SqlExecutor, Store } from "../store/store.ts";
import { apiKeyDisplayPrefix, generateApiKey, isWellFormedApiKey } from "./api-key-format.ts";
import {
  AUDIT_ACTIONS,
  type AuditEvent,
  type AuditFilter,
  type AuditInput,
  type AuditPage,
  appendAuditEvent,
  listAuditEvents,
} from "./audit.ts";
import { type EmailDelivery, EmailDeliveryError, magicLinkPath, verifyEmailLinkPath } from "./email.ts";
import { consumeRateLimit, pruneRateLimits, type RateLimitRule } from "./rate-limit.ts";
import { effectiveRoles, hasAnyRole, normalizeRoles, PRIVILEGED_ROLES, ROLES } from "./roles.ts";
import {
  constantTimeEqual,
  csrfTokenFor,
  defaultRandomBytes,
  hashSecret,
  newId,
  newSecretToken,
  type RandomBytes,
} from "./secrets.ts";

export interface Account {
  id: string;
  email: string;
  displayName: string;
  /** Stored roles; privileged ones count only once verifiedAt is set (see effectiveRoles). */
  roles: Role[];
  createdAt: string;
  verifiedAt: string | null;
}

export interface SessionInfo {
  account: Account;
  /** Roles that take effect now (privileged roles need a verified email). */
  roles: Role[];
  csrfToken: string;
  createdAt: string;
  expiresAt: string;
}

export interface ApiKeyMetadata {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export interface AccountServiceOptions {
  store: Store;
  /** null: no delivery configured, so sign-up and magic links fail closed. */
  email: EmailDelivery | null;
  bootstrapAdminEmails: readonly string[];
  rateLimits: Record<RateLimitBucket, RateLimitRule>;
  now?: () => Date;
  random?: RandomBytes;
  log?: (line: string) => void;
  ttl?: Partial<{ verificationSeconds: number; magicLinkSeconds: number; sessionSeconds: number }>;
}

interface AccountRow {
  id: string;
  email: string;
  display_name: string;
  roles: Role[];
  created_at: Date;
  verified_at: Date | null;
}

const ACCOUNT_COLUMNS = "id, email, display_name, roles, created_at, verified_at";
const MAX_ACTIVE_API_KEYS = 25;
const API_KEY_TOUCH_INTERVAL_MS = 60_000;

function iso(value: Date | string | null): string | null {
  return value === null ? null : new Date(value).toISOString();
}

function toAccount(row: AccountRow): Account {
  return {
    id: row.id,
    email: row.email,
    displayName: row.display_name,
    roles: normalizeRoles(row.roles),
    createdAt: iso(row.created_at)!,
    verifiedAt: iso(row.verified_at),
  };
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

/**
 * Accounts, email verification, magic links, sessions, API keys, roles, rate limits and audit:
 * pure logic over the store, no HTTP. Clock, randomness and mail delivery are injected.
 */
export class AccountService {
  readonly store: Store;
  readonly email: EmailDelivery | null;
  private readonly now: () => Date;
  private readonly random: RandomBytes;
  private readonly log: (line: string) => void;
  private readonly bootstrapAdmins: Set<string>;
  private readonly rateLimits: Record<RateLimitBucket, RateLimitRule>;
  private readonly ttl: { verificationSeconds: number; magicLinkSeconds: number; sessionSeconds: number };
  private rateLimitCalls = 0;

  constructor(options: AccountServiceOptions) {
    this.store = options.store;
    this.email = options.email;
    this.now = options.now ?? (() => new Date());
    this.random = options.random ?? defaultRandomBytes;
    this.log = options.log ?? (() => {});
    this.bootstrapAdmins = new Set(options.bootstrapAdminEmails.map(normalizeEmail));
    this.rateLimits = options.rateLimits;
    this.ttl = {
      verificationSeconds: 24 * 3600,
      magicLinkSeconds: 15 * 60,
      sessionSeconds: 7 * 24 * 3600,
      ...options.ttl,
    };
  }

  get sessionTtlSeconds(): number {
    return this.ttl.sessionSeconds;
  }

  /** Fails closed: nothing is created, looked up or counted when there is no way to send the mail. */
  requireEmailDelivery(): EmailDelivery {
    if (!this.email) {
      throw new SvcError(
        "email_delivery_unavailable",
        "no verification email delivery is configured (set SVC_EMAIL_WEBHOOK_URL and SVC_EMAIL_WEBHOOK_SECRET)",
      );
    }
    return this.email;
  }

  private async deliver(delivery: EmailDelivery, message: Parameters<EmailDelivery["send"]>[0]) {
    try {
      await delivery.send(message);
    } catch (error) {
      if (error instanceof EmailDeliveryError) {
        this.log(`email delivery failed: ${error.message}`);
        throw new SvcError("email_delivery_unavailable", "the verification email could not be delivered");
      }
      throw error;
    }
  }

  audit(db: SqlExecutor, input: AuditInput): Promise<AuditEvent> {
    return appendAuditEvent(db, input, { now: this.now(), random: this.random });
  }

  listAuditEvents(filter: AuditFilter): Promise<AuditPage> {
    return listAuditEvents(this.store, filter);
  }

  /** Counts one hit in a bucket for a subject ("ip:..." or "account:..."); throws rate_limit_exceeded. */
  async consumeRateLimit(bucket: RateLimitBucket, subject: string): Promise<void> {
    const now = this.now();
    await consumeRateLimit(this.store, bucket, subject, this.rateLimits[bucket], now);
    this.rateLimitCalls += 1;
    if (this.rateLimitCalls % 500 === 0) await pruneRateLimits(this.store, now);
  }

  // ---- accounts ---------------------------------------------------------------------------------

  async getAccount(id: string, db: SqlExecutor = this.store): Promise<Account | null> {
    const row = (await db.query<AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id]))
      .rows[0];
    return row ? toAccount(row) : null;
  }

  async listAccounts(options: { limit?: number; cursor?: string } = {}): Promise<{
    accounts: Account[];
    nextCursor: string | null;
  }> {
    const limit = Math.min(Math.max(options.limit ?? 100, 1), 500);
    const after = options.cursor ? Buffer.from(options.cursor, "base64url").toString("utf8") : "";
    const rows = (
      await this.store.query<AccountRow>(
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
   * Starts sign-up. The answer has the same shape, status and work whether or not the address is
   * taken: for a taken address the mail system is told "account_exists" and the caller gets an id
   * that verifies nothing. The mail goes out before any row is written, so a failed delivery leaves
   * nothing behind.
   */
  async createAccount(input: { email: string; displayName: string; role: "player" | "modder" }): Promise<{
    accountId: string;
    status: "verification_sent" | "verified";
    verificationExpiresAt: string | null;
    devToken?: string;
  }> {
    const delivery = this.requireEmailDelivery();
    const now = this.now();
    const email = input.email.trim();
    const normalized = normalizeEmail(email);
    const accountId = newId("acct", this.random);
    const token = newSecretToken(this.random);
    const tokenHash = hashSecret(token);
    const autoVerify = delivery.mode === "auto-verify";
    const expiresAt = new Date(now.getTime() + this.ttl.verificationSeconds * 1000).toISOString();
    const existing = (
      await this.store.query<{ id: string }>("SELECT id FROM accounts WHERE email_normalized = $1", [
        normalized,
      ])
    ).rows[0];
    const response = {
      accountId,
      status: autoVerify ? ("verified" as const) : ("verification_sent" as const),
      verificationExpiresAt: autoVerify ? null : expiresAt,
      ...(delivery.mode === "return-token" ? { devToken: token } : {}),
    };
    if (existing) {
      await this.deliver(delivery, { type: "account_exists", to: email, accountId: existing.id });
      await this.audit(this.store, {
        actorAccountId: null,
        action: AUDIT_ACTIONS.accountSignupDuplicate,
        targetType: "account",
        targetId: existing.id,
      });
      return response;
    }
    const roles: Role[] = normalizeRoles(
      this.bootstrapAdmins.has(normalized) ? [input.role, "admin"] : [input.role],
    );
    if (!autoVerify) {
      await this.deliver(delivery, {
        type: "verify_email",
        to: email,
        displayName: input.displayName,
        accountId,
        token,
        expiresAt,
        linkPath: verifyEmailLinkPath(accountId, token),
      });
    } else {
      this.log(`[dev email] auto-verify: ${email} (${accountId}) is verified without a mail`);
    }
    try {
      await this.store.transaction(async (tx) => {
        await tx.query(
          `INSERT INTO accounts (id, email, email_normalized, display_name, roles, created_at, verified_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::timestamptz, $6::timestamptz)`,
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
        if (!autoVerify) {
          await tx.query(
            "INSERT INTO verification_tokens (token_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3::timestamptz, $4::timestamptz)",
            [tokenHash, accountId, now.toISOString(), expiresAt],
          );
        }
        await this.audit(tx, {
          actorAccountId: accountId,
          action: AUDIT_ACTIONS.accountCreated,
          targetType: "account",
          targetId: accountId,
          metadata: { roles, bootstrapAdmin: roles.includes("admin"), autoVerified: autoVerify },
        });
        if (autoVerify) {
          await this.audit(tx, {
            actorAccountId: accountId,
            action: AUDIT_ACTIONS.accountEmailVerified,
            targetType: "account",
            targetId: accountId,
            metadata: { method: "auto_verify" },
          });
        }
      });
    } catch (error) {
      // A concurrent sign-up took the address between the lookup and the insert: same answer.
      if ((error as { code?: string }).code === "23505") return response;
      throw error;
    }
    return response;
  }

  /** Consumes a verification token of this account (single use, atomically). */
  async verifyEmail(accountId: string, token: string): Promise<Account> {
    const now = this.now().toISOString();
    const account = await this.store.transaction(async (tx) => {
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
      await this.audit(tx, {
        actorAccountId: accountId,
        action: AUDIT_ACTIONS.accountEmailVerified,
        targetType: "account",
        targetId: accountId,
        metadata: { method: "email_token" },
      });
      return toAccount(row);
    });
    if (!account) {
      throw new SvcError(
        "token_invalid",
        "the verification token is unknown, used, expired or for another account",
      );
    }
    return account;
  }

  // ---- magic links and sessions ---------------------------------------------------------------

  /**
   * Sends a magic link to a verified account. Unknown and unverified addresses take the same path:
   * the same lookups, a token made and hashed, one mail-system call, one audit insert, and the same
   * answer (in return-token mode a decoy token that signs nothing in).
   */
  async requestMagicLink(emailInput: string): Promise<{ expiresInSeconds: number; devToken?: string }> {
    const delivery = this.requireEmailDelivery();
    const now = this.now();
    const email = emailInput.trim();
    const normalized = normalizeEmail(email);
    const token = newSecretToken(this.random);
    const tokenHash = hashSecret(token);
    const expiresAt = new Date(now.getTime() + this.ttl.magicLinkSeconds * 1000).toISOString();
    const row = (
      await this.store.query<{ id: string; email: string; display_name: string; verified_at: Date | null }>(
        "SELECT id, email, display_name, verified_at FROM accounts WHERE email_normalized = $1",
        [normalized],
      )
    ).rows[0];
    const eligible = row && row.verified_at !== null ? row : null;
    if (eligible) {
      await this.deliver(delivery, {
        type: "magic_link",
        to: eligible.email,
        displayName: eligible.display_name,
        accountId: eligible.id,
        token,
        expiresAt,
        linkPath: magicLinkPath(token),
      });
    } else {
      await this.deliver(delivery, { type: "sign_in_unavailable", to: email });
    }
    await this.store.transaction(async (tx) => {
      if (eligible) {
        await tx.query(
          "INSERT INTO magic_link_tokens (token_hash, account_id, created_at, expires_at) VALUES ($1, $2, $3::timestamptz, $4::timestamptz)",
          [tokenHash, eligible.id, now.toISOString(), expiresAt],
        );
      }
      await this.audit(tx, {
        actorAccountId: null,
        action: eligible ? AUDIT_ACTIONS.magicLinkRequested : AUDIT_ACTIONS.magicLinkUnmatched,
        targetType: eligible ? "account" : "email",
        // An unmatched address is recorded by hash only: the log must not collect strangers' emails.
        targetId: eligible ? eligible.id : `sha256:${hashSecret(normalized).slice(0, 32)}`,
        metadata: eligible ? { expiresAt } : { reason: row ? "unverified" : "unknown" },
      });
    });
    return {
      expiresInSeconds: this.ttl.magicLinkSeconds,
      ...(delivery.mode === "return-token" ? { devToken: token } : {}),
    };
  }

  /**
   * Redeems a magic-link token (single use, consumed atomically) for a brand-new session: a new
   * random session id at every sign-in, so an id planted before sign-in is never promoted. A
   * session the browser still presented is ended.
   */
  async confirmMagicLink(
    token: string,
    previousSessionToken?: string,
  ): Promise<{ sessionToken: string; session: SessionInfo }> {
    const now = this.now();
    const sessionToken = newSecretToken(this.random);
    const expiresAt = new Date(now.getTime() + this.ttl.sessionSeconds * 1000).toISOString();
    const account = await this.store.transaction(async (tx) => {
      const consumed = await tx.query<{ account_id: string }>(
        `UPDATE magic_link_tokens SET consumed_at = $2::timestamptz
         WHERE token_hash = $1 AND consumed_at IS NULL AND expires_at > $2::timestamptz
         RETURNING account_id`,
        [hashSecret(token), now.toISOString()],
      );
      const accountId = consumed.rows[0]?.account_id;
      if (!accountId) return null;
      const account = await this.getAccount(accountId, tx);
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
      await this.audit(tx, {
        actorAccountId: accountId,
        action: AUDIT_ACTIONS.sessionCreated,
        targetType: "account",
        targetId: accountId,
        metadata: { method: "magic_link", expiresAt },
      });
      return account;
    });
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

  /** The live session behind a cookie value, or null (unknown, ended or expired). */
  async getSession(sessionToken: string): Promise<SessionInfo | null> {
    if (!/^[A-Za-z0-9_-]{20,100}$/.test(sessionToken)) return null;
    const row = (
      await this.store.query<AccountRow & { s_created_at: Date; s_expires_at: Date }>(
        `SELECT a.id, a.email, a.display_name, a.roles, a.created_at, a.verified_at,
                s.created_at AS s_created_at, s.expires_at AS s_expires_at
         FROM sessions s JOIN accounts a ON a.id = s.account_id
         WHERE s.id_hash = $1 AND s.ended_at IS NULL AND s.expires_at > $2::timestamptz`,
        [hashSecret(sessionToken), this.now().toISOString()],
      )
    ).rows[0];
    if (!row) return null;
    const account = toAccount(row);
    return {
      account,
      roles: effectiveRoles(account.roles, account.verifiedAt !== null),
      csrfToken: csrfTokenFor(sessionToken),
      createdAt: iso(row.s_created_at)!,
      expiresAt: iso(row.s_expires_at)!,
    };
  }

  /** True when the header value is this session's CSRF token (constant-time). */
  checkCsrf(sessionToken: string, header: string | undefined): boolean {
    return typeof header === "string" && constantTimeEqual(header, csrfTokenFor(sessionToken));
  }

  /** Ends the session server-side: the cookie value is dead from now on, wherever it was copied to. */
  async endSession(sessionToken: string, accountId: string): Promise<void> {
    const now = this.now().toISOString();
    await this.store.transaction(async (tx) => {
      const ended = await tx.query(
        "UPDATE sessions SET ended_at = $2::timestamptz WHERE id_hash = $1 AND account_id = $3 AND ended_at IS NULL",
        [hashSecret(sessionToken), now, accountId],
      );
      if (ended.rowCount === 1) {
        await this.audit(tx, {
          actorAccountId: accountId,
          action: AUDIT_ACTIONS.sessionEnded,
          targetType: "account",
          targetId: accountId,
          metadata: { reason: "logout" },
        });
      }
    });
  }

  // ---- roles ------------------------------------------------------------------------------------

  /**
   * Replaces the role set of an account. Serialised on a lock row so that two admins demoting each
   * other at the same moment cannot both succeed: the second sees the first's change, and either
   * is no longer an admin (forbidden) or would remove the last verified admin (last_admin).
   */
  async updateRoles(
    actorAccountId: string,
    targetAccountId: string,
    rolesInput: readonly Role[],
  ): Promise<Account> {
    const roles = normalizeRoles(rolesInput);
    if (roles.length === 0) throw new SvcError("invalid_payload", "an account needs at least one role");
    const now = this.now().toISOString();
    return this.store.transaction(async (tx) => {
      await tx.query("SELECT name FROM store_locks WHERE name = 'account_roles' FOR UPDATE");
      const actor = await this.getAccount(actorAccountId, tx);
      if (!actor || !effectiveRoles(actor.roles, actor.verifiedAt !== null).includes("admin")) {
        throw new SvcError("forbidden", "only a verified admin can change roles");
      }
      const target = await this.getAccount(targetAccountId, tx);
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
      await this.audit(tx, {
        actorAccountId,
        action: AUDIT_ACTIONS.accountRolesUpdated,
        targetType: "account",
        targetId: targetAccountId,
        metadata: { before: target.roles, after: roles },
      });
      return toAccount(row);
    });
  }

  // ---- API keys ---------------------------------------------------------------------------------

  /** Creates a key; the plaintext is in this return value only and is never stored. */
  async createApiKey(accountId: string, name: string): Promise<{ apiKey: string; metadata: ApiKeyMetadata }> {
    const now = this.now().toISOString();
    const key = generateApiKey(this.random);
    const metadata: ApiKeyMetadata = {
      id: newId("key", this.random),
      name,
      prefix: apiKeyDisplayPrefix(key),
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
    };
    await this.store.transaction(async (tx) => {
      const active = await tx.query<{ n: string }>(
        "SELECT count(*)::text AS n FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL",
        [accountId],
      );
      if (Number(active.rows[0]?.n ?? 0) >= MAX_ACTIVE_API_KEYS) {
        throw new SvcError("conflict", `an account can hold at most ${MAX_ACTIVE_API_KEYS} active API keys`);
      }
      await tx.query(
        `INSERT INTO api_keys (id, account_id, name, display_prefix, key_hash, created_at)
         VALUES ($1, $2, $3, $4, $5, $6::timestamptz)`,
        [metadata.id, accountId, name, metadata.prefix, hashSecret(key), now],
      );
      await this.audit(tx, {
        actorAccountId: accountId,
        action: AUDIT_ACTIONS.apiKeyCreated,
        targetType: "api_key",
        targetId: metadata.id,
        metadata: { name, prefix: metadata.prefix },
      });
    });
    return { apiKey: key, metadata };
  }

  async listApiKeys(accountId: string): Promise<ApiKeyMetadata[]> {
    const rows = (
      await this.store.query<{
        id: string;
        name: string;
        display_prefix: string;
        created_at: Date;
        last_used_at: Date | null;
        revoked_at: Date | null;
      }>(
        `SELECT id, name, display_prefix, created_at, last_used_at, revoked_at
         FROM api_keys WHERE account_id = $1 ORDER BY created_at DESC, id`,
        [accountId],
      )
    ).rows;
    return rows.map((row) => ({
      id: row.id,
      name: row.name,
      prefix: row.display_prefix,
      createdAt: iso(row.created_at)!,
      lastUsedAt: iso(row.last_used_at),
      revokedAt: iso(row.revoked_at),
    }));
  }

  /** Revokes one of the caller's keys. Another account's key id answers not_found, like an unknown one. */
  async revokeApiKey(accountId: string, apiKeyId: string): Promise<ApiKeyMetadata> {
    const now = this.now().toISOString();
    const revoked = await this.store.transaction(async (tx) => {
      const row = (
        await tx.query<{ revoked_at: Date | null }>(
          "SELECT revoked_at FROM api_keys WHERE id = $1 AND account_id = $2 FOR UPDATE",
          [apiKeyId, accountId],
        )
      ).rows[0];
      if (!row) return false;
      if (row.revoked_at === null) {
        await tx.query("UPDATE api_keys SET revoked_at = $2::timestamptz WHERE id = $1", [apiKeyId, now]);
        await this.audit(tx, {
          actorAccountId: accountId,
          action: AUDIT_ACTIONS.apiKeyRevoked,
          targetType: "api_key",
          targetId: apiKeyId,
        });
      }
      return true;
    });
    if (!revoked) throw new SvcError("not_found", `no API key ${apiKeyId} on this account`);
    const key = (await this.listApiKeys(accountId)).find((k) => k.id === apiKeyId);
    return key!;
  }

  /**
   * The account behind a presented key, or null when the key is malformed, has a bad checksum, is
   * unknown or revoked. The checksum is checked before any lookup; the lookup is by hash.
   */
  async verifyApiKey(key: string): Promise<{ account: Account; roles: Role[]; apiKeyId: string } | null> {
    if (!isWellFormedApiKey(key)) return null;
    const hash = hashSecret(key);
    const row = (
      await this.store.query<
        AccountRow & { key_id: string; key_hash: string; revoked_at: Date | null; last_used_at: Date | null }
      >(
        `SELECT a.id, a.email, a.display_name, a.roles, a.created_at, a.verified_at,
                k.id AS key_id, k.key_hash, k.revoked_at, k.last_used_at
         FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = $1`,
        [hash],
      )
    ).rows[0];
    if (!row || !constantTimeEqual(row.key_hash, hash) || row.revoked_at !== null) return null;
    const now = this.now();
    // last_used_at is informational: written at most once a minute per key to keep downloads cheap.
    if (
      !row.last_used_at ||
      now.getTime() - new Date(row.last_used_at).getTime() > API_KEY_TOUCH_INTERVAL_MS
    ) {
      await this.store.query("UPDATE api_keys SET last_used_at = $2::timestamptz WHERE id = $1", [
        row.key_id,
        now.toISOString(),
      ]);
    }
    const account = toAccount(row);
    return {
      account,
      roles: effectiveRoles(account.roles, account.verifiedAt !== null),
      apiKeyId: row.key_id,
    };
  }
}

export { hasAnyRole, ROLES };
