// The one adapter between a runner and a pipeline step (src/pipeline/*-step.ts): the runner's
// context and inputs in, the step's outputs, job summary, annotations and failure out. Every
// action's main.ts is this call with its step.
import * as core from "@actions/core";
import { context } from "@actions/github";
import { type ActionContext, type ActionIo, type ActionStep, StepEnv } from "../src/pipeline/action-step.ts";

export function runStep(step: ActionStep): void {
  const actionContext: ActionContext = {
    eventName: context.eventName,
    payload: context.payload as Record<string, unknown>,
    ref: context.ref,
    sha: context.sha,
    get repo() {
      return context.repo;
    },
    apiUrl: context.apiUrl,
    serverUrl: context.serverUrl,
    workspace: process.env.GITHUB_WORKSPACE ?? process.cwd(),
    ...(process.env.SVC_GITHUB_DOWNLOAD_URL ? { downloadBase: process.env.SVC_GITHUB_DOWNLOAD_URL } : {}),
  };
  const io: ActionIo = {
    input: (name) => core.getInput(name),
    info: core.info,
    debug: core.debug,
    warning: core.warning,
    setSecret: core.setSecret,
    idToken: (audience) => core.getIDToken(audience),
  };
  step(new StepEnv(actionContext, io))
    .then(async (outcome) => {
      for (const [name, value] of Object.entries(outcome.outputs)) core.setOutput(name, value);
      if (outcome.summary !== null) await core.summary.addRaw(outcome.summary).write();
      for (const line of outcome.warnings) core.warning(line);
      for (const line of outcome.notices) core.notice(line);
      if (outcome.failure !== null) core.setFailed(outcome.failure);
    })
    .catch((error: unknown) => {
      const code = (error as { code?: unknown }).code;
      const message = error instanceof Error ? error.message : String(error);
      core.setFailed(typeof code === "string" ? `${code}: ${message}` : message);
    });
}
