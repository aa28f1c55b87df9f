/**
 * The default branch's ruleset requires one check, `svc / gate`, pinned to the portal app: the
 * ruleset shipped in .github/rulesets/default-branch.json (with the app's id), created through
 * GitHub's API and enforced by the fake GitHub on every merge as GitHub does (an exact context; a
 * context nothing reports blocks the merge; a check of that name from another app does not count).
 * The bot reports the gate on every pull request: success on one that is not a submission, the
 * submission's verdict otherwise (success only once a moderator approved its head commit).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Octokit } from "@octokit/rest";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { expectReportArtifact, PullRequestWorld } from "../support/pull-request-world.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { SIDECAR_PATH, sidecar, submissionReport } from "../support/submission-fixtures.ts";
import { examplePayload, PORTAL } from "../support/webhook-payloads.ts";

const [owner, repo] = PORTAL.split("/") as [string, string];
/** The app id github-actions writes its check runs as (a workflow job named `svc / gate`). */
const GITHUB_ACTIONS_APP = 15368;

let bot: BotHarness;
let world: PullRequestWorld;
let maintainer: Octokit;

/** The shipped ruleset with the portal app's id where the file holds 0, as the operator imports it. */
function shippedRuleset(appId: number): { name: string; enforcement: "active"; [field: string]: any } {
  const text = readFileSync(join(REPO_ROOT, ".github/rulesets/default-branch.json"), "utf8");
  const ruleset = JSON.parse(text);
  for (const rule of ruleset.rules)
    for (const check of rule.parameters?.required_status_checks ?? []) check.integration_id = appId;
  for (const actor of ruleset.bypass_actors) actor.actor_id = appId;
  return ruleset;
}

beforeEach(async () => {
  bot = await startBot();
  world = new PullRequestWorld(bot.github);
  world.serve().serveSettings();
  maintainer = new Octokit({ auth: "ghp_maintainer_token_test", baseUrl: bot.github.url });
  await maintainer.request("POST /repos/{owner}/{repo}/rulesets", {
    owner,
    repo,
    ...shippedRuleset(world.appId),
  });
});
afterEach(async () => {
  await bot.stop();
});

/** Merges as the maintainer (a person: not a bypass actor); the status and GitHub's message. */
async function merge(): Promise<{ status: number; message: string }> {
  try {
    const { data } = await maintainer.rest.pulls.merge({
      owner,
      repo,
      pull_number: world.number,
      sha: world.headSha,
    });
    return { status: 200, message: data.message };
  } catch (error) {
    const e = error as { status: number; response?: { data?: { message?: string } } };
    return { status: e.status, message: e.response?.data?.message ?? "" };
  }
}

function approve(login: string) {
  world.reviews.push({ id: world.newId(), state: "APPROVED", user: { login }, commit_id: world.headSha });
  const payload = examplePayload("pull_request_review", "submitted");
  payload.pull_request.number = world.number;
  payload.review.user.login = login;
  payload.review.state = "approved";
  payload.review.commit_id = world.headSha;
  return payload;
}

function gate() {
  return world.checkRuns.filter((r) => r.name === "svc / gate" && r.head_sha === world.headSha).at(-1);
}

describe("the gate a ruleset can require", () => {
  it("a maintainer's pull request that adds no submission gets a passing gate and merges once reviewed", async () => {
    world.files = [{ filename: "docs/modders.md", status: "modified" }];
    await bot.deliver("pull_request", world.pullRequestPayload("opened"));
    world.reviews.push({
      id: 77,
      state: "APPROVED",
      user: { login: "reviewer-rita" },
      commit_id: world.headSha,
    });
    const merged = await merge();
    bot.github.assertDone();
    expect(merged).toEqual({ status: 200, message: "Pull Request successfully merged" });
    expect(gate()).toMatchObject({ status: "completed", conclusion: "success", appId: world.appId });
    // Nothing else is written on it: no label, no status comment.
    expect(world.labels).toEqual([]);
    expect(world.comments).toEqual([]);
  });

  it("a submission merges only once a moderator approved its head commit", async () => {
    world.files = [{ filename: SIDECAR_PATH, status: "added" }];
    world.sidecar = sidecar();
    await bot.deliver("pull_request", world.pullRequestPayload("opened"));
    expect(gate()).toMatchObject({ status: "in_progress" });
    world.reviews.push({
      id: 78,
      state: "APPROVED",
      user: { login: "reviewer-rita" },
      commit_id: world.headSha,
    });
    expect(await merge()).toMatchObject({
      status: 405,
      message: expect.stringContaining('"svc / gate" is in progress'),
    });

    expectReportArtifact(bot.github, submissionReport(world.headSha));
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha));
    expect(world.labels).toEqual(["state:pending_review"]);
    expect(await merge()).toMatchObject({ status: 405 });

    await bot.deliver("pull_request_review", approve("moderator-mia"));
    expect(world.labels).toEqual(["state:approved"]);
    expect(gate()).toMatchObject({ status: "completed", conclusion: "success" });
    expect(await merge()).toEqual({ status: 200, message: "Pull Request successfully merged" });
    bot.github.assertDone();
  });

  it("a failed validation fails the gate; a check of the same name from another app does not count", async () => {
    world.files = [{ filename: SIDECAR_PATH, status: "added" }];
    world.sidecar = sidecar();
    world.withStatus("validating");
    expectReportArtifact(
      bot.github,
      submissionReport(world.headSha, { fail: { artifact_hash: ["sha256 differs"] } }),
    );
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha));
    expect(gate()).toMatchObject({ status: "completed", conclusion: "failure" });
    // A workflow job named `svc / gate` in the pull request's own workflow file: github-actions' check.
    world.checkRuns.push({
      id: 999,
      name: "svc / gate",
      head_sha: world.headSha,
      status: "completed",
      conclusion: "success",
      appId: GITHUB_ACTIONS_APP,
    });
    world.reviews.push({
      id: 79,
      state: "APPROVED",
      user: { login: "reviewer-rita" },
      commit_id: world.headSha,
    });
    expect(await merge()).toMatchObject({
      status: 405,
      message: expect.stringContaining('"svc / gate" has failed'),
    });
    bot.github.assertDone();
  });

  it("a push after the approval leaves the new head's gate pending: the approval does not carry over", async () => {
    world.files = [{ filename: SIDECAR_PATH, status: "added" }];
    world.sidecar = sidecar();
    world.withStatus("pending_review");
    await bot.deliver("pull_request_review", approve("moderator-mia"));
    expect(gate()).toMatchObject({ conclusion: "success" });
    world.headSha = "f".repeat(40);
    await bot.deliver("pull_request", world.pullRequestPayload("synchronize"));
    expect(gate()).toMatchObject({ status: "in_progress" });
    world.reviews.push({
      id: 80,
      state: "APPROVED",
      user: { login: "reviewer-rita" },
      commit_id: world.headSha,
    });
    expect(await merge()).toMatchObject({ status: 405 });
    bot.github.assertDone();
  });
});
