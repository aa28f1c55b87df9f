import { SvcError } from "../errors.ts";
import type { Store } from "../store/store.ts";
import { type AccountDependencies, audit, type VerifiedApiKey } from "./account-dependencies.ts";
import { type AccountRow, copyAccount, iso, toAccount } from "./account-record.ts";
import { apiKeyDisplayPrefix, generateApiKey, isWellFormedApiKey } from "./api-key-format.ts";
import { AUDIT_ACTIONS } from "./audit.ts";
import { UsageRecorder } from "./credential-cache.ts";
import { effectiveRoles } from "./roles.ts";
import { constantTimeEqual, hashSecret, newId } from "./secrets.ts";

export interface ApiKeyMetadata {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const MAX_ACTIVE_API_KEYS = 25;
const API_KEY_TOUCH_INTERVAL_MS = 60_000;

/** The lastUsedAt bookkeeping of one service: marks at most once a minute, written off the request path. */
export function createApiKeyUsageRecorder(options: {
  store: Store;
  maxEntries: number;
  now: () => Date;
  log: (line: string) => void;
}): UsageRecorder {
  return new UsageRecorder({
    intervalMs: API_KEY_TOUCH_INTERVAL_MS,
    flushDelayMs: 1000,
    maxEntries: options.maxEntries,
    now: options.now,
    log: options.log,
    // The WHERE keeps "at most once a minute" true across instances too: a key another instance
    // touched within the minute is left as it is.
    write: async (marks) => {
      await options.store.query(
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
export function flushPendingWrites(deps: AccountDependencies): Promise<void> {
  return deps.apiKeyUsage.flush();
}

/** Creates a key; the plaintext is in this return value only and is never stored. */
export async function createApiKey(
  deps: AccountDependencies,
  accountId: string,
  name: string,
): Promise<{ apiKey: string; metadata: ApiKeyMetadata }> {
  const now = deps.now().toISOString();
  const key = generateApiKey(deps.random);
  const metadata: ApiKeyMetadata = {
    id: newId("key", deps.random),
    name,
    prefix: apiKeyDisplayPrefix(key),
    createdAt: now,
    lastUsedAt: null,
    revokedAt: null,
  };
  await deps.store.transaction(async (tx) => {
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
    await audit(deps, tx, {
      actorAccountId: accountId,
      action: AUDIT_ACTIONS.apiKeyCreated,
      targetType: "api_key",
      targetId: metadata.id,
      metadata: { name, prefix: metadata.prefix },
    });
  });
  return { apiKey: key, metadata };
}

export async function listApiKeys(deps: AccountDependencies, accountId: string): Promise<ApiKeyMetadata[]> {
  // The deferred lastUsedAt marks of this process go first, so the owner sees their latest use.
  await deps.apiKeyUsage.flush();
  const rows = (
    await deps.store.query<{
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
export async function revokeApiKey(
  deps: AccountDependencies,
  accountId: string,
  apiKeyId: string,
): Promise<ApiKeyMetadata> {
  const now = deps.now().toISOString();
  const revoked = await deps.store.transaction(async (tx) => {
    const row = (
      await tx.query<{ revoked_at: Date | null }>(
        "SELECT revoked_at FROM api_keys WHERE id = $1 AND account_id = $2 FOR UPDATE",
        [apiKeyId, accountId],
      )
    ).rows[0];
    if (!row) return false;
    if (row.revoked_at === null) {
      await tx.query("UPDATE api_keys SET revoked_at = $2::timestamptz WHERE id = $1", [apiKeyId, now]);
      await audit(deps, tx, {
        actorAccountId: accountId,
        action: AUDIT_ACTIONS.apiKeyRevoked,
        targetType: "api_key",
        targetId: apiKeyId,
      });
    }
    return true;
  });
  // After the commit: a lookup between an earlier eviction and the commit would re-cache the key.
  deps.credentials.forgetApiKey(apiKeyId);
  if (!revoked) throw new SvcError("not_found", `no API key ${apiKeyId} on this account`);
  const key = (await listApiKeys(deps, accountId)).find((k) => k.id === apiKeyId);
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
export async function verifyApiKey(deps: AccountDependencies, key: string): Promise<VerifiedApiKey | null> {
  if (!isWellFormedApiKey(key)) return null;
  const hash = hashSecret(key);
  const cached = deps.credentials.apiKeys.get(hash);
  if (cached && constantTimeEqual(cached.keyHash, hash)) {
    deps.apiKeyUsage.mark(cached.apiKeyId, cached.lastUsedAt);
    return copyVerified(cached.verified);
  }
  const epoch = deps.credentials.epoch;
  const row = (
    await deps.store.query<
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
  if (epoch === deps.credentials.epoch) {
    deps.credentials.apiKeys.set(hash, {
      apiKeyId: row.key_id,
      accountId: account.id,
      keyHash: row.key_hash,
      verified,
      lastUsedAt,
    });
  }
  deps.apiKeyUsage.mark(row.key_id, lastUsedAt);
  return copyVerified(verified);
}

function copyVerified(verified: VerifiedApiKey): VerifiedApiKey {
  return {
    account: copyAccount(verified.account),
    roles: [...verified.roles],
    apiKeyId: verified.apiKeyId,
  };
}
