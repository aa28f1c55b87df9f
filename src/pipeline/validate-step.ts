/** The validate action's step: the submission pull request's sidecar, package and every check. */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { validationSummary } from "../bot/comments.ts";
import { buildSite } from "../catalog/site-build.ts";
import { projectPaths } from "../catalog/site.ts";
import { loadPortalConfig } from "../contracts/portal-config.ts";
import type { SubmissionReport } from "../github/submission-report.ts";
import { createClamscanScanner } from "../validation/antivirus/clamscan.ts";
import { type ActionOutcome, outcome, type StepEnv } from "./action-step.ts";
import { validateSubmission, validationErrorReport } from "./validate-submission.ts";

const POLICY_PATH = "api/v1/publishing/game-publishing-validation.v1.json";

const readJson = (path: string) => {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
};

interface PullRequestPayload {
  number: number;
  head: { sha: string; ref: string; repo?: { full_name?: string } | null };
}

export async function validateStep(env: StepEnv): Promise<ActionOutcome> {
  const { context, io } = env;
  const pr = context.payload.pull_request as PullRequestPayload | undefined;
  if (!pr) throw new Error("validate runs on pull_request events: the event has no pull_request");
  const target = { repo: context.repo, pullRequest: pr.number, headSha: pr.head.sha };
  let report: SubmissionReport;
  let failure: string | null = null;
  // Whatever breaks, a report is written: without one the pull request would say validating forever.
  try {
    const site = join(context.workspace, io.input("site-dir") || "site");
    // site/ is a build output, not in the checkout. The workflow restores the last deployment the
    // publish job saved; validation reads it as it is when site-exact says that entry was saved
    // from exactly the base checkout's inputs. Otherwise (an older entry, or none) svc build runs
    // over it from the base branch's records (policy, every published version, game builds).
    const restored = existsSync(join(site, POLICY_PATH));
    if (restored && io.input("site-exact") === "true")
      io.info("site/ was restored from a cache entry saved from exactly these inputs: read as it is");
    else {
      const paths = projectPaths(context.workspace, { siteDir: site });
      const built = await buildSite(paths, loadPortalConfig(paths.configPath));
      io.info(
        `${restored ? "site/ restored from an older cache entry" : "no restored site"}: svc build wrote ${built.written.length} of ${built.files} files`,
      );
    }
    const policy = readJson(join(site, POLICY_PATH));
    if (!policy)
      throw new Error(
        `${site}/api/v1/publishing/game-publishing-validation.v1.json is missing: check out the base branch`,
      );
    const result = await validateSubmission(env.octokit(env.required("github-token")), {
      ...target,
      head: { ref: pr.head.ref, repository: pr.head.repo?.full_name ?? null },
      policy,
      catalog: readJson(join(site, "api/v1/catalog.json")),
      siteDir: site,
      gameBuilds: readJson(join(site, "api/v1/game-builds/latest.json")),
      scanner: io.input("scanner") === "clamscan" ? createClamscanScanner() : null,
      allowHttp: io.input("allow-http") === "true",
    });
    if ("kind" in result) {
      return outcome({
        summary: `<h2>svc validation</h2>\n${result.sidecarPath} is upload ${result.submissionId}: its package is held privately by the portal, whose validation worker checks it and reports to this pull request. Nothing to download here.`,
        outputs: { passed: "deferred", "report-path": "" },
      });
    }
    report = result;
  } catch (error) {
    report = validationErrorReport(target, error);
    failure = report.problems[0]!.message;
  }
  const path = io.input("report-path") || "submission-report.json";
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  const passed = report.problems.length === 0 && report.report?.passed === true;
  return outcome({
    summary: validationSummary(report),
    outputs: { passed: String(passed), "report-path": path },
    warnings: passed
      ? []
      : [`submission #${pr.number} did not pass validation; the bot posts the details on the pull request`],
    failure,
  });
}
