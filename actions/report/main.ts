import * as core from "@actions/core";
import * as github from "@actions/github";
import { handleValidationRun } from "../../src/bot/handle.ts";
import type { GitHubApi } from "../../src/github/api.ts";

async function run(): Promise<void> {
  const runInfo = github.context.payload.workflow_run;
  if (!runInfo) throw new Error("report runs on workflow_run events: the event has no workflow_run");
  const api = github.getOctokit(core.getInput("github-token", { required: true })) as unknown as GitHubApi;
  const result = await handleValidationRun(
    api,
    github.context.repo,
    {
      id: runInfo.id,
      path: runInfo.path,
      event: runInfo.event,
      conclusion: runInfo.conclusion,
      headSha: runInfo.head_sha,
      htmlUrl: runInfo.html_url,
      pullRequests: (runInfo.pull_requests ?? []).map((pr: { number: number }) => pr.number),
      headBranch: runInfo.head_branch ?? null,
      headOwner: runInfo.head_repository?.owner?.login ?? null,
    },
    {
      botLogins: (core.getInput("bot-logins") || "github-actions[bot]").split(",").map((s) => s.trim()),
      dryRun: core.getInput("dry-run") === "true",
      log: (message) => core.info(message),
    },
  );
  const plan = result.plan;
  await core.summary
    .addHeading("svc report")
    .addTable([
      ["pull request", "state", "GitHub actions"].map((data) => ({ data, header: true })),
      [
        result.number === null ? "refused" : `#${result.number}`,
        plan ? `${plan.from} → ${plan.to}` : "",
        String(result.executed.length),
      ],
    ])
    // The summary is HTML and core.summary does not escape; log lines may quote people's text.
    .addList(result.log.map((line) => line.replace(/[&<>]/g, (c) => `&#${c.charCodeAt(0)};`)))
    .write();
  core.setOutput("pull-request", result.number === null ? "" : String(result.number));
  core.setOutput("state", result.plan?.to ?? "");
  core.setOutput("actions", String(result.executed.length));
  for (const line of result.log) core.notice(line);
}

run().catch((error: unknown) => core.setFailed(error instanceof Error ? error.message : String(error)));
