/**
 * Issue 24, item 5: refusals end. A sidecar merged without approval, one whose asset was replaced and
 * one whose URL died are refused once, with their reason in the publication ledger
 * (records/publication/{shard}/{modId}/{version}.json) and a receipt on each pull request. Later runs do not
 * download them, read their pull requests or install the scanner for them; they are judged again
 * when something changes (a new approval, `/svc revalidate`) or when their backoff ends. From the
 * committed actions/publish bundle, against the loopback GitHub (every call recorded) and an https
 * server that counts downloads.
 */
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type PublishScenario,
  pushEvent,
  scheduleEvent,
  startPublishScenario,
  type Submission,
} from "../support/publish-scenario.ts";
import { clamscanPath, shouldSkip } from "../validation/clamav.ts";
import { ledgerFile, modRecordsPath, releaseIn } from "../support/records.ts";

const RUNS_TIMEOUT = 180_000;
const skip = shouldSkip(clamscanPath, "clamscan");

let scenario: PublishScenario | undefined;
afterEach(async () => {
  await scenario?.stop();
  scenario = undefined;
});

/** A folder whose clamscan cannot run: on PATH first, it is a runner where ClamAV was not installed. */
function withoutClamscan(): string {
  const bin = mkdtempSync(join(tmpdir(), "svc-no-clamscan-"));
  writeFileSync(join(bin, "clamscan"), "#!/bin/sh\necho 'clamscan: command not found' >&2\nexit 127\n");
  chmodSync(join(bin, "clamscan"), 0o755);
  return bin;
}

const json = (bytes: Buffer | null) => (bytes ? JSON.parse(bytes.toString("utf8")) : null);
const packagePath = (sub: Submission) => new URL(JSON.parse(sub.text).package.url).pathname;

/** Three merged submissions the publish job must refuse, each for its own reason. */
function refusedSubmissions(s: PublishScenario) {
  const unapproved = s.submission(7, "mod-a", "1.0.0");
  s.world.setStatus(unapproved.pr, "pending_review");
  unapproved.pr.labels = ["state:pending_review"];
  const replaced = s.submission(8, "mod-b", "1.0.0");
  s.world.setStatus(replaced.pr, "approved");
  const dead = s.submission(9, "mod-c", "1.0.0");
  s.world.setStatus(dead.pr, "approved");
  // After approval the modder replaced the asset's bytes; another's URL died.
  s.packages[packagePath(replaced)] = Buffer.from("PK\u0003\u0004 other bytes");
  delete s.packages[packagePath(dead)];
  return { unapproved, replaced, dead };
}

