import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { handlePublishReceipt } from "../../src/bot/handle.ts";
import { Octokit } from "@octokit/rest";
import { type BotHarness, BOT_LOGIN, examplePayload, startBot } from "./support/bot-harness.ts";
import { PullRequestWorld } from "./support/pull-request-world.ts";
import {
  expectReportArtifact,
  SIDECAR_PATH,
  sentSince,
  sidecar,
  submissionReport,
} from "./support/scenario.ts";

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

// biome-ignore lint/suspicious/noExplicitAny: real webhook payloads are adjusted field by field
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

function workflowRunPayload(headSha: string) {
  const payload = examplePayload("workflow_run", "completed");
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
      world.expectFetch().expectLabel().expectStatusComment("create");
      expect((await bot.deliver("pull_request", pullRequestPayload("opened"))).status).toBe(200);
    });
    expect(world.labels).toEqual(["state:validating"]);

    await step("02-validated", async () => {
      expectReportArtifact(bot.github, submissionReport(world.headSha));
      world.expectFetch().expectLabel().expectStatusComment("update");
      bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 15);
      expect((await bot.deliver("workflow_run", workflowRunPayload(world.headSha))).status).toBe(200);
    });
    expect(world.labels).toEqual(["state:pending_review"]);
    expect(
      bot.github.calls("POST /repos/{owner}/{repo}/check-runs").map((c) => (c.body as { name: string }).name),
    ).toContain("svc / antivirus_scan");
    expect(world.comments).toHaveLength(1);
    await expect(world.statusComment()!.body).toMatchFileSnapshot(
      `${SCENARIOS}lifecycle/02-validated.comment.txt`,
    );

    await step("03-review-by-non-moderator-ignored", async () => {
      world.expectFetch().expectModeratorPolicy();
      expect((await bot.deliver("pull_request_review", reviewPayload("passer-by", "approved"))).status).toBe(
        200,
      );
    });
    await step("04-review-by-author-ignored", async () => {
      world.moderators.logins.push("Codertocat");
      world.expectFetch().expectModeratorPolicy();
      expect((await bot.deliver("pull_request_review", reviewPayload("Codertocat", "approved"))).status).toBe(
        200,
      );
    });
    expect(world.labels).toEqual(["state:pending_review"]);

    await step("05-approved", async () => {
      world.expectFetch().expectModeratorPolicy().expectLabel().expectStatusComment("update");
      expect(
        (await bot.deliver("pull_request_review", reviewPayload("moderator-mia", "approved"))).status,
      ).toBe(200);
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
      expect((await bot.deliver("pull_request", payload)).status).toBe(200);
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
        { botLogins: [BOT_LOGIN] },
      );
    });
    expect(world.labels).toEqual(["state:published"]);
    expect(world.comments).toHaveLength(2);
    await expect(world.statusComment()!.body).toMatchFileSnapshot(
      `${SCENARIOS}lifecycle/07-published.comment.txt`,
    );
  });
});
