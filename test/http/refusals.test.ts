import { connect } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AuditEvent,
  REFUSAL_AUDIT_BUDGET,
  recordRefusal,
  refusalClientKey,
  summariseRefusals,
} from "../../src/accounts/audit.ts";
import { pruneRateLimits } from "../../src/accounts/rate-limit.ts";
import { defaultRandomBytes } from "../../src/accounts/secrets.ts";
import { LocalSubmissionBackend } from "../../src/submissions/local-backend.ts";
import type { Store } from "../../src/store/index.ts";
import {
  ADAPTERS,
  type Call,
  client,
  type Harness,
  openTestStore,
  type SignedIn,
  signUpAndSignIn,
  startHarness,
} from "../support/http-harness.ts";

/**
 * SECURITY.md: every refused request leaves one audit event (request.refused: the code, the route,
 * the client address as the server resolved it, never a secret or a body), and a flood of them
 * cannot grow the log without bound (a budget per client and code, and per code; the rest is
 * counted and summarised once per window).
 */
describe("refused requests in the audit log", () => {
  let h: Harness;
  let call: Call;
  let clock = Date.parse("2026-11-21T10:00:00Z");
  let modder: SignedIn;

  beforeAll(async () => {
    h = await startHarness({
      now: () => new Date(clock),
      env: { SVC_LIVE_UPLOADS: "1" },
      editConfig: (config) => {
        config.deployment.trustedProxies = ["127.0.0.1"];
      },
    });
    h.app.submissions = new LocalSubmissionBackend({
      store: h.store,
      config: h.app.config,
      now: h.app.now,
      random: defaultRandomBytes,
      storageRoot: join(h.root, ".data"),
      publisher: null,
      kickWorker: () => {},
      acceptsPackageBytes: true,
      log: h.app.log,
    });
    call = client(h.origin);
    modder = await signUpAndSignIn(call, "modder@example.com", "Modder", "modder");
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Each test speaks from its own address (through the trusted proxy), so budgets never mix. */
  const from = (ip: string) => ({ "x-forwarded-for": ip });
  const refused = async (ip: string): Promise<AuditEvent[]> =>
    (await h.app.accounts!.listAuditEvents({ action: "request.refused", limit: 200 })).events.filter(
      (e) => e.metadata.ip === ip,
    );

  it("records a CSRF failure with the route, the code, the address and the signed-in caller, and no secret", async () => {
    const r = await call("POST", "/api/v1/auth/api-keys", {
      cookie: modder.cookie,
      csrf: "forged-token-value",
      body: { name: "secret-name" },
      headers: from("198.51.100.7"),
    });
    expect(r.json.code).toBe("csrf_failed");
    const [event, ...more] = await refused("198.51.100.7");
    expect(more).toEqual([]);
    expect(event).toMatchObject({
      actorAccountId: modder.accountId,
      action: "request.refused",
      targetType: "endpoint",
      targetId: "create_api_key",
      metadata: { code: "csrf_failed", status: 403, method: "POST", ip: "198.51.100.7" },
    });
    const text = JSON.stringify(event);
    for (const secret of [modder.cookie.split("=")[1]!, "forged-token-value", "secret-name"]) {
      expect(text).not.toContain(secret);
    }
  });

  it("records CRLF in an email, a malformed multipart body and an oversize body, each under its code", async () => {
    const ip = "198.51.100.8";
    const crlf = await call("POST", "/api/v1/accounts", {
      body: { email: "a@example.com\r\nBcc: victim@example.com", displayName: "A" },
      headers: from(ip),
    });
    expect(crlf.json.code).toBe("invalid_payload");
    const multipart = await call("POST", "/api/v1/uploads", {
      cookie: modder.cookie,
      csrf: modder.csrf,
      rawBody: '--b0\r\nContent-Disposition: form-data; name="metadata"\r\n\r\n{"modId":"cut-off-here',
      headers: { ...from(ip), "content-type": "multipart/form-data; boundary=b0" },
    });
    expect(multipart.json.code).toBe("invalid_request");
    const oversize = await call("POST", "/api/v1/auth/magic-link/request", {
      rawBody: JSON.stringify({ email: "x@example.com", pad: "x".repeat(70 * 1024) }),
      headers: { ...from(ip), "content-type": "application/json" },
    });
    expect(oversize.json.code).toBe("payload_too_large");
    const events = await refused(ip);
    expect(events.map((e) => [e.targetId, e.metadata.code]).sort()).toEqual([
      ["create_account", "invalid_payload"],
      ["create_upload", "invalid_request"],
      ["request_magic_link", "payload_too_large"],
    ]);
    expect(events.find((e) => e.targetId === "create_upload")!.actorAccountId).toBe(modder.accountId);
    expect(JSON.stringify(events)).not.toContain("victim@example.com");
  });

  it("answers a request Node cannot parse with the JSON error body and records it as unrouted", async () => {
    const { port } = new URL(h.origin);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1");
      let text = "";
      socket.on("data", (chunk) => {
        text += chunk.toString("utf8");
      });
      socket.on("error", reject);
      socket.on("close", () => resolve(text));
      socket.write("\u0016\u0003\u0001 not HTTP at all\r\n\r\n");
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4))).toEqual({
      code: "invalid_request",
      message: expect.any(String),
    });
    await expect
      .poll(async () =>
        (await refused("127.0.0.1")).some(
          (e) => e.targetId === "unrouted" && e.metadata.code === "invalid_request",
        ),
      )
      .toBe(true);
  });

  it("logs a flood one by one only up to the budget, then counts it and summarises the window once it closes", async () => {
    const ip = "203.0.113.9";
    const { limit } = REFUSAL_AUDIT_BUDGET.perClient;
    const flood = limit + 15;
    for (let i = 0; i < flood; i++) {
      const r = await call("DELETE", "/api/v1/auth/session", { cookie: modder.cookie, headers: from(ip) });
      expect(r.json.code).toBe("csrf_failed");
    }
    const logged = await refused(ip);
    expect(logged).toHaveLength(limit);
    expect(logged.filter((e) => e.metadata.budgetSpent === true)).toHaveLength(1);

    clock += REFUSAL_AUDIT_BUDGET.perClient.windowSeconds * 1000;
    // The next refusal anywhere writes the closed window's summary before its own event.
    await call("DELETE", "/api/v1/auth/session", { cookie: modder.cookie, headers: from(ip) });
    const summaries = (
      await h.app.accounts!.listAuditEvents({ action: "request.refusals_suppressed", limit: 200 })
    ).events;
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatchObject({
      targetType: "error_code",
      targetId: "csrf_failed",
      metadata: {
        code: "csrf_failed",
        suppressed: flood - limit,
        clientsOverBudget: 1,
        topClients: [{ client: ip, suppressed: flood - limit }],
      },
    });
    expect(await refused(ip)).toHaveLength(limit + 1);
    // Summarised exactly once.
    expect(await h.app.accounts!.summariseRefusals()).toBe(0);
  });

  it("never lets the audit stand in the refusal's way: an audit insert the database refuses still answers with the refusal", async () => {
    // A real database failure on exactly the refusal's insert.
    await h.store.exec(
      "ALTER TABLE audit_events ADD CONSTRAINT test_no_refusals CHECK (action <> 'request.refused') NOT VALID",
    );
    try {
      const r = await call("POST", "/api/v1/accounts", {
        body: { email: "b@example.com\n", displayName: "B" },
        headers: from("198.51.100.10"),
      });
      expect(r.status).toBe(400);
      expect(r.json.code).toBe("invalid_payload");
      expect(
        h.logs.some((line) => /refusal audit failed for create_account invalid_payload/.test(line)),
      ).toBe(true);
    } finally {
      await h.store.exec("ALTER TABLE audit_events DROP CONSTRAINT test_no_refusals");
    }
  });
});

