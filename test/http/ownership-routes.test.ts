// The mod ownership routes over real HTTP on loopback, PGlite and the real publisher's journaled
// commits: who may read and change a mod's ownership, what each change writes (the record under
// records/owners/{shard}.json and the mod's public detail document, together), the audit event it appends,
// and the refusals (not an owner, not an admin, no CSRF header, an unclaimed or unknown mod id,
// bodies that break the record's shapes).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultRandomBytes } from "../../src/accounts/secrets.ts";
import { filesystemArtifactStore } from "../../src/catalog/artifact-store.ts";
import { type PublisherOptions, publishRelease } from "../../src/catalog/publisher.ts";
import type { ModOwnership } from "../../src/contracts/ownership.ts";
import { LocalSubmissionBackend } from "../../src/submissions/local-backend.ts";
import { modRelease, stubValidator } from "../support/catalog-project.ts";
import {
  type Call,
  client,
  type Harness,
  type SignedIn,
  signUpAndSignIn,
  startHarness,
} from "../support/http-harness.ts";
import { ownershipIn, ownersPath } from "../support/records.ts";

let h: Harness;
let call: Call;
let publisher: PublisherOptions;
let admin: SignedIn;
let owner: SignedIn;
let stranger: SignedIn;
let helper: SignedIn;

function backend(withPublisher: PublisherOptions | null) {
  return new LocalSubmissionBackend({
    store: h.store,
    config: h.app.config,
    now: h.app.now,
    random: defaultRandomBytes,
    storageRoot: join(h.root, ".data"),
    publisher: withPublisher,
    kickWorker: () => {},
    acceptsPackageBytes: true,
    log: h.app.log,
  });
}

beforeAll(async () => {
  h = await startHarness();
  publisher = {
    root: h.root,
    recordsDir: join(h.root, "records"),
    siteDir: join(h.root, "site"),
    config: h.app.config,
    store: filesystemArtifactStore({
      root: h.root,
      siteDir: join(h.root, "site"),
      baseUrl: h.app.config.baseUrl,
    }),
    validate: stubValidator(),
    now: h.app.now,
  };
  h.app.submissions = backend(publisher);
  call = client(h.origin);
  admin = await signUpAndSignIn(call, "admin@example.com", "Admin");
  owner = await signUpAndSignIn(call, "owner@example.com", "Owner", "modder");
  stranger = await signUpAndSignIn(call, "stranger@example.com", "Stranger", "modder");
  helper = await signUpAndSignIn(call, "helper@example.com", "Helper", "modder");
  // The first release of quick-travel claims it for its submitter, as publish_catalog does.
  const { packageBytes, sidecar } = modRelease({ modId: "quick-travel" });
  await publishRelease(publisher, {
    packageBytes,
    sidecar,
    source: { kind: "upload", submissionId: "sub_quicktravel0000000001" },
    submitter: { identity: [{ account: owner.accountId }], claimAs: { account: owner.accountId } },
  });
});
afterAll(async () => {
  await h?.close();
});

const record = (modId: string) =>
  ownershipIn(readFileSync(join(h.root, ownersPath(modId))), modId) as ModOwnership;

async function detailOwnership(modId: string) {
  const detail = await call("GET", `/api/v1/mods/${modId}`);
  expect(detail.status).toBe(200);
  return detail.json.ownership;
}

/** The record on disk is what the route answered, and the detail document shows its public part. */
async function expectCommitted(modId: string, answered: ModOwnership) {
  expect(record(modId)).toEqual(answered);
  expect(await detailOwnership(modId)).toEqual({
    owners: answered.owners,
    collaborators: answered.collaborators,
    sourceRepository: answered.sourceRepository,
    trustedPublishers: answered.trustedPublishers,
  });
}

async function lastEvent(action: string) {
  const events = await h.app.accounts!.listAuditEvents({ action, limit: 10 });
  return events.events[0];
}

function send(method: string, path: string, who: SignedIn, body: unknown) {
  return call(method, path, { cookie: who.cookie, csrf: who.csrf, body });
}

describe("mod_ownership", () => {
  it("answers a signed-in account with the whole record, history included", async () => {
    const r = await call("GET", "/api/v1/mods/quick-travel/ownership", { cookie: stranger.cookie });
    expect(r.status, r.text).toBe(200);
    expect(r.json.ownership).toEqual(record("quick-travel"));
    expect(r.json.ownership).toMatchObject({
      schema: "svc.mod-ownership.v1",
      modId: "quick-travel",
      owners: [{ account: owner.accountId }],
      history: [
        { action: "claim", by: { account: owner.accountId }, submissionId: "sub_quicktravel0000000001" },
      ],
    });
  });

  it("needs a session, and answers not_found for an unclaimed or malformed mod id", async () => {
    expect((await call("GET", "/api/v1/mods/quick-travel/ownership")).json.code).toBe("unauthenticated");
    const unclaimed = await call("GET", "/api/v1/mods/better-hud/ownership", { cookie: stranger.cookie });
    expect(unclaimed.status).toBe(404);
    expect(unclaimed.json.message).toMatch(/better-hud has no owners yet/);
    const malformed = await call("GET", "/api/v1/mods/Not_A_Mod/ownership", { cookie: stranger.cookie });
    expect(malformed.status).toBe(404);
  });
});

