/**
 * Trusted publishing end to end on loopback: a GitHub Actions OIDC token from the loopback issuer
 * (its discovery document and JWKS served from a key pair made here) is exchanged for an upload
 * credential, which uploads a release that the portal's worker takes to pending_review. Every
 * refused kind answers its stable code, names the failing claim, and stores nothing.
 */
import { createHash, createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModOwnership, TrustedPublisher } from "../../src/contracts/ownership.ts";
import { modRelease } from "../support/catalog-project.ts";
import { type OidcIssuer, startOidcIssuer, strangerKey } from "../support/oidc-issuer.ts";
import {
  form,
  type SubmissionsPortal,
  SKIP_CLAMSCAN as skip,
  startSubmissionsPortal,
  waitForState,
} from "../support/submissions-portal.ts";
import { writeOwnership as writeOwnershipRecord } from "../support/records.ts";

const AUDIENCE = "https://mods.example.test";
const EXCHANGE = "/api/v1/trusted-publishing/exchange";
const PUBLISHER: TrustedPublisher = {
  repository: { fullName: "ada/quick-travel", id: 424242 },
  workflow: "release.yml",
  environment: "release",
};

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

let issuer: OidcIssuer;
let p: SubmissionsPortal;

function writeOwnership(
  modId: string,
  ownerAccountId: string,
  publishers: TrustedPublisher[],
  by = ownerAccountId,
) {
  const at = "2026-11-20T10:00:00.000Z";
  const ownership: ModOwnership = {
    schema: "svc.mod-ownership.v1",
    modId,
    owners: [{ account: ownerAccountId }],
    collaborators: [],
    sourceRepository: null,
    trustedPublishers: publishers,
    claimedAt: at,
    updatedAt: at,
    history: [
      { at, action: "claim", by: { account: ownerAccountId } },
      ...publishers.map((tp) => ({
        at,
        action: "add_trusted_publisher" as const,
        by: by.startsWith("acct_") ? { account: by } : { github: by },
        trustedPublisher: tp,
      })),
    ],
  };
  writeOwnershipRecord(p.h.root, ownership);
}

