import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { AccountService } from "../../src/accounts/account-service.ts";
import { generateApiKey } from "../../src/accounts/api-key-format.ts";
import { CREDENTIAL_CACHE_TTL_MS, LruTtlMap } from "../../src/accounts/credential-cache.ts";
import { createDevDelivery } from "../../src/accounts/email.ts";
import { defaultRandomBytes } from "../../src/accounts/secrets.ts";
import type { Store } from "../../src/store/index.ts";
import { repoConfig } from "../support/temp-project.ts";
import { ADAPTERS, openTestStore } from "../support/http-harness.ts";

const TTL = CREDENTIAL_CACHE_TTL_MS;

/** The store as the service sees it, with every statement it sends recorded (and optionally refused). */
function recordingStore(store: Store) {
  const statements: string[] = [];
  let refuse: RegExp | null = null;
  const wrapped = new Proxy(store, {
    get(target, property) {
      if (property === "query") {
        return (sql: string, params?: readonly unknown[]) => {
          statements.push(sql);
          if (refuse?.test(sql)) return Promise.reject(new Error("the database went away"));
          return target.query(sql, params);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    store: wrapped,
    statements,
    refuseMatching(pattern: RegExp | null) {
      refuse = pattern;
    },
    count(pattern: RegExp) {
      return statements.filter((sql) => pattern.test(sql)).length;
    },
  };
}

const KEY_LOOKUP = /FROM api_keys k JOIN accounts/;
const SESSION_LOOKUP = /FROM sessions s JOIN accounts/;

describe.each(ADAPTERS)("credential cache on %s", (adapter) => {
  let base: Store;
  let clock: number;
  let logs: string[];
  let recorder: ReturnType<typeof recordingStore>;
  let first: AccountService;
  let second: AccountService;
  let serial = 0;

  const service = (store: Store, options: { sessionSeconds?: number; maxEntries?: number } = {}) =>
    new AccountService({
      store,
      email: createDevDelivery("return-token", () => {}),
      bootstrapAdminEmails: ["cache-admin@example.com"],
      rateLimits: repoConfig().limits.rateLimits,
      now: () => new Date(clock),
      log: (line) => logs.push(line),
      ...(options.sessionSeconds ? { ttl: { sessionSeconds: options.sessionSeconds } } : {}),
      ...(options.maxEntries ? { credentialCache: { maxEntries: options.maxEntries } } : {}),
    });

  /** A verified account with a session on `accounts`. */
  async function signedIn(accounts: AccountService, email = `cache-${++serial}@example.com`) {
    const created = await accounts.createAccount({ email, displayName: "Cache", role: "player" });
    await accounts.verifyEmail(created.accountId, created.devToken!);
    const link = await accounts.requestMagicLink(email);
    const { sessionToken, session } = await accounts.confirmMagicLink(link.devToken!);
    return { accountId: created.accountId, sessionToken, session };
  }

  const lastUsed = async (apiKeyId: string) =>
    (
      await base.query<{ last_used_at: Date | null }>("SELECT last_used_at FROM api_keys WHERE id = $1", [
        apiKeyId,
      ])
    ).rows[0]!.last_used_at?.toISOString() ?? null;

  beforeAll(async () => {
    base = await openTestStore(adapter);
  });
  afterAll(async () => {
    await base?.close();
  });
  beforeEach(() => {
    clock = Date.parse("2026-11-21T10:00:00Z");
    logs = [];
    recorder = recordingStore(base);
    first = service(recorder.store);
    second = service(base);
  });

  it("answers a verified API key from memory: the second use asks the store nothing", async () => {
    const { accountId } = await signedIn(first);
    const { apiKey, metadata } = await first.createApiKey(accountId, "hot");
    const before = recorder.count(KEY_LOOKUP);
    const one = await first.verifyApiKey(apiKey);
    expect(one).toMatchObject({ apiKeyId: metadata.id, account: { id: accountId } });
    for (let i = 0; i < 5; i++) expect(await first.verifyApiKey(apiKey)).toEqual(one);
    expect(recorder.count(KEY_LOOKUP) - before).toBe(1);
    // Answers are copies: a caller that edits one cannot grant roles to the next request.
    one!.roles.push("admin");
    one!.account.roles.push("admin");
    expect((await first.verifyApiKey(apiKey))!.roles).not.toContain("admin");
    // Another well-formed key (valid checksum) is not answered from the cached one.
    expect(await first.verifyApiKey(generateApiKey(defaultRandomBytes))).toBeNull();
  });

  it("revocation through this process is seen at once", async () => {
    const { accountId } = await signedIn(first);
    const { apiKey, metadata } = await first.createApiKey(accountId, "revoke-here");
    expect(await first.verifyApiKey(apiKey)).not.toBeNull();
    await first.revokeApiKey(accountId, metadata.id);
    expect(await first.verifyApiKey(apiKey)).toBeNull();
  });

  it("revocation through another instance is seen within the lifetime, and never served after it", async () => {
    const { accountId } = await signedIn(first);
    const { apiKey, metadata } = await first.createApiKey(accountId, "revoke-elsewhere");
    const cachedAt = clock;
    expect(await first.verifyApiKey(apiKey)).not.toBeNull();
    clock += 1000;
    await second.revokeApiKey(accountId, metadata.id);
    expect(await second.verifyApiKey(apiKey)).toBeNull();
    // Steady use inside the lifetime must not stretch it (least-recently-used is not "fresh").
    for (clock = cachedAt + 5000; clock < cachedAt + TTL; clock += 5000) await first.verifyApiKey(apiKey);
    clock = cachedAt + TTL;
    expect(await first.verifyApiKey(apiKey)).toBeNull();
    clock += 3600_000;
    expect(await first.verifyApiKey(apiKey)).toBeNull();
  });

  it("writes lastUsedAt at most once a minute per key, after the answer and never in its way", async () => {
    const { accountId } = await signedIn(first);
    const { apiKey, metadata } = await first.createApiKey(accountId, "usage");
    const t0 = new Date(clock).toISOString();
    await first.verifyApiKey(apiKey);
    // The answer did not wait for the write.
    expect(await lastUsed(metadata.id)).toBeNull();
    await first.flushPendingWrites();
    expect(await lastUsed(metadata.id)).toBe(t0);

    const writes = () => recorder.count(/UPDATE api_keys AS k SET last_used_at/);
    const writesBefore = writes();
    for (let s = 1; s < 60; s += 7) {
      clock = Date.parse(t0) + s * 1000;
      await first.verifyApiKey(apiKey);
      await first.flushPendingWrites();
    }
    expect(writes()).toBe(writesBefore);
    expect(await lastUsed(metadata.id)).toBe(t0);
    // Another instance that never saw the key does not write within the minute either.
    clock = Date.parse(t0) + 30_000;
    await second.verifyApiKey(apiKey);
    await second.flushPendingWrites();
    expect(await lastUsed(metadata.id)).toBe(t0);

    clock = Date.parse(t0) + 61_000;
    await first.verifyApiKey(apiKey);
    // The owner's list flushes this process's marks first, so it shows the latest use.
    const listed = await first.listApiKeys(accountId);
    expect(listed.find((k) => k.id === metadata.id)!.lastUsedAt).toBe(new Date(clock).toISOString());
    expect(writes()).toBe(writesBefore + 1);
  });

  it("a failing lastUsedAt write is logged and dropped; the request still succeeds", async () => {
    const { accountId } = await signedIn(first);
    const { apiKey, metadata } = await first.createApiKey(accountId, "write-fails");
    recorder.refuseMatching(/SET last_used_at/);
    expect(await first.verifyApiKey(apiKey)).not.toBeNull();
    await expect(first.flushPendingWrites()).resolves.toBeUndefined();
    recorder.refuseMatching(null);
    expect(await lastUsed(metadata.id)).toBeNull();
    expect(
      logs.some((line) => /lastUsedAt: 1 mark\(s\) not written: the database went away/.test(line)),
    ).toBe(true);
  });

  it("answers a live session from memory and drops it at once on logout through this process", async () => {
    const { accountId, sessionToken } = await signedIn(first);
    const before = recorder.count(SESSION_LOOKUP);
    const info = await first.getSession(sessionToken);
    expect(info).toMatchObject({ account: { id: accountId } });
    expect(await first.getSession(sessionToken)).toEqual(info);
    expect(recorder.count(SESSION_LOOKUP) - before).toBe(1);
    await first.endSession(sessionToken, accountId);
    expect(await first.getSession(sessionToken)).toBeNull();
  });

  it("a session ended through another instance stops within the lifetime, never past its own expiry", async () => {
    const { accountId, sessionToken } = await signedIn(first);
    expect(await first.getSession(sessionToken)).not.toBeNull();
    const cachedAt = clock;
    await second.endSession(sessionToken, accountId);
    clock = cachedAt + TTL;
    expect(await first.getSession(sessionToken)).toBeNull();

    // A session that expires inside the cache lifetime is not served a moment past its expiry.
    const short = service(base, { sessionSeconds: 10 });
    const { sessionToken: brief } = await signedIn(short);
    const issuedAt = clock;
    expect(await short.getSession(brief)).not.toBeNull();
    clock = issuedAt + 9_999;
    expect(await short.getSession(brief)).not.toBeNull();
    clock = issuedAt + 10_000;
    expect(await short.getSession(brief)).toBeNull();
  });

  it("a role change through this process applies at once to cached sessions and keys", async () => {
    const admin = await signedIn(first, "cache-admin@example.com");
    const member = await signedIn(first);
    const { apiKey } = await first.createApiKey(member.accountId, "roles");
    expect((await first.getSession(member.sessionToken))!.roles).toEqual(["player"]);
    expect((await first.verifyApiKey(apiKey))!.roles).toEqual(["player"]);
    await first.updateRoles(admin.accountId, member.accountId, ["player", "moderator"]);
    expect((await first.getSession(member.sessionToken))!.roles).toContain("moderator");
    expect((await first.verifyApiKey(apiKey))!.roles).toContain("moderator");
  });

  it("holds at most maxEntries credentials, least recently used out first", async () => {
    const small = service(recorder.store, { maxEntries: 2 });
    const { accountId } = await signedIn(small);
    const keys = await Promise.all(
      ["a", "b", "c"].map(async (name) => (await small.createApiKey(accountId, name)).apiKey),
    );
    const lookups = () => recorder.count(KEY_LOOKUP);
    const start = lookups();
    await small.verifyApiKey(keys[0]!);
    await small.verifyApiKey(keys[1]!);
    await small.verifyApiKey(keys[0]!); // a is now the most recent
    await small.verifyApiKey(keys[2]!); // evicts b
    expect(lookups() - start).toBe(3);
    await small.verifyApiKey(keys[0]!);
    await small.verifyApiKey(keys[2]!);
    expect(lookups() - start).toBe(3);
    await small.verifyApiKey(keys[1]!);
    expect(lookups() - start).toBe(4);
  });
});

describe("LruTtlMap", () => {
  it("expires entries at their lifetime or at notAfter, whichever comes first", () => {
    let now = 1_000;
    const map = new LruTtlMap<string>(10, 100, () => new Date(now));
    map.set("a", "A");
    map.set("b", "B", 1_050);
    now = 1_049;
    expect([map.get("a"), map.get("b")]).toEqual(["A", "B"]);
    now = 1_050;
    expect([map.get("a"), map.get("b")]).toEqual(["A", undefined]);
    now = 1_100;
    expect(map.get("a")).toBeUndefined();
    expect(map.size).toBe(0);
  });
});