describe("collaborators", () => {
  const path = "/api/v1/mods/quick-travel/collaborators";

  it("lets an owner add an account and a GitHub login, committed with the detail document and audited", async () => {
    const added = await send("POST", path, owner, { account: helper.accountId });
    expect(added.status, added.text).toBe(200);
    expect(added.json.ownership.collaborators).toEqual([{ account: helper.accountId }]);
    expect(added.json.ownership.history.at(-1)).toMatchObject({
      action: "add_collaborator",
      by: { account: owner.accountId },
      subject: { account: helper.accountId },
    });
    await expectCommitted("quick-travel", added.json.ownership);
    expect(await lastEvent("mod.collaborator_added")).toMatchObject({
      actorAccountId: owner.accountId,
      targetType: "mod",
      targetId: "quick-travel",
      metadata: { subject: { account: helper.accountId } },
    });
    const login = await send("POST", path, owner, { github: "co-author" });
    expect(login.json.ownership.collaborators).toEqual([
      { account: helper.accountId },
      { github: "co-author" },
    ]);
    await expectCommitted("quick-travel", login.json.ownership);
  });

  it("refuses what is already there and accounts that do not exist", async () => {
    const before = record("quick-travel");
    expect((await send("POST", path, owner, { account: helper.accountId })).json.code).toBe("conflict");
    expect((await send("POST", path, owner, { github: "CO-AUTHOR" })).json.code).toBe("conflict");
    expect((await send("POST", path, owner, { account: owner.accountId })).json.code).toBe("conflict");
    const ghost = await send("POST", path, owner, { account: "acct_nobodyhere000000000" });
    expect(ghost.status).toBe(404);
    expect(ghost.json.message).toMatch(/no account acct_nobodyhere000000000/);
    expect(record("quick-travel")).toEqual(before);
  });

  it("refuses bodies that are not exactly one principal", async () => {
    for (const body of [
      {},
      { account: owner.accountId, github: "x" },
      { github: "bad login" },
      { email: "a@b.c" },
    ]) {
      const r = await send("POST", path, owner, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.code).toBe("invalid_payload");
    }
  });

  it("refuses a stranger (forbidden, audited as a refusal) and a write without the CSRF header", async () => {
    const before = record("quick-travel");
    const r = await send("POST", path, stranger, { account: stranger.accountId });
    expect(r.status).toBe(403);
    expect(r.json).toMatchObject({ code: "forbidden" });
    expect(r.json.message).toMatch(/only an owner of mod quick-travel \(or an admin\)/);
    const refusal = await lastEvent("request.refused");
    expect(refusal).toMatchObject({
      actorAccountId: stranger.accountId,
      targetId: "add_collaborator",
      metadata: { code: "forbidden" },
    });
    const noCsrf = await call("POST", path, { cookie: owner.cookie, body: { account: stranger.accountId } });
    expect(noCsrf.json.code).toBe("csrf_failed");
    expect(record("quick-travel")).toEqual(before);
  });

  it("answers not_found for an unclaimed mod id: nothing to change until a release claims it", async () => {
    const r = await send("POST", "/api/v1/mods/better-hud/collaborators", admin, {
      account: helper.accountId,
    });
    expect(r.status).toBe(404);
    expect(r.json.code).toBe("not_found");
  });

  it("lets an owner (and an admin) remove a collaborator; removing a stranger is not_found", async () => {
    const removed = await send("DELETE", path, owner, { github: "Co-Author" });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.json.ownership.collaborators).toEqual([{ account: helper.accountId }]);
    await expectCommitted("quick-travel", removed.json.ownership);
    expect((await lastEvent("mod.collaborator_removed"))?.metadata).toEqual({
      subject: { github: "Co-Author" },
    });
    expect((await send("DELETE", path, owner, { account: stranger.accountId })).json.code).toBe("not_found");
    const byAdmin = await send("POST", path, admin, { github: "admin-added" });
    expect(byAdmin.status, byAdmin.text).toBe(200);
    const back = await send("DELETE", path, admin, { github: "admin-added" });
    expect(back.json.ownership.collaborators).toEqual([{ account: helper.accountId }]);
  });

  it("does not let a collaborator manage the mod", async () => {
    const r = await send("POST", path, helper, { github: "friend" });
    expect(r.json.code).toBe("forbidden");
  });
});

