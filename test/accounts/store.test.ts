import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccountService } from "../../src/accounts/account-service.ts";
import { appendAuditEvent, listAuditEvents } from "../../src/accounts/audit.ts";
import { createDevDelivery, type EmailDelivery, type EmailMessage } from "../../src/accounts/email.ts";
import { consumeRateLimit } from "../../src/accounts/rate-limit.ts";
import { defaultRandomBytes } from "../../src/accounts/secrets.ts";
import type { PortalConfig } from "../../src/config/portal-config.ts";
import { MIGRATIONS, migrate, type Store } from "../../src/store/index.ts";
import { repoConfig } from "../support/temp-project.ts";
import { ADAPTERS, openTestStore } from "../support/http-harness.ts";

const rateLimits = (): PortalConfig["limits"]["rateLimits"] => repoConfig().limits.rateLimits;

describe.each(ADAPTERS)("store on %s", (adapter) => {
  let store: Store;
  beforeAll(async () => {
    store = await openTestStore(adapter);
  });
  afterAll(async () => {
    await store?.close();
  });

  it("records applied migrations and applies nothing twice, also when instances start together", async () => {
    const versions = await store.query<{ version: number }>(
      "SELECT version FROM schema_migrations ORDER BY version",
    );
    expect(versions.rows.map((r) => Number(r.version))).toEqual(MIGRATIONS.map((m) => m.version));
    const again = await Promise.all([migrate(store), migrate(store), migrate(store)]);
    expect(again).toEqual([[], [], []]);
  });

  it("refuses migrations that are out of order", async () => {
    await expect(migrate(store, [{ version: 2, name: "gap", sql: "SELECT 1" }])).rejects.toThrow(
      /expected 1/,
    );
  });

  it("rolls a transaction back when its function throws", async () => {
    await expect(
      store.transaction(async (tx) => {
        await tx.query("INSERT INTO store_locks (name) VALUES ('rollback_probe')");
        throw new Error("boom");
      }),
    ).rejects.toThrow("boom");
    expect((await store.query("SELECT 1 FROM store_locks WHERE name = 'rollback_probe'")).rowCount).toBe(0);
  });

  it("keeps audit events append-only in the database (UPDATE, DELETE and TRUNCATE fail)", async () => {
    const event = await appendAuditEvent(
      store,
      {
        actorAccountId: null,
        action: "test.appended",
        targetType: "probe",
        targetId: "1",
        metadata: { a: 1 },
      },
      { now: new Date(), random: defaultRandomBytes },
    );
    await expect(store.query("UPDATE audit_events SET action = 'test.changed'")).rejects.toThrow(
      /append-only/,
    );
    await expect(store.query("DELETE FROM audit_events")).rejects.toThrow(/append-only/);
    await expect(store.exec("TRUNCATE audit_events")).rejects.toThrow(/append-only/);
    await expect(
      store.query(
        "INSERT INTO audit_events (id, action, target_type, target_id, created_at, metadata) VALUES ('x', 'Not Snake', 't', 'i', now(), '{}')",
      ),
    ).rejects.toThrow();
    const page = await listAuditEvents(store, { action: "test.appended" });
    expect(page.events).toEqual([event]);
  });

  it("counts rate-limit hits atomically under concurrency", async () => {
    const now = new Date("2026-11-21T10:00:30Z");
    const rule = { limit: 10, windowSeconds: 60 };
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, () =>
        consumeRateLimit(store, "magicLinkRequest", "ip:192.0.2.1", rule, now),
      ),
    );
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(10);
    const rejected = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(rejected.reason).toMatchObject({ code: "rate_limit_exceeded", retryAfterSeconds: 30 });
    await expect(
      consumeRateLimit(store, "magicLinkRequest", "ip:192.0.2.1", rule, new Date("2026-11-21T10:01:00Z")),
    ).resolves.toMatchObject({ remaining: 9 });
  });

  describe("accounts core", () => {
    let clock = Date.parse("2026-11-21T12:00:00Z");
    let accounts: AccountService;
    const verified = async (email: string) => {
      const created = await accounts.createAccount({ email, displayName: email, role: "player" });
      await accounts.verifyEmail(created.accountId, created.devToken!);
      return created.accountId;
    };

    beforeAll(() => {
      accounts = new AccountService({
        store,
        email: createDevDelivery("return-token", () => {}),
        bootstrapAdminEmails: ["a1@example.com", "a2@example.com"],
        rateLimits: rateLimits(),
        now: () => new Date(clock),
      });
    });

    it("lets exactly one of two admins demoting each other at once succeed", async () => {
      const a1 = await verified("a1@example.com");
      const a2 = await verified("a2@example.com");
      for (let round = 0; round < 5; round++) {
        const results = await Promise.allSettled([
          accounts.updateRoles(a1, a2, ["player"]),
          accounts.updateRoles(a2, a1, ["player"]),
        ]);
        const ok = results.filter((r) => r.status === "fulfilled");
        expect(ok).toHaveLength(1);
        const failed = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
        expect(["forbidden", "last_admin"]).toContain(failed.reason.code);
        const admins = await store.query(
          "SELECT id FROM accounts WHERE 'admin' = ANY(roles) AND verified_at IS NOT NULL",
        );
        expect(admins.rowCount).toBe(1);
        const survivor = (admins.rows[0] as { id: string }).id;
        await accounts.updateRoles(survivor, survivor === a1 ? a2 : a1, ["player", "admin"]);
      }
      await accounts.updateRoles(a1, a2, ["player"]);
      await expect(accounts.updateRoles(a1, a1, ["player"])).rejects.toMatchObject({ code: "last_admin" });
    });

    it("consumes a magic-link token exactly once under concurrency", async () => {
      const id = await verified("race@example.com");
      const { devToken } = await accounts.requestMagicLink("race@example.com");
      const results = await Promise.allSettled(
        Array.from({ length: 8 }, () => accounts.confirmMagicLink(devToken!)),
      );
      const ok = results.filter((r) => r.status === "fulfilled") as PromiseFulfilledResult<
        Awaited<ReturnType<AccountService["confirmMagicLink"]>>
      >[];
      expect(ok).toHaveLength(1);
      expect(ok[0]!.value.session.account.id).toBe(id);
      const sessions = await store.query("SELECT 1 FROM sessions WHERE account_id = $1", [id]);
      expect(sessions.rowCount).toBe(1);
    });

    it("expires verification tokens after 24 hours", async () => {
      const created = await accounts.createAccount({
        email: "late@example.com",
        displayName: "Late",
        role: "modder",
      });
      clock += 24 * 3600 * 1000 + 1;
      await expect(accounts.verifyEmail(created.accountId, created.devToken!)).rejects.toMatchObject({
        code: "token_invalid",
      });
    });

    it("mails links to the verify and confirm pages whose values redeem, never links to API routes", async () => {
      // A FAKE mail system: it stands in for the webhook edge and only records what would be sent.
      const sent: EmailMessage[] = [];
      const outbox: EmailDelivery = { mode: "webhook", send: async (m) => void sent.push(m) };
      const mailing = new AccountService({
        store,
        email: outbox,
        bootstrapAdminEmails: [],
        rateLimits: rateLimits(),
        now: () => new Date(clock),
      });
      const page = (linkPath: string | undefined) => new URL(linkPath ?? "", "https://portal.test");

      const { accountId } = await mailing.createAccount({
        email: "Links@Example.com",
        displayName: "Links",
        role: "player",
      });
      const verifyMail = sent.find((m) => m.type === "verify_email")!;
      expect(verifyMail).toMatchObject({ to: "Links@Example.com", accountId });
      expect(verifyMail.linkPath).toBe(`/account/verify/?account=${accountId}&token=${verifyMail.token}`);
      const verifyLink = page(verifyMail.linkPath);
      expect(verifyLink.pathname).toBe("/account/verify/");
      expect([...verifyLink.searchParams.keys()]).toEqual(["account", "token"]);
      await mailing.verifyEmail(
        verifyLink.searchParams.get("account")!,
        verifyLink.searchParams.get("token")!,
      );

      await mailing.requestMagicLink("links@example.com");
      const signInMail = sent.find((m) => m.type === "magic_link")!;
      expect(signInMail.linkPath).toBe(`/account/confirm/?token=${signInMail.token}`);
      const confirmLink = page(signInMail.linkPath);
      expect(confirmLink.pathname).toBe("/account/confirm/");
      expect([...confirmLink.searchParams.keys()]).toEqual(["token"]);
      const { session } = await mailing.confirmMagicLink(confirmLink.searchParams.get("token")!);
      expect(session.account.id).toBe(accountId);

      // Mails that carry no token carry no link; "account_exists" links the owner to their own verify page.
      await mailing.requestMagicLink("nobody@example.com");
      await mailing.createAccount({ email: "links@example.com", displayName: "Again", role: "player" });
      const tokenless = sent.filter((m) => m.type === "sign_in_unavailable");
      expect(tokenless).toHaveLength(1);
      for (const mail of tokenless) expect(mail.linkPath).toBeUndefined();
      const exists = sent.find((m) => m.type === "account_exists")!;
      expect(exists.linkPath).toBe(`/account/verify/?account=${accountId}&token=${exists.token}`);
      for (const mail of sent) expect(JSON.stringify(mail)).not.toContain("/api/");
    });

    it("verifies API keys by hash, rejects revoked ones, and lists metadata only", async () => {
      const id = await verified("keys@example.com");
      const { apiKey, metadata } = await accounts.createApiKey(id, "desk");
      expect((await accounts.verifyApiKey(apiKey))?.account.id).toBe(id);
      expect(JSON.stringify(await accounts.listApiKeys(id))).not.toContain(apiKey.slice(10));
      await accounts.revokeApiKey(id, metadata.id);
      expect(await accounts.verifyApiKey(apiKey)).toBeNull();
    });
  });
});
