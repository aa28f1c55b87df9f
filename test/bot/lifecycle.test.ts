/**
 * The bot over a submission pull request's whole life, through the deployed webhook functions: each
 * step's writes to GitHub are a file snapshot (scenarios/), the status comment is one living comment
 * and the state label mirrors it; reviews and commands count only from moderators who are not the
 * author, a report counts only for the head commit of this repository, and a new push dismisses an
 * approval.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { handlePublishReceipt } from "../../src/bot/handle.ts";
import { Octokit } from "@octokit/rest";
import { type BotHarness, startBot, testStatusKey } from "../support/bot-harness.ts";
import { BOT_LOGIN } from "../support/github-repository.ts";
import { maskSeals, sentSince } from "../support/github-server.ts";
import { expectReportArtifact, PullRequestWorld } from "../support/pull-request-world.ts";
import { SIDECAR_PATH, sidecar, submissionReport } from "../support/submission-fixtures.ts";
import { examplePayload } from "../support/webhook-payloads.ts";

const SCENARIOS = new URL("./scenarios/", import.meta.url).pathname;

let bot: BotHarness;
let world: PullRequestWorld;

beforeEach(async () => {
  bot = await startBot();
  world = new PullRequestWorld(bot.github);
  world.files = [{ filename: SIDECAR_PATH, status: "added" }];
  world.sidecar = sidecar();
});
afterEach(async () => {
  await bot.stop();
});

function pullRequestPayload(action: string): Record<string, any> {
  const payload = examplePayload("pull_request", action);
  payload.number = world.number;
  payload.pull_request.number = world.number;
  payload.pull_request.head.sha = world.headSha;
  return payload;
}

function reviewPayload(
  login: string,
  state: "approved" | "changes_requested" | "commented",
  commitId = world.headSha,
) {
  const payload = examplePayload("pull_request_review", "submitted");
  payload.pull_request.number = world.number;
  payload.review.user.login = login;
  payload.review.state = state;
  payload.review.commit_id = commitId;
  return payload;
}

/** attempt: a re-run of the same run (GitHub sends a new body: run_attempt differs). */
function workflowRunPayload(headSha: string, attempt = 1) {
  const payload = examplePayload("workflow_run", "completed");
  payload.workflow_run.run_attempt = attempt;
  payload.repository = examplePayload("pull_request", "opened").repository;
  payload.workflow_run.path = ".github/workflows/validate-submission.yml";
  payload.workflow_run.event = "pull_request";
  payload.workflow_run.head_sha = headSha;
  payload.workflow_run.id = 30433642;
  return payload;
}

async function step(name: string, run: () => Promise<void>): Promise<void> {
  const from = bot.github.recorded.length;
  await run();
  bot.github.assertDone();
  await expect(sentSince(bot.github, from)).toMatchFileSnapshot(`${SCENARIOS}lifecycle/${name}.sent.json`);
}

