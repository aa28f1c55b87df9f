// Mod ownership on the local portal, end to end over HTTP with the real worker and clamscan: the
// claim a moderator sees (status view and queue), the first publication claiming the mod id for its
// uploader (a competing claim refused at publication), a stranger's upload of a claimed mod refused
// before a byte is stored, a collaborator's upload published, and no owner or collaborator
// approving a release of their own mod.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaRegistry } from "../../src/contracts/schemas.ts";
import { modRelease } from "../support/catalog-project.ts";
import { type SignedIn, signUpAndSignIn } from "../support/http-harness.ts";
import {
  form,
  SKIP_CLAMSCAN as skip,
  type SubmissionsPortal,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";
import { ownershipIn, ownersPath } from "../support/records.ts";

let p: SubmissionsPortal;
let other: SignedIn;

beforeAll(async () => {
  if (skip) return;
  p = await startSubmissionsPortal();
  other = await signUpAndSignIn(p.call, "other@example.com", "Other", "modder");
}, 60_000);
afterAll(async () => {
  await p?.stop();
});

const owners = () =>
  ownershipIn(readFileSync(join(p.h.root, ownersPath("quick-travel"))), "quick-travel")!.owners;

const staged = () => {
  const dir = join(p.h.root, ".data", "uploads", "staging");
  return existsSync(dir) ? readdirSync(dir) : [];
};

async function uploadAndWait(who: SignedIn, version: string) {
  const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version });
  const created = await upload(p, who, form(sidecar, packageBytes));
  expect(created.status, JSON.stringify(created.json)).toBe(201);
  const id = created.json.submissionId as string;
  const view = await waitForState(p, who, id, ["pending_review", "validation_failed"]);
  expect(view.state).toBe("pending_review");
  return { id, view };
}

function decide(id: string, decision: string, who: SignedIn) {
  return p.call("POST", `/api/v1/moderation/releases/${id}/decision`, {
    body: { decision, notes: `${decision} by test` },
    cookie: who.cookie,
    csrf: who.csrf,
  });
}

const publish = () =>
  p.call("POST", "/api/v1/catalog/publish", { cookie: p.admin.cookie, csrf: p.admin.csrf });

const status = async (id: string, who: SignedIn = p.moderator) =>
  (await p.call("GET", `/api/v1/uploads/${id}`, { cookie: who.cookie })).json;

async function queueItem(id: string) {
  const queue = await p.call("GET", "/api/v1/moderation/releases?state=pending_review,approved,published", {
    cookie: p.moderator.cookie,
  });
  return queue.json.items.find((i: { submissionId: string }) => i.submissionId === id);
}

function addCollaborator(accountId: string) {
  return p.call("POST", "/api/v1/mods/quick-travel/collaborators", {
    body: { account: accountId },
    cookie: p.modder.cookie,
    csrf: p.modder.csrf,
  });
}

