import type { RateLimitBucket, Role } from "../config/portal-config.ts";
import type { SqlExecutor, Store } from "../store/store.ts";
import * as shared from "./account-dependencies.ts";
import type { AccountDependencies, AccountTtl } from "./account-dependencies.ts";
import { normalizeEmail } from "./account-record.ts";
import * as accounts from "./accounts.ts";
import * as apiKeys from "./api-keys.ts";
import type { AuditFilter, AuditInput, RefusalInput } from "./audit.ts";
import {
  CREDENTIAL_CACHE_MAX_ENTRIES,
  CREDENTIAL_CACHE_TTL_MS,
  CredentialCache,
} from "./credential-cache.ts";
import type { EmailDelivery } from "./email.ts";
import type { RateLimitRule } from "./rate-limit.ts";
import { defaultRandomBytes, type RandomBytes } from "./secrets.ts";
import * as sessions from "./sessions.ts";

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
  ttl?: Partial<AccountTtl>;
  /**
   * Verified API keys and sessions kept in memory (docs/api.md, "Credential cache"): ttlMs bounds
   * how long a revocation through another instance takes to be seen here (default 30 s).
   */
  credentialCache?: { ttlMs?: number; maxEntries?: number };
}

/** Fills in the production defaults (clock, randomness, lifetimes, cache bounds) once. */
export function createAccountDependencies(options: AccountServiceOptions): AccountDependencies {
  const now = options.now ?? (() => new Date());
  const log = options.log ?? (() => {});
  const cacheOptions = options.credentialCache ?? {};
  const maxEntries = cacheOptions.maxEntries ?? CREDENTIAL_CACHE_MAX_ENTRIES;
  return {
    store: options.store,
    email: options.email,
    now,
    random: options.random ?? defaultRandomBytes,
    log,
    bootstrapAdmins: new Set(options.bootstrapAdminEmails.map(normalizeEmail)),
    rateLimits: options.rateLimits,
    rateLimitResetHint: options.rateLimitResetHint,
    ttl: {
      verificationSeconds: 24 * 3600,
      magicLinkSeconds: 15 * 60,
      sessionSeconds: 7 * 24 * 3600,
      ...options.ttl,
    },
    credentials: new CredentialCache({
      ttlMs: cacheOptions.ttlMs ?? CREDENTIAL_CACHE_TTL_MS,
      maxEntries,
      now,
    }),
    apiKeyUsage: apiKeys.createApiKeyUsageRecorder({ store: options.store, maxEntries, now, log }),
    rateLimitCalls: 0,
  };
}

/**
 * Accounts, email verification, magic links, sessions, API keys, roles, rate limits and audit:
 * pure logic over the store, no HTTP. Clock, randomness and mail delivery are injected. This class
 * only binds one dependencies object to the functions of accounts.ts, sessions.ts, api-keys.ts and
 * account-dependencies.ts, under the names the HTTP layer calls; it holds no logic of its own.
 */
export class AccountService {
  readonly dependencies: AccountDependencies;
  readonly store: Store;
  readonly email: EmailDelivery | null;

  constructor(options: AccountServiceOptions) {
    this.dependencies = createAccountDependencies(options);
    this.store = this.dependencies.store;
    this.email = this.dependencies.email;
  }

  flushPendingWrites() {
    return apiKeys.flushPendingWrites(this.dependencies);
  }

  get sessionTtlSeconds(): number {
    return this.dependencies.ttl.sessionSeconds;
  }

  requireEmailDelivery() {
    return shared.requireEmailDelivery(this.dependencies);
  }

  audit(db: SqlExecutor, input: AuditInput) {
    return shared.audit(this.dependencies, db, input);
  }

  listAuditEvents(filter: AuditFilter) {
    return shared.listAuditEvents(this.dependencies, filter);
  }

  consumeRateLimit(bucket: RateLimitBucket, subject: string) {
    return shared.consumeRateLimit(this.dependencies, bucket, subject);
  }

  recordRefusal(input: RefusalInput) {
    return shared.recordRefusal(this.dependencies, input);
  }

  summariseRefusals() {
    return shared.summariseRefusals(this.dependencies);
  }

  getAccount(id: string, db?: SqlExecutor) {
    return accounts.getAccount(this.dependencies, id, db);
  }

  listAccounts(options?: { limit?: number; cursor?: string }) {
    return accounts.listAccounts(this.dependencies, options);
  }

  createAccount(input: accounts.NewAccountInput) {
    return accounts.createAccount(this.dependencies, input);
  }

  verifyEmail(accountId: string, token: string) {
    return accounts.verifyEmail(this.dependencies, accountId, token);
  }

  updateRoles(actorAccountId: string, targetAccountId: string, roles: readonly Role[]) {
    return accounts.updateRoles(this.dependencies, actorAccountId, targetAccountId, roles);
  }

  requestMagicLink(email: string) {
    return sessions.requestMagicLink(this.dependencies, email);
  }

  confirmMagicLink(token: string, previousSessionToken?: string) {
    return sessions.confirmMagicLink(this.dependencies, token, previousSessionToken);
  }

  getSession(sessionToken: string) {
    return sessions.getSession(this.dependencies, sessionToken);
  }

  checkCsrf(sessionToken: string, header: string | undefined) {
    return sessions.checkCsrf(sessionToken, header);
  }

  endSession(sessionToken: string, accountId: string) {
    return sessions.endSession(this.dependencies, sessionToken, accountId);
  }

  createApiKey(accountId: string, name: string) {
    return apiKeys.createApiKey(this.dependencies, accountId, name);
  }

  listApiKeys(accountId: string) {
    return apiKeys.listApiKeys(this.dependencies, accountId);
  }

  revokeApiKey(accountId: string, apiKeyId: string) {
    return apiKeys.revokeApiKey(this.dependencies, accountId, apiKeyId);
  }

  verifyApiKey(key: string) {
    return apiKeys.verifyApiKey(this.dependencies, key);
  }
}
