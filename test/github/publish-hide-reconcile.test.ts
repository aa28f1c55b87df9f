/**
 * Issue 24, item 4: a hide can no longer be dropped. Publish and sync share one concurrency group,
 * and GitHub keeps one pending run of a group, cancelling the one a newer run replaces
 * (concurrency-group.ts). The bot's hide dispatch, pending behind a running publication, is replaced
 * by the next merge's push run: the push run still applies the hide, because every run reads the
 * moderators' decisions from the app's sealed status comments. Hiding also withdraws the version's
 * package from GitHub Releases: the release is deleted (never its tag), the record keeps its artifact
 * URL, and the tag can never hold a release again. Run from the committed actions/publish bundle
 * against the loopback GitHub (OpenAPI-checked, immutable releases) and git remote.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ActionRun } from "../support/action-runner.ts";
import { ConcurrencyGroup } from "../support/concurrency-group.ts";
import type { PullRequestState } from "../support/github-repository.ts";
import {
  dispatchEvent,
  type PublishScenario,
  pushEvent,
  REPOSITORY,
  scheduleEvent,
  startPublishScenario,
} from "../support/publish-scenario.ts";
import { clamscanPath, shouldSkip } from "../validation/clamav.ts";
import { ledgerFile, modRecordsPath, releaseIn } from "../support/records.ts";

const RUNS_TIMEOUT = 180_000;
const skip = shouldSkip(clamscanPath, "clamscan");

let scenario: PublishScenario | undefined;
afterEach(async () => {
  await scenario?.stop();
  scenario = undefined;
});

const recordOn = (s: PublishScenario, modId: string, version: string) => {
  return releaseIn(s.remote.show(modRecordsPath(modId)), version);
};
/** The catalog the newest deploying run uploaded to Pages (and saved for the next run). */
const catalogIds = (s: PublishScenario) =>
  (
    JSON.parse(readFileSync(join(s.savedSite()!, "api/v1/catalog.json"), "utf8")).mods as Array<{
      id: string;
    }>
  ).map((m) => m.id);

/** What the bot does on `/svc hide` (or `/svc unhide`): the label, then the sealed status comment. */
function botDecides(s: PublishScenario, pr: PullRequestState, state: "hidden" | "published") {
  pr.labels = [`state:${state}`];
  s.world.setStatus(pr, state);
}

/** A run of the publish job over a fresh checkout, as the runner would start it. */
async function publishRun(
  s: PublishScenario,
  event: { name: string; payload: Record<string, unknown> },
): Promise<ActionRun & { receipts: unknown[] | null }> {
  return s.run(await s.checkout(), event);
}

/** Publishes better-hud@1.0.0 from #7 (merged, approved) and returns the pull request. */
async function publishedRelease(s: PublishScenario): Promise<PullRequestState> {
  const before = s.remote.head();
  const sub = s.submission(7, "better-hud", "1.0.0");
  s.world.setStatus(sub.pr, "approved");
  const merged = s.world.merge(sub.pr);
  const run = await publishRun(s, pushEvent(before, merged, [sub.path]));
  expect(run.code, run.stdout).toBe(0);
  expect(s.world.published("better-hud-v1.0.0")).toBeDefined();
  // The receipts job moves the pull request to published, as the app.
  botDecides(s, sub.pr, "published");
  return sub.pr;
}

