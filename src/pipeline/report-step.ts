/** The report action's step: the privileged reporter of a finished validation run (workflow_run). */
import { handleValidationRun } from "../bot/handle.ts";
import {
  type ActionContext,
  type ActionIo,
  type ActionOutcome,
  actionOctokit,
  botLoginsInput,
  outcome,
  requiredInput,
} from "./action-step.ts";

interface WorkflowRunPayload {
  id: number;
  path: string;
  event: string;
  conclusion: string | null;
  head_sha: string;
  html_url: string;
  pull_requests?: Array<{ number: number }>;
  head_branch?: string | null;
  head_repository?: { owner?: { login?: string } } | null;
}

// The summary is HTML (what @actions/core's summary writes) and is not escaped for us; log lines may
// quote people's text.
const escapeHtml = (text: string) => text.replace(/[&<>]/g, (c) => `&#${c.charCodeAt(0)};`);

export async function reportStep(context: ActionContext, io: ActionIo): Promise<ActionOutcome> {
  const runInfo = context.payload.workflow_run as WorkflowRunPayload | undefined;
  if (!runInfo) throw new Error("report runs on workflow_run events: the event has no workflow_run");
  const result = await handleValidationRun(
    actionOctokit(context, io, requiredInput(io, "github-token")),
    context.repo,
    {
      id: runInfo.id,
      path: runInfo.path,
      event: runInfo.event,
      conclusion: runInfo.conclusion,
      headSha: runInfo.head_sha,
      htmlUrl: runInfo.html_url,
      pullRequests: (runInfo.pull_requests ?? []).map((pr) => pr.number),
      headBranch: runInfo.head_branch ?? null,
      headOwner: runInfo.head_repository?.owner?.login ?? null,
    },
    { botLogins: botLoginsInput(io), dryRun: io.input("dry-run") === "true", log: io.info },
  );
  const plan = result.plan;
  const cells = [
    result.number === null ? "refused" : `#${result.number}`,
    plan ? `${plan.from} → ${plan.to}` : "",
    String(result.executed.length),
  ];
  const summary =
    "<h1>svc report</h1>\n" +
    `<table><tr><th>pull request</th><th>state</th><th>GitHub actions</th></tr><tr>${cells.map((c) => `<td>${c}</td>`).join("")}</tr></table>\n` +
    // An empty list is a bare <ul>, as the toolkit's summary writes it.
    (result.log.length > 0
      ? `<ul>${result.log.map((line) => `<li>${escapeHtml(line)}</li>`).join("")}</ul>\n`
      : "<ul>\n");
  return outcome({
    summary,
    outputs: {
      "pull-request": result.number === null ? "" : String(result.number),
      state: result.plan?.to ?? "",
      actions: String(result.executed.length),
    },
    notices: result.log,
  });
}
