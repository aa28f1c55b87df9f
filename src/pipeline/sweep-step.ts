/**
 * The sweep action's step (sweep.yml, on a schedule): every open pull request re-derived as the
 * app, sealed like the app's own writes. The settings are portal.config.json's `sweep` on the
 * checked-out default branch.
 */
import { join } from "node:path";
import { sweepSummary } from "../bot/sweep-comments.ts";
import { type SweepResult, sweepPullRequests, sweepSettingsOf } from "../bot/sweep.ts";
import { loadPortalConfig } from "../contracts/portal-config.ts";
import { type ActionOutcome, outcome, type StepEnv } from "./action-step.ts";

/**
 * What the sweep's installation token may do: check runs (the gate), the status comment and labels,
 * the validation runs and their report artifacts, the sidecar and portal.config.json; contents:
 * write only when it merges.
 */
export function sweepTokenPermissions(autoMerge: boolean): Record<string, "read" | "write"> {
  return {
    checks: "write",
    issues: "write",
    pull_requests: "write",
    actions: "read",
    contents: autoMerge ? "write" : "read",
  };
}

/** Requests the sweep leaves to the bot and the publish job, which share the installation's budget. */
export const DEFAULT_SWEEP_RESERVE = 1000;

export async function sweepStep(env: StepEnv): Promise<ActionOutcome> {
  const { context, io } = env;
  const botLogins = env.botLogins();
  const statusKey = env.statusKey();
  const appId = Number(env.required("app-id"));
  if (!Number.isSafeInteger(appId) || appId < 1)
    throw new Error("app-id must be the portal app's numeric id (vars.SVC_APP_ID)");
  const reserveText = io.input("reserve").trim();
  const reserve = reserveText === "" ? DEFAULT_SWEEP_RESERVE : Number(reserveText);
  if (!Number.isSafeInteger(reserve) || reserve < 0)
    throw new Error(`reserve must be a whole number, not ${reserveText}`);
  const settings = sweepSettingsOf(loadPortalConfig(join(context.workspace, "portal.config.json")));
  const api = env.octokit(await env.mintAppToken(sweepTokenPermissions(settings.autoMerge)));
  const result: SweepResult = await sweepPullRequests(api, context.repo, {
    botLogins,
    statusKey,
    appId,
    settings,
    reserve,
    dryRun: io.input("dry-run") === "true",
    log: io.info,
  });
  return outcome({
    summary: sweepSummary(result),
    outputs: {
      swept: String(result.swept.length),
      changed: result.swept
        .filter((p) => p.did.length > 0)
        .map((p) => p.number)
        .join(","),
      deferred: result.deferred.join(","),
      "awaiting-run-approval": result.awaitingRunApproval.join(","),
    },
    warnings: [
      ...result.failed.map((n) => `sweep: #${n} failed (see the log); the next sweep tries again`),
      ...(result.deferred.length > 0
        ? [`sweep: ${result.deferred.length} pull request(s) left for the next sweep (API budget)`]
        : []),
    ],
  });
}
