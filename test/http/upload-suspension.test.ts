/**
 * Suspending an account's uploads, over the real routes: a moderator suspends with a reason; the
 * account's uploads are refused with account_suspended before a byte is stored, by session, by an
 * upload credential issued before, and at the trusted-publishing exchange (whose token stays
 * unspent); every refusal and both moves are audited; only an admin lifts it, and then the same
 * token and a new upload go through. The OIDC issuer is the loopback stand-in of the network edge.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ModOwnership, TrustedPublisher } from "../../src/contracts/ownership.ts";
import { modRelease } from "../support/catalog-project.ts";
import { type OidcIssuer, startOidcIssuer } from "../support/oidc-issuer.ts";
import {
  form,
  type SubmissionsPortal,
  SKIP_CLAMSCAN as skip,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";
import { writeOwnership as writeOwnershipRecord } from "../support/records.ts";

const AUDIENCE = "https://mods.example.test";
const PUBLISHER: TrustedPublisher = {
  repository: { fullName: "ada/quick-travel", id: 424242 },
  workflow: "release.yml",
  environment: "release",
};

let issuer: OidcIssuer;
let p: SubmissionsPortal;

const suspension = (accountId: string) => `/api/v1/accounts/${accountId}/upload-suspension`;

function writeOwnership(modId: string, ownerAccountId: string) {
  const at = "2026-11-20T10:00:00.000Z";
  const owner = { account: ownerAccountId };
  const ownership: ModOwnership = {
    schema: "svc.mod-ownership.v1",
    modId,
    owners: [owner],
    collaborators: [],
    sourceRepository: null,
    trustedPublishers: [PUBLISHER],
    claimedAt: at,
    updatedAt: at,
    history: [
      { at, action: "claim", by: owner },
      { at, action: "add_trusted_publisher", by: owner, trustedPublisher: PUBLISHER },
    ],
  };
  writeOwnershipRecord(p.h.root, ownership);
}

async function count(table: string): Promise<number> {
  return Number(
    (await p.h.store.query<{ n: string }>(`SELECT count(*)::text AS n FROM ${table}`)).rows[0]!.n,
  );
}

const staged = () => {
  try {
    return readdirSync(join(p.h.root, ".data", "uploads", "staging")).length;
  } catch {
    return 0;
  }
};

async function uploadWith(credential: string, version: string) {
  const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version });
  const response = await fetch(`${p.h.origin}/api/v1/uploads`, {
    method: "POST",
    body: form(sidecar, packageBytes),
    headers: { authorization: `Bearer ${credential}` },
  });
  return { status: response.status, json: (await response.json()) as any };
}

async function events(action: string, targetId: string) {
  const answer = await p.call("GET", `/api/v1/audit/events?action=${action}&targetId=${targetId}`, {
    cookie: p.admin.cookie,
  });
  return answer.json.events as Array<{ actorAccountId: string | null; metadata: Record<string, unknown> }>;
}

describe.skipIf(skip)("suspending an account's uploads", () => {
  let submissionId = "";
  let earlyCredential = "";
  /** A token refused during the suspension, exchanged again once it is lifted. */
  let heldToken = "";

  beforeAll(async () => {
    issuer = await startOidcIssuer();
    p = await startSubmissionsPortal();
    p.h.app.config.trustedPublishing = { issuer: issuer.issuer, audience: AUDIENCE };
    writeOwnership("quick-travel", p.modder.accountId);
    const first = modRelease({ modId: "quick-travel" });
    const created = await upload(p, p.modder, form(first.sidecar, first.packageBytes));
    submissionId = created.json.submissionId;
    await waitForState(p, p.modder, submissionId, ["pending_review"]);
    const issued = await p.call("POST", "/api/v1/trusted-publishing/exchange", {
      body: { modId: "quick-travel", token: await issuer.sign({ aud: AUDIENCE }) },
    });
    expect(issued.status, issued.text).toBe(201);
    earlyCredential = issued.json.credential;
  });
  afterAll(async () => {
    await p?.stop();
    await issuer?.stop();
  });

  it("a moderator suspends with a reason; the suspension is audited and shows on the review", async () => {
    const reason = "Uploaded a package the scanner flagged as malware.";
    const made = await p.call("POST", suspension(p.modder.accountId), {
      body: { reason, submissionId },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(made.status, made.text).toBe(201);
    expect(made.json.suspension).toMatchObject({
      accountId: p.modder.accountId,
      reason,
      suspendedBy: p.moderator.accountId,
      submissionId,
      liftedAt: null,
    });
    const again = await p.call("POST", suspension(p.modder.accountId), {
      body: { reason: "twice" },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(again.json.code).toBe("conflict");
    const audited = await events("account.uploads_suspended", p.modder.accountId);
    expect(audited).toHaveLength(1);
    expect(audited[0]).toMatchObject({
      actorAccountId: p.moderator.accountId,
      metadata: { reason, submissionId, suspensionId: made.json.suspension.id },
    });
    const view = await p.call("GET", `/api/v1/uploads/${submissionId}`, { cookie: p.moderator.cookie });
    expect(view.json.uploader.suspension).toMatchObject({
      reason,
      suspendedByAccountId: p.moderator.accountId,
      suspendedByDisplayName: "Mo",
      submissionId,
    });
  });

  it("refuses the account's uploads with account_suspended before anything is stored, and audits it", async () => {
    const before = { submissions: await count("submissions"), staged: staged() };
    const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version: "1.1.0" });
    const refused = await upload(p, p.modder, form(sidecar, packageBytes));
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({
      code: "account_suspended",
      details: { reason: "Uploaded a package the scanner flagged as malware." },
    });
    // A credential issued before the suspension uploads nothing either.
    const byCredential = await uploadWith(earlyCredential, "1.2.0");
    expect(byCredential.status).toBe(403);
    expect(byCredential.json.code).toBe("account_suspended");
    expect({ submissions: await count("submissions"), staged: staged() }).toEqual(before);
    const refusals = (await events("request.refused", "create_upload")).filter(
      (e) => e.metadata.code === "account_suspended",
    );
    expect(refusals.map((e) => e.actorAccountId)).toEqual([p.modder.accountId, p.modder.accountId]);
  });

  it("refuses the trusted-publishing exchange for a publisher the suspended account registered", async () => {
    const credentials = await count("upload_credentials");
    const token = await issuer.sign({ aud: AUDIENCE });
    const refused = await p.call("POST", "/api/v1/trusted-publishing/exchange", {
      body: { modId: "quick-travel", token },
    });
    expect(refused.status).toBe(403);
    expect(refused.json.code).toBe("account_suspended");
    expect(await count("upload_credentials")).toBe(credentials);
    const refusals = (await events("request.refused", "trusted_publishing_exchange")).filter(
      (e) => e.metadata.code === "account_suspended",
    );
    expect(refusals).toHaveLength(1);
    expect(refusals[0]!.metadata).toMatchObject({ modId: "quick-travel" });
    heldToken = token;
  });

  it("keeps the refusals to who may suspend: not oneself, not a moderator's or admin's account unless an admin", async () => {
    const own = await p.call("POST", suspension(p.moderator.accountId), {
      body: { reason: "me" },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(own.json.code).toBe("forbidden");
    const admin = await p.call("POST", suspension(p.admin.accountId), {
      body: { reason: "an admin" },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(admin.json.code).toBe("forbidden");
    const byModder = await p.call("POST", suspension(p.moderator.accountId), {
      body: { reason: "revenge" },
      cookie: p.modder.cookie,
      csrf: p.modder.csrf,
    });
    expect(byModder.json.code).toBe("forbidden");
    const noCsrf = await p.call("POST", suspension(p.admin.accountId), {
      body: { reason: "x" },
      cookie: p.admin.cookie,
    });
    expect(noCsrf.json.code).toBe("csrf_failed");
    const unknown = await p.call("POST", suspension("acct_nobody"), {
      body: { reason: "x" },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(unknown.json.code).toBe("not_found");
    const multiLine = await p.call("POST", suspension(p.modder.accountId), {
      body: { reason: "one\ntwo" },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(multiLine.json.code).toBe("invalid_payload");
  });

  it("only an admin lifts it; then the unspent token and a new upload go through", async () => {
    const byModerator = await p.call("DELETE", suspension(p.modder.accountId), {
      body: { reason: "lifting" },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(byModerator.json.code).toBe("forbidden");
    const lifted = await p.call("DELETE", suspension(p.modder.accountId), {
      body: { reason: "False positive: the scanner's signature was withdrawn." },
      cookie: p.admin.cookie,
      csrf: p.admin.csrf,
    });
    expect(lifted.status, lifted.text).toBe(200);
    expect(lifted.json.suspension).toMatchObject({
      liftedBy: p.admin.accountId,
      liftReason: "False positive: the scanner's signature was withdrawn.",
    });
    expect(lifted.json.suspension.liftedAt).toEqual(expect.any(String));
    const twice = await p.call("DELETE", suspension(p.modder.accountId), {
      body: { reason: "again" },
      cookie: p.admin.cookie,
      csrf: p.admin.csrf,
    });
    expect(twice.json.code).toBe("conflict");
    const audited = await events("account.uploads_reinstated", p.modder.accountId);
    expect(audited).toHaveLength(1);
    expect(audited[0]).toMatchObject({
      actorAccountId: p.admin.accountId,
      metadata: {
        reason: "False positive: the scanner's signature was withdrawn.",
        suspendedBy: p.moderator.accountId,
      },
    });
    // The token refused during the suspension was not spent.
    const issued = await p.call("POST", "/api/v1/trusted-publishing/exchange", {
      body: { modId: "quick-travel", token: heldToken },
    });
    expect(issued.status, issued.text).toBe(201);
    const created = await uploadWith(issued.json.credential, "1.1.0");
    expect(created.status, JSON.stringify(created.json)).toBe(201);
    const view = await p.call("GET", `/api/v1/uploads/${created.json.submissionId}`, {
      cookie: p.moderator.cookie,
    });
    expect(view.json.uploader).toMatchObject({ suspension: null, history: { suspensions: 1 } });
  });
});
