import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as core from "@actions/core";
import { Octokit } from "@octokit/rest";
import { validationSummary } from "../../src/bot/comments.ts";
import { splitRepository } from "../../src/github/api.ts";
import { validateSubmission } from "../../src/github/validate-submission.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";

const readJson = (path: string) => {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
};

async function run(): Promise<void> {
  const event = readJson(process.env.GITHUB_EVENT_PATH ?? "");
  const pr = event?.pull_request;
  if (!pr) throw new Error("validate runs on pull_request events: GITHUB_EVENT_PATH has no pull_request");
  const site = join(process.env.GITHUB_WORKSPACE ?? ".", core.getInput("site-dir") || "site");
  const policy = readJson(join(site, "api/v1/publishing/game-publishing-validation.v1.json"));
  if (!policy)
    throw new Error(
      `${site}/api/v1/publishing/game-publishing-validation.v1.json is missing: check out the base branch`,
    );
  const scanner = core.getInput("scanner") === "clamscan" ? createClamscanScanner() : null;
  const api = new Octokit({
    auth: core.getInput("github-token", { required: true }),
    baseUrl: process.env.GITHUB_API_URL,
  });
  const report = await validateSubmission(api, {
    repo: splitRepository(process.env.GITHUB_REPOSITORY ?? ""),
    pullRequest: pr.number,
    headSha: pr.head.sha,
    head: { ref: pr.head.ref, repository: pr.head.repo?.full_name ?? null },
    policy,
    catalog: readJson(join(site, "api/v1/catalog.json")),
    gameBuilds: readJson(join(site, "api/v1/game-builds/latest.json")),
    scanner,
    allowHttp: core.getInput("allow-http") === "true",
  });
  if ("kind" in report) {
    await core.summary
      .addHeading("svc validation", 2)
      .addRaw(
        `${report.sidecarPath} is upload ${report.submissionId}: its package is held privately by the portal, whose validation worker checks it and reports to this pull request. Nothing to download here.`,
      )
      .write();
    core.setOutput("passed", "deferred");
    core.setOutput("report-path", "");
    return;
  }
  const path = core.getInput("report-path") || "submission-report.json";
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  await core.summary.addRaw(validationSummary(report)).write();
  const passed = report.problems.length === 0 && report.report?.passed === true;
  core.setOutput("passed", String(passed));
  core.setOutput("report-path", path);
  if (!passed)
    core.warning(`submission #${pr.number} did not pass validation; the report workflow posts the details`);
}

run().catch((error: unknown) => core.setFailed(error instanceof Error ? error.message : String(error)));
