import type { RateLimitBucket, Role } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import type { SqlExecutor, Store } from "../store/store.ts";
import { apiKeyDisplayPrefix, generateApiKey, isWellFormedApiKey } from "./api-key-format.ts";
import {
  type CachedApiKey,
  type CachedSession,
  CREDENTIAL_CACHE_MAX_ENTRIES,
  CREDENTIAL_CACHE_TTL_MS,
  CredentialCache,
  UsageRecorder,
} from "./credential-cache.ts";
import {
  AUDIT_ACTIONS,
  type AuditEvent,
  type AuditFilter,
  type AuditInput,
  type AuditPage,
  appendAuditEvent,
  listAuditEvents,
  type RefusalInput,
  recordRefusal,
  summariseRefusals,
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
  /** Named in every rate_limit_exceeded: how to reset the limits (set by a development portal). */
  rateLimitResetHint?: string;
  now?: () => Date;
  random?: RandomBytes;
  log?: (line: string) => void;
  ttl?: Partial<{ verificationSeconds: number; magicLinkSeconds: number; sessionSeconds: number }>;
  /**
   * Verified API keys and sessions kept in memory (docs/api.md, "Credential cache"): ttlMs bounds
   * how long a revocation through another instance takes to be seen here (default 30 s).
   */
  credentialCache?: { ttlMs?: number; maxEntries?: number };
}

type VerifiedApiKey = { account: Account; roles: Role[]; apiKeyId: string };

interface ApiKeyCacheEntry extends CachedApiKey {
  verified: VerifiedApiKey;
  lastUsedAt: Date | null;
}

interface SessionCacheEntry extends CachedSession {
  account: Account;
  roles: Role[];
  createdAt: string;
  expiresAt: string;
}

