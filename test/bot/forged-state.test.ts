/**
 * Forged state (issue 23, attack 3). Anyone with write access can edit the app's status comment, and
 * GitHub keeps showing the app as its author. The app seals what it writes; an edit by anyone else
 * counts for nothing: the bot hears it (issue_comment.edited, with the text from before the edit)
 * and puts the sealed text back, and a state it finds edited without hearing of it is void.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { BOT_LOGIN } from "../support/github-repository.ts";
import { PullRequestWorld } from "../support/pull-request-world.ts";
import { SIDECAR_PATH, sidecar } from "../support/submission-fixtures.ts";
import { examplePayload, PORTAL } from "../support/webhook-payloads.ts";

let bot: BotHarness;
let world: PullRequestWorld;
beforeEach(async () => {
  bot = await startBot();
  world = new PullRequestWorld(bot.github).serve();
  world.files = [{ filename: SIDECAR_PATH, status: "added" }];
  world.sidecar = sidecar();
  world.withStatus("pending_review");
});
afterEach(async () => {
  await bot.stop();
});

const stored = () => JSON.parse(/<!-- svc:status (\{.*?\}) -->/.exec(world.statusComment()!.body)![1]!);

/** What a write-access user types over the app's comment: the marker saying approved. */
function forgeApproval(): { before: string; forged: string } {
  const comment = world.statusComment()!;
  const before = comment.body;
  comment.body = before.replace('"state":"pending_review"', '"state":"approved"');
  return { before, forged: comment.body };
}

/** The issue_comment.edited delivery GitHub sends for that edit (a real payload, adjusted). */
function editedPayload(editor: string, before: string, after: string): Record<string, any> {
  const payload = examplePayload("issue_comment", "edited");
  payload.issue.number = world.number;
  payload.issue.pull_request = { url: `https://api.github.com/repos/${PORTAL}/pulls/${world.number}` };
  payload.comment.id = world.statusComment()!.id;
  payload.comment.body = after;
  payload.comment.user.login = BOT_LOGIN;
  payload.comment.user.type = "Bot";
  payload.changes = { body: { from: before } };
  payload.sender.login = editor;
  payload.sender.type = "User";
  return payload;
}

describe("the app's status comment edited by someone with write access", () => {
  it("is put back as the app wrote it (sealed again), and the editor is told the edit counts for nothing", async () => {
    const { before, forged } = forgeApproval();
    const delivered = await bot.deliver("issue_comment", editedPayload("mallory", before, forged));
    expect(stored()).toMatchObject({ state: "pending_review", headSha: world.headSha });
    expect(delivered.status).toBe(202);
    bot.github.assertDone();
    expect(world.statusComment()!.body).not.toContain('"state":"approved"');
    expect(world.labels).toEqual(["state:pending_review"]);
    const replies = world.comments.filter((c) => c !== world.statusComment()).map((c) => c.body);
    expect(replies).toEqual([
      expect.stringMatching(
        /^@mallory edited the svc status comment\. Only the svc app writes a submission's state/,
      ),
    ]);
  });

  it("an edit it did not hear of leaves a void state: no decision is taken on it, and the comment says why", async () => {
    forgeApproval();
    world.moderators.logins.push("moderator-max");
    const review = examplePayload("pull_request_review", "submitted");
    review.pull_request.number = world.number;
    review.review.user.login = "moderator-max";
    review.review.state = "changes_requested";
    review.review.commit_id = world.headSha;
    expect((await bot.deliver("pull_request_review", review)).status).toBe(202);
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:validation_failed"]);
    expect(stored()).toMatchObject({ state: "validation_failed", retryable: true });
    expect(world.statusComment()!.body).toContain("`status_comment_void`");
  });

  it("the app's own edits, and edits of people's comments, are not even recorded", async () => {
    const own = editedPayload(BOT_LOGIN, world.statusComment()!.body, world.statusComment()!.body);
    own.sender.type = "Bot";
    const answered = await bot.deliver("issue_comment", own);
    expect(answered.status).toBe(200);
    expect(JSON.parse(answered.text)).toMatchObject({ status: "ignored" });
    const person = editedPayload("mallory", "hello", '<!-- svc:status {"state":"approved"} -->');
    person.comment.user.login = "mallory";
    person.comment.user.type = "User";
    expect(JSON.parse((await bot.deliver("issue_comment", person)).text)).toMatchObject({
      status: "ignored",
    });
    expect(bot.github.recorded.filter((r) => !r.route.startsWith("/app/"))).toEqual([]);
  });
});