describe("trusted publishers", () => {
  const path = "/api/v1/mods/quick-travel/trusted-publishers";
  const publisherBody = {
    repository: { fullName: "owner/quick-travel", id: 4242 },
    workflow: "release.yml",
    environment: "release",
  };

  it("registers a workflow (environment defaults to any), refuses a duplicate, and removes it", async () => {
    const added = await send("POST", path, owner, publisherBody);
    expect(added.status, added.text).toBe(200);
    expect(added.json.ownership.trustedPublishers).toEqual([publisherBody]);
    await expectCommitted("quick-travel", added.json.ownership);
    expect((await lastEvent("mod.trusted_publisher_added"))?.metadata).toEqual({
      trustedPublisher: publisherBody,
    });
    const anyEnvironment = await send("POST", path, owner, {
      repository: { fullName: "owner/quick-travel", id: 4242 },
      workflow: "nightly.yaml",
    });
    expect(anyEnvironment.json.ownership.trustedPublishers[1]).toEqual({
      repository: { fullName: "owner/quick-travel", id: 4242 },
      workflow: "nightly.yaml",
      environment: null,
    });
    expect((await send("POST", path, owner, publisherBody)).json.code).toBe("conflict");
    const removed = await send("DELETE", path, owner, publisherBody);
    expect(removed.status, removed.text).toBe(200);
    expect(removed.json.ownership.trustedPublishers.map((tp: { workflow: string }) => tp.workflow)).toEqual([
      "nightly.yaml",
    ]);
    await expectCommitted("quick-travel", removed.json.ownership);
    expect((await send("DELETE", path, owner, publisherBody)).json.code).toBe("not_found");
    expect(removed.json.ownership.history.slice(-3).map((c: { action: string }) => c.action)).toEqual([
      "add_trusted_publisher",
      "add_trusted_publisher",
      "remove_trusted_publisher",
    ]);
  });

  it("refuses malformed publishers and anyone but an owner, admins included", async () => {
    for (const body of [
      { ...publisherBody, workflow: ".github/workflows/release.yml" },
      { ...publisherBody, repository: { fullName: "owner/quick-travel" } },
      { ...publisherBody, repository: { fullName: "owner/quick-travel", id: "4242" } },
      { ...publisherBody, ref: "refs/heads/main" },
      { workflow: "release.yml" },
    ]) {
      const r = await send("POST", path, owner, body);
      expect(r.json.code, JSON.stringify(body)).toBe("invalid_payload");
    }
    expect((await send("POST", path, stranger, publisherBody)).json.code).toBe("forbidden");
    expect((await send("POST", path, helper, publisherBody)).json.code).toBe("forbidden");
    // A credential exchanged through a publisher belongs to the owner who registered it.
    const byAdmin = await send("POST", path, admin, publisherBody);
    expect(byAdmin.json.code).toBe("forbidden");
    expect(byAdmin.json.message).toMatch(/only an owner of mod quick-travel changes its trusted publishers/);
    const noCsrf = await call("POST", path, { cookie: owner.cookie, body: publisherBody });
    expect(noCsrf.json.code).toBe("csrf_failed");
  });
});

describe("set_source_repository", () => {
  const path = "/api/v1/mods/quick-travel/source-repository";

  it("sets the repository intake accepts and clears it with null, each audited with before and after", async () => {
    const set = await send("PUT", path, owner, { fullName: "owner/quick-travel", id: 4242 });
    expect(set.status, set.text).toBe(200);
    expect(set.json.ownership.sourceRepository).toEqual({ fullName: "owner/quick-travel", id: 4242 });
    await expectCommitted("quick-travel", set.json.ownership);
    expect((await lastEvent("mod.source_repository_set"))?.metadata).toEqual({
      before: null,
      after: { fullName: "owner/quick-travel", id: 4242 },
    });
    const cleared = await send("PUT", path, owner, null);
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.json.ownership.sourceRepository).toBeNull();
    expect(cleared.json.ownership.history.at(-1)).toMatchObject({
      action: "set_source_repository",
      repository: null,
    });
    await expectCommitted("quick-travel", cleared.json.ownership);
  });

  it("refuses a stranger, an admin, a missing CSRF header and a repository without its numeric id", async () => {
    const before = record("quick-travel");
    expect((await send("PUT", path, stranger, { fullName: "x/y", id: 1 })).json.code).toBe("forbidden");
    expect((await send("PUT", path, admin, { fullName: "x/y", id: 1 })).json.code).toBe("forbidden");
    const noCsrf = await call("PUT", path, { cookie: owner.cookie, body: { fullName: "x/y", id: 1 } });
    expect(noCsrf.json.code).toBe("csrf_failed");
    expect((await send("PUT", path, owner, { fullName: "x/y" })).json.code).toBe("invalid_payload");
    expect((await send("PUT", path, owner, { fullName: "x/y", id: 0 })).json.code).toBe("invalid_payload");
    expect((await send("PUT", path, owner, "x/y")).json.code).toBe("invalid_payload");
    expect(record("quick-travel")).toEqual(before);
  });
});