describe.each(ADAPTERS)("refusal budgets in the store on %s", (adapter) => {
  let store: Store;
  beforeAll(async () => {
    store = await openTestStore(adapter);
  });
  afterAll(async () => {
    await store?.close();
  });

  const deps = (at: number) => ({ now: new Date(at), random: defaultRandomBytes });
  const refusal = (ip: string, code = "invalid_payload") => ({
    code,
    status: 400,
    method: "POST",
    endpointId: "create_account",
    ip,
    actorAccountId: null,
  });
  const count = async (action: string) =>
    Number(
      (
        await store.query<{ n: string }>("SELECT count(*)::text AS n FROM audit_events WHERE action = $1", [
          action,
        ])
      ).rows[0]!.n,
    );

  it("bounds the log for a flood from many addresses and accounts for every refusal exactly once", async () => {
    const t = Date.parse("2026-11-21T12:00:00Z");
    const { perClient, perCode } = REFUSAL_AUDIT_BUDGET;
    // perCode.limit + 5 addresses with one refusal each, and one address sending perClient.limit + 7.
    let total = 0;
    for (let i = 0; i < perCode.limit + 5; i++) {
      await recordRefusal(store, refusal(`10.1.${i >> 8}.${i & 255}`), deps(t));
      total += 1;
    }
    for (let k = 0; k < perClient.limit + 7; k++) {
      await recordRefusal(store, refusal("192.0.2.200"), deps(t));
      total += 1;
    }
    expect(await count("request.refused")).toBe(perCode.limit);
    // Closed windows survive the everyday prune until they are summarised.
    expect(await pruneRateLimits(store, new Date(t + 3600_000))).toBe(0);
    expect(await summariseRefusals(store, deps(t + 3600_000))).toBe(1);
    const summary = (
      await store.query<{ metadata: Record<string, any> }>(
        "SELECT metadata FROM audit_events WHERE action = 'request.refusals_suppressed'",
      )
    ).rows[0]!.metadata;
    expect(summary.code).toBe("invalid_payload");
    expect(perCode.limit + summary.suppressed).toBe(total);
    expect(summary.topClients[0]).toEqual({ client: "192.0.2.200", suppressed: 7 });
    const left = await store.query("SELECT 1 FROM rate_limit_buckets WHERE bucket LIKE 'refusal_audit_%'");
    expect(left.rowCount).toBe(0);
  });

  it("keeps separate budgets per code, and one budget for a whole IPv6 /64", async () => {
    const t = Date.parse("2026-11-21T14:00:00Z");
    const { limit } = REFUSAL_AUDIT_BUDGET.perClient;
    const outcomes: string[] = [];
    for (let i = 0; i < limit + 3; i++) {
      outcomes.push(await recordRefusal(store, refusal(`2001:db8:1:2::${(i + 1).toString(16)}`), deps(t)));
    }
    expect(outcomes.filter((o) => o === "logged")).toHaveLength(limit);
    expect(await recordRefusal(store, refusal("2001:db8:1:2::1", "csrf_failed"), deps(t))).toBe("logged");
    expect(await recordRefusal(store, refusal("2001:db8:1:3::1"), deps(t))).toBe("logged");
    expect(refusalClientKey("2001:DB8:1:2:0:0:0:ff")).toBe("2001:db8:1:2::/64");
    expect(refusalClientKey("::1")).toBe("0:0:0:0::/64");
    expect(refusalClientKey("203.0.113.5")).toBe("203.0.113.5");
  });
});

