/**
 * Flooding (issue 23, attack 5). The intake app is public, and every release it turns into a pull
 * request costs a download, a validation run and some thirty writes of the portal app. Intake is
 * counted per source repository and per owner in the store's fixed windows, with the buckets of the
 * portal's own portal.config.json; a release over a limit opens nothing, and the modder is told on
 * their newest open submission pull request when to try again, once per window.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { ReleaseWorld } from "../support/release-world.ts";

// 40 minutes before the hourly window closes.
const NOW = new Date("2026-11-21T10:20:00.000Z");

let bot: BotHarness;
let world: ReleaseWorld;
beforeEach(async () => {
  bot = await startBot({ clock: () => NOW });
  world = new ReleaseWorld(bot.github);
  world.limits({
    releaseIntakeRepository: { limit: 2, windowSeconds: 3600 },
    releaseIntakeOwner: { limit: 3, windowSeconds: 86400 },
  });
});
afterEach(async () => {
  await bot.stop();
});

async function publish(payload: Record<string, any>): Promise<string | null> {
  const delivered = await bot.deliver("release", payload, { app: "intake" });
  expect(delivered.status).toBe(202);
  const rows = await bot.store.query<{ result: string | null }>(
    "SELECT result FROM github_deliveries WHERE id = $1",
    [delivered.id],
  );
  return rows.rows[0]?.result ?? null;
}

const notes = (number: number) =>
  world.portal.pulls.get(number)!.comments.filter((c) => c.body.includes("It was not submitted"));

describe("release intake over its limits", () => {
  it("opens no pull request past the per-repository limit, and tells the modder once, on their newest open pull request, when to retry", async () => {
    const mod = world.modRepository("modder/better-hud", 9002, 77);
    await publish(world.release(mod, { version: "1.0.0" }));
    await publish(world.release(mod, { version: "1.1.0" }));
    const third = await publish(world.release(mod, { version: "1.2.0" }));
    expect(world.intakePullRequests().map((pr) => pr.headRef)).toEqual([
      "svc/release/9002/better-hud/1.0.0",
      "svc/release/9002/better-hud/1.1.0",
    ]);
    expect(third).toMatch(
      /^release_rate_limited: modder\/better-hud is over the release intake limit per repository \(2 in 3600 s\); retry after 2026-11-21T11:00:00\.000Z \(noted on #2\)$/,
    );
    expect(notes(2).map((c) => c.body)).toEqual([
      expect.stringContaining(
        "@modder thank you for the release [`modder/better-hud@v1.2.0`](https://github.com/modder/better-hud/releases/tag/v1.2.0). It was not submitted: the repository `modder/better-hud` already opened 2 submission pull requests in the last 1 hour",
      ),
    ]);
    expect(notes(2)[0]!.body).toContain(
      "You can submit it again from 2026-11-21T11:00:00.000Z (in about 40 minutes)",
    );
    expect(notes(1)).toEqual([]);

    // Still refused; the note is not repeated within the window.
    expect(await publish(world.release(mod, { version: "1.3.0" }))).toMatch(
      /^release_rate_limited: .*retry after 2026-11-21T11:00:00\.000Z$/,
    );
    expect(notes(2)).toHaveLength(1);
    expect(world.intakePullRequests()).toHaveLength(2);
    bot.github.assertDone();
  });

  it("counts every repository of one owner together", async () => {
    const first = world.modRepository("modder/better-hud", 9002, 77);
    const second = world.modRepository("modder/quick-travel", 9003, 77);
    await publish(world.release(first, { version: "1.0.0" }));
    await publish(world.release(first, { version: "1.1.0" }));
    expect(await publish(world.release(second, { modId: "quick-travel", version: "1.0.0" }))).toMatch(
      /^submission pull request #3\b/,
    );
    expect(await publish(world.release(second, { modId: "quick-travel", version: "1.1.0" }))).toMatch(
      /^release_rate_limited: modder\/quick-travel is over the release intake limit per owner \(3 in 86400 s\); retry after 2026-11-22T00:00:00\.000Z \(noted on #3\)$/,
    );
    expect(notes(3)[0]!.body).toContain(
      "the repositories of `modder` already opened 3 submission pull requests in the last 24 hours",
    );
    expect(world.intakePullRequests()).toHaveLength(3);
    bot.github.assertDone();
  });
});
