// SVC_ACCEL_REDIRECT: behind nginx, the fast lane checks the API key and answers with an empty body
// and X-Accel-Redirect (nginx then sends the bytes from an internal location); without a valid key it
// answers 401 and names no internal path.
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSettings } from "../../src/config/settings.ts";
import { type Call, client, type Harness, signUpAndSignIn, startHarness } from "../support/http-harness.ts";

const PATH = "/api/v1/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip";

describe("the fast lane with SVC_ACCEL_REDIRECT", () => {
  let h: Harness;
  let call: Call;
  let apiKey: string;

  beforeAll(async () => {
    h = await startHarness({ env: { SVC_ACCEL_REDIRECT: "/internal-downloads/" } });
    call = client(h.origin);
    const player = await signUpAndSignIn(call, "player@example.com", "Pat");
    const created = await call("POST", "/api/v1/auth/api-keys", {
      cookie: player.cookie,
      csrf: player.csrf,
      body: { name: "manager" },
    });
    expect(created.status).toBe(201);
    apiKey = created.json.secret;
  });
  afterAll(async () => {
    await h?.close();
  });

  it("answers an authorized download with X-Accel-Redirect, the content headers and no body", async () => {
    const r = await fetch(`${h.origin}${PATH}`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-accel-redirect")).toBe(
      "/internal-downloads/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip",
    );
    const sha = createHash("sha256").update(h.artifact).digest("hex");
    expect(r.headers.get("etag")).toBe(`"${sha}"`);
    expect(r.headers.get("x-svc-sha256")).toBe(sha);
    expect(r.headers.get("content-type")).toBe("application/zip");
    expect(r.headers.get("content-disposition")).toBe('attachment; filename="better-hud-1.0.0.zip"');
    expect(r.headers.get("content-length")).toBe("0");
    expect((await r.arrayBuffer()).byteLength).toBe(0);
  });

  it("still checks the key: 401 without one or with a wrong one, and no internal path", async () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{}, "unauthenticated"],
      [{ authorization: `Bearer svc_${"0".repeat(38)}` }, "invalid_api_key"],
    ];
    for (const [headers, code] of cases) {
      const r = await fetch(`${h.origin}${PATH}`, { headers });
      expect(r.status).toBe(401);
      expect(r.headers.get("x-accel-redirect")).toBeNull();
      expect(((await r.json()) as { code: string }).code).toBe(code);
    }
  });

  it("redirects artifacts held elsewhere and 404s unknown ones as before", async () => {
    const auth = { authorization: `Bearer ${apiKey}` };
    const far = await fetch(`${h.origin}/api/v1/downloads/mods/far-mod/2.0.0/far-mod-2.0.0.zip`, {
      headers: auth,
      redirect: "manual",
    });
    expect(far.status).toBe(302);
    expect(far.headers.get("x-accel-redirect")).toBeNull();
    const hidden = await fetch(`${h.origin}/api/v1/downloads/mods/better-hud/0.9.0/better-hud-0.9.0.zip`, {
      headers: auth,
    });
    expect(hidden.status).toBe(404);
    expect(hidden.headers.get("x-accel-redirect")).toBeNull();
  });

  it("refuses a prefix that is not a plain /path/ at start-up", () => {
    for (const bad of ["internal/", "/internal", "/a b/", "/x/\r\nfoo/", "http://x/"]) {
      expect(() => parseSettings({ SVC_ACCEL_REDIRECT: bad }, { dataDir: "/tmp/x" }), bad).toThrow(
        /SVC_ACCEL_REDIRECT must be a path/,
      );
    }
    expect(parseSettings({}, { dataDir: "/tmp/x" }).accelRedirect).toBeNull();
  });
});
