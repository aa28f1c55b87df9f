import JSZip from "jszip";
/**
 * The publish job as a first real deployment runs it: the committed actions/publish bundle, run as
 * a runner runs it, in a workspace made as actions/checkout makes it, against a loopback GitHub that
 * checks every request and reply against GitHub's OpenAPI description and a loopback git remote
 * (git http-backend) whose default branch is protected: only the GitHub App's installation token
 * (the bypass actor) may update it.
 */
import { execFile, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { CatalogPushError, pushCatalogCommit, refusedCatalogPath } from "../../src/github/catalog-push.ts";
import { runCli } from "../support/run-cli.ts";
import { clamscanPath, shouldSkip } from "../validation/clamav.ts";
import { checkoutLikeActions, startGitRemote } from "../support/git-remote.ts";
import { APP_TOKEN, BOT_LOGIN } from "../support/github-repository.ts";
import {
  dispatchEvent,
  OLD_WORKFLOW_TOKEN,
  type PublishScenario,
  pushEvent,
  REPOSITORY,
  scheduleEvent,
  startPublishScenario,
} from "../support/publish-scenario.ts";
import { ledgerFile, modRecordsPath, releaseIn } from "../support/records.ts";

// Each test runs the bundle several times, as a runner would; the bound guards a hang, not speed.
const RUNS_TIMEOUT = 120_000;

let scenario: PublishScenario | undefined;
afterEach(async () => {
  await scenario?.stop();
  scenario = undefined;
});
async function start(): Promise<PublishScenario> {
  scenario = await startPublishScenario();
  return scenario;
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const releaseUrl = (modId: string, version: string) =>
  `https://github.com/${REPOSITORY}/releases/download/${modId}-v${version}/${modId}-${version}.zip`;

function recordOn(s: PublishScenario, modId: string, version: string): Record<string, any> | null {
  return releaseIn(s.remote.show(modRecordsPath(modId)), version);
}

const skip = shouldSkip(clamscanPath, "clamscan");
const git = async (cwd: string, args: string[]) =>
  promisify(execFile)("git", args, {
    cwd,
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: "a",
      GIT_AUTHOR_EMAIL: "a@b",
      GIT_COMMITTER_NAME: "a",
      GIT_COMMITTER_EMAIL: "a@b",
    },
  });

/** An approved pull request merged on its own; returns the merge commit. */
function mergeApproved(s: PublishScenario, number: number, modId: string, version = "1.0.0") {
  const sub = s.submission(number, modId, version);
  s.world.setStatus(sub.pr, "approved");
  return { ...sub, merge: s.world.merge(sub.pr) };
}

describe.skipIf(skip)(
  "publish: a merged, approved submission lands on a protected default branch",
  { timeout: RUNS_TIMEOUT },
  () => {
    it("publishes the exact bytes as one immutable release and pushes records (and the sidecar's deletion) with the app token; site/ is built, never committed; no ZIP in git", async () => {
      const s = await start();
      const sub = s.submission(7, "better-hud", "1.0.0");
      s.world.setStatus(sub.pr, "approved");
      const before = s.remote.head();
      const merged = s.world.merge(sub.pr);
      const workspace = await s.checkout();

      const result = await s.run(workspace, pushEvent(before, merged, [sub.path]));
      expect(result.code, `${result.stdout}\n${s.github.problems.join("\n")}`).toBe(0);
      s.github.assertDone();

      // The token the job minted: this repository only, contents: write only.
      expect(s.world.tokenRequests).toEqual([{ repositories: ["mods"], permissions: { contents: "write" } }]);
      // One release, published (no longer a draft), holding exactly the package bytes.
      const release = s.world.published("better-hud-v1.0.0");
      expect(release?.assets.map((a) => a.name)).toEqual(["better-hud-1.0.0.zip"]);
      expect(release?.assets[0]?.bytes.equals(sub.packageBytes)).toBe(true);
      expect(s.world.releases).toHaveLength(1);

      // The default branch moved by exactly one commit, pushed by the app, on top of the merge.
      const pushes = s.remote.accepted().filter((p) => p.login !== "web-flow");
      expect(pushes).toEqual([
        { login: BOT_LOGIN, ref: "refs/heads/main", before: merged, after: s.remote.head() },
      ]);
      // No previous deployment was restored: the site was built from the records, then published onto.
      expect(result.outputs).toMatchObject({
        published: "1",
        commit: s.remote.head(),
        deploy: "true",
        "site-rebuilt": "true",
      });
      const record = recordOn(s, "better-hud", "1.0.0");
      expect(record).toMatchObject({
        status: "published",
        packageUrl: releaseUrl("better-hud", "1.0.0"),
        sha256: sha256(sub.packageBytes),
        packageSizeBytes: sub.packageBytes.length,
        source: { kind: "pull_request", pullRequestUrl: `https://github.com/${REPOSITORY}/pull/7` },
      });
      // Every installed file with the size and sha256 of the validator's pass, as on the local paths.
      const zip = await JSZip.loadAsync(sub.packageBytes);
      const expectedFiles = await Promise.all(
        Object.values(zip.files)
          .filter((entry) => !entry.dir)
          .map(async (entry) => {
            const bytes = await entry.async("uint8array");
            return { path: entry.name, sizeBytes: bytes.length, sha256: sha256(bytes) };
          }),
      );
      expect(expectedFiles.length).toBeGreaterThan(0);
      expect(
        [...record!.files].sort((a: { path: string }, b: { path: string }) => a.path.localeCompare(b.path)),
      ).toEqual(expectedFiles.sort((a, b) => a.path.localeCompare(b.path)));
      // The site the job uploads to Pages (and saves for the next run) lists the release.
      const catalog = JSON.parse(readFileSync(join(workspace, "site/api/v1/catalog.json"), "utf8"));
      expect(JSON.stringify(catalog)).toContain(releaseUrl("better-hud", "1.0.0"));
      // git holds neither the site nor a package, and the inbox no longer holds the published sidecar.
      const files = s.remote.files();
      expect(files.filter((f) => f.toLowerCase().endsWith(".zip") || f.startsWith("site/"))).toEqual([]);
      expect(files.filter((f) => f.startsWith("submissions/"))).toEqual([]);
      // The next run, restoring this site onto a fresh checkout, finds it matches what was pushed.
      const fresh = await s.checkout();
      expect(readFileSync(join(fresh, "site/api/v1/catalog.json"), "utf8")).toBe(
        readFileSync(join(workspace, "site/api/v1/catalog.json"), "utf8"),
      );
      const check = await runCli(["check"], fresh);
      expect(check.code, check.stderr).toBe(0);

      expect(result.receipts).toEqual([
        {
          path: sub.path,
          pullRequest: 7,
          outcome: "published",
          notify: true,
          receipt: {
            ok: true,
            modId: "better-hud",
            version: "1.0.0",
            artifactUrl: releaseUrl("better-hud", "1.0.0"),
            sha256: sha256(sub.packageBytes),
            sizeBytes: sub.packageBytes.length,
            catalogUrl: `${s.project.config.baseUrl}/api/v1/catalog.json`,
            detailUrl: `${s.project.config.baseUrl}/api/v1/mods/better-hud/index.json`,
          },
        },
      ]);
      expect(result.summary).toContain(
        `| \`${sub.path}\` | #7 | :white_check_mark: published | ${releaseUrl("better-hud", "1.0.0")} |`,
      );
    });

    it("the workflow token cannot update the protected branch: the commit step publish.yml ran before fails with GH006", async () => {
      const s = await start();
      // The old job: GITHUB_TOKEN with contents: write, persisted by actions/checkout, then git push.
      const workspace = await s.checkout({ token: OLD_WORKFLOW_TOKEN, persistCredentials: true });
      mkdirSync(join(workspace, "records"), { recursive: true });
      writeFileSync(join(workspace, "records/manager.json"), "{}\n");
      await git(workspace, ["add", "records"]);
      await git(workspace, ["commit", "-q", "-m", "Publish merged submissions"]);
      const before = s.remote.head();
      const push = await git(workspace, ["push"]).catch((e: { stderr: string }) => e);
      expect((push as { stderr: string }).stderr).toContain(
        "GH006: Protected branch update failed for refs/heads/main.",
      );
      expect(s.remote.head()).toBe(before);
    });

    it("a second merge during the run: the push is rejected as non-fast-forward, rebased onto the new head and pushed; the next run publishes the other", async () => {
      const s = await start();
      const before = s.remote.head();
      const first = mergeApproved(s, 7, "better-hud");
      const workspace = await s.checkout();
      // Merged after this job checked out (its own run is the pending one the concurrency group may cancel).
      const second = mergeApproved(s, 8, "fast-travel");

      const result = await s.run(workspace, pushEvent(before, first.merge, [first.path]));
      expect(result.code, result.stdout).toBe(0);
      expect(result.stdout).toContain("main moved since checkout");
      expect(result.summary).toContain("rebased: 1");
      const head = s.remote.head();
      expect(result.outputs.commit).toBe(head);
      const parent = (await git(s.remote.bare, ["rev-parse", `${head}^`])).stdout.trim();
      expect(parent).toBe(second.merge);
      expect(recordOn(s, "better-hud", "1.0.0")?.packageUrl).toBe(releaseUrl("better-hud", "1.0.0"));
      expect(recordOn(s, "fast-travel", "1.0.0")).toBeNull();
      expect(s.remote.show(second.path)?.toString()).toBe(second.text);

      const next = await s.run(await s.checkout(), scheduleEvent());
      expect(next.code, next.stdout).toBe(0);
      s.github.assertDone();
      expect(recordOn(s, "fast-travel", "1.0.0")?.packageUrl).toBe(releaseUrl("fast-travel", "1.0.0"));
      expect(next.outputs).toMatchObject({ published: "1", deploy: "true" });
      expect(next.receipts).toEqual([expect.objectContaining({ pullRequest: 8, outcome: "published" })]);
    });

    it("two runs of the same publications: the later one's rebase conflicts, it redoes from the new head, finds everything published and pushes nothing", async () => {
      const s = await start();
      const before = s.remote.head();
      const a = mergeApproved(s, 7, "better-hud");
      const b = mergeApproved(s, 8, "fast-travel");
      const late = await s.checkout();
      const early = await s.run(await s.checkout(), scheduleEvent());
      expect(early.code, early.stdout).toBe(0);
      expect(early.outputs.published).toBe("2");
      const head = s.remote.head();

      const result = await s.run(late, pushEvent(before, b.merge, [a.path, b.path]));
      expect(result.code, result.stdout).toBe(0);
      s.github.assertDone();
      expect(result.stdout).toContain("the rebase onto the new head conflicts");
      expect(s.remote.head()).toBe(head);
      expect(result.outputs).toMatchObject({ published: "0", commit: "" });
      expect(result.receipts).toEqual([]);
      // Each version has one release; the second run adopted them (same bytes) instead of failing.
      expect(s.world.releases.map((r) => [r.tag, r.draft])).toEqual([
        ["better-hud-v1.0.0", false],
        ["fast-travel-v1.0.0", false],
      ]);
      expect(result.stdout).not.toMatch(/artifact_exists|version_exists/);
    });

    it("runs cancelled mid-publication (a draft uploaded; a release published, its record never pushed) or failed by an outage are caught up by the next run", async () => {
      const s = await start();
      const before = s.remote.head();
      const sub = mergeApproved(s, 7, "better-hud");
      let child: ChildProcess | undefined;
      const onSpawn = (c: ChildProcess) => {
        child = c;
      };

      s.world.onUpload = () => child?.kill("SIGKILL");
      const first = await s.run(await s.checkout(), pushEvent(before, sub.merge, [sub.path]), { onSpawn });
      expect(first.code).not.toBe(0);
      expect(s.world.releases.map((r) => r.draft)).toEqual([true]);

      s.world.onUpload = null;
      s.world.onPublish = () => child?.kill("SIGKILL");
      const second = await s.run(await s.checkout(), scheduleEvent(), { onSpawn });
      expect(second.code).not.toBe(0);
      // The leftover draft was replaced; the release is public and immutable, but git never heard of it.
      expect(s.world.releases.map((r) => [r.tag, r.draft])).toEqual([["better-hud-v1.0.0", false]]);
      expect(recordOn(s, "better-hud", "1.0.0")).toBeNull();
      expect(s.remote.head()).toBe(sub.merge);

      s.world.onPublish = null;
      s.remote.failNextPush(500);
      const third = await s.run(await s.checkout(), scheduleEvent());
      expect(third.code).toBe(1);
      expect(third.stdout).toContain("::error::push_failed: ");
      expect(recordOn(s, "better-hud", "1.0.0")).toBeNull();

      // A plain dispatch (or the next scheduled run) adopts the release: same bytes, never artifact_exists.
      const fourth = await s.run(await s.checkout(), dispatchEvent());
      expect(fourth.code, fourth.stdout).toBe(0);
      s.github.assertDone();
      expect(fourth.outputs.published).toBe("1");
      expect(s.world.releases).toHaveLength(1);
      expect(s.world.burnedTags.size).toBe(0);
      expect(recordOn(s, "better-hud", "1.0.0")).toMatchObject({
        packageUrl: releaseUrl("better-hud", "1.0.0"),
        sha256: sha256(sub.packageBytes),
      });
      expect(fourth.receipts).toEqual([expect.objectContaining({ pullRequest: 7, outcome: "published" })]);
    });
  },
);

describe.skipIf(skip)("publish: no bypass of the approval", { timeout: RUNS_TIMEOUT }, () => {
  it("one push adds two sidecars under one approved pull request: only that pull request's sidecar is published", async () => {
    const s = await start();
    const before = s.remote.head();
    const approved = s.submission(7, "better-hud", "1.0.0");
    s.world.setStatus(approved.pr, "approved");
    // The attacker's own submission was never approved; its sidecar rides along with #7's merge.
    const smuggled = s.submission(9, "free-credits", "1.0.0");
    s.world.setStatus(smuggled.pr, "pending_review");
    const merge = s.world.merge(approved.pr, { [smuggled.path]: smuggled.text });

    const result = await s.run(await s.checkout(), pushEvent(before, merge, [approved.path, smuggled.path]));
    expect(result.code, result.stdout).toBe(0);
    s.github.assertDone();
    expect(recordOn(s, "better-hud", "1.0.0")).not.toBeNull();
    expect(recordOn(s, "free-credits", "1.0.0")).toBeNull();
    expect(s.world.releases.map((r) => r.tag)).toEqual(["better-hud-v1.0.0"]);
    expect(result.outputs.published).toBe("1");
    expect(result.summary).toContain(`| \`${smuggled.path}\` | #7 | :x: \`pull_request_mismatch\``);
    expect(result.receipts).toEqual([
      expect.objectContaining({ path: approved.path, pullRequest: 7, outcome: "published" }),
      expect.objectContaining({
        path: smuggled.path,
        pullRequest: 7,
        outcome: "refused",
        receipt: expect.objectContaining({
          ok: false,
          error: expect.objectContaining({ code: "pull_request_mismatch" }),
        }),
      }),
    ]);
  });

  it("refuses a pending submission, a status comment typed by a user, an approval of another commit and a sidecar edited after approval", async () => {
    const s = await start();
    const before = s.remote.head();
    const pending = s.submission(11, "mod-a", "1.0.0");
    s.world.setStatus(pending.pr, "pending_review");
    const forged = s.submission(12, "mod-b", "1.0.0");
    s.world.setStatus(forged.pr, "approved", { login: "ada" });
    const stale = s.submission(13, "mod-c", "1.0.0");
    s.world.setStatus(stale.pr, "approved", { headSha: "c".repeat(40) });
    const edited = s.submission(14, "mod-d", "1.0.0");
    s.world.setStatus(edited.pr, "approved");
    for (const sub of [pending, forged, stale, edited]) s.world.merge(sub.pr);
    const sidecar = JSON.parse(edited.text);
    const after = s.remote.commitAs("maintainer", "Tweak the summary", {
      [edited.path]: `${JSON.stringify({ ...sidecar, summary: "Edited on main after the approval." }, null, 2)}\n`,
    });

    const all = [pending, forged, stale, edited].map((x) => x.path);
    const result = await s.run(await s.checkout(), pushEvent(before, after, all));
    expect(result.code, result.stdout).toBe(0);
    s.github.assertDone();
    expect(s.world.releases).toEqual([]);
    // Only the refusals are committed (records/publication/, issue 24 item 5): nothing to deploy.
    expect(result.outputs).toMatchObject({ published: "0", commit: s.remote.head() });
    const committed = (await git(s.remote.bare, ["diff", "--name-only", after, s.remote.head()])).stdout;
    expect(committed.trim().split("\n")).toEqual(
      ["mod-a", "mod-b", "mod-c", "mod-d"].map((m) => ledgerFile(m, "1.0.0")).sort(),
    );
    const codes = (
      result.receipts as Array<{ pullRequest: number; receipt: { error: { code: string } } }>
    ).map((r) => [r.pullRequest, r.receipt.error.code]);
    expect(codes).toEqual([
      [11, "not_approved"],
      [12, "not_approved"],
      [13, "approval_stale"],
      [14, "sidecar_changed"],
    ]);
    for (const code of ["not_approved", "approval_stale", "sidecar_changed"])
      expect(result.summary).toContain(`\`${code}\``);
  });
});

describe.skipIf(skip)("publish: the restored site and site-exact", { timeout: RUNS_TIMEOUT }, () => {
  it("site-exact keeps the restored site unexamined; without it a drifted one is built over and deployed", async () => {
    const s = await start();
    const before = s.remote.head();
    const sub = mergeApproved(s, 7, "better-hud");
    expect((await s.run(await s.checkout(), pushEvent(before, sub.merge, [sub.path]))).code).toBe(0);
    s.world.deployments = [{ id: 1, sha: s.remote.head(), state: "success" }];
    const catalog = "site/api/v1/catalog.json";
    const drift = (workspace: string) => {
      const file = join(workspace, catalog);
      const text = `${JSON.stringify({ ...JSON.parse(readFileSync(file, "utf8")), staleField: true }, null, 2)}\n`;
      writeFileSync(file, text);
      return { file, text };
    };

    // site-exact: the workflow vouches that the entry was saved from exactly these inputs.
    const exactWorkspace = await s.checkout();
    const stale = drift(exactWorkspace);
    const exact = await s.run(exactWorkspace, scheduleEvent(), { inputs: { "site-exact": "true" } });
    expect(exact.code, exact.stdout).toBe(0);
    expect(exact.outputs).toMatchObject({ published: "0", deploy: "false", "site-rebuilt": "false" });
    expect(exact.stdout).toContain("kept without a check");
    expect(readFileSync(stale.file, "utf8")).toBe(stale.text);

    // Anything else: built over, the drift repaired, and Pages deploys the change.
    const workspace = await s.checkout();
    const drifted = drift(workspace);
    const built = await s.run(workspace, scheduleEvent(), { inputs: { "site-exact": "false" } });
    expect(built.code, built.stdout).toBe(0);
    expect(built.outputs).toMatchObject({ published: "0", deploy: "true", "site-rebuilt": "true" });
    expect(readFileSync(drifted.file, "utf8")).not.toContain("staleField");
  });
});

describe.skipIf(skip)("publish: idempotent", { timeout: RUNS_TIMEOUT }, () => {
  it("an already published version is a no-op with no pull request reads; other bytes for it are refused; Pages deploys and the scanner installs only when needed", async () => {
    const s = await start();
    const before = s.remote.head();
    const sub = mergeApproved(s, 7, "better-hud");
    // mode pending reads the checkout only: the job installs ClamAV when some sidecar has no record.
    const pending = await s.run(await s.checkout(), scheduleEvent(), { inputs: { mode: "pending" } });
    expect(pending.outputs).toEqual({ pending: "true" });
    expect(s.github.recorded).toEqual([]);
    expect((await s.run(await s.checkout(), pushEvent(before, sub.merge, [sub.path]))).code).toBe(0);
    const done = await s.run(await s.checkout(), scheduleEvent(), { inputs: { mode: "pending" } });
    expect(done.outputs).toEqual({ pending: "false" });
    // The publication commit took the published sidecar out of the inbox.
    expect(s.remote.files().filter((f) => f.startsWith("submissions/"))).toEqual([]);

    // The same sidecar merged again (another pull request of the same bytes): a no-op, and it leaves.
    const readded = s.remote.commitAs("maintainer", "The same release again", { [sub.path]: sub.text });
    s.world.deployments = [{ id: 1, sha: readded, state: "success" }];
    const reads = s.github.recorded.length;
    // The job restores the site the publication deployed: it matches the records, so it is kept.
    const again = await s.run(await s.checkout(), scheduleEvent());
    expect(again.code, again.stdout).toBe(0);
    expect(again.outputs).toMatchObject({
      published: "0",
      commit: s.remote.head(),
      deploy: "false",
      "site-rebuilt": "false",
    });
    expect(again.summary).toContain("1 sidecar(s) already published with the same sha256 (no-op).");
    const called = s.github.recorded.slice(reads).map((r) => r.operation);
    expect(called).not.toContain("GET /repos/{owner}/{repo}/commits");
    expect(s.remote.files().filter((f) => f.startsWith("submissions/"))).toEqual([]);
    const head = s.remote.head();
    expect(head).not.toBe(readded);

    const sidecar = JSON.parse(sub.text);
    const changed = s.remote.commitAs("maintainer", "Other bytes", {
      [sub.path]: `${JSON.stringify({ ...sidecar, package: { ...sidecar.package, sha256: "d".repeat(64) } }, null, 2)}\n`,
    });
    const refused = await s.run(await s.checkout(), scheduleEvent());
    expect(refused.code, refused.stdout).toBe(0);
    s.github.assertDone();
    expect(refused.outputs).toMatchObject({ published: "0", commit: s.remote.head(), deploy: "true" });
    expect(refused.stdout).toContain(
      `::warning::${sub.path}: published_sha256_differs: better-hud@1.0.0 is published with sha256 ${sha256(sub.packageBytes)}`,
    );
    // Refused, and out of the inbox all the same: the version is published, its bytes never change.
    expect(s.remote.head()).not.toBe(changed);
    expect(s.remote.files().filter((f) => f.startsWith("submissions/"))).toEqual([]);
    expect(recordOn(s, "better-hud", "1.0.0")?.sha256).toBe(sha256(sub.packageBytes));
  });
});

describe("the catalog commit never stages a package, the site, or anything but records and published sidecars", {
  timeout: RUNS_TIMEOUT,
}, () => {
  it("refuses a ZIP or anything under site/downloads/ (zip_staged), any site/ path (site_staged) and paths outside records/ (unexpected_staged_path); nothing is committed or pushed", async () => {
    const tree = mkdtempSync(join(tmpdir(), "svc-tree-"));
    writeFileSync(join(tree, "README.md"), "# portal\n");
    const remote = await startGitRemote({
      repository: REPOSITORY,
      tree,
      tokens: { [APP_TOKEN]: { login: BOT_LOGIN, write: true, bypass: true } },
    });
    try {
      const cases: Array<[string, string]> = [
        ["site/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip", "zip_staged"],
        ["records/mods/better-hud/package.ZIP", "zip_staged"],
        ["site/downloads/framework/2.1.0/notes.txt", "zip_staged"],
        ["site/api/v1/catalog.json", "site_staged"],
        ["README.md", "unexpected_staged_path"],
        ["submissions/better-hud/1.0.0.json", "unexpected_staged_path"],
      ];
      for (const [path, code] of cases) {
        const workspace = await checkoutLikeActions(remote, { token: APP_TOKEN, persistCredentials: false });
        mkdirSync(join(workspace, "records"), { recursive: true });
        writeFileSync(join(workspace, "records/manager.json"), "{}\n");
        mkdirSync(dirname(join(workspace, path)), { recursive: true });
        writeFileSync(join(workspace, path), "PK\u0003\u0004 package bytes");
        // The commit path stages records/ only: anything else is staged by some other step.
        if (!path.startsWith("records/")) await git(workspace, ["add", "-f", path]);
        const error = await pushCatalogCommit({
          cwd: workspace,
          branch: "main",
          token: APP_TOKEN,
          message: () => "Publish",
          // A retired sidecar may only be deleted: this one is added.
          retire: () => ["submissions/better-hud/1.0.0.json"],
          redo: async () => {
            throw new Error("no redo expected");
          },
        }).catch((e: unknown) => e);
        expect(error, path).toBeInstanceOf(CatalogPushError);
        expect((error as CatalogPushError).code, path).toBe(code);
        expect((await git(workspace, ["diff", "--cached", "--name-only"])).stdout, path).toBe("");
        expect((await git(workspace, ["rev-list", "--count", "HEAD"])).stdout.trim(), path).toBe("1");
      }
      expect(remote.accepted()).toEqual([]);
      expect(refusedCatalogPath("site/api/v1/catalog.json")).toBe("site_staged");
      expect(refusedCatalogPath("records/mods/better-hud/1.0.0.json")).toBeNull();
      const retired = new Set(["submissions/better-hud/1.0.0.json"]);
      expect(refusedCatalogPath("submissions/better-hud/1.0.0.json", retired, true)).toBeNull();
      expect(refusedCatalogPath("submissions/better-hud/1.0.0.json", retired, false)).toBe(
        "unexpected_staged_path",
      );
      expect(refusedCatalogPath("submissions/better-hud/1.1.0.json", retired, true)).toBe(
        "unexpected_staged_path",
      );
    } finally {
      await remote.stop();
    }
  });

  it("refuses a checkout that still tracks site/ (site_staged), naming how to move it out of git", async () => {
    const tree = mkdtempSync(join(tmpdir(), "svc-tree-"));
    mkdirSync(join(tree, "site"));
    writeFileSync(join(tree, "site/index.html"), "<!doctype html>\n");
    const remote = await startGitRemote({
      repository: REPOSITORY,
      tree,
      tokens: { [APP_TOKEN]: { login: BOT_LOGIN, write: true, bypass: true } },
    });
    try {
      const workspace = await checkoutLikeActions(remote, { token: APP_TOKEN, persistCredentials: false });
      mkdirSync(join(workspace, "records"), { recursive: true });
      writeFileSync(join(workspace, "records/manager.json"), "{}\n");
      const error = await pushCatalogCommit({
        cwd: workspace,
        branch: "main",
        token: APP_TOKEN,
        message: () => "Publish",
        redo: async () => {
          throw new Error("no redo expected");
        },
      }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(CatalogPushError);
      expect((error as CatalogPushError).code).toBe("site_staged");
      expect((error as CatalogPushError).message).toContain("git rm -r --cached site");
      expect(remote.accepted()).toEqual([]);
    } finally {
      await remote.stop();
    }
  });
});
