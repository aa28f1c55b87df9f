import type { RateLimitBucket, Role } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import type { SqlExecutor, Store } from "../store/store.ts";
import type { Account } from "./account-record.ts";
import * as auditLog from "./audit.ts";
import type { AuditEvent, AuditFilter, AuditInput, AuditPage, RefusalInput } from "./audit.ts";
import type { CachedApiKey, CachedSession, CredentialCache, UsageRecorder } from "./credential-cache.ts";
import { type EmailDelivery, EmailDeliveryError } from "./email.ts";
import * as limits from "./rate-limit.ts";
import type { RateLimitRule } from "./rate-limit.ts";
import type { RandomBytes } from "./secrets.ts";

export interface AccountTtl {
  verificationSeconds: number;
  magicLinkSeconds: number;
  sessionSeconds: number;
}

export type VerifiedApiKey = { account: Account; roles: Role[]; apiKeyId: string };

export interface ApiKeyCacheEntry extends CachedApiKey {
  verified: VerifiedApiKey;
  lastUsedAt: Date | null;
}

export interface SessionCacheEntry extends CachedSession {
  account: Account;
  roles: Role[];
  createdAt: string;
  expiresAt: string;
}

/**
 * What the account, session and API-key functions share: the store, the injected edges (clock,
 * randomness, mail, log), the settings parsed at the edge, and this process's credential memory.
 * One object per service: the three modules must evict from and count in the same cache.
 */
export interface AccountDependencies {
  readonly store: Store;
  /** null: no delivery configured, so sign-up and magic links fail closed. */
  readonly email: EmailDelivery | null;
  readonly now: () => Date;
  readonly random: RandomBytes;
  readonly log: (line: string) => void;
  /** Normalized addresses that are made admins at sign-up. */
  readonly bootstrapAdmins: ReadonlySet<string>;
  readonly rateLimits: Record<RateLimitBucket, RateLimitRule>;
  /** Named in every rate_limit_exceeded: how to reset the limits (set by a development portal). */
  readonly rateLimitResetHint: string | undefined;
  readonly ttl: AccountTtl;
  readonly credentials: CredentialCache<ApiKeyCacheEntry, SessionCacheEntry>;
  readonly apiKeyUsage: UsageRecorder;
  /** Hits counted by this process; every 500th prunes old windows and summarises refusals. */
  rateLimitCalls: number;
}

/** Fails closed: nothing is created, looked up or counted when there is no way to send the mail. */
export function requireEmailDelivery(deps: AccountDependencies): EmailDelivery {
  if (!deps.email) {
    throw new SvcError(
      "email_delivery_unavailable",
      "no verification email delivery is configured (set SVC_EMAIL_WEBHOOK_URL and SVC_EMAIL_WEBHOOK_SECRET)",
    );
  }
  return deps.email;
}

export async function deliver(
  deps: AccountDependencies,
  delivery: EmailDelivery,
  message: Parameters<EmailDelivery["send"]>[0],
) {
  try {
    await delivery.send(message);
  } catch (error) {
    if (error instanceof EmailDeliveryError) {
      deps.log(`email delivery failed: ${error.message}`);
      throw new SvcError("email_delivery_unavailable", "the verification email could not be delivered");
    }
    throw error;
  }
}

export function audit(deps: AccountDependencies, db: SqlExecutor, input: AuditInput): Promise<AuditEvent> {
  return auditLog.appendAuditEvent(db, input, { now: deps.now(), random: deps.random });
}

/** An event an account records about itself (actor and target are the same account). */
export function auditOwnAccount(
  deps: AccountDependencies,
  db: SqlExecutor,
  accountId: string,
  action: AuditInput["action"],
  metadata: AuditInput["metadata"],
): Promise<AuditEvent> {
  return audit(deps, db, {
    actorAccountId: accountId,
    action,
    targetType: "account",
    targetId: accountId,
    metadata,
  });
}

export function listAuditEvents(deps: AccountDependencies, filter: AuditFilter): Promise<AuditPage> {
  return auditLog.listAuditEvents(deps.store, filter);
}

/** Counts one hit in a bucket for a subject ("ip:..." or "account:..."); throws rate_limit_exceeded. */
export async function consumeRateLimit(
  deps: AccountDependencies,
  bucket: RateLimitBucket,
  subject: string,
): Promise<void> {
  const now = deps.now();
  try {
    await limits.consumeRateLimit(deps.store, bucket, subject, deps.rateLimits[bucket], now);
  } catch (error) {
    const hint = deps.rateLimitResetHint;
    if (!hint || !(error instanceof SvcError) || error.code !== "rate_limit_exceeded") throw error;
    throw new SvcError(error.code, `${error.message} (${hint})`, {
      details: { ...(error.details as object), reset: hint },
      ...(error.retryAfterSeconds !== undefined ? { retryAfterSeconds: error.retryAfterSeconds } : {}),
    });
  }
  deps.rateLimitCalls += 1;
  if (deps.rateLimitCalls % 500 === 0) {
    await limits.pruneRateLimits(deps.store, now);
    await summariseRefusals(deps);
  }
}

/** Records a refused request: an audit event while its budget lasts, else a count (see recordRefusal). */
export function recordRefusal(deps: AccountDependencies, input: RefusalInput): Promise<"logged" | "counted"> {
  return auditLog.recordRefusal(deps.store, input, { now: deps.now(), random: deps.random });
}

/** Writes the summaries of closed refusal windows that went over budget; returns how many. */
export function summariseRefusals(deps: AccountDependencies): Promise<number> {
  return auditLog.summariseRefusals(deps.store, { now: deps.now(), random: deps.random });
}