async function count(table: string): Promise<number> {
  return Number(
    (await p.h.store.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`)).rows[0]!.n,
  );
}

async function stored() {
  return { credentials: await count("upload_credentials"), submissions: await count("submissions") };
}

const exchange = (body: Record<string, unknown>) => p.call("POST", EXCHANGE, { body });

async function uploadWith(credential: string, modId: string, version = "1.0.0") {
  const { packageBytes, sidecar } = modRelease({ modId, version });
  const response = await fetch(`${p.h.origin}/api/v1/uploads`, {
    method: "POST",
    body: form(sidecar, packageBytes),
    headers: { authorization: `Bearer ${credential}` },
  });
  return { status: response.status, json: (await response.json()) as any };
}

describe.skipIf(skip)("trusted publishing", () => {
  beforeAll(async () => {
    issuer = await startOidcIssuer();
    p = await startSubmissionsPortal();
    p.h.app.config.trustedPublishing = { issuer: issuer.issuer, audience: AUDIENCE };
    writeOwnership("quick-travel", p.modder.accountId, [PUBLISHER]);
    writeOwnership("lonely-mod", p.modder.accountId, []);
    writeOwnership("login-mod", p.modder.accountId, [PUBLISHER], "ada");
  });
  afterAll(async () => {
    await p?.stop();
    await issuer?.stop();
  });

  it("exchanges a valid token for a one-mod credential that uploads a release to pending_review", async () => {
    const token = await issuer.sign({ aud: AUDIENCE });
    const issued = await exchange({ modId: "quick-travel", token });
    expect(issued.status, issued.text).toBe(201);
    expect(issued.json).toMatchObject({
      modId: "quick-travel",
      ownerAccountId: p.modder.accountId,
      trustedPublisher: PUBLISHER,
      uploadUrl: "/api/v1/uploads",
    });
    const credential = issued.json.credential as string;
    expect(credential).toMatch(/^svc_tp_[A-Za-z0-9_-]{43}$/);
    const lifetime = Date.parse(issued.json.expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(890_000);
    expect(lifetime).toBeLessThanOrEqual(900_000);
    // Only the hash is stored.
    const rows = (
      await p.h.store.query<{ credential_hash: string }>("SELECT credential_hash FROM upload_credentials")
    ).rows;
    expect(rows.map((r) => r.credential_hash)).toEqual([
      createHash("sha256").update(credential).digest("hex"),
    ]);

    // The same token is exchanged once.
    const replay = await exchange({ modId: "quick-travel", token });
    expect(replay.json).toMatchObject({ code: "oidc_token_invalid", details: { claim: "jti" } });

    // No cookie, no CSRF header: the credential alone.
    const created = await uploadWith(credential, "quick-travel");
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    expect(created.json).toMatchObject({ modId: "quick-travel", ownerAccountId: p.modder.accountId });
    const id = created.json.submissionId as string;
    const pending = await waitForState(p, p.modder, id, ["pending_review", "validation_failed"]);
    expect(pending.state).toBe("pending_review");

    // Used once: the next upload with it is refused, and nothing more is stored.
    const before = await stored();
    const again = await uploadWith(credential, "quick-travel", "1.0.1");
    expect(again.status).toBe(401);
    expect(again.json.code).toBe("upload_credential_invalid");
    expect(await stored()).toEqual(before);

    const events = await p.call("GET", "/api/v1/audit/events?targetType=mod&targetId=quick-travel", {
      cookie: p.admin.cookie,
    });
    expect(events.json.events).toContainEqual(
      expect.objectContaining({
        action: "trusted_publishing.exchanged",
        actorAccountId: p.modder.accountId,
        metadata: expect.objectContaining({
          actor: "ada",
          repository: "ada/quick-travel",
          repositoryId: 424242,
          workflow: "release.yml",
          environment: "release",
        }),
      }),
    );
    const used = await p.call(
      "GET",
      `/api/v1/audit/events?action=trusted_publishing.uploaded&targetId=${id}`,
      {
        cookie: p.admin.cookie,
      },
    );
    expect(used.json.events).toHaveLength(1);
    expect(used.json.events[0].metadata).toMatchObject({ actor: "ada", workflow: "release.yml" });
  }, 60_000);

  const now = () => Math.floor(Date.now() / 1000);
  const refused: Array<[string, () => Promise<string>, string, string, string?]> = [
    [
      "expired",
      () => issuer.sign({ aud: AUDIENCE, iat: now() - 900, nbf: now() - 900, exp: now() - 120 }),
      "oidc_token_invalid",
      "exp",
    ],
    ["not yet valid", () => issuer.sign({ aud: AUDIENCE, nbf: now() + 600 }), "oidc_token_invalid", "nbf"],
    [
      "for another audience",
      () => issuer.sign({ aud: "https://other-portal.example" }),
      "oidc_token_invalid",
      "aud",
    ],
    [
      "from another issuer",
      () => issuer.sign({ aud: AUDIENCE, iss: "https://token.actions.githubusercontent.com" }),
      "oidc_token_invalid",
      "iss",
    ],
    [
      "from a repository of the same name with another id",
      () => issuer.sign({ aud: AUDIENCE, repository_id: "999999" }),
      "trusted_publisher_unknown",
      "repository_id",
    ],
    [
      "from another workflow file",
      () =>
        issuer.sign({
          aud: AUDIENCE,
          job_workflow_ref: "ada/quick-travel/.github/workflows/ci.yml@refs/heads/main",
        }),
      "trusted_publisher_unknown",
      "job_workflow_ref",
    ],
    [
      "from another environment",
      () => issuer.sign({ aud: AUDIENCE, environment: "staging" }),
      "trusted_publisher_unknown",
      "environment",
    ],
    [
      "unsigned (alg none)",
      async () => {
        const signed = await issuer.sign({ aud: AUDIENCE });
        return `${b64({ alg: "none", typ: "JWT" })}.${signed.split(".")[1]}.`;
      },
      "oidc_token_invalid",
      "alg",
    ],
    [
      "HS256 keyed with the issuer's public key",
      async () => {
        const signed = await issuer.sign({ aud: AUDIENCE });
        const input = `${b64({ alg: "HS256", typ: "JWT", kid: issuer.kid })}.${signed.split(".")[1]}`;
        return `${input}.${createHmac("sha256", issuer.publicKeyPem).update(input).digest("base64url")}`;
      },
      "oidc_token_invalid",
      "alg",
    ],
    [
      "signed with a key the JWKS does not hold",
      () => issuer.sign({ aud: AUDIENCE }, { kid: "not-published", privateKey: strangerKey() }),
      "oidc_token_invalid",
      "kid",
    ],
    [
      "signed by another key under the published kid",
      () => issuer.sign({ aud: AUDIENCE }, { privateKey: strangerKey() }),
      "oidc_token_invalid",
      "signature",
    ],
    [
      "for a mod with no trusted publisher",
      () => issuer.sign({ aud: AUDIENCE }),
      "trusted_publisher_unknown",
      "mod_id",
      "lonely-mod",
    ],
  ];

  it.each(refused)(
    "refuses a token %s with %s, naming the claim, and stores nothing",
    async (_what, token, code, claim, modId) => {
      const before = await stored();
      const r = await exchange({ modId: modId ?? "quick-travel", token: await token() });
      expect(r.json.code, r.text).toBe(code);
      expect(r.status).toBe(code === "oidc_token_invalid" ? 401 : 403);
      expect(r.json.details.claim).toBe(claim);
      expect(r.json.message.length).toBeGreaterThan(10);
      expect(await stored()).toEqual(before);
      const audit = await p.call(
        "GET",
        "/api/v1/audit/events?action=request.refused&targetId=trusted_publishing_exchange&limit=1",
        {
          cookie: p.admin.cookie,
        },
      );
      expect(audit.json.events[0].metadata).toMatchObject({ code, claim, claimed: { actor: "ada" } });
    },
  );

  it("refuses a publisher registered by a GitHub login rather than a portal account", async () => {
    const before = await stored();
    const r = await exchange({ modId: "login-mod", token: await issuer.sign({ aud: AUDIENCE }) });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({
      code: "trusted_publisher_unlinked",
      details: { registeredBy: { github: "ada" } },
    });
    expect(await stored()).toEqual(before);
  });

  it("a credential uploads only its own mod, and not once expired; neither stores anything", async () => {
    const issued = await exchange({ modId: "quick-travel", token: await issuer.sign({ aud: AUDIENCE }) });
    expect(issued.status, issued.text).toBe(201);
    const credential = issued.json.credential as string;
    const before = await stored();
    const other = await uploadWith(credential, "far-travel");
    expect(other.status).toBe(403);
    expect(other.json).toMatchObject({
      code: "forbidden",
      details: { credentialModId: "quick-travel", modId: "far-travel" },
    });
    expect(await stored()).toEqual(before);
    // A session's CSRF rules do not apply, but a JSON upload is still refused where the portal keeps bytes.
    const json = await fetch(`${p.h.origin}/api/v1/uploads`, {
      method: "POST",
      body: JSON.stringify(modRelease({ modId: "quick-travel", version: "2.0.0" }).sidecar),
      headers: { authorization: `Bearer ${credential}`, "content-type": "application/json" },
    });
    expect(((await json.json()) as { code: string }).code).toBe("unsupported_media_type");
    const realNow = p.h.app.now;
    p.h.app.now = () => new Date(Date.now() + 16 * 60_000);
    try {
      const late = await uploadWith(credential, "quick-travel", "2.0.0");
      expect(late.status).toBe(401);
      expect(late.json.code).toBe("upload_credential_invalid");
      expect(late.json.message).toMatch(/expired/);
    } finally {
      p.h.app.now = realNow;
    }
    expect(await stored()).toEqual(before);
    // Unexpired and unused after those refusals: the refused uploads did not spend it.
    const ok = await uploadWith(credential, "quick-travel", "2.0.0");
    expect(ok.status, JSON.stringify(ok.json)).toBe(201);
  }, 60_000);

  it("an unknown credential is refused with a bearer challenge", async () => {
    const r = await fetch(`${p.h.origin}/api/v1/uploads`, {
      method: "POST",
      body: form({}, Buffer.from("x")),
      headers: { authorization: `Bearer svc_tp_${"A".repeat(43)}` },
    });
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toMatch(/invalid_token/);
    expect(((await r.json()) as { code: string }).code).toBe("upload_credential_invalid");
  });
});
