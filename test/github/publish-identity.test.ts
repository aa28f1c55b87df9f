/**
 * Who approved and who submitted, as the publish job sees them (issue 23, attacks 2 and 3), from the
 * committed actions/publish bundle against the loopback GitHub and git remote. The approval counts
 * only in the app's sealed status comment: a comment of the app's that someone with write access
 * edited to say approved is refused. The release is published for the person who submitted it:
 * the pull request's human author, or the person the app's sealed record names for a pull request
 * it opened; that person claims an unclaimed mod id (with the release's source repository).
 */
import { afterEach, describe, expect, it } from "vitest";
import { renderSubmitterMarker, type SubmitterRecord } from "../../src/bot/comments.ts";
import { deriveStatusKey, sealSubmitter } from "../../src/bot/status-seal.ts";
import { BOT_LOGIN, type PullRequestState } from "../support/github-repository.ts";
import {
  type PublishScenario,
  pushEvent,
  REPOSITORY,
  startPublishScenario,
  type Submission,
} from "../support/publish-scenario.ts";
import { clamscanPath, shouldSkip } from "../validation/clamav.ts";
import { modRecordsPath, ownershipIn, ownersPath, releaseIn } from "../support/records.ts";

const RUNS_TIMEOUT = 120_000;
const skip = shouldSkip(clamscanPath, "clamscan");

let scenario: PublishScenario | undefined;
afterEach(async () => {
  await scenario?.stop();
  scenario = undefined;
});

const ownersOn = (s: PublishScenario, modId: string) => {
  return ownershipIn(s.remote.show(ownersPath(modId)), modId);
};

/** Merges the submissions in one push each and runs the publish job on the last push. */
async function mergeAndPublish(s: PublishScenario, subs: Submission[]) {
  const before = s.remote.head();
  let merged = before;
  for (const sub of subs) merged = s.world.merge(sub.pr);
  const workspace = await s.checkout();
  const result = await s.run(
    workspace,
    pushEvent(
      before,
      merged,
      subs.map((sub) => sub.path),
    ),
  );
  expect(result.code, `${result.stdout}\n${s.github.problems.join("\n")}`).toBe(0);
  return (result.receipts ?? []) as Array<{
    pullRequest: number;
    receipt: { ok: boolean; error?: { code: string } };
  }>;
}

/** The pull request as the app opens it for a release: its author, its branch and its sealed record. */
function openedByTheApp(s: PublishScenario, pr: PullRequestState, record: SubmitterRecord, key: Buffer) {
  pr.author = BOT_LOGIN;
  pr.authorType = "Bot";
  pr.headRef = `svc/release/${record.repository?.id}/${pr.files[0]!.filename.split("/")[1]}/1.0.0`;
  pr.headRepo = REPOSITORY;
  pr.body = `${renderSubmitterMarker(sealSubmitter(key, { repository: REPOSITORY, branch: pr.headRef }, record))}\nSubmission opened by the svc app.`;
  s.world.setStatus(pr, "approved");
}

describe.skipIf(skip)("publish: the approval is the app's sealed one", { timeout: RUNS_TIMEOUT }, () => {
  it("an approval typed over the app's own status comment is not_approved; the app's sealed approval publishes and claims the mod for the pull request's author", async () => {
    scenario = await startPublishScenario();
    const s = scenario;
    const forged = s.submission(7, "better-hud", "1.0.0");
    // What an edit by someone with write access leaves: the app's comment, saying approved, unsealed.
    s.world.setStatus(forged.pr, "approved", { sealed: false });
    const genuine = s.submission(8, "quick-travel", "1.0.0");
    s.world.setStatus(genuine.pr, "approved");

    const receipts = await mergeAndPublish(s, [forged, genuine]);
    expect(receipts.find((r) => r.pullRequest === 7)?.receipt).toMatchObject({
      ok: false,
      error: { code: "not_approved" },
    });
    expect(releaseIn(s.remote.show(modRecordsPath("better-hud")), "1.0.0")).toBeNull();
    expect(receipts.find((r) => r.pullRequest === 8)?.receipt).toMatchObject({ ok: true });
    expect(ownersOn(s, "quick-travel")).toMatchObject({
      owners: [{ github: "ada" }],
      sourceRepository: null,
    });
  });
});

describe.skipIf(skip)("publish: the submitter is a person", { timeout: RUNS_TIMEOUT }, () => {
  it("an intake pull request is published for the person its sealed record names, who claims the mod with the source repository; an edited record or a bot author is submitter_unknown", async () => {
    scenario = await startPublishScenario();
    const s = scenario;
    const key = deriveStatusKey(s.appPrivateKey);
    const intake = s.submission(9, "quick-travel", "1.0.0");
    const source = { fullName: "modder/quick-travel", id: 9002 };
    openedByTheApp(
      s,
      intake.pr,
      { login: "real-modder", source: source.fullName, repository: source, claim: true },
      key,
    );

    const edited = s.submission(10, "map-tweaks", "1.0.0");
    openedByTheApp(
      s,
      edited.pr,
      {
        login: "real-modder",
        source: "modder/map-tweaks",
        repository: { fullName: "modder/map-tweaks", id: 9003 },
      },
      key,
    );
    // Someone with write access puts their own name in the app's record.
    edited.pr.body = edited.pr.body.replace('"login":"real-modder"', '"login":"mallory"');

    const byBot = s.submission(11, "night-sky", "1.0.0");
    byBot.pr.author = "github-actions[bot]";
    byBot.pr.authorType = "Bot";
    s.world.setStatus(byBot.pr, "approved");

    const receipts = await mergeAndPublish(s, [intake, edited, byBot]);
    expect(ownersOn(s, "quick-travel")).toMatchObject({
      owners: [{ github: "real-modder" }],
      collaborators: [],
      sourceRepository: source,
    });
    expect(receipts.find((r) => r.pullRequest === 9)?.receipt).toMatchObject({ ok: true });
    for (const number of [10, 11])
      expect(receipts.find((r) => r.pullRequest === number)?.receipt, `#${number}`).toMatchObject({
        ok: false,
        error: { code: "submitter_unknown" },
      });
    expect(ownersOn(s, "map-tweaks")).toBeNull();
    expect(ownersOn(s, "night-sky")).toBeNull();
  });
});
