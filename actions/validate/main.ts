import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as core from "@actions/core";
import * as github from "@actions/github";
import { validationSummary } from "../../src/bot/comments.ts";
import type { GitHubApi } from "../../src/github/api.ts";
import type { SubmissionReport } from "../../src/github/submission-report.ts";
import { validateSubmission, validationErrorReport } from "../../src/pipeline/validate-submission.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";

const readJson = (path: string) => {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
};

async function run(): Promise<void> {
  const pr = github.context.payload.pull_request;
  if (!pr) throw new Error("validate runs on pull_request events: the event has no pull_request");
  const target = { repo: github.context.repo, pullRequest: pr.number, headSha: pr.head.sha as string };
  let report: SubmissionReport;
  // Whatever breaks, a report is written: without one the pull request would say validating forever.
  try {
    const site = join(process.env.GITHUB_WORKSPACE ?? ".", core.getInput("site-dir") || "site");
    const policy = readJson(join(site, "api/v1/publishing/game-publishing-validation.v1.json"));
    if (!policy)
      throw new Error(
        `${site}/api/v1/publishing/game-publishing-validation.v1.json is missing: check out the base branch`,
      );
    const api = github.getOctokit(core.getInput("github-token", { required: true })) as unknown as GitHubApi;
    const result = await validateSubmission(api, {
      ...target,
      head: { ref: pr.head.ref, repository: pr.head.repo?.full_name ?? null },
      policy,
      catalog: readJson(join(site, "api/v1/catalog.json")),
      siteDir: site,
      gameBuilds: readJson(join(site, "api/v1/game-builds/latest.json")),
      scanner: core.getInput("scanner") === "clamscan" ? createClamscanScanner() : null,
      allowHttp: core.getInput("allow-http") === "true",
    });
    if ("kind" in result) {
      await core.summary
        .addHeading("svc validation", 2)
        .addRaw(
          `${result.sidecarPath} is upload ${result.submissionId}: its package is held privately by the portal, whose validation worker checks it and reports to this pull request. Nothing to download here.`,
        )
        .write();
      core.setOutput("passed", "deferred");
      core.setOutput("report-path", "");
      return;
    }
    report = result;
  } catch (error) {
    report = validationErrorReport(target, error);
    core.setFailed(report.problems[0]!.message);
  }
  const path = core.getInput("report-path") || "submission-report.json";
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  await core.summary.addRaw(validationSummary(report)).write();
  const passed = report.problems.length === 0 && report.report?.passed === true;
  core.setOutput("passed", String(passed));
  core.setOutput("report-path", path);
  if (!passed)
    core.warning(
      `submission #${pr.number} did not pass validation; the bot posts the details on the pull request`,
    );
}

run().catch((error: unknown) => core.setFailed(error instanceof Error ? error.message : String(error)));