describe("a submission pull request, opened -> validated -> approved -> merged -> published", () => {
  it("moves through every state with one check run per check, one living comment and a mirrored label", async () => {
    await step("01-opened", async () => {
      world.expectFetch().expectLabel().expectStatusComment("create").expectGate();
      expect((await bot.deliver("pull_request", pullRequestPayload("opened"))).status).toBe(202);
    });
    expect(world.labels).toEqual(["state:validating"]);

    await step("02-validated", async () => {
      expectReportArtifact(bot.github, submissionReport(world.headSha));
      world.expectFetch().expectLabel().expectStatusComment("update");
      bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 15);
      expect((await bot.deliver("workflow_run", workflowRunPayload(world.headSha))).status).toBe(202);
    });
    expect(world.labels).toEqual(["state:pending_review"]);
    expect(
      bot.github.calls("POST /repos/{owner}/{repo}/check-runs").map((c) => (c.body as { name: string }).name),
    ).toContain("svc / antivirus_scan");
    expect(world.comments).toHaveLength(1);
    await expect(maskSeals(world.statusComment()!.body)).toMatchFileSnapshot(
      `${SCENARIOS}lifecycle/02-validated.comment.txt`,
    );

    await step("03-review-by-non-moderator-ignored", async () => {
      world.expectFetch().expectModeratorPolicy();
      expect((await bot.deliver("pull_request_review", reviewPayload("passer-by", "approved"))).status).toBe(
        202,
      );
    });
    await step("04-review-by-author-ignored", async () => {
      world.moderators.logins.push("Codertocat");
      world.expectFetch().expectModeratorPolicy().expectReply();
      expect((await bot.deliver("pull_request_review", reviewPayload("Codertocat", "approved"))).status).toBe(
        202,
      );
    });
    expect(world.labels).toEqual(["state:pending_review"]);

    await step("05-approved", async () => {
      world
        .expectFetch()
        .expectModeratorPolicy()
        .expectOwnership()
        .expectLabel()
        .expectStatusComment("update")
        .expectGate();
      expect(
        (await bot.deliver("pull_request_review", reviewPayload("moderator-mia", "approved"))).status,
      ).toBe(202);
    });
    expect(world.labels).toEqual(["state:approved"]);
    world.reviews.push({
      id: 80,
      state: "APPROVED",
      user: { login: "moderator-mia" },
      commit_id: world.headSha,
    });

    await step("06-merged", async () => {
      world.expectFetch();
      const payload = pullRequestPayload("closed");
      payload.pull_request.merged = true;
      expect((await bot.deliver("pull_request", payload)).status).toBe(202);
    });

    await step("07-published", async () => {
      world.merged = true;
      world.state = "closed";
      world.expectFetch().expectLabel().expectStatusComment("update").expectReply();
      const api = new Octokit({
        baseUrl: bot.github.url,
        auth: "ghs_test_publish",
        retry: { enabled: false },
      });
      await handlePublishReceipt(
        api,
        { owner: "Codertocat", repo: "Hello-World" },
        world.number,
        {
          ok: true,
          modId: "better-hud",
          version: "1.2.0",
          artifactUrl:
            "https://codertocat.github.io/Hello-World/downloads/mods/better-hud/1.2.0/better-hud-1.2.0.zip",
          sha256: "b".repeat(64),
          sizeBytes: 4096,
          catalogUrl: "https://codertocat.github.io/Hello-World/api/v1/catalog.json",
          detailUrl: "https://codertocat.github.io/Hello-World/api/v1/mods/better-hud/index.json",
        },
        { botLogins: [BOT_LOGIN], statusKey: testStatusKey() },
      );
    });
    expect(world.labels).toEqual(["state:published"]);
    expect(world.comments).toHaveLength(3);
    await expect(maskSeals(world.statusComment()!.body)).toMatchFileSnapshot(
      `${SCENARIOS}lifecycle/07-published.comment.txt`,
    );
  });
});

