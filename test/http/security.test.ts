import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Call,
  client,
  type Harness,
  type SignedIn,
  sessionCookieOf,
  signIn,
  signUpAndSignIn,
  startHarness,
} from "../support/http-harness.ts";

/** SECURITY.md "HTTP and auth", the classes that apply to the account routes, on PGlite. */
describe("HTTP and auth threats", () => {
  let h: Harness;
  let call: Call;
  let clock = Date.parse("2026-11-21T10:00:00Z");
  let admin: SignedIn;
  let player: SignedIn;
  let other: SignedIn;

  beforeAll(async () => {
    h = await startHarness({ now: () => new Date(clock) });
    call = client(h.origin);
    admin = await signUpAndSignIn(call, "admin@example.com", "Admin");
    player = await signUpAndSignIn(call, "player@example.com", "Player");
    other = await signUpAndSignIn(call, "other@example.com", "Other");
  });
  afterAll(async () => {
    await h?.close();
  });

  const accountCount = async () =>
    Number((await h.store.query<{ n: string }>("SELECT count(*)::text AS n FROM accounts")).rows[0]!.n);

  describe("session fixation and reuse after logout", () => {
    it("issues a new random session id at sign-in and ignores a planted one", async () => {
      const planted = "svc_session=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA";
      const link = await call("POST", "/api/v1/auth/magic-link/request", { body: { email: player.email } });
      const confirmed = await call("POST", "/api/v1/auth/magic-link/confirm", {
        body: { token: link.json.devToken },
        cookie: planted,
      });
      expect(confirmed.status).toBe(200);
      const issued = sessionCookieOf(confirmed);
      expect(issued).not.toBe(planted);
      expect(issued).not.toBe(player.cookie);
      expect((await call("GET", "/api/v1/auth/session", { cookie: planted })).status).toBe(401);
      expect((await call("GET", "/api/v1/auth/session", { cookie: issued })).status).toBe(200);
    });

    it("ends a live session the browser presented at sign-in (an attacker's planted real session)", async () => {
      const attacker = await signIn(call, other.email, other.accountId);
      const link = await call("POST", "/api/v1/auth/magic-link/request", { body: { email: player.email } });
      const confirmed = await call("POST", "/api/v1/auth/magic-link/confirm", {
        body: { token: link.json.devToken },
        cookie: attacker.cookie,
      });
      expect(confirmed.json.session.accountId).toBe(player.accountId);
      expect((await call("GET", "/api/v1/auth/session", { cookie: attacker.cookie })).status).toBe(401);
    });

    it("rejects a copied cookie after logout", async () => {
      const s = await signIn(call, player.email, player.accountId);
      const copy = s.cookie;
      expect((await call("DELETE", "/api/v1/auth/session", { cookie: s.cookie, csrf: s.csrf })).status).toBe(
        204,
      );
      const reused = await call("GET", "/api/v1/auth/api-keys", { cookie: copy });
      expect(reused.status).toBe(401);
      expect(reused.json.code).toBe("unauthenticated");
      expect(reused.headers.get("set-cookie")).toMatch(/^svc_session=; Max-Age=0/);
    });

    it("expires sessions server-side", async () => {
      const s = await signIn(call, player.email, player.accountId);
      clock += 7 * 24 * 3600 * 1000 + 1000;
      try {
        expect((await call("GET", "/api/v1/auth/session", { cookie: s.cookie })).status).toBe(401);
      } finally {
        clock -= 7 * 24 * 3600 * 1000 + 1000;
      }
    });

    it("sets Secure on the cookie except on plain-HTTP loopback", async () => {
      const link = await call("POST", "/api/v1/auth/magic-link/request", { body: { email: player.email } });
      const local = await call("POST", "/api/v1/auth/magic-link/confirm", {
        body: { token: link.json.devToken },
      });
      expect(local.headers.get("set-cookie")).not.toMatch(/Secure/);
      const https = await startHarness({ assumeHttps: true });
      try {
        const c = client(https.origin);
        const created = await c("POST", "/api/v1/accounts", {
          body: { email: "s@example.com", displayName: "S" },
        });
        await c("POST", `/api/v1/accounts/${created.json.accountId}/verify-email`, {
          body: { token: created.json.devToken },
        });
        const l = await c("POST", "/api/v1/auth/magic-link/request", { body: { email: "s@example.com" } });
        const r = await c("POST", "/api/v1/auth/magic-link/confirm", { body: { token: l.json.devToken } });
        expect(r.headers.get("set-cookie")).toMatch(/; HttpOnly; Secure; SameSite=Lax$/);
      } finally {
        await https.close();
      }
    });
  });

  describe("magic-link and verification tokens", () => {
    it("refuses a replayed magic-link token", async () => {
      const link = await call("POST", "/api/v1/auth/magic-link/request", { body: { email: player.email } });
      const first = await call("POST", "/api/v1/auth/magic-link/confirm", {
        body: { token: link.json.devToken },
      });
      expect(first.status).toBe(200);
      const replay = await call("POST", "/api/v1/auth/magic-link/confirm", {
        body: { token: link.json.devToken },
      });
      expect(replay.status).toBe(400);
      expect(replay.json).toEqual({ code: "token_invalid", message: expect.any(String) });
      expect(replay.headers.get("set-cookie")).toBeNull();
    });

    it("consumes a token once when two confirmations race", async () => {
      const link = await call("POST", "/api/v1/auth/magic-link/request", { body: { email: player.email } });
      const results = await Promise.all(
        Array.from({ length: 5 }, () =>
          call("POST", "/api/v1/auth/magic-link/confirm", { body: { token: link.json.devToken } }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400, 400, 400]);
    });

    it("refuses an expired magic-link token (15 minutes)", async () => {
      const link = await call("POST", "/api/v1/auth/magic-link/request", { body: { email: player.email } });
      clock += 15 * 60 * 1000 + 1;
      const late = await call("POST", "/api/v1/auth/magic-link/confirm", {
        body: { token: link.json.devToken },
      });
      expect(late.status).toBe(400);
      expect(late.json.code).toBe("token_invalid");
    });

    it("refuses foreign tokens: another account's verification token, a verification token as a magic link, and the reverse", async () => {
      const a = await call("POST", "/api/v1/accounts", {
        body: { email: "fa@example.com", displayName: "A" },
      });
      const b = await call("POST", "/api/v1/accounts", {
        body: { email: "fb@example.com", displayName: "B" },
      });
      const crossed = await call("POST", `/api/v1/accounts/${b.json.accountId}/verify-email`, {
        body: { token: a.json.devToken },
      });
      expect(crossed.status).toBe(400);
      expect(crossed.json.code).toBe("token_invalid");
      const asMagic = await call("POST", "/api/v1/auth/magic-link/confirm", {
        body: { token: a.json.devToken },
      });
      expect(asMagic.status).toBe(400);
      const link = await call("POST", "/api/v1/auth/magic-link/request", { body: { email: player.email } });
      const asVerify = await call("POST", `/api/v1/accounts/${player.accountId}/verify-email`, {
        body: { token: link.json.devToken },
      });
      expect(asVerify.status).toBe(400);
      // The right token still works afterwards: a failed attempt burns nothing.
      const ok = await call("POST", `/api/v1/accounts/${a.json.accountId}/verify-email`, {
        body: { token: a.json.devToken },
      });
      expect(ok.status).toBe(200);
      const replay = await call("POST", `/api/v1/accounts/${a.json.accountId}/verify-email`, {
        body: { token: a.json.devToken },
      });
      expect(replay.status).toBe(400);
    });

    it("stores tokens and session ids only as hashes", async () => {
      const link = await call("POST", "/api/v1/auth/magic-link/request", { body: { email: player.email } });
      const dump = JSON.stringify(
        (
          await h.store.query(
            "SELECT (SELECT json_agg(m) FROM magic_link_tokens m) AS m, (SELECT json_agg(s) FROM sessions s) AS s, (SELECT json_agg(v) FROM verification_tokens v) AS v",
          )
        ).rows,
      );
      expect(dump).not.toContain(link.json.devToken);
      expect(dump).not.toContain(player.cookie.split("=")[1]);
    });
  });

  describe("account enumeration", () => {
    it("answers request_magic_link identically for verified, unverified and unknown addresses", async () => {
      await call("POST", "/api/v1/accounts", { body: { email: "unverified@example.com", displayName: "U" } });
      const shapes = [];
      for (const email of [player.email, "unverified@example.com", "nobody@example.com"]) {
        const r = await call("POST", "/api/v1/auth/magic-link/request", { body: { email } });
        expect(r.status).toBe(202);
        shapes.push({ ...r.json, devToken: typeof r.json.devToken, length: r.text.length });
      }
      expect(shapes[1]).toEqual(shapes[0]);
      expect(shapes[2]).toEqual(shapes[0]);
    });

    it("answers create_account identically for a new and a taken address, and creates nothing for the taken one", async () => {
      const before = await accountCount();
      const taken = await call("POST", "/api/v1/accounts", {
        body: { email: "PLAYER@example.com", displayName: "X" },
      });
      const fresh = await call("POST", "/api/v1/accounts", {
        body: { email: "brand-new@example.com", displayName: "X" },
      });
      expect(taken.status).toBe(fresh.status);
      expect(Object.keys(taken.json).sort()).toEqual(Object.keys(fresh.json).sort());
      expect(taken.text.length).toBe(fresh.text.length);
      expect(taken.json.accountId).not.toBe(player.accountId);
      expect(await accountCount()).toBe(before + 1);
      // The decoy id verifies nothing.
      const decoy = await call("POST", `/api/v1/accounts/${taken.json.accountId}/verify-email`, {
        body: { token: taken.json.devToken },
      });
      expect(decoy.status).toBe(400);
    });

    it("takes the same time for existing and unknown addresses (medians within noise)", async () => {
      const sample = async (email: string) => {
        const started = performance.now();
        const r = await call("POST", "/api/v1/auth/magic-link/request", { body: { email } });
        expect(r.status).toBe(202);
        return performance.now() - started;
      };
      const known: number[] = [];
      const unknown: number[] = [];
      for (let i = 0; i < 24; i++) {
        known.push(await sample(player.email));
        unknown.push(await sample(`ghost${i}@example.com`));
      }
      const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const diff = Math.abs(median(known) - median(unknown));
      expect(diff).toBeLessThan(Math.max(15, 0.5 * Math.max(median(known), median(unknown))));
    });
  });

  describe("CSRF on cookie-authenticated writes", () => {
    const writes = (s: SignedIn) =>
      [
        ["POST", "/api/v1/auth/api-keys", { name: "x" }],
        ["DELETE", "/api/v1/auth/api-keys/key_none", undefined],
        ["DELETE", "/api/v1/auth/session", undefined],
        ["PUT", `/api/v1/accounts/${s.accountId}/roles`, { roles: ["player"] }],
      ] as const;

    it("refuses a missing or foreign x-svc-csrf header before the body is read", async () => {
      for (const [method, path, body] of writes(admin)) {
        const missing = await call(method, path, { cookie: admin.cookie, ...(body ? { body } : {}) });
        expect(missing.status, `${method} ${path}`).toBe(403);
        expect(missing.json.code).toBe("csrf_failed");
        const foreign = await call(method, path, {
          cookie: admin.cookie,
          csrf: player.csrf,
          ...(body ? { body } : {}),
        });
        expect(foreign.status, `${method} ${path}`).toBe(403);
        expect(foreign.json.code).toBe("csrf_failed");
      }
      expect((await call("GET", "/api/v1/auth/api-keys", { cookie: admin.cookie })).json.apiKeys).toEqual([]);
      expect((await call("GET", "/api/v1/auth/session", { cookie: admin.cookie })).status).toBe(200);
    });
  });

  describe("API keys", () => {
    let key: string;
    const download = "/api/v1/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip";

    beforeAll(async () => {
      const created = await call("POST", "/api/v1/auth/api-keys", {
        cookie: player.cookie,
        csrf: player.csrf,
      });
      key = created.json.secret;
    });

    it("refuses keys in the query string, even valid ones", async () => {
      for (const query of [`?api_key=${key}`, `?key=${key}`, `?token=${key}`, `?x=${key}`]) {
        const r = await call("GET", `${download}${query}`, { headers: { authorization: `Bearer ${key}` } });
        expect(r.status, query).toBe(401);
        expect(r.json.code).toBe("invalid_api_key");
      }
      const noHeader = await call("GET", `${download}?api_key=${key}`);
      expect(noHeader.status).toBe(401);
    });

    it("refuses malformed keys, bad checksums and unknown keys", async () => {
      const flipped = `${key.slice(0, 10)}${key[10] === "A" ? "B" : "A"}${key.slice(11)}`;
      const forged = `svc_${"A".repeat(32)}000000`;
      for (const bad of [flipped, forged, "svc_short", "not-a-key", `${key}x`]) {
        const r = await call("GET", download, { headers: { authorization: `Bearer ${bad}` } });
        expect(r.status, bad).toBe(401);
        expect(r.json.code).toBe("invalid_api_key");
      }
      const none = await call("GET", download);
      expect(none.status).toBe(401);
      expect(none.json.code).toBe("unauthenticated");
      expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
      const cookieOnly = await call("GET", download, { cookie: player.cookie });
      expect(cookieOnly.status).toBe(401);
    });

    it("refuses API keys on write and session routes", async () => {
      const auth = { authorization: `Bearer ${key}` };
      for (const [method, path] of [
        ["POST", "/api/v1/auth/api-keys"],
        ["GET", "/api/v1/auth/api-keys"],
        ["GET", "/api/v1/auth/session"],
        ["DELETE", "/api/v1/auth/session"],
        ["PUT", `/api/v1/accounts/${player.accountId}/roles`],
      ] as const) {
        const r = await call(method, path, {
          headers: auth,
          ...(method === "GET" ? {} : { body: { roles: ["admin"] } }),
        });
        expect(r.status, `${method} ${path}`).toBe(403);
        expect(r.json.code).toBe("forbidden");
      }
    });

    it("does not let one account revoke or see another's key", async () => {
      const keys = await call("GET", "/api/v1/auth/api-keys", { cookie: player.cookie });
      const id = keys.json.apiKeys[0].id;
      const r = await call("DELETE", `/api/v1/auth/api-keys/${id}`, {
        cookie: other.cookie,
        csrf: other.csrf,
      });
      expect(r.status).toBe(404);
      expect((await call("GET", "/api/v1/auth/api-keys", { cookie: other.cookie })).json.apiKeys).toEqual([]);
      const still = await call("GET", download, { headers: { authorization: `Bearer ${key}` } });
      expect(still.status).toBe(200);
    });
  });

  describe("roles", () => {
    it("refuses vertical privilege escalation by a player", async () => {
      for (const [method, path, body] of [
        ["GET", "/api/v1/accounts", undefined],
        ["GET", "/api/v1/audit/events", undefined],
        ["PUT", `/api/v1/accounts/${player.accountId}/roles`, { roles: ["admin"] }],
      ] as const) {
        const r = await call(method, path, {
          cookie: player.cookie,
          csrf: player.csrf,
          ...(body ? { body } : {}),
        });
        expect(r.status, `${method} ${path}`).toBe(403);
        expect(r.json.code).toBe("forbidden");
      }
      const session = await call("GET", "/api/v1/auth/session", { cookie: player.cookie });
      expect(session.json.session.roles).toEqual(["player"]);
    });

    it("refuses a moderator changing roles, and unknown role names or extra fields", async () => {
      await call("PUT", `/api/v1/accounts/${other.accountId}/roles`, {
        cookie: admin.cookie,
        csrf: admin.csrf,
        body: { roles: ["moderator"] },
      });
      const asModerator = await call("PUT", `/api/v1/accounts/${other.accountId}/roles`, {
        cookie: other.cookie,
        csrf: other.csrf,
        body: { roles: ["admin"] },
      });
      expect(asModerator.status).toBe(403);
      for (const body of [
        { roles: ["root"] },
        { roles: "admin" },
        { roles: [] },
        { roles: ["admin"], verifiedAt: "now" },
      ]) {
        const r = await call("PUT", `/api/v1/accounts/${other.accountId}/roles`, {
          cookie: admin.cookie,
          csrf: admin.csrf,
          body,
        });
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.json.code).toBe("invalid_payload");
      }
    });

    it("refuses privileged roles for an unverified account", async () => {
      const u = await call("POST", "/api/v1/accounts", {
        body: { email: "unv@example.com", displayName: "Unv" },
      });
      for (const roles of [["moderator"], ["admin"]]) {
        const r = await call("PUT", `/api/v1/accounts/${u.json.accountId}/roles`, {
          cookie: admin.cookie,
          csrf: admin.csrf,
          body: { roles },
        });
        expect(r.status).toBe(409);
        expect(r.json.code).toBe("account_not_verified");
      }
      const modder = await call("PUT", `/api/v1/accounts/${u.json.accountId}/roles`, {
        cookie: admin.cookie,
        csrf: admin.csrf,
        body: { roles: ["modder"] },
      });
      expect(modder.status).toBe(200);
    });

    it("grants a bootstrap admin nothing before verification: no sign-in, admin not effective", async () => {
      const boot = await call("POST", "/api/v1/accounts", {
        body: { email: "SECOND@example.com", displayName: "Two" },
      });
      const link = await call("POST", "/api/v1/auth/magic-link/request", {
        body: { email: "second@example.com" },
      });
      const confirm = await call("POST", "/api/v1/auth/magic-link/confirm", {
        body: { token: link.json.devToken },
      });
      expect(confirm.status).toBe(400);
      const rows = await h.store.query<{ roles: string[] }>("SELECT roles FROM accounts WHERE id = $1", [
        boot.json.accountId,
      ]);
      expect(rows.rows[0]!.roles).toEqual(["player", "admin"]);
      await call("POST", `/api/v1/accounts/${boot.json.accountId}/verify-email`, {
        body: { token: boot.json.devToken },
      });
    });

    it("never removes the last verified admin, also when two admins demote each other at once", async () => {
      const second = await signIn(call, "second@example.com", (await findAccount("second@example.com")).id);
      for (let round = 0; round < 3; round++) {
        const [a, b] = await Promise.all([
          call("PUT", `/api/v1/accounts/${second.accountId}/roles`, {
            cookie: admin.cookie,
            csrf: admin.csrf,
            body: { roles: ["player"] },
          }),
          call("PUT", `/api/v1/accounts/${admin.accountId}/roles`, {
            cookie: second.cookie,
            csrf: second.csrf,
            body: { roles: ["player"] },
          }),
        ]);
        const statuses = [a.status, b.status].sort();
        expect(statuses[0]).toBe(200);
        expect([403, 409]).toContain(statuses[1]);
        const admins = await h.store.query(
          "SELECT id FROM accounts WHERE 'admin' = ANY(roles) AND verified_at IS NOT NULL",
        );
        expect(admins.rowCount).toBe(1);
        // Restore the second admin for the next round.
        const survivor = a.status === 200 ? admin : second;
        const demoted = a.status === 200 ? second : admin;
        const restore = await call("PUT", `/api/v1/accounts/${demoted.accountId}/roles`, {
          cookie: survivor.cookie,
          csrf: survivor.csrf,
          body: { roles: ["player", "admin"] },
        });
        expect(restore.status).toBe(200);
      }
      const demoteSecond = await call("PUT", `/api/v1/accounts/${second.accountId}/roles`, {
        cookie: admin.cookie,
        csrf: admin.csrf,
        body: { roles: ["player"] },
      });
      expect(demoteSecond.status).toBe(200);
      const alone = await call("PUT", `/api/v1/accounts/${admin.accountId}/roles`, {
        cookie: admin.cookie,
        csrf: admin.csrf,
        body: { roles: ["player"] },
      });
      expect(alone.status).toBe(409);
      expect(alone.json.code).toBe("last_admin");
    });

    async function findAccount(email: string) {
      const list = await call("GET", "/api/v1/accounts?limit=500", { cookie: admin.cookie });
      return list.json.accounts.find((a: { email: string }) => a.email.toLowerCase() === email);
    }
  });

  describe("bodies", () => {
    it("refuses CRLF and control characters in emails and names, creating nothing", async () => {
      const before = await accountCount();
      for (const body of [
        { email: "a@example.com\r\nBcc: victim@example.com", displayName: "A" },
        { email: "a@example.com\n", displayName: "A" },
        { email: "b@example.com", displayName: "Bob\r\nX-Injected: 1" },
        { email: "b@example.com", displayName: "Bob\u0000" },
        { email: "b@example.com", displayName: "\u202eboB" },
      ]) {
        const r = await call("POST", "/api/v1/accounts", { body });
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.json.code).toBe("invalid_payload");
      }
      const link = await call("POST", "/api/v1/auth/magic-link/request", {
        body: { email: "player@example.com\r\nBcc: x@example.com" },
      });
      expect(link.status).toBe(400);
      expect(await accountCount()).toBe(before);
    });

    it("refuses unknown fields, __proto__, wrong types, wrong content types and invalid JSON", async () => {
      const cases: Array<[string, Record<string, string>, number, string]> = [
        ['{"email":"c@example.com","displayName":"C","roles":["admin"]}', {}, 400, "invalid_payload"],
        [
          '{"email":"c@example.com","displayName":"C","__proto__":{"admin":true}}',
          {},
          400,
          "invalid_payload",
        ],
        ['{"email":"c@example.com","displayName":"C","constructor":{}}', {}, 400, "invalid_payload"],
        ['{"email":["c@example.com"],"displayName":"C"}', {}, 400, "invalid_payload"],
        ['{"email":"c@example.com","displayName":42}', {}, 400, "invalid_payload"],
        ['{"email":"c@example.com","displayName":"C","role":"admin"}', {}, 400, "invalid_payload"],
        ['["c@example.com"]', {}, 400, "invalid_payload"],
        ["{not json", {}, 400, "invalid_json"],
        [
          '{"email":"c@example.com","displayName":"C"}',
          { "content-type": "text/plain" },
          415,
          "unsupported_media_type",
        ],
        [
          '{"email":"c@example.com","displayName":"C"}',
          { "content-type": "application/x-www-form-urlencoded" },
          415,
          "unsupported_media_type",
        ],
      ];
      const before = await accountCount();
      for (const [raw, headers, status, code] of cases) {
        const r = await call("POST", "/api/v1/accounts", {
          rawBody: raw,
          headers: { "content-type": "application/json", ...headers },
        });
        expect(r.status, raw).toBe(status);
        expect(r.json).toEqual({
          code,
          message: expect.any(String),
          ...(r.json.details ? { details: r.json.details } : {}),
        });
      }
      expect(await accountCount()).toBe(before);
    });

    it("treats a body-less POST as {} where no field is required, with or without a content type", async () => {
      const r = await call("POST", "/api/v1/auth/api-keys", {
        cookie: other.cookie,
        csrf: other.csrf,
        headers: { "content-type": "application/json" },
      });
      expect(r.status).toBe(201);
      expect(r.json.apiKey.name).toBe("API key");
      const missing = await call("POST", "/api/v1/auth/magic-link/confirm", {
        headers: { "content-type": "application/json" },
      });
      expect(missing.status).toBe(400);
    });

    it("refuses oversized bodies while streaming (declared and chunked)", async () => {
      const big = JSON.stringify({ email: "d@example.com", displayName: "x".repeat(70 * 1024) });
      const declared = await call("POST", "/api/v1/accounts", {
        rawBody: big,
        headers: { "content-type": "application/json" },
      });
      expect(declared.status).toBe(413);
      expect(declared.json.code).toBe("payload_too_large");
      const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(`${h.origin}/api/v1/accounts`, {
          method: "POST",
          headers: { "content-type": "application/json", "transfer-encoding": "chunked" },
        });
        req.on("response", (res) => {
          let body = "";
          res.on("data", (c) => {
            body += c;
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        for (let i = 0; i < 80; i++) req.write("x".repeat(1024));
        req.end();
      });
      expect(chunked.status).toBe(413);
      expect(JSON.parse(chunked.body).code).toBe("payload_too_large");
    });
  });
});

describe("rate limits, X-Forwarded-For and fail-closed email", () => {
  it("answers 429 with Retry-After per IP, and opens again in the next window", async () => {
    let clock = Date.parse("2026-11-21T10:00:10Z");
    const h = await startHarness({
      now: () => new Date(clock),
      editConfig: (c) => {
        c.limits.rateLimits.accountCreation = { limit: 2, windowSeconds: 60 };
        c.limits.rateLimits.apiKeyLifecycle = { limit: 3, windowSeconds: 3600 };
      },
    });
    try {
      const call = client(h.origin);
      const body = (i: number) => ({ email: `r${i}@example.com`, displayName: "R" });
      expect((await call("POST", "/api/v1/accounts", { body: body(1) })).status).toBe(202);
      expect((await call("POST", "/api/v1/accounts", { body: body(2) })).status).toBe(202);
      const spoofed = await call("POST", "/api/v1/accounts", {
        body: body(3),
        headers: { "x-forwarded-for": "203.0.113.9" },
      });
      expect(spoofed.status).toBe(429);
      expect(spoofed.json.code).toBe("rate_limit_exceeded");
      expect(spoofed.headers.get("retry-after")).toBe("50");
      clock += 50_000;
      expect((await call("POST", "/api/v1/accounts", { body: body(4) })).status).toBe(202);

      // Per account: the API-key lifecycle bucket counts create, list and revoke.
      const s = await signUpAndSignIn(call, "keys@example.com");
      for (let i = 0; i < 3; i++) {
        expect((await call("GET", "/api/v1/auth/api-keys", { cookie: s.cookie })).status).toBe(200);
      }
      const over = await call("POST", "/api/v1/auth/api-keys", { cookie: s.cookie, csrf: s.csrf });
      expect(over.status).toBe(429);
      expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
      expect((await h.store.query("SELECT id FROM api_keys")).rowCount).toBe(0);
    } finally {
      await h.close();
    }
  });

  it("honours X-Forwarded-For only from a trusted proxy, taking the rightmost untrusted hop", async () => {
    const h = await startHarness({
      editConfig: (c) => {
        c.limits.rateLimits.accountCreation = { limit: 1, windowSeconds: 3600 };
        c.deployment.trustedProxies = ["127.0.0.1/32", "10.0.0.0/8"];
      },
    });
    try {
      const call = client(h.origin);
      const create = (i: number, xff: string) =>
        call("POST", "/api/v1/accounts", {
          body: { email: `x${i}@example.com`, displayName: "X" },
          headers: { "x-forwarded-for": xff },
        });
      expect((await create(1, "198.51.100.1")).status).toBe(202);
      expect((await create(2, "198.51.100.2")).status).toBe(202);
      expect((await create(3, "198.51.100.2")).status).toBe(429);
      // A client-written left-most hop proves nothing: the proxy-appended hop counts.
      expect((await create(4, "198.51.100.77, 198.51.100.2")).status).toBe(429);
      expect((await create(5, "198.51.100.2, 10.1.2.3")).status).toBe(429);
      const buckets = await h.store.query<{ subject: string }>(
        "SELECT subject FROM rate_limit_buckets WHERE bucket = 'accountCreation' ORDER BY subject",
      );
      expect(buckets.rows.map((r) => r.subject)).toEqual(["ip:198.51.100.1", "ip:198.51.100.2"]);
    } finally {
      await h.close();
    }
  });

  it("fails closed with email_delivery_unavailable before anything is created", async () => {
    const h = await startHarness({ env: { SVC_DEV_EMAIL: "off" } });
    try {
      const call = client(h.origin);
      const r = await call("POST", "/api/v1/accounts", {
        body: { email: "e@example.com", displayName: "E" },
      });
      expect(r.status).toBe(503);
      expect(r.json.code).toBe("email_delivery_unavailable");
      const m = await call("POST", "/api/v1/auth/magic-link/request", { body: { email: "e@example.com" } });
      expect(m.status).toBe(503);
      for (const table of ["accounts", "verification_tokens", "magic_link_tokens", "audit_events"]) {
        expect((await h.store.query(`SELECT 1 FROM ${table}`)).rowCount, table).toBe(0);
      }
      const health = await call("GET", "/api/v1/backend/health");
      expect(health.json.emailDelivery).toBe("unavailable");
    } finally {
      await h.close();
    }
  });

  it("auto-verify mode verifies at creation and returns no token", async () => {
    const h = await startHarness({ env: { SVC_DEV_EMAIL: "auto-verify" } });
    try {
      const call = client(h.origin);
      const r = await call("POST", "/api/v1/accounts", {
        body: { email: "auto@example.com", displayName: "Auto" },
      });
      expect(r.status).toBe(202);
      expect(r.json).toMatchObject({ status: "verified", verificationExpiresAt: null });
      expect(r.json.devToken).toBeUndefined();
      const link = await call("POST", "/api/v1/auth/magic-link/request", {
        body: { email: "auto@example.com" },
      });
      expect(link.json.devToken).toBeUndefined();
      const printed = h.logs.find((line) => line.startsWith("[dev email] magic_link for auto@example.com"));
      const token = /token (\S+)/.exec(printed ?? "")?.[1];
      const confirmed = await call("POST", "/api/v1/auth/magic-link/confirm", { body: { token } });
      expect(confirmed.status).toBe(200);
    } finally {
      await h.close();
    }
  });
});
