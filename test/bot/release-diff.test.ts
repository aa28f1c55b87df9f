/**
 * The release diff on GitHub (issue 25): the validate step's report carries the package's files as
 * the validator measured them and the sidecar's manifest facts; the bot reads the mod's published
 * records from the default branch and shows the diff against the last published version in the
 * status comment (a first release lists its files). The section is sealed with the state: a later
 * write for the same commit keeps it, an edited one is dropped, a push drops it. Real validation
 * over real ZIPs (the scanner is a fake, named as one), real webhook payloads, the loopback GitHub.
 */
import { Octokit } from "@octokit/rest";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DIFF_MARKER, DIFF_MAX_CHARS, releaseDiffSection } from "../../src/bot/release-diff-section.ts";
import { fetchModReleases } from "../../src/bot/fetch.ts";
import { RECORD_PATHS, type ReleaseRecord } from "../../src/contracts/records.ts";
import { computeReleaseDiff } from "../../src/contracts/release-diff.ts";
import { NATIVE_RULES } from "../../src/contracts/validation-contract.ts";
import { intakeSubmissionReport, type SubmissionReport } from "../../src/github/submission-report.ts";
import { validateSubmission } from "../../src/pipeline/validate-submission.ts";
import type { AntivirusScanner } from "../../src/validation/antivirus/scanner.ts";
import { validatePackage } from "../../src/validation/runner.ts";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { modRelease } from "../support/catalog-project.ts";
import { maskSeals, startGitHubServer } from "../support/github-server.ts";
import { expectReportArtifact, PullRequestWorld } from "../support/pull-request-world.ts";
import { SIDECAR_PATH } from "../support/submission-fixtures.ts";
import { releaseRecord } from "../support/temp-project.ts";
import { examplePayload, PORTAL } from "../support/webhook-payloads.ts";
import { catalog, gameBuilds, policy } from "../validation/fixtures.ts";

/** A Windows library as the file_signature check knows one. */
const HOOK_DLL = `MZ${"\u0000".repeat(62)}PE\u0000\u0000${"hook".repeat(200)}`;
const RECORDS_PATH = `records/${RECORD_PATHS.modRecords("better-hud")}`;
const SCENARIOS = new URL("./scenarios/", import.meta.url).pathname;
const PACKAGE_URL = "https://github.com/ada/better-hud/releases/download/v1.2.0/better-hud-1.2.0.zip";

/** Named as a fake: every scan answers clean (the antivirus has its own tests with real ClamAV). */
const CLEAN_SCANNER: AntivirusScanner = {
  description: "fake scanner: every file clean",
  scan: async () => ({ status: "clean" }),
};

let bot: BotHarness;
let world: PullRequestWorld;
beforeEach(async () => {
  bot = await startBot();
  world = new PullRequestWorld(bot.github);
  world.files = [{ filename: SIDECAR_PATH, status: "added" }];
  world.withStatus("validating");
  world.serve();
});
afterEach(async () => {
  await bot.stop();
});

/** The report the validate step writes for `release` at the head: real validation of the real ZIP. */
async function validateStep(
  release: ReturnType<typeof modRelease>,
  published: ReleaseRecord[] = [],
): Promise<SubmissionReport> {
  world.sidecar = { ...release.sidecar, package: { ...release.sidecar.package, url: PACKAGE_URL } };
  const result = await validateSubmission(new Octokit({ auth: "ghs_read", baseUrl: bot.github.url }), {
    repo: { owner: "Codertocat", repo: "Hello-World" },
    pullRequest: world.number,
    headSha: world.headSha,
    policy: policy(),
    catalog: catalog(published),
    gameBuilds: gameBuilds(),
    scanner: CLEAN_SCANNER,
    fetch: async () => new Response(release.packageBytes, { headers: { "content-type": "application/zip" } }),
  });
  if ("kind" in result) throw new Error("not a staged upload");
  return result;
}

/** The published 1.1.0 of better-hud as the default branch records it, files as its validator measured them. */
async function publishedRecord(release: ReturnType<typeof modRelease>) {
  const { inventory } = await validatePackage({
    package: { bytes: release.packageBytes },
    sidecar: release.sidecar,
    policy: policy(),
    catalog: catalog([]),
    gameBuilds: gameBuilds(),
    scanner: CLEAN_SCANNER,
  });
  return releaseRecord({
    version: "1.1.0",
    packageSizeBytes: release.packageBytes.length,
    entrypoints: release.sidecar.entrypoints,
    files: inventory!.files.map(({ path, sizeBytes, sha256 }) => ({ path, sizeBytes, sha256 })),
  });
}