describe.skipIf(skip)(
  "publish: a refused sidecar is not judged again until something changes",
  {
    timeout: RUNS_TIMEOUT,
  },
  () => {
    it("refuses three sidecars once with a receipt each, then later runs neither download them nor read their pull requests", async () => {
      scenario = await startPublishScenario();
      const s = scenario;
      const before = s.remote.head();
      const { unapproved, replaced, dead } = refusedSubmissions(s);
      let head = before;
      for (const sub of [unapproved, replaced, dead]) head = s.world.merge(sub.pr);

      const first = await s.run(
        await s.checkout(),
        pushEvent(before, head, [unapproved.path, replaced.path, dead.path]),
      );
      expect(first.code, first.stdout).toBe(0);
      const codes = (
        first.receipts as Array<{ pullRequest: number; receipt: { error: { code: string } } }>
      ).map((r) => [r.pullRequest, r.receipt.error.code]);
      expect(codes).toEqual([
        [7, "not_approved"],
        [8, "hash_mismatch"],
        [9, "download_failed"],
      ]);
      // The reason, the receipt's time and the next judgement are committed with the catalog.
      for (const [sub, code] of [
        [unapproved, "not_approved"],
        [replaced, "hash_mismatch"],
        [dead, "download_failed"],
      ] as const)
        expect(json(s.remote.show(ledgerFile(sub.modId, "1.0.0")))?.refusal, sub.modId).toMatchObject({
          code,
          pullRequest: sub.pr.number,
          attempts: 1,
        });

      // The next scheduled runs: no scanner install, no download, no pull request read, no receipt.
      for (let run = 0; run < 2; run++) {
        const pending = await s.run(await s.checkout(), scheduleEvent(), { inputs: { mode: "pending" } });
        expect(pending.outputs).toEqual({ pending: "false" });
        const calls = s.github.recorded.length;
        const downloads = s.tls.requests.length;
        const later = await s.run(await s.checkout(), scheduleEvent());
        expect(later.code, later.stdout).toBe(0);
        s.github.assertDone();
        expect(later.receipts).toEqual([]);
        expect(s.tls.requests.length - downloads).toBe(0);
        const made = s.github.recorded.slice(calls).map((r) => `${r.method} ${r.path}`);
        expect(made.filter((c) => /\/pulls\/|\/commits|\/issues\/\d+\/comments/.test(c))).toEqual([]);
        // The same few calls whatever the number of refused sidecars: the app's token, the two
        // listings that say whether a refusal has news (approvals, /svc revalidate), the hidden label's
        // listing (item 4) and whether Pages is behind.
        expect(made).toEqual([
          "GET /repos/svc-portal/mods/installation",
          "POST /app/installations/4242/access_tokens",
          "GET /repos/svc-portal/mods/issues",
          "GET /repos/svc-portal/mods/issues/comments",
          "GET /repos/svc-portal/mods/issues",
          "GET /repos/svc-portal/mods/deployments",
        ]);
        expect(later.summary).toContain("3 refused sidecar(s) wait for a change");
      }

      // A moderator approves #7 (the bot relabels it and seals approved). The next run's pending
      // step cannot know (only the API tells), so that run has no scanner: #7 is due at the run
      // after, which installs one, without a receipt in between.
      unapproved.pr.labels = ["state:approved"];
      s.world.setStatus(unapproved.pr, "approved");
      const noScanner = await s.run(await s.checkout(), scheduleEvent(), {
        env: { PATH: `${withoutClamscan()}:${process.env.PATH ?? ""}` },
      });
      expect(noScanner.code, noScanner.stdout).toBe(0);
      expect(noScanner.receipts).toEqual([]);
      expect(s.tls.requests.filter((p) => p.includes("mod-a"))).toEqual([]);
      const due = await s.run(await s.checkout(), scheduleEvent(), { inputs: { mode: "pending" } });
      expect(due.outputs).toEqual({ pending: "true" });
      const approved = await s.run(await s.checkout(), scheduleEvent());
      expect(approved.code, approved.stdout).toBe(0);
      expect(approved.receipts).toEqual([expect.objectContaining({ pullRequest: 7, outcome: "published" })]);
      expect(releaseIn(s.remote.show(modRecordsPath("mod-a")), "1.0.0")?.status).toBe("published");
      expect(s.remote.show(ledgerFile("mod-a", "1.0.0"))).toBeNull();
    });

    it("a refused sidecar is judged again when its backoff ends, or on /svc revalidate from its submitter (not a stranger's)", async () => {
      scenario = await startPublishScenario();
      const s = scenario;
      const { dead, replaced } = refusedSubmissions(s);
      let before = s.remote.head();
      let head = s.world.merge(replaced.pr);
      const short = { "refusal-backoff-minutes": "0.05" };
      const first = await s.run(await s.checkout(), pushEvent(before, head, [replaced.path]), {
        inputs: short,
      });
      expect(first.code, first.stdout).toBe(0);
      expect(first.receipts).toEqual([expect.objectContaining({ pullRequest: 8, outcome: "failed" })]);

      // The asset is fixed; nothing tells the job, so its backoff (3 s here) brings it back.
      s.packages[packagePath(replaced)] = replaced.packageBytes;
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      const retried = await s.run(await s.checkout(), scheduleEvent(), { inputs: short });
      expect(retried.code, retried.stdout).toBe(0);
      expect(retried.receipts).toEqual([expect.objectContaining({ pullRequest: 8, outcome: "published" })]);

      before = s.remote.head();
      head = s.world.merge(dead.pr);
      const refused = await s.run(await s.checkout(), pushEvent(before, head, [dead.path]));
      expect(refused.receipts).toEqual([expect.objectContaining({ pullRequest: 9, outcome: "failed" })]);
      // The URL is back. A stranger's /svc revalidate counts for nothing; the submitter's does.
      s.packages[packagePath(dead)] = dead.packageBytes;
      const comment = (login: string) => {
        const at = new Date(Date.now() + 1000).toISOString();
        dead.pr.comments.push({
          id: s.world.newId(),
          body: "/svc revalidate",
          user: { login, type: "User" },
          createdAt: at,
          updatedAt: at,
        });
      };
      comment("mallory");
      const stranger = await s.run(await s.checkout(), scheduleEvent());
      expect(stranger.code, stranger.stdout).toBe(0);
      expect(stranger.outputs.published).toBe("0");
      comment(dead.pr.author);
      const revalidated = await s.run(await s.checkout(), scheduleEvent());
      expect(revalidated.code, revalidated.stdout).toBe(0);
      expect(revalidated.receipts).toEqual([
        expect.objectContaining({ pullRequest: 9, outcome: "published" }),
      ]);
    });
  },
);