describe.skipIf(skip)("publish: visibility is reconciled, not dispatched", { timeout: RUNS_TIMEOUT }, () => {
  it("a pending hide dispatch replaced by a push run: the push run hides the release and withdraws its package", async () => {
    scenario = await startPublishScenario();
    const s = scenario;
    const pr = await publishedRelease(s);
    const group = new ConcurrencyGroup<ActionRun & { receipts: unknown[] | null }>("publish");

    // A scheduled run is in progress (its publish step is done, its deploy still running) when the
    // moderator hides the release.
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let stepDone: () => void = () => {};
    const published = new Promise<void>((resolve) => (stepDone = resolve));
    const scheduled = group.queue("schedule", async () => {
      const run = await publishRun(s, scheduleEvent());
      stepDone();
      await gate;
      return run;
    });
    await published;
    botDecides(s, pr, "hidden");
    const hide = group.queue("workflow_dispatch (hide)", () =>
      publishRun(
        s,
        dispatchEvent({ visibility: "hide", modId: "better-hud", version: "1.0.0", pullRequest: "7" }),
      ),
    );
    // Another approved submission is merged: its push run takes the pending place.
    const before = s.remote.head();
    const other = s.submission(8, "fast-travel", "1.0.0");
    s.world.setStatus(other.pr, "approved");
    const merged = s.world.merge(other.pr);
    const push = group.queue("push", () => publishRun(s, pushEvent(before, merged, [other.path])));
    release();

    const [scheduledRun, hideRun, pushRun] = await Promise.all([scheduled, hide, push]);
    expect(hideRun.conclusion).toBe("cancelled");
    expect(group.log.filter((l) => l.event === "started").map((l) => l.run)).toEqual(["schedule", "push"]);
    expect(scheduledRun.conclusion).toBe("completed");
    if (pushRun.conclusion !== "completed") throw new Error("the push run was cancelled");
    const result = pushRun.result;
    expect(result.code, `${result.stdout}\n${s.github.problems.join("\n")}`).toBe(0);
    s.github.assertDone();

    // The hide landed: record, catalog, and the package withdrawn from GitHub Releases.
    expect(recordOn(s, "better-hud", "1.0.0")).toMatchObject({
      status: "hidden",
      packageUrl: `https://github.com/${REPOSITORY}/releases/download/better-hud-v1.0.0/better-hud-1.0.0.zip`,
    });
    expect(catalogIds(s)).not.toContain("better-hud");
    expect(catalogIds(s)).toContain("fast-travel");
    expect(s.world.releases.map((r) => r.tag)).toEqual(["fast-travel-v1.0.0"]);
    // Immutable releases: the deleted release's tag can never be used again.
    expect(s.world.burnedTags.has("better-hud-v1.0.0")).toBe(true);
    expect(result.receipts).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ pullRequest: 8, outcome: "published" }),
        expect.objectContaining({
          pullRequest: 7,
          visibility: "hide",
          status: "hidden",
          withdrawal: "deleted",
          receipt: expect.objectContaining({ ok: true }),
        }),
      ]),
    );
    const ledger = JSON.parse(s.remote.show(ledgerFile("better-hud", "1.0.0"))!.toString("utf8"));
    expect(ledger.visibility).toMatchObject({
      state: "hidden",
      pullRequest: 7,
      withdrawal: { outcome: "deleted", tag: "better-hud-v1.0.0" },
    });

    // The next run has nothing left to do for it: one listing, no read of #7's comments.
    const reads = s.github.recorded.length;
    const again = await publishRun(s, scheduleEvent());
    expect(again.code, again.stdout).toBe(0);
    expect(again.receipts).toEqual([]);
    expect(s.github.recorded.slice(reads).filter((r) => r.path.endsWith("/issues/7/comments"))).toEqual([]);
  });

  it("an unhide of a withdrawn package is refused once with visibility_withdrawn; a label set by hand hides nothing", async () => {
    scenario = await startPublishScenario();
    const s = scenario;
    const pr = await publishedRelease(s);
    // Someone with triage access labels the pull request hidden; the sealed state still says published.
    pr.labels = ["state:hidden"];
    const forged = await publishRun(s, scheduleEvent());
    expect(forged.code, forged.stdout).toBe(0);
    expect(recordOn(s, "better-hud", "1.0.0")?.status).toBe("published");
    expect(s.world.published("better-hud-v1.0.0")).toBeDefined();

    botDecides(s, pr, "hidden");
    const hidden = await publishRun(s, scheduleEvent());
    expect(hidden.code, hidden.stdout).toBe(0);
    expect(recordOn(s, "better-hud", "1.0.0")?.status).toBe("hidden");
    expect(s.world.published("better-hud-v1.0.0")).toBeUndefined();

    botDecides(s, pr, "published");
    const unhide = await publishRun(s, scheduleEvent());
    expect(unhide.code, unhide.stdout).toBe(0);
    expect(recordOn(s, "better-hud", "1.0.0")?.status).toBe("hidden");
    expect(unhide.receipts).toEqual([
      expect.objectContaining({
        pullRequest: 7,
        visibility: "unhide",
        receipt: expect.objectContaining({
          ok: false,
          error: expect.objectContaining({ code: "visibility_withdrawn" }),
        }),
      }),
    ]);
    const again = await publishRun(s, scheduleEvent());
    expect(again.receipts).toEqual([]);
  });
});
