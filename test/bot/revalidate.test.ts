/**
 * A failure outside the package never leaves a pull request "validating": a failed package
 * download, a scanner outage or a validation run that ends without a report each end in
 * validation_failed, marked retryable, and `/svc revalidate` (the submitter or a moderator) re-runs
 * the head commit's validation run. A delivery the bot gives up on ends visible too: listed by the
 * drain (Vercel cron, CRON_SECRET), and the pull request's status comment says so.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BotHarness, CRON_SECRET, startBot } from "../support/bot-harness.ts";
import { expectReportArtifact, PullRequestWorld } from "../support/pull-request-world.ts";
import { SIDECAR_PATH, sidecar, submissionReport } from "../support/submission-fixtures.ts";

let bot: BotHarness;
let world: PullRequestWorld;
beforeEach(async () => {
  bot = await startBot();
  world = new PullRequestWorld(bot.github);
  world.files = [{ filename: SIDECAR_PATH, status: "added" }];
  world.sidecar = sidecar();
  world.withStatus("validating");
});
afterEach(async () => {
  await bot.stop();
});

const RUN_ID = 30433642;
const writes = () => bot.github.recorded.filter((r) => r.method !== "GET" && !r.route.startsWith("/app/"));
/** The stored state without its seal (the seal is verified by the bot, not compared here). */
const stored = () => {
  const {
    at: _at,
    sig: _sig,
    ...state
  } = JSON.parse(/<!-- svc:status (\{.*?\}) -->/.exec(world.statusComment()!.body)![1]!);
  return state;
};

function expectLatestRun(status = "completed"): void {
  bot.github.expect("GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", (req) => {
    expect(req.params.workflow_id).toBe("validate-submission.yml");
    expect(req.query.get("head_sha")).toBe(world.headSha);
    return { body: { total_count: 1, workflow_runs: [{ id: RUN_ID, status }] } };
  });
}

describe("a failure outside the package ends visible and retryable", () => {
  it("a package download failure: validation_failed, retryable; /svc revalidate by the submitter re-runs the run", async () => {
    const report = {
      ...submissionReport(world.headSha),
      problems: [
        { code: "package_download_failed", message: "GET https://example.invalid/x.zip answered 503" },
      ],
      report: null,
    };
    expectReportArtifact(bot.github, report);
    world.expectFetch().expectLabel().expectStatusComment("update");
    bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 2);
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha));
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:validation_failed"]);
    expect(stored()).toMatchObject({ state: "validation_failed", retryable: true });
    expect(world.statusComment()!.body).toContain("`package_download_failed`");
    expect(world.statusComment()!.body).toContain("/svc revalidate");

    // Someone else's command is ignored before anything is looked up.
    world.expectFetch().expectModeratorPolicy();
    await bot.deliver("issue_comment", world.commentPayload("passer-by", "/svc revalidate"));
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:validation_failed"]);

    world.expectFetch().expectModeratorPolicy().expectLabel().expectStatusComment("update").expectGate();
    expectLatestRun();
    bot.github.expect("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", { status: 201, body: {} });
    const before = writes().length;
    await bot.deliver("issue_comment", world.commentPayload(world.author, "/svc revalidate"));
    bot.github.assertDone();
    // The run restarts before the state moves: if GitHub refused, nothing would claim validating.
    expect(
      writes()
        .slice(before)
        .map((r) => `${r.method} ${r.route}`),
    ).toEqual([
      "POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun",
      "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
      "POST /repos/{owner}/{repo}/issues/{issue_number}/labels",
      "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}",
      "POST /repos/{owner}/{repo}/check-runs",
    ]);
    expect(bot.github.calls("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun")[0]!.params.run_id).toBe(
      String(RUN_ID),
    );
    expect(world.labels).toEqual(["state:validating"]);
    expect(stored()).toEqual({ state: "validating", headSha: world.headSha });
  });

  it("a scanner outage (antivirus_scan: scanner_unavailable) is retryable; a moderator's revalidate waits for a run still going", async () => {
    const report = submissionReport(world.headSha);
    const scan = report.report!.checks.find((c) => c.id === "antivirus_scan")!;
    Object.assign(scan, {
      status: "failed",
      reasonCode: "scanner_unavailable",
      log: ["clamd is not reachable"],
    });
    report.report!.passed = false;
    expectReportArtifact(bot.github, report);
    world.expectFetch().expectLabel().expectStatusComment("update");
    bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 16);
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha));
    bot.github.assertDone();
    expect(stored()).toMatchObject({ state: "validation_failed", retryable: true });

    world.expectFetch().expectModeratorPolicy().expectReply();
    expectLatestRun("in_progress");
    await bot.deliver("issue_comment", world.commentPayload("moderator-mia", "/svc revalidate"));
    bot.github.assertDone();
    expect(world.comments.at(-1)!.body).toContain("has not finished yet");
    expect(world.labels).toEqual(["state:validation_failed"]);
  });

  it("a failure in the package is not retryable", async () => {
    expectReportArtifact(
      bot.github,
      submissionReport(world.headSha, { fail: { artifact_hash: ["sha256 differs"] } }),
    );
    world.expectFetch().expectLabel().expectStatusComment("update");
    bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 16);
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha));
    bot.github.assertDone();
    expect(stored()).toEqual({ state: "validation_failed", headSha: world.headSha });
    expect(world.statusComment()!.body).not.toContain("#### Validate again");
  });
});