/** Issue 25 item 11: 409 and 429 refusals were not audited; an operator could not count them. */
describe("409 and 429 refusals in the audit log", () => {
  let h: Harness;
  let call: Call;
  beforeAll(async () => {
    h = await startHarness({
      editConfig: (config) => {
        config.deployment.trustedProxies = ["127.0.0.1"];
        config.limits.rateLimits.accountCreation = { limit: 2, windowSeconds: 3600 };
      },
    });
    call = client(h.origin);
  });
  afterAll(async () => {
    await h?.close();
  });
  const refused = async (ip: string): Promise<AuditEvent[]> =>
    (await h.app.accounts!.listAuditEvents({ action: "request.refused", limit: 200 })).events.filter(
      (e) => e.metadata.ip === ip,
    );

  it("records last_admin (409) with the signed-in caller", async () => {
    const admin = await signUpAndSignIn(call, "admin@example.com", "Admin");
    const r = await call("PUT", `/api/v1/accounts/${admin.accountId}/roles`, {
      body: { roles: ["player"] },
      cookie: admin.cookie,
      csrf: admin.csrf,
      headers: { "x-forwarded-for": "198.51.100.40" },
    });
    expect(r.status).toBe(409);
    expect(r.json.code).toBe("last_admin");
    const [event, ...more] = await refused("198.51.100.40");
    expect(more).toEqual([]);
    expect(event).toMatchObject({
      actorAccountId: admin.accountId,
      targetId: "update_account_roles",
      metadata: { code: "last_admin", status: 409, method: "PUT", ip: "198.51.100.40" },
    });
  });

  it("records rate_limit_exceeded (429) once per refusal, not the requests the limit let through", async () => {
    const ip = "198.51.100.41";
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await call("POST", "/api/v1/accounts", {
        body: { email: `flood${i}@example.com`, displayName: "F" },
        headers: { "x-forwarded-for": ip },
      });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([202, 202, 429, 429]);
    const events = await refused(ip);
    expect(events.map((e) => e.metadata)).toEqual([
      { code: "rate_limit_exceeded", status: 429, method: "POST", ip },
      { code: "rate_limit_exceeded", status: 429, method: "POST", ip },
    ]);
    expect(events.every((e) => e.targetId === "create_account")).toBe(true);
  });
});