describe("transfer_mod", () => {
  it("is an admin's alone: an owner is refused by the route's roles", async () => {
    const r = await send("POST", "/api/v1/mods/quick-travel/transfer", owner, {
      owners: [{ account: stranger.accountId }],
      reason: "mine now",
    });
    expect(r.status).toBe(403);
    expect(r.json.code).toBe("forbidden");
    expect(record("quick-travel").owners).toEqual([{ account: owner.accountId }]);
  });

  it("replaces the owners with a reason in the history and the audit log; the old owner loses control", async () => {
    const r = await send("POST", "/api/v1/mods/quick-travel/transfer", admin, {
      owners: [{ account: helper.accountId }, { github: "new-maintainer" }],
      reason: "The original author handed the mod over (support ticket 17).",
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.ownership.owners).toEqual([{ account: helper.accountId }, { github: "new-maintainer" }]);
    // The helper was a collaborator: as an owner they need no collaborator entry.
    expect(r.json.ownership.collaborators).toEqual([]);
    expect(r.json.ownership.history.at(-1)).toMatchObject({
      action: "transfer",
      by: { account: admin.accountId },
      owners: [{ account: helper.accountId }, { github: "new-maintainer" }],
      reason: "The original author handed the mod over (support ticket 17).",
    });
    await expectCommitted("quick-travel", r.json.ownership);
    expect(await lastEvent("mod.transferred")).toMatchObject({
      actorAccountId: admin.accountId,
      targetId: "quick-travel",
      metadata: {
        before: [{ account: owner.accountId }],
        after: [{ account: helper.accountId }, { github: "new-maintainer" }],
        reason: "The original author handed the mod over (support ticket 17).",
      },
    });
    const old = await send("POST", "/api/v1/mods/quick-travel/collaborators", owner, { github: "someone" });
    expect(old.json.code).toBe("forbidden");
    const now = await send("POST", "/api/v1/mods/quick-travel/collaborators", helper, { github: "someone" });
    expect(now.status, now.text).toBe(200);
  });

  it("gives an unclaimed mod id its owners", async () => {
    const r = await send("POST", "/api/v1/mods/better-hud/transfer", admin, {
      owners: [{ account: owner.accountId }],
      reason: "Reserved for its author before the first upload.",
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json.ownership).toMatchObject({
      modId: "better-hud",
      owners: [{ account: owner.accountId }],
      history: [{ action: "transfer", by: { account: admin.accountId } }],
    });
    await expectCommitted("better-hud", r.json.ownership);
    expect((await lastEvent("mod.transferred"))?.metadata).toMatchObject({ before: null });
  });

  it("refuses bodies without a reason, with duplicate or unknown owners", async () => {
    const path = "/api/v1/mods/far-mod/transfer";
    expect((await send("POST", path, admin, { owners: [{ account: owner.accountId }] })).json.code).toBe(
      "invalid_payload",
    );
    expect(
      (await send("POST", path, admin, { owners: [{ github: "a" }, { github: "A" }], reason: "x" })).json
        .code,
    ).toBe("invalid_payload");
    expect((await send("POST", path, admin, { owners: [], reason: "x" })).json.code).toBe("invalid_payload");
    const ghost = await send("POST", path, admin, {
      owners: [{ account: "acct_nobodyhere000000000" }],
      reason: "x",
    });
    expect(ghost.json.code).toBe("not_found");
    const noCsrf = await call("POST", path, {
      cookie: admin.cookie,
      body: { owners: [{ github: "a" }], reason: "x" },
    });
    expect(noCsrf.json.code).toBe("csrf_failed");
    expect((await call("GET", "/api/v1/mods/far-mod/ownership", { cookie: admin.cookie })).status).toBe(404);
  });
});

describe("where the portal does not publish by itself", () => {
  it("answers not_implemented (a GitHub-backed deployment's records live in git)", async () => {
    const local = h.app.submissions;
    try {
      h.app.submissions = backend(null);
      const read = await call("GET", "/api/v1/mods/quick-travel/ownership", { cookie: admin.cookie });
      expect(read.status).toBe(501);
      expect(read.json.message).toMatch(/local portal only/);
      const change = await send("POST", "/api/v1/mods/quick-travel/collaborators", admin, { github: "x" });
      expect(change.json.code).toBe("not_implemented");
      h.app.submissions = undefined;
      const none = await call("GET", "/api/v1/mods/quick-travel/ownership", { cookie: admin.cookie });
      expect(none.json.code).toBe("not_implemented");
    } finally {
      h.app.submissions = local;
    }
  });
});
