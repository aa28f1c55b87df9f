/**
 * A pull request that edits the validation workflow cannot pass: it runs its own version of that
 * workflow (pull_request workflows come from the merge commit), so it can upload any report it
 * likes. The bot judges the pull request's shape from the file list it reads itself, and treats the
 * report only as data checked against the sidecar it reads at the head commit.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { shapeOf } from "../../src/bot/derive.ts";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { expectReportArtifact, PullRequestWorld } from "../support/pull-request-world.ts";
import { SIDECAR_PATH, sidecar, submissionReport } from "../support/submission-fixtures.ts";

let bot: BotHarness;
let world: PullRequestWorld;
beforeEach(async () => {
  bot = await startBot();
  world = new PullRequestWorld(bot.github);
  world.sidecar = sidecar();
});
afterEach(async () => {
  await bot.stop();
});

interface CheckRunBody {
  name: string;
  conclusion: string;
  output: { title: string; text?: string };
}
const checkRuns = () =>
  bot.github.calls("POST /repos/{owner}/{repo}/check-runs").map((c) => c.body as CheckRunBody);

describe("a pull request that adds a sidecar and edits the validate workflow", () => {
  beforeEach(() => {
    world.files = [
      { filename: SIDECAR_PATH, status: "added" },
      { filename: ".github/workflows/validate-submission.yml", status: "modified" },
    ];
  });

  it("fails at once on its shape, and its forged all-passed report shows no green check", async () => {
    world.expectFetch({ sidecar: false }).expectLabel().expectStatusComment("create");
    bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 2);
    expect((await bot.deliver("pull_request", world.pullRequestPayload("opened"))).status).toBe(202);
    bot.github.assertDone();
    expect(world.labels).toEqual(["state:validation_failed"]);
    expect(checkRuns()).toEqual([
      expect.objectContaining({ name: "svc / submission", conclusion: "failure" }),
      expect.objectContaining({ name: "svc / gate", conclusion: "failure" }),
    ]);
    expect(checkRuns()[0]!.output.text).toContain("submission_touches_other_files");

    // The workflow it edited uploads a report that says every check passed.
    expectReportArtifact(bot.github, submissionReport(world.headSha));
    world.expectFetch({ sidecar: false });
    expect((await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha))).status).toBe(202);
    bot.github.assertDone();
    expect(checkRuns().filter((c) => c.conclusion === "success")).toEqual([]);
    expect(world.labels).toEqual(["state:validation_failed"]);
    expect(world.comments).toHaveLength(1);
    expect(world.statusComment()!.body).toContain("submission_touches_other_files");
  });

  it("still waiting for a report (state recorded before the edit): the forged report that claims no sidecar changes nothing but the failure", async () => {
    world.withStatus("validating");
    const forged = { ...submissionReport(world.headSha), sidecarPath: null };
    expectReportArtifact(bot.github, forged);
    world.expectFetch({ sidecar: false }).expectLabel().expectStatusComment("update");
    bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 2);
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha));
    bot.github.assertDone();
    expect(checkRuns().map((c) => [c.name, c.conclusion])).toEqual([
      ["svc / submission", "failure"],
      ["svc / gate", "failure"],
    ]);
    expect(world.labels).toEqual(["state:validation_failed"]);
  });
});

describe("a report checked against the sidecar the bot reads at the head commit", () => {
  beforeEach(() => {
    world.files = [{ filename: SIDECAR_PATH, status: "added" }];
    world.withStatus("validating");
  });

  for (const [what, forge] of [
    [
      "another package sha256",
      (r: ReturnType<typeof submissionReport>) => (r.report!.packageSha256 = "c".repeat(64)),
    ],
    ["another package size", (r: ReturnType<typeof submissionReport>) => (r.report!.packageSizeBytes = 1)],
    ["another modId", (r: ReturnType<typeof submissionReport>) => (r.report!.modId = "other-mod")],
    [
      "another sidecar",
      (r: ReturnType<typeof submissionReport>) => (r.sidecarPath = "submissions/other-mod/1.0.0.json"),
    ],
  ] as const) {
    it(`a passing report naming ${what} is not applied: one failing check, report_mismatch`, async () => {
      const report = submissionReport(world.headSha);
      forge(report);
      expectReportArtifact(bot.github, report);
      world.expectFetch().expectLabel().expectStatusComment("update");
      bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 2);
      await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha));
      bot.github.assertDone();
      expect(checkRuns().map((c) => [c.name, c.conclusion])).toEqual([
        ["svc / submission", "failure"],
        ["svc / gate", "failure"],
      ]);
      expect(checkRuns()[0]!.output.text).toContain("report_mismatch");
      expect(world.labels).toEqual(["state:validation_failed"]);
      expect(world.statusComment()!.body).not.toContain('"retryable"');
    });
  }

  it("a matching report passes with one check run per check", async () => {
    expectReportArtifact(bot.github, submissionReport(world.headSha));
    world.expectFetch().expectLabel().expectStatusComment("update");
    bot.github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, 15);
    await bot.deliver("workflow_run", world.workflowRunPayload(world.headSha));
    bot.github.assertDone();
    expect(checkRuns().every((c) => c.conclusion === "success")).toBe(true);
    expect(world.labels).toEqual(["state:pending_review"]);
  });
});

it("a pull request with more files than GitHub lists is never a submission", () => {
  const files = [{ filename: SIDECAR_PATH, status: "added" }];
  expect(shapeOf({ files, changedFiles: 1 })).toMatchObject({ kind: "submission" });
  expect(shapeOf({ files, changedFiles: 3001 })).toMatchObject({
    kind: "malformed",
    problems: [{ code: "submission_touches_other_files" }],
  });
});