/** Callers get their own copies, so nothing they do to an answer can change the cached one. */
function copyAccount(account: Account): Account {
  return { ...account, roles: [...account.roles] };
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

/** Thrown inside the sign-up transaction to roll it back when another sign-up took the address first. */
class SignupRaceLost extends Error {}

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
  private readonly rateLimitResetHint: string | undefined;
  private readonly ttl: { verificationSeconds: number; magicLinkSeconds: number; sessionSeconds: number };
  private rateLimitCalls = 0;
  private readonly credentials: CredentialCache<ApiKeyCacheEntry, SessionCacheEntry>;
  private readonly apiKeyUsage: UsageRecorder;

  constructor(options: AccountServiceOptions) {
    this.store = options.store;
    this.email = options.email;
    this.now = options.now ?? (() => new Date());
    this.random = options.random ?? defaultRandomBytes;
    this.log = options.log ?? (() => {});
    this.bootstrapAdmins = new Set(options.bootstrapAdminEmails.map(normalizeEmail));
    this.rateLimits = options.rateLimits;
    this.rateLimitResetHint = options.rateLimitResetHint;
    this.ttl = {
      verificationSeconds: 24 * 3600,
      magicLinkSeconds: 15 * 60,
      sessionSeconds: 7 * 24 * 3600,
      ...options.ttl,
    };
    const cacheOptions = options.credentialCache ?? {};
    this.credentials = new CredentialCache({
      ttlMs: cacheOptions.ttlMs ?? CREDENTIAL_CACHE_TTL_MS,
      maxEntries: cacheOptions.maxEntries ?? CREDENTIAL_CACHE_MAX_ENTRIES,
      now: this.now,
    });
    this.apiKeyUsage = new UsageRecorder({
      intervalMs: API_KEY_TOUCH_INTERVAL_MS,
      flushDelayMs: 1000,
      maxEntries: cacheOptions.maxEntries ?? CREDENTIAL_CACHE_MAX_ENTRIES,
      now: this.now,
      log: this.log,
      // The WHERE keeps "at most once a minute" true across instances too: a key another instance
      // touched within the minute is left as it is.
      write: async (marks) => {
        await this.store.query(
          `UPDATE api_keys AS k SET last_used_at = v.at
           FROM (SELECT unnest($1::text[]) AS id, unnest($2::timestamptz[]) AS at) AS v
           WHERE k.id = v.id
             AND (k.last_used_at IS NULL OR k.last_used_at <= v.at - make_interval(secs => $3))`,
          [
            [...marks.keys()],
            [...marks.values()].map((at) => at.toISOString()),
            API_KEY_TOUCH_INTERVAL_MS / 1000,
          ],
        );
      },
    });
  }

  /** Writes the deferred lastUsedAt marks now; the server calls it before it closes the store. */
  flushPendingWrites(): Promise<void> {
    return this.apiKeyUsage.flush();
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
    try {
      await consumeRateLimit(this.store, bucket, subject, this.rateLimits[bucket], now);
    } catch (error) {
      const hint = this.rateLimitResetHint;
      if (!hint || !(error instanceof SvcError) || error.code !== "rate_limit_exceeded") throw error;
      throw new SvcError(error.code, `${error.message} (${hint})`, {
        details: { ...(error.details as object), reset: hint },
        ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
      });
    }
    this.rateLimitCalls += 1;
    if (this.rateLimitCalls % 500 === 0) {
      await pruneRateLimits(this.store, now);
      await this.summariseRefusals();
    }
  }

  /** Records a refused request: an audit event while its budget lasts, else a count (see recordRefusal). */
  recordRefusal(input: RefusalInput): Promise<"logged" | "counted"> {
    return recordRefusal(this.store, input, { now: this.now(), random: this.random });
  }

  /** Writes the summaries of closed refusal windows that went over budget; returns how many. */
  summariseRefusals(): Promise<number> {
    return summariseRefusals(this.store, { now: this.now(), random: this.random });
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
    const decoyToken = newSecretToken(this.random);
    const autoVerify = delivery.mode === "auto-verify";
    const expiresAt = new Date(now.getTime() + this.ttl.verificationSeconds * 1000).toISOString();
    const existing = (
      await this.store.query<{ id: string; display_name: string }>(
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
      this.bootstrapAdmins.has(normalized) ? [input.role, "admin"] : [input.role],
    );
    if (existing || !autoVerify) {
      await this.deliver(delivery, {
        type: existing ? "account_exists" : "verify_email",
        to: email,
        displayName: existing ? existing.display_name : input.displayName,
        accountId: tokenAccountId,
        token,
        expiresAt,
        linkPath: verifyEmailLinkPath(tokenAccountId, token),
      });
    } else {
      this.log(`[dev email] auto-verify: ${email} (${accountId}) is verified without a mail`);
    }
    const writeToken = existing !== undefined || !autoVerify;
    try {
      await this.store.transaction(async (tx) => {
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
        await this.audit(
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
      if (error instanceof SignupRaceLost) return response;
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
    // Verification changes which roles take effect, and cached credentials carry them.
    if (account) this.credentials.forgetAccount(accountId);
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
   * Sends a magic link to a verified account. Verified, unverified and unknown addresses take the
   * same path, so neither the answer nor its timing tells them apart: the same lookup, a token made
   * and hashed, one mail-system call, then one transaction of the same two statements. The token
   * insert writes one row for every address (migration 5 dropped the foreign key, so none pays a
   * lookup the others skip): born expired, so inert, unless the account was verified at the lookup,
   * and with no account for an unknown address; the audit insert records either outcome. The answer
   * is the same; in return-token mode the token of an address that cannot sign in signs nothing in.
   */
  async requestMagicLink(emailInput: string): Promise<{ expiresInSeconds: number; devToken?: string }> {
    const delivery = this.requireEmailDelivery();
    const now = this.now();
    const email = emailInput.trim();
    const normalized = normalizeEmail(email);
    const token = newSecretToken(this.random);
    const tokenHash = hashSecret(token);
    // An unmatched address is recorded by hash only: the log must not collect strangers' emails.
    const addressHash = `sha256:${hashSecret(normalized).slice(0, 32)}`;
    const expiresAt = new Date(now.getTime() + this.ttl.magicLinkSeconds * 1000).toISOString();
    const row = (
      await this.store.query<{ id: string; email: string; display_name: string; verified_at: Date | null }>(
        "SELECT id, email, display_name, verified_at FROM accounts WHERE email_normalized = $1",
        [normalized],
      )
    ).rows[0];
    const eligible = row && row.verified_at !== null ? row : null;
    await this.deliver(
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
    await this.store.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO magic_link_tokens (token_hash, account_id, created_at, expires_at)
         VALUES ($1, $2, $3::timestamptz, CASE WHEN $5::boolean THEN $4::timestamptz ELSE $3::timestamptz END)`,
        [tokenHash, row?.id ?? null, now.toISOString(), expiresAt, eligible !== null],
      );
      await this.audit(tx, {
        actorAccountId: null,
        action: eligible ? AUDIT_ACTIONS.magicLinkRequested : AUDIT_ACTIONS.magicLinkUnmatched,
        targetType: eligible ? "account" : "email",
        targetId: eligible ? eligible.id : addressHash,
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
    if (previousSessionToken) this.credentials.forgetSession(hashSecret(previousSessionToken));
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
  async getSession(sessionToken: string): Promise<SessionInfo | null> {
    if (!/^[A-Za-z0-9_-]{20,100}$/.test(sessionToken)) return null;
    const idHash = hashSecret(sessionToken);
    const cached = this.credentials.sessions.get(idHash);
    if (cached && constantTimeEqual(cached.idHash, idHash)) return this.sessionInfo(cached, sessionToken);
    const epoch = this.credentials.epoch;
    const row = (
      await this.store.query<AccountRow & { s_created_at: Date; s_expires_at: Date; id_hash: string }>(
        `SELECT a.id, a.email, a.display_name, a.roles, a.created_at, a.verified_at,
                s.created_at AS s_created_at, s.expires_at AS s_expires_at, s.id_hash
         FROM sessions s JOIN accounts a ON a.id = s.account_id
         WHERE s.id_hash = $1 AND s.ended_at IS NULL AND s.expires_at > $2::timestamptz`,
        [idHash, this.now().toISOString()],
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
    if (epoch === this.credentials.epoch) {
      this.credentials.sessions.set(idHash, entry, new Date(entry.expiresAt).getTime());
    }
    return this.sessionInfo(entry, sessionToken);
  }

  private sessionInfo(entry: SessionCacheEntry, sessionToken: string): SessionInfo {
    return {
      account: copyAccount(entry.account),
      roles: [...entry.roles],
      csrfToken: csrfTokenFor(sessionToken),
      createdAt: entry.createdAt,
      expiresAt: entry.expiresAt,
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
    // After the commit: a lookup between an earlier eviction and the commit would re-cache it.
    this.credentials.forgetSession(hashSecret(sessionToken));
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
    const updated = await this.store.transaction(async (tx) => {
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
    // Cached sessions and keys carry the old roles: on this process the change applies at once.
    this.credentials.forgetAccount(targetAccountId);
    return updated;
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
    // The deferred lastUsedAt marks of this process go first, so the owner sees their latest use.
    await this.apiKeyUsage.flush();
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
    // After the commit: a lookup between an earlier eviction and the commit would re-cache the key.
    this.credentials.forgetApiKey(apiKeyId);
    if (!revoked) throw new SvcError("not_found", `no API key ${apiKeyId} on this account`);
    const key = (await this.listApiKeys(accountId)).find((k) => k.id === apiKeyId);
    return key!;
  }

  /**
   * The account behind a presented key, or null when the key is malformed, has a bad checksum, is
   * unknown or revoked. The checksum is checked before any lookup; the lookup is by hash. A key the
   * store confirmed is trusted from memory for the credential cache's lifetime, so the download
   * lane costs a hash and a map lookup; revoking it through this process evicts it at once, through
   * another instance within that lifetime. lastUsedAt is marked at most once a minute and written
   * after the answer, never on the request's path.
   */
  async verifyApiKey(key: string): Promise<VerifiedApiKey | null> {
    if (!isWellFormedApiKey(key)) return null;
    const hash = hashSecret(key);
    const cached = this.credentials.apiKeys.get(hash);
    if (cached && constantTimeEqual(cached.keyHash, hash)) {
      this.apiKeyUsage.mark(cached.apiKeyId, cached.lastUsedAt);
      return this.copyVerified(cached.verified);
    }
    const epoch = this.credentials.epoch;
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
    const account = toAccount(row);
    const verified: VerifiedApiKey = {
      account,
      roles: effectiveRoles(account.roles, account.verifiedAt !== null),
      apiKeyId: row.key_id,
    };
    const lastUsedAt = row.last_used_at ? new Date(row.last_used_at) : null;
    // An eviction that ran while the row was on its way may concern it: cache only an undisturbed read.
    if (epoch === this.credentials.epoch) {
      this.credentials.apiKeys.set(hash, {
        apiKeyId: row.key_id,
        accountId: account.id,
        keyHash: row.key_hash,
        verified,
        lastUsedAt,
      });
    }
    this.apiKeyUsage.mark(row.key_id, lastUsedAt);
    return this.copyVerified(verified);
  }

  private copyVerified(verified: VerifiedApiKey): VerifiedApiKey {
    return {
      account: copyAccount(verified.account),
      roles: [...verified.roles],
      apiKeyId: verified.apiKeyId,
    };
  }
}

export { hasAnyRole, ROLES };
