/**
 * `/svc revalidate` re-runs the head commit's validation run, and the re-run's report is the one
 * applied. artifacts v4 names are unique within a workflow run, every attempt of it included: the
 * upload is done here as validate-submission.yml's upload step says (its name for the attempt, its
 * overwrite), against a repository that refuses a name already on the run, as GitHub does.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
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

const stored = () =>
  JSON.parse(/<!-- svc:status (\{.*?\}) -->/.exec(world.statusComment()!.body)![1]!) as {
    state: string;
    retryable?: boolean;
  };

/** The run's workflow_run.completed for one attempt: failure when its report upload was refused. */
function completed(attempt: number, upload: { ok: boolean }) {
  const payload = world.workflowRunPayload(world.headSha, upload.ok ? "success" : "failure", RUN_ID);
  payload.workflow_run.run_attempt = attempt;
  return payload;
}

describe("a re-run of the validation run", () => {
  it("applies the re-run's own report, never the earlier attempt's", async () => {
    const failed = {
      ...submissionReport(world.headSha),
      problems: [
        { code: "package_download_failed", message: "GET https://example.invalid/x.zip answered 503" },
      ],
      report: null,
    };
    const first = uploadReportAsWorkflow(world, { id: RUN_ID, attempt: 1 }, failed);
    expect(first.ok).toBe(true);
    await bot.deliver("workflow_run", completed(1, first));
    expect(stored()).toMatchObject({ state: "validation_failed", retryable: true });

    bot.github.expect("GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", {
      body: { total_count: 1, workflow_runs: [{ id: RUN_ID, status: "completed", conclusion: "success" }] },
    });
    bot.github.expect("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", { status: 201, body: {} });
    await bot.deliver("issue_comment", world.commentPayload(world.author, "/svc revalidate"));
    expect(stored().state).toBe("validating");

    // The second attempt's download works: its report passes.
    const second = uploadReportAsWorkflow(world, { id: RUN_ID, attempt: 2 }, submissionReport(world.headSha));
    await bot.deliver("workflow_run", completed(2, second));
    bot.github.assertDone();
    expect({ upload: second.ok, state: stored().state }).toEqual({ upload: true, state: "pending_review" });
    expect(world.labels).toEqual(["state:pending_review"]);
    expect(world.statusComment()!.body).not.toContain("package_download_failed");
  });

  it("a re-run whose upload did not happen ends retryable, and is not the earlier attempt's verdict", async () => {
    uploadReportAsWorkflow(world, { id: RUN_ID, attempt: 1 }, submissionReport(world.headSha));
    world.comments = [];
    world.withStatus("validating");
    // Attempt 2 of the same run crashed before its upload step: the run has attempt 1's report only.
    await bot.deliver("workflow_run", completed(2, { ok: false }));
    bot.github.assertDone();
    expect(stored()).toMatchObject({ state: "validation_failed", retryable: true });
    expect(world.statusComment()!.body).toContain("validation_run_failed");
  });
});
