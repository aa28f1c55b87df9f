// Issue 25 item 11: an upload of a version that is already published answered 409 `conflict`
// ("already has an open submission"), a code docs/api.md did not give for it. It answers
// version_exists (documented: "this version is already published"), and the refusal is audited.
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

describe.skipIf(skip)("an upload of a published version", () => {
  it("answers 409 version_exists naming the version, and the refusal is audited", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version: "1.0.0" });
    const created = await upload(p, p.modder, form(sidecar, packageBytes));
    const id = created.json.submissionId as string;
    await waitForState(p, p.modder, id, ["pending_review"]);

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
    expect(published.json.published).toBe(1);

    const again = await upload(p, p.modder, form(sidecar, packageBytes));
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ code: "version_exists", details: { submissionId: id } });
    expect(again.json.message).toBe(
      "quick-travel@1.0.0 is already published, and a published version never changes: upload it as a new version",
    );

    const audit = await p.call("GET", "/api/v1/audit/events?action=request.refused&limit=50", {
      cookie: p.admin.cookie,
    });
    const codes = audit.json.events
      .filter((e: any) => e.targetId === "create_upload" && e.actorAccountId === p.modder.accountId)
      .map((e: any) => [e.metadata.code, e.metadata.status]);
    expect(codes).toEqual([["version_exists", 409]]);
  }, 120_000);
});
