import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ADAPTERS,
  ARTIFACT_SIZE,
  type Call,
  client,
  type Harness,
  type SignedIn,
  signUpAndSignIn,
  startHarness,
} from "../support/http-harness.ts";

/** Every implemented route over real HTTP on loopback, once per store adapter. */
describe.each(ADAPTERS)("account routes over HTTP on %s", (adapter) => {
  let h: Harness;
  let call: Call;
  let admin: SignedIn;
  let player: SignedIn;
  let apiKey: string;
  let apiKeyId: string;

  beforeAll(async () => {
    h = await startHarness({ adapter });
    call = client(h.origin);
  });
  afterAll(async () => {
    await h?.close();
  });

  it("backend_health reports the database and email mode", async () => {
    const r = await call("GET", "/api/v1/backend/health");
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: "ok", emailDelivery: "dev:return-token", database: adapter });
  });

  it("create_account -> verify_account -> request/confirm magic link", async () => {
    const created = await call("POST", "/api/v1/accounts", {
      body: { email: "Player@Example.com", displayName: "Pat", role: "modder" },
    });
    expect(created.status).toBe(202);
    expect(created.json).toMatchObject({
      status: "verification_sent",
      accountId: expect.stringMatching(/^acct_/),
    });
    expect(created.json.devToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const accountId = created.json.accountId;
    const verified = await call("POST", `/api/v1/accounts/${accountId}/verify-email`, {
      body: { token: created.json.devToken },
    });
    expect(verified.status).toBe(200);
    expect(verified.json.account).toEqual({
      id: accountId,
      email: "Player@Example.com",
      displayName: "Pat",
      roles: ["modder"],
      createdAt: expect.any(String),
      verifiedAt: expect.any(String),
    });
    const link = await call("POST", "/api/v1/auth/magic-link/request", {
      body: { email: "player@example.COM" },
    });
    expect(link.status).toBe(202);
    const confirmed = await call("POST", "/api/v1/auth/magic-link/confirm", {
      body: { token: link.json.devToken },
    });
    expect(confirmed.status).toBe(200);
    const setCookie = confirmed.headers.get("set-cookie")!;
    expect(setCookie).toMatch(
      /^svc_session=[A-Za-z0-9_-]{43}; Max-Age=604800; Path=\/; HttpOnly; SameSite=Lax$/,
    );
    expect(confirmed.json.session).toMatchObject({ accountId, displayName: "Pat", roles: ["modder"] });
    player = {
      accountId,
      email: "player@example.com",
      cookie: setCookie.split(";")[0]!,
      csrf: confirmed.json.session.csrfToken,
    };
  });

  it("current_session returns account id, roles, display name and CSRF token", async () => {
    const r = await call("GET", "/api/v1/auth/session", { cookie: player.cookie });
    expect(r.status).toBe(200);
    expect(r.json.session).toEqual({
      accountId: player.accountId,
      email: "Player@Example.com",
      displayName: "Pat",
      roles: ["modder"],
      csrfToken: player.csrf,
      createdAt: expect.any(String),
      expiresAt: expect.any(String),
    });
  });

  it("create_api_key returns the plaintext once; list_api_keys shows metadata only", async () => {
    const created = await call("POST", "/api/v1/auth/api-keys", {
      cookie: player.cookie,
      csrf: player.csrf,
      body: { name: "manager on desktop" },
    });
    expect(created.status).toBe(201);
    apiKey = created.json.secret;
    apiKeyId = created.json.apiKey.id;
    expect(apiKey).toMatch(/^svc_[0-9A-Za-z]{38}$/);
    expect(created.json.apiKey).toEqual({
      id: expect.stringMatching(/^key_/),
      name: "manager on desktop",
      prefix: apiKey.slice(0, 10),
      createdAt: expect.any(String),
      lastUsedAt: null,
      revokedAt: null,
    });
    const listed = await call("GET", "/api/v1/auth/api-keys", { cookie: player.cookie });
    expect(listed.status).toBe(200);
    expect(listed.json.apiKeys).toEqual([created.json.apiKey]);
    expect(listed.text).not.toContain(apiKey);
    expect(listed.text).not.toContain(createHash("sha256").update(apiKey).digest("hex"));
    const stored = await h.store.query<{ key_hash: string }>("SELECT key_hash FROM api_keys");
    expect(JSON.stringify(stored.rows)).not.toContain(apiKey);
  });

  it("api_key_mod_download streams the artifact with ETag = sha256, Content-Length, Range/206 and 304", async () => {
    const path = "/api/v1/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip";
    const auth = { authorization: `Bearer ${apiKey}` };
    const full = await fetch(`${h.origin}${path}`, { headers: auth });
    expect(full.status).toBe(200);
    const bytes = Buffer.from(await full.arrayBuffer());
    expect(bytes.equals(h.artifact)).toBe(true);
    const sha = createHash("sha256").update(h.artifact).digest("hex");
    expect(full.headers.get("etag")).toBe(`"${sha}"`);
    expect(full.headers.get("content-length")).toBe(String(ARTIFACT_SIZE));
    expect(full.headers.get("accept-ranges")).toBe("bytes");
    const partial = await fetch(`${h.origin}${path}`, { headers: { ...auth, range: "bytes=1000-" } });
    expect(partial.status).toBe(206);
    expect(partial.headers.get("content-range")).toBe(`bytes 1000-${ARTIFACT_SIZE - 1}/${ARTIFACT_SIZE}`);
    expect(Buffer.from(await partial.arrayBuffer()).equals(h.artifact.subarray(1000))).toBe(true);
    const notModified = await fetch(`${h.origin}${path}`, {
      headers: { ...auth, "if-none-match": `"${sha}"` },
    });
    expect(notModified.status).toBe(304);
    const unsatisfiable = await fetch(`${h.origin}${path}`, {
      headers: { ...auth, range: `bytes=${ARTIFACT_SIZE}-` },
    });
    expect(unsatisfiable.status).toBe(416);
    expect(((await unsatisfiable.json()) as { code: string }).code).toBe("range_not_satisfiable");
    const head = await fetch(`${h.origin}${path}`, { method: "HEAD", headers: auth });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(String(ARTIFACT_SIZE));
    const keys = await call("GET", "/api/v1/auth/api-keys", { cookie: player.cookie });
    expect(keys.json.apiKeys[0].lastUsedAt).not.toBeNull();
  });

  it("api_key_mod_download redirects to a GitHub Releases asset and 404s anything not download-enabled", async () => {
    const auth = { authorization: `Bearer ${apiKey}` };
    const far = await fetch(`${h.origin}/api/v1/downloads/mods/far-mod/2.0.0/far-mod-2.0.0.zip`, {
      headers: auth,
      redirect: "manual",
    });
    expect(far.status).toBe(302);
    expect(far.headers.get("location")).toBe(
      "https://github.com/ada/far-mod/releases/download/v2.0.0/far-mod-2.0.0.zip",
    );
    expect(far.headers.get("etag")).toBe(`"${"b".repeat(64)}"`);
    for (const path of [
      "/api/v1/downloads/mods/better-hud/0.9.0/better-hud-0.9.0.zip", // hidden: bytes exist, not in the catalog
      "/api/v1/downloads/mods/better-hud/1.0.0/other.zip",
      "/api/v1/downloads/mods/nope/1.0.0/nope-1.0.0.zip",
      "/api/v1/downloads/mods/better-hud/1.0.0/..%2F..%2F..%2Fportal.config.json",
    ]) {
      const r = await fetch(`${h.origin}${path}`, { headers: auth });
      expect(r.status, path).toBe(404);
      expect(((await r.json()) as { code: string }).code).toBe("not_found");
    }
  });

  it("revoke_api_key: later downloads with that secret are rejected", async () => {
    const revoked = await call("DELETE", `/api/v1/auth/api-keys/${apiKeyId}`, {
      cookie: player.cookie,
      csrf: player.csrf,
    });
    expect(revoked.status).toBe(200);
    expect(revoked.json.apiKey.revokedAt).not.toBeNull();
    const r = await fetch(`${h.origin}/api/v1/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    expect(r.status).toBe(401);
    expect(((await r.json()) as { code: string }).code).toBe("invalid_api_key");
    const again = await call("DELETE", `/api/v1/auth/api-keys/${apiKeyId}`, {
      cookie: player.cookie,
      csrf: player.csrf,
    });
    expect(again.status).toBe(200);
  });

  it("bootstrap admin (case-insensitive) lists accounts and changes roles", async () => {
    admin = await signUpAndSignIn(call, "ADMIN@example.com", "Root");
    const session = await call("GET", "/api/v1/auth/session", { cookie: admin.cookie });
    expect(session.json.session.roles).toEqual(["player", "admin"]);
    const list = await call("GET", "/api/v1/accounts?limit=1", { cookie: admin.cookie });
    expect(list.status).toBe(200);
    expect(list.json.accounts).toHaveLength(1);
    expect(list.json.nextCursor).toEqual(expect.any(String));
    const rest = await call("GET", `/api/v1/accounts?cursor=${list.json.nextCursor}`, {
      cookie: admin.cookie,
    });
    expect(rest.json.accounts.map((a: { id: string }) => a.id).sort()).toContain(
      [admin.accountId, player.accountId].sort().at(-1),
    );
    const updated = await call("PUT", `/api/v1/accounts/${player.accountId}/roles`, {
      cookie: admin.cookie,
      csrf: admin.csrf,
      body: { roles: ["modder", "moderator"] },
    });
    expect(updated.status).toBe(200);
    expect(updated.json.account.roles).toEqual(["modder", "moderator"]);
  });

  it("audit_events: every action recorded, filters and cursor paging", async () => {
    const all = await call("GET", "/api/v1/audit/events?limit=200", { cookie: admin.cookie });
    expect(all.status).toBe(200);
    const actions = all.json.events.map((e: { action: string }) => e.action);
    for (const action of [
      "account.created",
      "account.email_verified",
      "magic_link.requested",
      "session.created",
      "api_key.created",
      "api_key.revoked",
      "account.roles_updated",
    ]) {
      expect(actions, action).toContain(action);
    }
    const event = all.json.events.find((e: { action: string }) => e.action === "account.roles_updated");
    expect(event).toEqual({
      id: expect.stringMatching(/^evt_/),
      actorAccountId: admin.accountId,
      action: "account.roles_updated",
      targetType: "account",
      targetId: player.accountId,
      createdAt: expect.any(String),
      metadata: { before: ["modder"], after: ["modder", "moderator"] },
    });
    const filtered = await call(
      "GET",
      `/api/v1/audit/events?action=api_key.created&actorAccountId=${player.accountId}`,
      {
        cookie: admin.cookie,
      },
    );
    expect(filtered.json.events).toHaveLength(1);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { json: { events: Array<{ id: string }>; nextCursor: string | null } } = await call(
        "GET",
        `/api/v1/audit/events?limit=3${cursor ? `&cursor=${cursor}` : ""}`,
        { cookie: admin.cookie },
      );
      seen.push(...page.json.events.map((e) => e.id));
      cursor = page.json.nextCursor;
    } while (cursor);
    expect(seen).toEqual(all.json.events.map((e: { id: string }) => e.id));
    const future = await call("GET", "/api/v1/audit/events?since=2999-01-01T00:00:00Z", {
      cookie: admin.cookie,
    });
    expect(future.json.events).toEqual([]);
    const bad = await call("GET", "/api/v1/audit/events?sort=asc", { cookie: admin.cookie });
    expect(bad.status).toBe(400);
  });

  it("delete_session ends the session server-side", async () => {
    const out = await call("DELETE", "/api/v1/auth/session", { cookie: player.cookie, csrf: player.csrf });
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toMatch(/^svc_session=; Max-Age=0;/);
    const after = await call("GET", "/api/v1/auth/session", { cookie: player.cookie });
    expect(after.status).toBe(401);
    expect(after.json.code).toBe("unauthenticated");
  });
});
