/**
 * Two near-simultaneous deliveries of one pull request leave one status comment. Here two
 * serverless instances (two deployments on one store) receive two deliveries of one pull request at
 * the same moment from a GitHub that answers in 150 ms, and both drain at once: the queue runs them
 * one after the other, so the pull request ends with one status comment and one state label. The
 * convergent upsert is tested on its own: a writer outside the queue (an API decision) that
 * created a status comment beside the bot's leaves one.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BotHarness, startBot, testStore } from "../support/bot-harness.ts";
import type { Store } from "../../src/store/index.ts";
import { BOT_LOGIN } from "../support/github-repository.ts";
import { type GitHubServer, startGitHubServer } from "../support/github-server.ts";
import { PullRequestWorld } from "../support/pull-request-world.ts";
import { SIDECAR_PATH, sidecar } from "../support/submission-fixtures.ts";

let github: GitHubServer;
let store: Store;
const bots: BotHarness[] = [];
beforeEach(async () => {
  github = await startGitHubServer();
  store = await testStore();
});
afterEach(async () => {
  for (const bot of bots.splice(0)) await bot.stop();
  await github.stop();
});

const statusComments = (world: PullRequestWorld) =>
  world.comments.filter((c) => c.user.login === BOT_LOGIN && c.body.startsWith("<!-- svc:status"));

describe("two instances, two deliveries of one pull request at once", () => {
  it("write one status comment and one label", async () => {
    bots.push(await startBot({ github, store }), await startBot({ github, store }));
    const [one, two] = bots as [BotHarness, BotHarness];
    github.latencyMs = 150;
    const world = new PullRequestWorld(github);
    world.files = [{ filename: SIDECAR_PATH, status: "added" }];
    world.sidecar = sidecar();
    world.serve();

    // Opened, and a push a moment later: each reaches a different instance.
    const [opened, pushed] = await Promise.all([
      one.deliver("pull_request", world.pullRequestPayload("opened"), { settle: false }),
      two.deliver("pull_request", world.pullRequestPayload("synchronize"), { settle: false }),
    ]);
    expect([opened.status, pushed.status]).toEqual([202, 202]);
    await Promise.all([one.settle(), two.settle()]);
    github.assertDone();

    expect(statusComments(world)).toHaveLength(1);
    expect(github.calls("POST /repos/{owner}/{repo}/issues/{issue_number}/comments")).toHaveLength(1);
    expect(world.labels).toEqual(["state:validating"]);
    const done = await store.query<{ id: string; attempts: number }>(
      "SELECT id, attempts FROM github_deliveries WHERE state = 'done' ORDER BY id",
    );
    expect(done.rows.map((r) => r.id).sort()).toEqual([opened.id, pushed.id].sort());
    expect(done.rows.every((r) => r.attempts === 1)).toBe(true);
  });
});

it("a status comment created beside the bot's (outside the queue) converges to one, with the bot's text", async () => {
  bots.push(await startBot({ github, store }));
  const [bot] = bots as [BotHarness];
  const world = new PullRequestWorld(github);
  world.files = [{ filename: SIDECAR_PATH, status: "added" }];
  world.sidecar = sidecar();
  world.expectFetch().expectLabel();
  // While the bot creates its comment, another writer (the API's decision path) created one first.
  github.expect("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", (req) => {
    world.comments.push({
      id: 900,
      body: '<!-- svc:status {"state":"validating","headSha":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"} -->\nolder',
      user: { login: BOT_LOGIN, type: "Bot" },
    });
    return world.addComment(req);
  });
  github.expect("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", () => ({
    body: world.commentList(),
  }));
  github.expect("DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}", (req) => {
    world.comments = world.comments.filter((c) => c.id !== Number(req.params.comment_id));
    return { status: 204 };
  });
  world.expectStatusComment("update").expectGate();
  await bot.deliver("pull_request", world.pullRequestPayload("opened"));
  github.assertDone();
  expect(statusComments(world).map((c) => c.id)).toEqual([900]);
  expect(statusComments(world)[0]!.body).toContain("### svc submission: Validating");
});
