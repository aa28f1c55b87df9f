/** The report action's step: the privileged reporter of a finished validation run (workflow_run). */
import { handleValidationRun, type WorkflowRunPayload, workflowRunInfo } from "../bot/handle.ts";
import { type ActionOutcome, outcome, type StepEnv } from "./action-step.ts";

// The summary is HTML (what @actions/core's summary writes) and is not escaped for us; log lines may
// quote people's text.
const escapeHtml = (text: string) => text.replace(/[&<>]/g, (c) => `&#${c.charCodeAt(0)};`);

export async function reportStep(env: StepEnv): Promise<ActionOutcome> {
  const { context, io } = env;
  const runInfo = context.payload.workflow_run as WorkflowRunPayload | undefined;
  if (!runInfo) throw new Error("report runs on workflow_run events: the event has no workflow_run");
  const result = await handleValidationRun(
    env.octokit(env.required("github-token")),
    context.repo,
    workflowRunInfo(runInfo),
    {
      botLogins: env.botLogins(),
      // Optional here: a reporter given the app's key seals what it writes (the app's API can then
      // moderate on it); without it the states it writes are unsealed and can never be published.
      statusKey: io.input("app-private-key") ? env.statusKey() : null,
      dryRun: io.input("dry-run") === "true",
      log: io.info,
    },
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
