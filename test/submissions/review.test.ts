/**
 * What a moderator reviews from, over the real routes, worker and clamscan: upload_status carries
 * the release as it will be published, the package's files with their detected signatures, the
 * diff against the mod's last published version and, for staff only, the uploader, earlier
 * submissions of the same version and reviewers' names, every answer valid against
 * svc.upload-submission.v1; the staged-package download (moderators and admins only, audited,
 * an attachment); the queue filtered by any state.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaRegistry } from "../../src/contracts/schemas.ts";
import { modRelease } from "../support/catalog-project.ts";
import { signUpAndSignIn, type SignedIn } from "../support/http-harness.ts";
import {
  form,
  type SubmissionsPortal,
  SKIP_CLAMSCAN as skip,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";

let p: SubmissionsPortal;
let stranger: SignedIn;
const ids = { first: "", update: "", rejected: "", again: "" };
/** A Windows library as the file_signature check knows one: a PE header under Binaries/Win64. */
const HOOK_DLL = `MZ${"\u0000".repeat(62)}PE\u0000\u0000${"hook".repeat(200)}`;

function valid(view: unknown) {
  const result = schemaRegistry(p.h.app.config.baseUrl).validate("upload-submission", view);
  return result.ok ? [] : result.issues;
}

async function submit(who: SignedIn, release: ReturnType<typeof modRelease>, states = ["pending_review"]) {
  const created = await upload(p, who, form(release.sidecar, release.packageBytes));
  expect(created.status, JSON.stringify(created.json)).toBeLessThan(300);
  const id = created.json.submissionId as string;
  await waitForState(p, who, id, states);
  return id;
}

const status = (id: string, who: SignedIn) => p.call("GET", `/api/v1/uploads/${id}`, { cookie: who.cookie });

function decide(id: string, decision: string, notes: string) {
  return p.call("POST", `/api/v1/moderation/releases/${id}/decision`, {
    body: { decision, notes },
    cookie: p.moderator.cookie,
    csrf: p.moderator.csrf,
  });
}

const download = (id: string, who: SignedIn) =>
  fetch(`${p.h.origin}/api/v1/moderation/releases/${id}/package`, { headers: { cookie: who.cookie } });

