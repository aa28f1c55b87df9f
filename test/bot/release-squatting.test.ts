/**
 * Mod-id squatting through release intake (issue 23, attack 1). A stranger's release of someone
 * else's mod must never answer for the real author's, and once a mod is claimed only its source
 * repository (by id) is accepted. Real release.published payloads go through the deployed intake
 * function to the state model of the portal, so the second release sees what the first one opened.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { ReleaseWorld } from "../support/release-world.ts";

let bot: BotHarness;
let world: ReleaseWorld;
beforeEach(async () => {
  bot = await startBot();
  world = new ReleaseWorld(bot.github);
});
afterEach(async () => {
  await bot.stop();
});

async function result(id: string): Promise<string | null> {
  const rows = await bot.store.query<{ result: string | null }>(
    "SELECT result FROM github_deliveries WHERE id = $1",
    [id],
  );
  return rows.rows[0]?.result ?? null;
}

async function publish(payload: Record<string, any>): Promise<string | null> {
  const delivered = await bot.deliver("release", payload, { app: "intake" });
  expect(delivered.status).toBe(202);
  return result(delivered.id);
}

describe("two repositories release the same unclaimed mod version", () => {
  it("the squatter's earlier pull request never answers for the real author's release, even once rejected: each repository has its own branch and pull request, and each says it claims the mod id", async () => {
    const squatter = world.modRepository("squatter/evil-hud", 9001);
    const real = world.modRepository("modder/better-hud", 9002);

    expect(await publish(world.release(squatter))).toMatch(/^submission pull request #1\b/);
    // A moderator rejects the squatter's submission: its pull request is closed.
    world.portal.pulls.get(1)!.state = "closed";

    const answer = await publish(world.release(real));
    bot.github.assertDone();
    expect(answer).toMatch(/^submission pull request #2 by modder\b/);
    const pulls = world.intakePullRequests();
    expect(pulls.map((pr) => [pr.number, pr.headRef, pr.state])).toEqual([
      [1, "svc/release/9001/better-hud/1.2.0", "closed"],
      [2, "svc/release/9002/better-hud/1.2.0", "open"],
    ]);
    // The moderator sees that approving it makes its submitter the owner of the mod id.
    expect(pulls[1]!.body).toContain("**Claim.** `better-hud` has no owner yet");
    expect(pulls[1]!.body).toContain("`modder/better-hud`");
    expect(pulls[1]!.body).toContain("(repository id 9002) published by @modder");
  });
});

describe("a claimed mod id", () => {
  beforeEach(() => {
    world.claim("better-hud", ["modder"], { fullName: "modder/better-hud", id: 9002 }, ["ada"]);
  });

  it("is refused from any other repository: nothing is downloaded and no pull request is opened", async () => {
    const squatter = world.modRepository("squatter/evil-hud", 9001);
    const answer = await publish(world.release(squatter));
    expect(answer).toMatch(
      /^release_source_mismatch: better-hud is claimed, and its releases are accepted only from its source repository modder\/better-hud \(repository id 9002\)/,
    );
    expect(world.intakePullRequests()).toEqual([]);
    expect(bot.github.recorded.filter((r) => r.path.endsWith(".zip"))).toEqual([]);
    bot.github.assertDone();
  });

  it("is accepted from its source repository after a rename or a transfer (same id), not from a new repository that took the old name", async () => {
    const renamed = world.modRepository("modder-studio/better-hud-reloaded", 9002);
    expect(await publish(world.release(renamed, { sender: { login: "ada", type: "User" } }))).toMatch(
      /^submission pull request #1 by ada$/,
    );
    const recreated = world.modRepository("modder/better-hud", 9003);
    expect(await publish(world.release(recreated, { version: "1.3.0" }))).toMatch(
      /^release_source_mismatch: /,
    );
    expect(world.intakePullRequests().map((pr) => pr.headRef)).toEqual(["svc/release/9002/better-hud/1.2.0"]);
    // No claim is offered for a mod that has an owner.
    expect(world.intakePullRequests()[0]!.body).not.toContain("**Claim.**");
    bot.github.assertDone();
  });

  it("is refused from its source repository when the person who published the release neither owns nor collaborates on the mod", async () => {
    const source = world.modRepository("modder/better-hud", 9002);
    const answer = await publish(world.release(source, { sender: { login: "passer-by", type: "User" } }));
    expect(answer).toMatch(/^release_submitter_not_owner: better-hud is claimed, and passer-by neither owns/);
    expect(world.intakePullRequests()).toEqual([]);
    bot.github.assertDone();
  });
});
