// Issue 25 items 4, 5 and 6 over the real upload API: a new version uploaded with only what changes
// takes the rest of its page metadata (license included) from the last published version, and after
// hiding the newest version the submissions' states follow the settled statuses.
import { afterEach, describe, expect, it } from "vitest";
import { modRelease } from "../support/catalog-project.ts";
import {
  form,
  SKIP_CLAMSCAN as skip,
  type SubmissionsPortal,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";

let portal: SubmissionsPortal | undefined;
afterEach(async () => {
  await portal?.stop();
  portal = undefined;
});

const PAGE = {
  description: "Lights the way.",
  links: { homepage: "https://lantern.example/", source: "https://github.com/ada/lantern" },
  tags: ["lighting"],
  license: "MIT",
  authors: [{ name: "Ada", github: "ada" }, { name: "Grace" }],
};

async function publishUpload(p: SubmissionsPortal, sidecar: unknown, bytes: Buffer) {
  const created = await upload(p, p.modder, form(sidecar, bytes));
  expect(created.status, JSON.stringify(created.json)).toBe(201);
  const id = created.json.submissionId as string;
  const pending = await waitForState(p, p.modder, id, ["pending_review", "validation_failed"]);
  expect(pending.state, JSON.stringify(pending.validationChecks)).toBe("pending_review");
  const decided = await p.call("POST", `/api/v1/moderation/releases/${id}/decision`, {
    body: { decision: "approve", notes: "Fine." },
    cookie: p.moderator.cookie,
    csrf: p.moderator.csrf,
  });
  expect(decided.json.state).toBe("approved");
  const published = await p.call("POST", "/api/v1/catalog/publish", {
    cookie: p.admin.cookie,
    csrf: p.admin.csrf,
  });
  expect(published.json).toMatchObject({ published: 1, failed: 0 });
  return { id, created: created.json, pending };
}

const state = async (p: SubmissionsPortal, id: string) =>
  (await p.call("GET", `/api/v1/uploads/${id}`, { cookie: p.modder.cookie })).json.state;

describe.skipIf(skip)("create_upload carries a mod's metadata forward", () => {
  it("a new version sends only what changes; the license is kept; hiding the newest settles the rows", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const first = modRelease({ modId: "lantern", version: "1.0.0" });
    const v1 = await publishUpload(p, { ...first.sidecar, ...PAGE }, first.packageBytes);

    const next = modRelease({ modId: "lantern", version: "1.1.0" });
    const { description: _d, links: _l, tags: _t, authors: _a, ...bare } = next.sidecar;
    const v2 = await publishUpload(p, bare, next.packageBytes);
    // What the moderators reviewed is what was published.
    expect(v2.pending.release).toMatchObject({ ...PAGE, releaseNotes: "Release 1.1.0." });

    const detail = (await p.call("GET", "/api/v1/mods/lantern")).json;
    expect(detail).toMatchObject({ latestVersion: "1.1.0", ...PAGE });
    const page = await fetch(`${p.h.origin}/mods/lantern/`);
    expect(await page.text()).toContain("<dt>License</dt><dd>MIT</dd>");
    expect(await state(p, v1.id)).toBe("superseded");

    // Hiding the newest version publishes the previous one again, in the catalog and in its row.
    const hidden = await p.call("POST", `/api/v1/moderation/releases/${v2.id}/decision`, {
      body: { decision: "hide", notes: "Broken." },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(hidden.json.state).toBe("hidden");
    const versions = (await p.call("GET", "/api/v1/mods/lantern/versions")).json;
    expect(versions.versions.map((v: any) => [v.version, v.status])).toEqual([["1.0.0", "published"]]);
    expect(await state(p, v1.id)).toBe("published");
    const unhidden = await p.call("POST", `/api/v1/moderation/releases/${v2.id}/decision`, {
      body: { decision: "unhide", notes: "Fixed." },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(unhidden.json.state).toBe("published");
    expect(await state(p, v1.id)).toBe("superseded");
  }, 180_000);

  it("a first release without authors fails validation with detail_page_incomplete", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const { packageBytes, sidecar } = modRelease({ modId: "orphan", version: "1.0.0" });
    const { authors: _a, ...bare } = sidecar;
    const created = await upload(p, p.modder, form(bare, packageBytes));
    expect(created.status).toBe(201);
    const failed = await waitForState(p, p.modder, created.json.submissionId, [
      "pending_review",
      "validation_failed",
    ]);
    expect(failed.state).toBe("validation_failed");
    const check = failed.validationChecks.find((c: any) => c.id === "detail_page");
    expect(check).toMatchObject({ status: "failed", reasonCode: "detail_page_incomplete" });
  }, 120_000);
});
