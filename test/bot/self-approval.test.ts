/**
 * Self-approval (issue 23, attack 2). A release published by a workflow is created by a bot account
 * (github-actions[bot]); the submitter is the person behind it, the workflow run's triggering actor,
 * never the bot. That person may `/svc revalidate`; neither they nor any owner or collaborator of the
 * mod (records/owners/{modId}.json on the default branch) may approve the release, and the bot says
 * so on the pull request. Driven through the deployed functions against the portal's state model.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { recordShard } from "../../src/contracts/records.ts";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { ReleaseWorld } from "../support/release-world.ts";
import { examplePayload, PORTAL } from "../support/webhook-payloads.ts";

let bot: BotHarness;
let world: ReleaseWorld;
beforeEach(async () => {
  bot = await startBot();
  world = new ReleaseWorld(bot.github);
});
afterEach(async () => {
  await bot.stop();
});

const WORKFLOW_BOT = { login: "github-actions[bot]", type: "Bot" } as const;

async function publish(payload: Record<string, any>): Promise<string | null> {
  const delivered = await bot.deliver("release", payload, { app: "intake" });
  expect(delivered.status).toBe(202);
  const rows = await bot.store.query<{ result: string | null }>(
    "SELECT result FROM github_deliveries WHERE id = $1",
    [delivered.id],
  );
  const logs = bot.logs.join("\n");
  return rows.rows[0]?.result ?? `(no result) ${logs}`;
}

/** The mod repository's release workflow, started by `login`, running when the release was published. */
function releaseRun(
  mod: ReturnType<ReleaseWorld["modRepository"]>,
  login: string,
  type: "User" | "Bot" = "User",
) {
  mod.repository.workflowRuns.push({
    id: 700 + mod.repository.workflowRuns.length,
    status: "in_progress",
    createdAt: "2026-11-21T09:58:00Z",
    updatedAt: "2026-11-21T09:58:05Z",
    triggeringActor: { login, type },
  });
}

function review(number: number, login: string, commitId: string) {
  const payload = examplePayload("pull_request_review", "submitted");
  payload.pull_request.number = number;
  payload.review.user.login = login;
  payload.review.state = "approved";
  payload.review.commit_id = commitId;
  return payload;
}

function command(number: number, login: string, body: string) {
  const payload = examplePayload("issue_comment", "created");
  payload.issue.number = number;
  payload.issue.pull_request = { url: `https://api.github.com/repos/${PORTAL}/pulls/${number}` };
  payload.comment.user.login = login;
  payload.comment.body = body;
  return payload;
}

/** The app's submitter record in a pull request body (the hidden marker), as JSON. */
const submitterRecord = (body: string) =>
  JSON.parse(/<!-- svc:submitter (\{.*?\}) -->/.exec(body)?.[1] ?? "null");
const stateOf = (number: number) => world.portal.pulls.get(number)!.labels;
const replies = (number: number) =>
  world.portal.pulls
    .get(number)!
    .comments.filter((c) => !c.body.startsWith("<!-- svc:status"))
    .map((c) => c.body);

describe("a release published by a workflow", () => {
  it("is submitted by the person who started the run, who may /svc revalidate it", async () => {
    const mod = world.modRepository("modder/better-hud", 9002);
    releaseRun(mod, "real-modder");
    const answer = await publish(world.release(mod, { sender: WORKFLOW_BOT }));
    const pr = world.portal.pulls.get(1)!;
    expect(submitterRecord(pr.body)).toMatchObject({
      login: "real-modder",
      repository: { fullName: "modder/better-hud", id: 9002 },
    });
    expect(pr.body).toContain("published by @real-modder");
    expect(answer).toMatch(/^submission pull request #1 by real-modder\b/);

    // Validation failed outside the package; the person behind the release asks for another run.
    world.status(1, "validation_failed", true);
    bot.github.expect("GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", {
      body: { total_count: 1, workflow_runs: [{ id: 31, status: "completed", conclusion: "failure" }] },
    });
    bot.github.expect("POST /repos/{owner}/{repo}/actions/runs/{run_id}/rerun", { status: 201, body: {} });
    expect((await bot.deliver("issue_comment", command(1, "real-modder", "/svc revalidate"))).status).toBe(
      202,
    );
    bot.github.assertDone();
    expect(stateOf(1)).toEqual(["state:validating"]);
  });

  it("is refused when the run was started by a bot, or when no single run tells who published it", async () => {
    const mod = world.modRepository("modder/better-hud", 9002);
    releaseRun(mod, "dependabot[bot]", "Bot");
    const byBot = await publish(world.release(mod, { sender: WORKFLOW_BOT }));
    const lonely = world.modRepository("ada/quick-travel", 9010);
    const untold = await publish(world.release(lonely, { sender: WORKFLOW_BOT, modId: "quick-travel" }));
    expect(world.intakePullRequests()).toEqual([]);
    expect(byBot).toMatch(/^release_submitter_bot: .*started by dependabot\[bot\], another bot account/);
    expect(untold).toMatch(/^release_submitter_unknown: .*no workflow run of the repository was running/);
    bot.github.assertDone();
  });
});

describe("approval of a claimed mod's release", () => {
  it("is refused from an owner who moderates, and from the submitter; the bot says why; another moderator approves", async () => {
    world.portal.branchFiles.set("portal.config.json", {
      moderators: { logins: ["moderator-mia", "moderator-max", "real-modder"], team: null },
    });
    world.claim("better-hud", ["moderator-mia"], { fullName: "modder/better-hud", id: 9002 }, [
      "real-modder",
    ]);
    const mod = world.modRepository("modder/better-hud", 9002);
    releaseRun(mod, "real-modder");
    expect(await publish(world.release(mod, { sender: WORKFLOW_BOT }))).toMatch(
      /^submission pull request #1\b/,
    );
    world.status(1, "pending_review");
    const head = world.portal.pulls.get(1)!.headSha;

    await bot.deliver("pull_request_review", review(1, "moderator-mia", head));
    expect(stateOf(1)).toEqual(["state:pending_review"]);
    expect(replies(1)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^@moderator-mia This approval does not count: you own or collaborate on \`better-hud\` \\(records/owners/${recordShard("better-hud")}\\.json\\)`,
        ),
      ),
    ]);

    await bot.deliver("pull_request_review", review(1, "real-modder", head));
    expect(stateOf(1)).toEqual(["state:pending_review"]);
    expect(replies(1)[1]).toMatch(/^@real-modder This approval does not count: you submitted this release/);

    await bot.deliver("pull_request_review", review(1, "moderator-max", head));
    bot.github.assertDone();
    expect(stateOf(1)).toEqual(["state:approved"]);
  });
});