describe("what the bot refuses", () => {
  it("rejects a delivery whose signature is not over the raw body, and calls GitHub for nothing", async () => {
    const payload = pullRequestPayload("opened");
    const { sign } = await import("@octokit/webhooks-methods");
    // Signed over a re-serialised body (pretty-printed): the bytes differ, so the signature must fail.
    const forged = await sign("test-webhook-secret-not-real", JSON.stringify(payload, null, 2));
    const response = await bot.deliver("pull_request", payload, { signature: forged });
    expect(response.status).toBe(400);
    expect(bot.github.recorded).toEqual([]);
    bot.github.assertDone();
  });

  it("ignores a report for an older commit or another repository; one that fails its schema is never applied and the waiting PR ends failed, retryable", async () => {
    world.withStatus("validating");
    // The run validated an older head: intake passes (same SHA as the run), the PR head differs.
    const old = "c".repeat(40);
    expectReportArtifact(bot.github, submissionReport(old));
    world.expectFetch();
    expect((await bot.deliver("workflow_run", workflowRunPayload(old))).status).toBe(202);
    bot.github.assertDone();
    expect(bot.github.recorded.filter((r) => r.method !== "GET" && !r.route.startsWith("/app/"))).toEqual([]);

    // An unknown field: nothing of the report is used. The run's own pull request (found by its
    // head branch: a fork's run carries no pull request) is told, and may validate again.
    const openPulls = () => ({
      body: [{ number: world.number, head: { sha: world.headSha, ref: "submit-better-hud" } }],
    });
    const tampered = { ...submissionReport(world.headSha), injected: true };
    expectReportArtifact(bot.github, tampered);
    bot.github.expect("GET /repos/{owner}/{repo}/pulls", openPulls);
    world.expectFetch().expectLabel().expectStatusComment("update").expectGate();
    expect((await bot.deliver("workflow_run", workflowRunPayload(world.headSha))).status).toBe(202);
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:validation_failed"]);
    expect(world.statusComment()!.body).toContain('"retryable":true');
    expect(world.statusComment()!.body).toContain("`report_invalid`");
    // No check of the report's is shown: only the gate, failed.
    const checkRunNames = () =>
      bot.github.calls("POST /repos/{owner}/{repo}/check-runs").map((c) => (c.body as { name: string }).name);
    expect(checkRunNames()).toEqual(["svc / gate"]);

    // Another repository's report is not this run's report: refused before anything is read.
    const foreign = { ...submissionReport(world.headSha), repository: "someone/else" };
    expectReportArtifact(bot.github, foreign, undefined, 2);
    expect((await bot.deliver("workflow_run", workflowRunPayload(world.headSha, 2))).status).toBe(202);
    bot.github.assertDone();
    expect(checkRunNames()).toEqual(["svc / gate"]);
  });

  it("fails validation with annotations on the sidecar and the reproduce command", async () => {
    world.withStatus("validating");
    await step("../failed-validation/01-report", async () => {
      expectReportArtifact(
        bot.github,
        submissionReport(world.headSha, {
          fail: { artifact_hash: ["sha256 of the package is 1234…, the sidecar says bbbb…"] },
        }),
      );
      world.expectFetch().expectLabel().expectStatusComment("update");
      bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 16);
      expect((await bot.deliver("workflow_run", workflowRunPayload(world.headSha))).status).toBe(202);
    });
    expect(world.labels).toEqual(["state:validation_failed"]);
    const failed = bot.github
      .calls("POST /repos/{owner}/{repo}/check-runs")
      .map(
        (c) =>
          c.body as { name: string; conclusion: string; output: { annotations?: Array<{ path: string }> } },
      )
      .filter((b) => b.conclusion === "failure");
    expect(failed.map((b) => b.name)).toEqual(["svc / artifact_hash", "svc / gate"]);
    expect(failed[0]!.output.annotations?.[0]?.path).toBe(SIDECAR_PATH);
    await expect(maskSeals(world.statusComment()!.body)).toMatchFileSnapshot(
      `${SCENARIOS}failed-validation/01-report.comment.txt`,
    );
  });

  it("a new push dismisses the moderator's approval and revalidates", async () => {
    world.withStatus("approved");
    world.reviews.push({
      id: 80,
      state: "APPROVED",
      user: { login: "moderator-mia" },
      commit_id: world.headSha,
    });
    world.headSha = "d".repeat(40);
    await step("../new-push/01-synchronize", async () => {
      world.expectFetch().expectLabel().expectStatusComment("update").expectGate();
      bot.github.expect("PUT /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals", {
        status: 200,
        body: { id: 80 },
      });
      expect((await bot.deliver("pull_request", pullRequestPayload("synchronize"))).status).toBe(202);
    });
    expect(world.labels).toEqual(["state:validating"]);
  });

  it("/svc reject from a moderator rejects with the reason; from anyone else it does nothing", async () => {
    world.withStatus("pending_review");
    // A forged status comment by a person is never trusted.
    world.comments.push({
      id: 6,
      body: '<!-- svc:status {"state":"approved","headSha":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} -->',
      user: { login: "mallory", type: "User" },
    });
    const comment = (login: string, body: string) => {
      const payload = examplePayload("issue_comment", "created");
      payload.issue.number = world.number;
      payload.issue.pull_request = { url: "https://api.github.com/repos/Codertocat/Hello-World/pulls/1" };
      payload.comment.user.login = login;
      payload.comment.body = body;
      return payload;
    };
    world.expectFetch().expectModeratorPolicy();
    expect((await bot.deliver("issue_comment", comment("mallory", "/svc reject spam"))).status).toBe(202);
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:pending_review"]);

    await step("../moderation/01-reject", async () => {
      world
        .expectFetch()
        .expectModeratorPolicy()
        .expectOwnership()
        .expectLabel()
        .expectStatusComment("update")
        .expectGate();
      expect(
        (await bot.deliver("issue_comment", comment("moderator-mia", "/svc reject bundles a crypto miner")))
          .status,
      ).toBe(202);
    });
    expect(world.labels).toEqual(["state:rejected"]);
    expect(world.statusComment()!.body).toContain("bundles a crypto miner");
  });
});