describe.skipIf(skip)("reviewing a release", () => {
  beforeAll(async () => {
    p = await startSubmissionsPortal();
    stranger = await signUpAndSignIn(p.call, "stranger@example.com", "Stranger", "modder");
    ids.first = await submit(p.modder, modRelease({ modId: "quick-travel", version: "1.0.0" }));
  });
  afterAll(async () => {
    await p?.stop();
  });

  it("shows the release as it will be published, its files and signatures, and a first release's full list", async () => {
    const view = (await status(ids.first, p.moderator)).json;
    expect(valid(view)).toEqual([]);
    const { sidecar } = modRelease({ modId: "quick-travel", version: "1.0.0" });
    expect(view.release).toEqual({
      name: sidecar.name,
      summary: sidecar.summary,
      description: sidecar.description,
      releaseNotes: sidecar.releaseNotes,
      targetGameBuild: "17000000",
      license: null,
      tags: ["ui"],
      links: { source: "https://github.com/ada/quick-travel" },
      authors: [{ name: "Ada", github: "ada" }],
      dependencies: [],
      entrypoints: [{ path: "Content/Paks/BetterHud.pak", kind: "pak" }],
      modConfig: null,
    });
    expect(view.packageFiles.complete).toBe(true);
    expect(view.packageFiles.files.map((f: any) => [f.path, f.signature, f.native, f.sha256.length])).toEqual(
      [
        ["svc-mod.json", "text", false, 64],
        ["Content/Paks/BetterHud.pak", "text", false, 64],
      ],
    );
    expect(view.releaseDiff).toMatchObject({ firstRelease: true, baseline: null });
    expect(view.releaseDiff.files.added.map((f: any) => f.path)).toEqual([
      "Content/Paks/BetterHud.pak",
      "svc-mod.json",
    ]);
    expect(view.releaseDiff.risks.map((r: any) => r.code)).toEqual(["first_release"]);
    expect(view.uploader).toMatchObject({
      accountId: p.modder.accountId,
      displayName: "Modder",
      accountAgeDays: 0,
      suspension: null,
      history: { submissions: 0, rejected: 0, timesHidden: 0, suspensions: 0, recent: [] },
    });
    expect(view.earlierSubmissions).toEqual([]);
  });

  it("gives the owner the release and its diff, but not the staff-only uploader and history", async () => {
    const view = (await status(ids.first, p.modder)).json;
    expect(valid(view)).toEqual([]);
    expect(view.release.name).toBe("Better HUD");
    expect(view.releaseDiff.firstRelease).toBe(true);
    expect(view).not.toHaveProperty("uploader");
    expect(view).not.toHaveProperty("earlierSubmissions");
    // Lists stay light: no release, files or diff in the queue.
    const queue = await p.call("GET", "/api/v1/moderation/releases?state=pending_review", {
      cookie: p.moderator.cookie,
    });
    expect(Object.keys(queue.json.items[0])).not.toContain("releaseDiff");
  });

  it("downloads the staged package for moderators and admins only, as an audited attachment", async () => {
    const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version: "1.0.0" });
    const got = await download(ids.first, p.moderator);
    expect(got.status).toBe(200);
    expect(got.headers.get("content-disposition")).toBe(
      `attachment; filename="quick-travel-1.0.0.zip"; filename*=UTF-8''quick-travel-1.0.0.zip`,
    );
    expect(got.headers.get("content-type")).toBe("application/zip");
    expect(got.headers.get("x-svc-sha256")).toBe(sidecar.package.sha256);
    expect(got.headers.get("cache-control")).toBe("private, no-store");
    expect(Buffer.from(await got.arrayBuffer()).equals(packageBytes)).toBe(true);
    expect((await download(ids.first, p.admin)).status).toBe(200);
    for (const who of [p.modder, stranger]) {
      const refused = await download(ids.first, who);
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as { code: string }).code).toBe("forbidden");
    }
    const anonymous = await fetch(`${p.h.origin}/api/v1/moderation/releases/${ids.first}/package`);
    expect(anonymous.status).toBe(401);
    const audit = await p.call(
      "GET",
      `/api/v1/audit/events?action=submission.package_downloaded&targetId=${ids.first}`,
      { cookie: p.admin.cookie },
    );
    expect(audit.json.events.map((e: any) => e.actorAccountId).sort()).toEqual(
      [p.moderator.accountId, p.admin.accountId].sort(),
    );
    expect(audit.json.events[0].metadata).toMatchObject({
      modId: "quick-travel",
      version: "1.0.0",
      packageSha256: sidecar.package.sha256,
    });
    const unknown = await download("sub_0000000000000000000000000", p.moderator);
    expect(unknown.status).toBe(404);
  });

  it("diffs an update against the published version: a new native DLL and a changed pak, called out", async () => {
    expect((await decide(ids.first, "approve", "Looks good.")).status).toBe(200);
    const published = await p.call("POST", "/api/v1/catalog/publish", {
      cookie: p.admin.cookie,
      csrf: p.admin.csrf,
    });
    expect(published.json.published).toBe(1);
    // The staged bytes are gone once published.
    const gone = await download(ids.first, p.moderator);
    expect(gone.status).toBe(404);
    ids.update = await submit(
      p.modder,
      modRelease({
        modId: "quick-travel",
        version: "1.1.0",
        extraFiles: { "Binaries/Win64/Hook.dll": HOOK_DLL },
      }),
    );
    const view = (await status(ids.update, p.moderator)).json;
    expect(valid(view)).toEqual([]);
    const diff = view.releaseDiff;
    expect(diff.baseline).toMatchObject({ version: "1.0.0", fileCount: 2 });
    expect(diff.files.added.map((f: any) => [f.path, f.signature, f.native])).toEqual([
      ["Binaries/Win64/Hook.dll", "pe", true],
    ]);
    expect(diff.files.changed.map((f: any) => f.path)).toEqual([
      "Content/Paks/BetterHud.pak",
      "svc-mod.json",
    ]);
    expect(diff.files.removed).toEqual([]);
    expect(diff.nativeBinaries.added).toEqual(["Binaries/Win64/Hook.dll"]);
    expect(diff.risks[0]).toEqual({
      code: "adds_native_binary",
      severity: "high",
      message: "adds a native DLL: Binaries/Win64/Hook.dll",
      paths: ["Binaries/Win64/Hook.dll"],
    });
    expect(view.packageFiles.files.find((f: any) => f.path === "Binaries/Win64/Hook.dll")).toMatchObject({
      signature: "pe",
      native: true,
    });
    expect(view.uploader.history).toMatchObject({ submissions: 1, published: 1 });
    expect(view.uploader.history.recent.map((r: any) => r.submissionId)).toEqual([ids.first]);
  });

  it("names reviewers by display name and gives a re-upload of a rejected version the earlier history", async () => {
    ids.rejected = await submit(p.modder, modRelease({ modId: "map-pins", version: "2.0.0" }));
    const rejected = await decide(ids.rejected, "reject", "Bundles a copy of another mod.\nRemove it.");
    expect(rejected.status).toBe(200);
    expect(rejected.json.review.decisions[0]).toMatchObject({
      decision: "reject",
      reviewerAccountId: p.moderator.accountId,
      reviewerDisplayName: "Mo",
    });
    expect(valid(rejected.json)).toEqual([]);
    // The owner reads the decision without the moderator's name.
    const own = (await status(ids.rejected, p.modder)).json;
    expect(own.review.decisions[0]).not.toHaveProperty("reviewerDisplayName");
    ids.again = await submit(p.modder, modRelease({ modId: "map-pins", version: "2.0.0" }));
    expect(ids.again).not.toBe(ids.rejected);
    const view = (await status(ids.again, p.moderator)).json;
    expect(valid(view)).toEqual([]);
    expect(view.earlierSubmissions).toEqual([
      expect.objectContaining({
        submissionId: ids.rejected,
        ownerAccountId: p.modder.accountId,
        ownerDisplayName: "Modder",
        state: "rejected",
        decisions: [
          expect.objectContaining({
            decision: "reject",
            reviewerDisplayName: "Mo",
            notes: "Bundles a copy of another mod.\nRemove it.",
          }),
        ],
      }),
    ]);
    expect(view.uploader.history).toMatchObject({ rejected: 1, timesRejected: 1 });
    // A rejected package stays staged: a malware upload can still be inspected.
    expect((await download(ids.rejected, p.moderator)).status).toBe(200);
  });

  it("filters the queue by any state, rejected included, or all of them", async () => {
    const queue = (state: string) =>
      p.call("GET", `/api/v1/moderation/releases?state=${state}`, { cookie: p.moderator.cookie });
    const rejected = await queue("rejected");
    expect(rejected.status).toBe(200);
    expect(rejected.json.items.map((i: any) => [i.submissionId, i.state])).toEqual([
      [ids.rejected, "rejected"],
    ]);
    const published = await queue("published,pending_review");
    expect(published.json.items.map((i: any) => i.submissionId)).toEqual([ids.first, ids.update, ids.again]);
    const every = await queue("all");
    expect(every.json.items.map((i: any) => i.submissionId)).toEqual([
      ids.first,
      ids.update,
      ids.rejected,
      ids.again,
    ]);
    expect((await queue("nonsense")).json.code).toBe("invalid_request");
  });
});
