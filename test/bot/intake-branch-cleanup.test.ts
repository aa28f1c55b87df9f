/**
 * Intake branches do not pile up: when a pull request the app opened from its own svc/release/
 * branch is merged or closed, the bot deletes that branch (DELETE /git/refs/heads/..., checked
 * against GitHub's OpenAPI description by the fake GitHub). A branch already gone (GitHub's 422
 * "Reference does not exist") is success; a fork's branch, another prefix and the default branch
 * are never touched.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { PullRequestWorld } from "../support/pull-request-world.ts";
import { SIDECAR_PATH, sidecar } from "../support/submission-fixtures.ts";
import { examplePayload, PORTAL } from "../support/webhook-payloads.ts";

const INTAKE_BRANCH = "svc/release/9002/better-hud/1.2.0";

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

function closedPayload(merged: boolean): Record<string, any> {
  const payload = examplePayload("pull_request", "closed");
  payload.number = world.number;
  payload.pull_request.number = world.number;
  payload.pull_request.head.sha = world.headSha;
  payload.pull_request.head.ref = world.pr.headRef;
  payload.pull_request.merged = merged;
  return payload;
}

/** The pull request as the app opens it: its head is a svc/release/ branch of the portal itself. */
function fromIntakeBranch(ref = INTAKE_BRANCH): void {
  world.pr.headRef = ref;
  world.pr.headRepo = PORTAL;
  world.branches.set(ref, { sha: world.headSha, files: new Map() });
}

describe("the intake branch of a closed submission pull request", () => {
  it("is deleted when the pull request is merged", async () => {
    fromIntakeBranch();
    world.merged = true;
    world.state = "closed";
    world.expectFetch().expectBranchDelete();
    expect((await bot.deliver("pull_request", closedPayload(true))).status).toBe(202);
    bot.github.assertDone();
    const [call] = bot.github.calls("DELETE /repos/{owner}/{repo}/git/refs/{ref}");
    expect(decodeURIComponent(call!.params.ref!)).toBe(`heads/${INTAKE_BRANCH}`);
    expect(world.branches.has(INTAKE_BRANCH)).toBe(false);
    expect(world.deletedBranches).toEqual([INTAKE_BRANCH]);
  });

  it("is deleted when the pull request is closed without merging, beside the cancelled status", async () => {
    fromIntakeBranch();
    world.state = "closed";
    world.withStatus("validation_failed");
    world.expectFetch().expectLabel().expectStatusComment("update").expectBranchDelete();
    expect((await bot.deliver("pull_request", closedPayload(false))).status).toBe(202);
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:cancelled"]);
    expect(world.deletedBranches).toEqual([INTAKE_BRANCH]);
  });

  it("is deleted even when the state cannot move (closed while waiting for review)", async () => {
    fromIntakeBranch();
    world.state = "closed";
    world.withStatus("pending_review");
    world.expectFetch().expectBranchDelete();
    expect((await bot.deliver("pull_request", closedPayload(false))).status).toBe(202);
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:pending_review"]);
    expect(world.deletedBranches).toEqual([INTAKE_BRANCH]);
  });

  it("is success when the branch is already gone (GitHub answers 422 Reference does not exist)", async () => {
    fromIntakeBranch();
    world.branches.delete(INTAKE_BRANCH);
    world.merged = true;
    world.state = "closed";
    world.expectFetch().expectBranchDelete();
    expect((await bot.deliver("pull_request", closedPayload(true))).status).toBe(202);
    bot.github.assertDone();
    expect(bot.logs.join("\n")).not.toMatch(/Reference does not exist/);
    expect(world.deletedBranches).toEqual([]);
  });

  it("is never a fork's branch, a branch outside svc/release/, or the default branch", async () => {
    const cases: Array<[string, string]> = [
      [INTAKE_BRANCH, "someone-else/Hello-World"],
      ["submit-better-hud", PORTAL],
      ["main", PORTAL],
    ];
    for (const [ref, headRepo] of cases) {
      world.pr.headRef = ref;
      world.pr.headRepo = headRepo;
      world.branches.set(ref, { sha: world.headSha, files: new Map() });
      world.merged = true;
      world.state = "closed";
      world.expectFetch();
      expect((await bot.deliver("pull_request", closedPayload(true))).status).toBe(202);
      bot.github.assertDone();
      expect(bot.github.calls("DELETE /repos/{owner}/{repo}/git/refs/{ref}"), `${headRepo}:${ref}`).toEqual(
        [],
      );
      expect(world.branches.has(ref), `${headRepo}:${ref}`).toBe(true);
    }
  });
});