/** The validation run's workflow_run.completed; a later attempt of the same run is a new body (not a replay). */
async function deliverReport(report: SubmissionReport, attempt = 1): Promise<void> {
  expectReportArtifact(bot.github, report, 30433642, attempt);
  const payload = world.workflowRunPayload(world.headSha);
  payload.workflow_run.run_attempt = attempt;
  expect((await bot.deliver("workflow_run", payload)).status).toBe(202);
  bot.github.assertDone();
}

const recordsReads = () =>
  bot.github
    .calls("GET /repos/{owner}/{repo}/contents/{path}")
    .filter((c) => c.params.path === RECORDS_PATH)
    .map((c) => c.query.get("ref"));

const stored = () =>
  JSON.parse(/<!-- svc:status (\{.*?\}) -->/.exec(world.statusComment()!.body)![1]!) as {
    state: string;
    diff?: string;
  };

describe("the release diff in the status comment", () => {
  it("a second version that adds a DLL: the report carries its files, the comment says it adds a native DLL, and an approval keeps it", async () => {
    const previous = await publishedRecord(modRelease({ version: "1.1.0" }));
    world.branchFiles.set(RECORDS_PATH, {
      schema: "svc.mod-records.v1",
      modId: "better-hud",
      releases: [previous],
    });
    const release = modRelease({ version: "1.2.0", extraFiles: { "Binaries/Win64/Hook.dll": HOOK_DLL } });
    const report = await validateStep(release, [previous]);
    // The artifact is what the bot re-reads as untrusted input: the files pass its schema.
    expect(
      intakeSubmissionReport(Buffer.from(JSON.stringify(report)), {
        repository: PORTAL,
        headSha: world.headSha,
      }).ok,
    ).toBe(true);
    expect(report.report?.passed).toBe(true);
    expect(report.package?.fileCount).toBe(3);
    expect(report.package?.files.map((f) => [f.path, f.signature])).toEqual([
      ["svc-mod.json", "text"],
      ["Content/Paks/BetterHud.pak", "text"],
      ["Binaries/Win64/Hook.dll", "pe"],
    ]);

    await deliverReport(report);
    expect(recordsReads()).toEqual(["main"]);
    expect(stored()).toMatchObject({
      state: "pending_review",
      diff: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    const body = world.statusComment()!.body;
    expect(body).toContain("### Changes in 1.2.0 since 1.1.0");
    expect(body).toContain("**Look closely:** adds a native DLL: `Binaries/Win64/Hook.dll`");
    expect(body).toContain("| added | `Binaries/Win64/Hook.dll` (native) |");
    expect(body).toContain("| changed | `Content/Paks/BetterHud.pak` |");
    expect(body).toContain("| changed | `svc-mod.json` |");
    expect(body.length).toBeLessThan(65_536);
    await expect(maskSeals(body)).toMatchFileSnapshot(`${SCENARIOS}release-diff/second-version.comment.txt`);

    // A moderator's approval rewrites the comment for the same commit: the sealed section stays.
    expect((await bot.deliver("pull_request_review", approval())).status).toBe(202);
    expect(stored().state).toBe("approved");
    expect(world.statusComment()!.body).toContain("adds a native DLL");
  });

  it("a first release lists its files; nothing of the mod is published", async () => {
    await deliverReport(await validateStep(modRelease({ version: "1.2.0" })));
    expect(recordsReads()).toEqual(["main"]);
    const body = world.statusComment()!.body;
    expect(body).toContain("### First release: 1.2.0");
    expect(body).toContain("| file | `Content/Paks/BetterHud.pak` |");
    expect(body).toContain("| file | `svc-mod.json` |");
    expect(body).toContain("first release of this mod: 2 files");
  });

  it("records that cannot be read are said so, never taken for a first release", async () => {
    world.branchFiles.set(RECORDS_PATH, { schema: "svc.mod-records.v1", modId: "another-mod", releases: [] });
    await deliverReport(await validateStep(modRelease({ version: "1.2.0" })));
    const body = world.statusComment()!.body;
    expect(body).toContain("Not shown: the published records of `better-hud`");
    expect(body).not.toContain("First release");
  });

  it("an edited diff section is dropped at the next write; a report without package facts reads no records", async () => {
    const previous = await publishedRecord(modRelease({ version: "1.1.0" }));
    world.branchFiles.set(RECORDS_PATH, {
      schema: "svc.mod-records.v1",
      modId: "better-hud",
      releases: [previous],
    });
    const report = await validateStep(
      modRelease({ version: "1.2.0", extraFiles: { "Binaries/Win64/Hook.dll": HOOK_DLL } }),
      [previous],
    );
    await deliverReport(report);
    // Someone with write access rewrites the finding; GitHub keeps showing the app as the author.
    const comment = world.statusComment()!;
    comment.body = comment.body.replace("adds a native DLL", "adds nothing of note");
    expect((await bot.deliver("pull_request_review", approval())).status).toBe(202);
    expect(stored().state).toBe("approved");
    expect(stored().diff).toBeUndefined();
    expect(world.statusComment()!.body).not.toContain(DIFF_MARKER);
    expect(world.statusComment()!.body).not.toContain("adds nothing of note");

    // An older validator's report (no package facts): no diff, and no read of the records.
    world.comments = [];
    world.withStatus("validating");
    const before = recordsReads().length;
    const { package: _facts, ...older } = report;
    await deliverReport(older, 2);
    expect(recordsReads()).toHaveLength(before);
    expect(stored().state).toBe("pending_review");
    expect(world.statusComment()!.body).not.toContain(DIFF_MARKER);
  });

  it("a token that cannot read the records costs the diff, never the report", async () => {
    const github = await startGitHubServer();
    try {
      github.expect("GET /repos/{owner}/{repo}/contents/{path}", {
        status: 403,
        body: {
          message: "Resource not accessible by integration",
          documentation_url: "https://docs.github.com/rest/repos/contents#get-repository-content",
          status: "403",
        },
      });
      const api = new Octokit({ auth: "ghs_no_contents", baseUrl: github.url, retry: { enabled: false } });
      const read = await fetchModReleases(
        api,
        { owner: "Codertocat", repo: "Hello-World" },
        "better-hud",
        "main",
      );
      github.assertDone();
      expect(read).toEqual({
        kind: "unreadable",
        message: `${RECORDS_PATH} answered 403: the token cannot read the repository's contents`,
      });
    } finally {
      await github.stop();
    }
  });

  it("a report listing more than 1,000 files, or a file with a field the schema does not know, is refused", async () => {
    const report = await validateStep(modRelease({ version: "1.2.0" }));
    const file = report.package!.files[0]!;
    const intake = (facts: unknown) =>
      intakeSubmissionReport(Buffer.from(JSON.stringify({ ...report, package: facts })), {
        repository: PORTAL,
        headSha: world.headSha,
      });
    const many = Array.from({ length: 1001 }, (_, i) => ({ ...file, path: `Content/${i}.pak` }));
    expect(intake({ ...report.package, fileCount: 1001, files: many.slice(0, 1000) }).ok).toBe(true);
    expect(intake({ ...report.package, fileCount: 1001, files: many })).toMatchObject({
      ok: false,
      code: "report_invalid",
    });
    expect(intake({ ...report.package, files: [{ ...file, native: false }] })).toMatchObject({
      ok: false,
      code: "report_invalid",
    });
  });

  it("stays within its share of a comment however many native binaries a package adds", () => {
    const files = Array.from({ length: 1000 }, (_, i) => ({
      path: `Binaries/Win64/${"x".repeat(200)}${i}.dll`,
      sizeBytes: 1000 + i,
      sha256: i.toString(16).padStart(64, "0"),
      signature: "pe",
    }));
    const diff = computeReleaseDiff(
      { version: "2.0.0", packageSizeBytes: 10_000_000, files, entrypoints: [], dependencies: [] },
      null,
      NATIVE_RULES,
    );
    const section = releaseDiffSection({ kind: "diff", diff, fileCount: 1000, listed: 1000 });
    expect(section.length).toBeLessThanOrEqual(DIFF_MAX_CHARS);
    expect(section).toContain("and 980 more");
    expect(section).toContain("| … | 950 more | |");
  });
});

/** A real pull_request_review.submitted payload: moderator-mia approves the head commit. */
function approval(): Record<string, any> {
  const payload = examplePayload("pull_request_review", "submitted");
  payload.pull_request.number = world.number;
  payload.review.user.login = "moderator-mia";
  payload.review.state = "approved";
  payload.review.commit_id = world.headSha;
  return payload;
}