describe("a validation run without a report", () => {
  const noArtifacts = () =>
    bot.github.expect("GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", {
      body: { total_count: 0, artifacts: [] },
    });

  it("that failed leaves the pull request validation_failed and retryable, not validating", async () => {
    noArtifacts();
    world.expectRunPullRequests().expectFetch().expectLabel().expectStatusComment("update").expectGate();
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha, "failure"));
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:validation_failed"]);
    expect(stored()).toMatchObject({ retryable: true });
    expect(world.statusComment()!.body).toContain("`validation_run_failed`");
    expect(
      bot.github.calls("POST /repos/{owner}/{repo}/check-runs").map((c) => (c.body as { name: string }).name),
    ).toEqual(["svc / gate"]);
  });

  it("cancelled because a newer push superseded it is ignored", async () => {
    const superseded = world.headSha;
    world.headSha = "d".repeat(40);
    world.comments = [];
    world.withStatus("validating");
    noArtifacts();
    world.expectRunPullRequests();
    await bot.deliver("workflow_run", world.workflowRunPayload(superseded, "cancelled"));
    bot.github.assertDone();
    expect(writes()).toEqual([]);
    expect(world.labels).toEqual(["state:validating"]);
  });

  it("cancelled while still the head (by hand, or a runner lost) ends retryable", async () => {
    noArtifacts();
    world.expectRunPullRequests().expectFetch().expectLabel().expectStatusComment("update").expectGate();
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha, "cancelled"));
    bot.github.assertDone();
    expect(stored()).toMatchObject({ state: "validation_failed", retryable: true });
  });
});

describe("a delivery that keeps failing", () => {
  it("ends failed and listed by the drain; the pull request's status comment says the bot could not update it", async () => {
    await bot.stop();
    bot = await startBot({ queue: { maxAttempts: 2, backoffMs: () => 0 } });
    world = new PullRequestWorld(bot.github);
    world.files = [{ filename: SIDECAR_PATH, status: "added" }];
    world.sidecar = sidecar();
    world.withStatus("validating");
    bot.github.expect(
      "GET /repos/{owner}/{repo}/pulls/{pull_number}",
      { status: 502, body: { message: "Bad Gateway" } },
      2,
    );
    // After the last attempt GitHub answers again: the failure is written where people look.
    world.expectFetch().expectLabel().expectStatusComment("update").expectGate();
    const delivered = await bot.deliver("pull_request", world.pullRequestPayload("synchronize"));
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:validation_failed"]);
    const comment = world.statusComment()!.body;
    expect(comment).toContain("could not process a `pull_request` event");
    expect(comment).toContain(delivered.id);
    expect(comment).toContain('"retryable":true');

    const unauthorized = await fetch(`${bot.origin}/api/github/drain`, {
      headers: { authorization: "Bearer not-the-secret" },
    });
    expect(unauthorized.status).toBe(401);
    const listed = await fetch(`${bot.origin}/api/github/drain`, {
      headers: { authorization: `Bearer ${CRON_SECRET}` },
    });
    expect(listed.status).toBe(200);
    const summary = (await listed.json()) as { failedDeliveries: Array<Record<string, unknown>> };
    expect(summary.failedDeliveries).toEqual([
      expect.objectContaining({
        id: delivered.id,
        event: "pull_request",
        attempts: 2,
        serialKey: "pr:codertocat/hello-world#1",
        lastError: expect.stringContaining("502"),
      }),
    ]);
  });
});
