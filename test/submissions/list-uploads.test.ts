import { afterEach, describe, expect, it } from "vitest";
import { modRelease } from "../support/catalog-project.ts";
import { signUpAndSignIn } from "../support/http-harness.ts";
import {
  form,
  type SubmissionsPortal,
  SKIP_CLAMSCAN as skip,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";

let portal: SubmissionsPortal | undefined;
afterEach(async () => {
  await portal?.stop();
  portal = undefined;
});

describe.skipIf(skip)("list_uploads over HTTP", () => {
  it("lists only the caller's own submissions, newest first, paged by cursor; all=1 is staff only", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const other = await signUpAndSignIn(p.call, "other-modder@example.com", "Other", "modder");
    const player = await signUpAndSignIn(p.call, "player@example.com", "Player");

    const mine: string[] = [];
    for (const [modId, version] of [
      ["quick-travel", "1.0.0"],
      ["map-pins", "0.1.0"],
      ["quick-travel", "1.1.0"],
    ] as const) {
      const { packageBytes, sidecar } = modRelease({ modId, version });
      const created = await upload(p, p.modder, form(sidecar, packageBytes));
      expect(created.status).toBe(201);
      mine.push(created.json.submissionId);
      // Distinct creation instants, so "newest first" is about time and not the id tiebreak.
      await new Promise((r) => setTimeout(r, 5));
    }
    const theirs = modRelease({ modId: "better-hud", version: "2.0.0" });
    const foreign = await upload(p, other, form(theirs.sidecar, theirs.packageBytes));
    expect(foreign.status).toBe(201);
    const foreignId = foreign.json.submissionId as string;

    const first = await p.call("GET", "/api/v1/uploads?limit=2", { cookie: p.modder.cookie });
    expect(first.status).toBe(200);
    expect(first.json.items.map((i: any) => i.submissionId)).toEqual([mine[2], mine[1]]);
    expect(first.json.items[0]).toMatchObject({
      ownerAccountId: p.modder.accountId,
      modId: "quick-travel",
      version: "1.1.0",
      revision: 1,
      package: { fileName: "quick-travel-1.1.0.zip", sha256: expect.stringMatching(/^[0-9a-f]{64}$/) },
      statusUrl: `/api/v1/uploads/${mine[2]}`,
    });
    expect(first.json.nextCursor).toEqual(expect.any(String));

    // A state change between pages moves no row across the boundary: paging follows creation.
    await waitForState(p, p.modder, mine[0]!, ["pending_review"]);
    const decided = await p.call("POST", `/api/v1/moderation/releases/${mine[0]}/decision`, {
      body: { decision: "request_changes", notes: "Add a changelog." },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(decided.status).toBe(200);
    const second = await p.call(
      "GET",
      `/api/v1/uploads?limit=2&cursor=${encodeURIComponent(first.json.nextCursor)}`,
      { cookie: p.modder.cookie },
    );
    expect(second.status).toBe(200);
    expect(second.json.items.map((i: any) => [i.submissionId, i.state])).toEqual([
      [mine[0], "changes_requested"],
    ]);
    expect(second.json.nextCursor).toBeNull();

    const othersList = await p.call("GET", "/api/v1/uploads", { cookie: other.cookie });
    expect(othersList.json.items.map((i: any) => i.submissionId)).toEqual([foreignId]);

    // Staff may list every account's; a modder asking for that is refused, not silently narrowed.
    const everyone = await p.call("GET", "/api/v1/uploads?all=1", { cookie: p.admin.cookie });
    expect(everyone.status).toBe(200);
    expect(everyone.json.items.map((i: any) => i.submissionId)).toEqual([foreignId, ...[...mine].reverse()]);
    const adminOwn = await p.call("GET", "/api/v1/uploads", { cookie: p.admin.cookie });
    expect(adminOwn.json.items).toEqual([]);
    const modderAll = await p.call("GET", "/api/v1/uploads?all=1", { cookie: p.modder.cookie });
    expect(modderAll.status).toBe(403);
    expect(modderAll.json.code).toBe("forbidden");

    expect((await p.call("GET", "/api/v1/uploads")).status).toBe(401);
    const asPlayer = await p.call("GET", "/api/v1/uploads", { cookie: player.cookie });
    expect(asPlayer.status).toBe(403);
    expect(asPlayer.json.code).toBe("forbidden");

    for (const query of ["limit=0", "limit=101", "cursor=bm9wZQ", "all=yes", "owner=x"]) {
      const bad = await p.call("GET", `/api/v1/uploads?${query}`, { cookie: p.modder.cookie });
      expect([query, bad.status, bad.json.code]).toEqual([query, 400, "invalid_request"]);
    }
  });
});
