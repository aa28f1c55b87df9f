/**
 * A first-time contributor's validation run waits for a maintainer's "Approve and run": GitHub ends
 * it `action_required` (a workflow_run.completed with that conclusion, no jobs, no artifact). The
 * pull request says so instead of sitting in "validating", and carries a label moderators list
 * (`svc:awaiting-run-approval`) until the approved run reports.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AWAITING_RUN_APPROVAL_LABEL } from "../../src/bot/comments.ts";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { PullRequestWorld } from "../support/pull-request-world.ts";
import { uploadReportAsWorkflow } from "../support/report-upload.ts";
import { SIDECAR_PATH, sidecar, submissionReport } from "../support/submission-fixtures.ts";

const RUN_ID = 30433642;

let bot: BotHarness;
let world: PullRequestWorld;
beforeEach(async () => {
  bot = await startBot();
  world = new PullRequestWorld(bot.github);
  world.files = [{ filename: SIDECAR_PATH, status: "added" }];
  world.sidecar = sidecar();
  world.withStatus("validating");
  world.serve();
  for (const route of [
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts",
    "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}",
  ])
    bot.github.allow(route, world.reply(route));
});
afterEach(async () => {
  await bot.stop();
});

const writes = () =>
  bot.github.recorded.filter((r) => r.method !== "GET" && !r.route.startsWith("/app/")).length;
const stored = () =>
  JSON.parse(/<!-- svc:status (\{.*?\}) -->/.exec(world.statusComment()!.body)![1]!) as { state: string };

describe("a validation run held for a maintainer's approval", () => {
  it("is stated on the pull request and listed for moderators, until the approved run reports", async () => {
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha, "action_required", RUN_ID));
    bot.github.assertDone();
    expect(world.statusComment()!.body).toContain("a maintainer must approve the first run");
    expect(world.labels).toEqual(["state:validating", AWAITING_RUN_APPROVAL_LABEL]);
    expect(stored().state).toBe("validating");

    // Delivered again (a redelivery, the sweep): nothing more is written.
    const before = writes();
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha, "action_required", RUN_ID));
    expect(writes()).toBe(before);

    const upload = uploadReportAsWorkflow(world, { id: RUN_ID, attempt: 1 }, submissionReport(world.headSha));
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha, "success", RUN_ID));
    bot.github.assertDone();
    expect(upload.ok).toBe(true);
    expect(stored().state).toBe("pending_review");
    expect(world.labels).toEqual(["state:pending_review"]);
    expect(world.statusComment()!.body).not.toContain("a maintainer must approve");
  });

  it("for a run of an older commit (the contributor pushed again) writes nothing", async () => {
    const older = world.headSha;
    world.headSha = "d".repeat(40);
    world.comments = [];
    world.withStatus("validating");
    await bot.deliver("workflow_run", world.workflowRunPayload(older, "action_required", RUN_ID));
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:validating"]);
    expect(world.statusComment()!.body).not.toContain("a maintainer must approve");
  });
});