describe.skipIf(skip)("mod ownership on the local portal", () => {
  let first: string;
  let competing: string;

  it("shows a new mod id's claim in the status view and the queue, for each of two competing uploads", async () => {
    ({ id: first } = await uploadAndWait(p.modder, "1.0.0"));
    // Unclaimed: anyone's upload is accepted; publication decides.
    ({ id: competing } = await uploadAndWait(other, "1.0.1"));
    const view = await status(first);
    expect(view.ownership).toEqual({ claim: "new_mod", owners: [{ account: p.modder.accountId }] });
    const valid = schemaRegistry(p.h.app.config.baseUrl).validate("upload-submission", view);
    expect(valid.ok ? [] : valid.issues).toEqual([]);
    expect((await queueItem(first)).ownership).toEqual(view.ownership);
    expect((await status(competing)).ownership).toEqual({
      claim: "new_mod",
      owners: [{ account: other.accountId }],
    });
    expect((await queueItem(competing)).ownership).toEqual({
      claim: "new_mod",
      owners: [{ account: other.accountId }],
    });
  });

  it("claims the mod id for the first published release and refuses the competing claim", async () => {
    expect((await decide(first, "approve", p.moderator)).json.state).toBe("approved");
    expect((await decide(competing, "approve", p.moderator)).json.state).toBe("approved");
    const published = await publish();
    expect(published.json).toMatchObject({ published: 1, failed: 1 });
    const results = published.json.results;
    expect(results.find((r: { submissionId: string }) => r.submissionId === first)).toMatchObject({
      outcome: "published",
    });
    expect(results.find((r: { submissionId: string }) => r.submissionId === competing)).toMatchObject({
      outcome: "failed",
      code: "forbidden",
    });
    expect(owners()).toEqual([{ account: p.modder.accountId }]);
    const detail = await p.call("GET", "/api/v1/mods/quick-travel");
    expect(detail.json.ownership.owners).toEqual([{ account: p.modder.accountId }]);
    expect((await status(first, p.modder)).ownership).toEqual({
      claim: "owner",
      owners: [{ account: p.modder.accountId }],
    });
    // The loser's view says its publication will be refused, and it stays approved, unpublished.
    expect(await status(competing, other)).toMatchObject({
      state: "approved",
      ownership: { claim: "not_permitted", owners: [{ account: p.modder.accountId }] },
    });
    const audit = await p.call("GET", `/api/v1/audit/events?targetId=${first}&action=catalog.published`, {
      cookie: p.admin.cookie,
    });
    expect(audit.json.events[0].metadata).toMatchObject({ claimed: true });
  });

  it("refuses another account's upload of the claimed mod before a byte is stored, naming no owner", async () => {
    const before = staged();
    const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version: "1.1.0" });
    const refused = await upload(p, other, form(sidecar, packageBytes));
    expect(refused.status).toBe(403);
    expect(refused.json.code).toBe("forbidden");
    expect(refused.json.message).toMatch(
      /^mod quick-travel belongs to another account: it is claimed by 1 portal account, and only its owners and collaborators may upload its releases/,
    );
    expect(refused.json.message).not.toContain("modder@example.com");
    expect(refused.json.message).not.toContain(p.modder.accountId);
    expect(staged()).toEqual(before);
  });

  it("accepts and publishes a collaborator's upload; the claim stays the owner's", async () => {
    expect((await addCollaborator(other.accountId)).status).toBe(200);
    const { id, view } = await uploadAndWait(other, "1.1.0");
    expect(view.ownership).toEqual({ claim: "collaborator", owners: [{ account: p.modder.accountId }] });
    expect((await decide(id, "approve", p.moderator)).json.state).toBe("approved");
    const published = await publish();
    // The earlier competing release is the collaborator's too now, so it is published with it.
    expect(published.json).toMatchObject({ published: 2, failed: 0 });
    expect((await status(id, other)).state).toBe("published");
    expect((await status(competing, other)).state).toBe("superseded");
    expect(owners()).toEqual([{ account: p.modder.accountId }]);
    const record = ownershipIn(readFileSync(join(p.h.root, ownersPath("quick-travel"))), "quick-travel")!;
    expect(record.history.map((c: { action: string }) => c.action)).toEqual(["claim", "add_collaborator"]);
  });

  it("refuses a moderator who collaborates on the mod approving its release, audited as a refusal", async () => {
    expect((await addCollaborator(p.moderator.accountId)).status).toBe(200);
    const { id } = await uploadAndWait(p.modder, "1.2.0");
    const refused = await decide(id, "approve", p.moderator);
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({
      code: "forbidden",
      message:
        "an owner or collaborator of mod quick-travel cannot approve its releases: another moderator decides",
    });
    expect((await status(id)).state).toBe("pending_review");
    const audit = await p.call(
      "GET",
      "/api/v1/audit/events?action=request.refused&targetId=moderation_decision",
      {
        cookie: p.admin.cookie,
      },
    );
    expect(audit.json.events[0]).toMatchObject({
      actorAccountId: p.moderator.accountId,
      metadata: { code: "forbidden" },
    });
    // Another moderator (here the admin) approves it.
    expect((await decide(id, "approve", p.admin)).json.state).toBe("approved");
  });
});
