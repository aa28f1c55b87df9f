/**
 * The sweep: every open pull request re-derived on a schedule, so none stays stale after a lost
 * delivery or an outage (DefinitelyTyped's bot sweeps every open pull request the same way). Each
 * one goes fetch -> derive -> decideSweep -> execute, a few steps at most, through the same
 * pipeline as a webhook: a missed push is handled as that push, a lost report is read from its run.
 * Bounded by the API budget: the installation's hourly requests are shared with the bot and the
 * publish job, so the sweep stops while a reserve is left and names what it left for next time.
 */
import type { GitHubApi, RepoRef } from "../github/api.ts";
import type { SweptPullRequest } from "./sweep-comments.ts";
import {
  type CheckRunFact,
  DEFAULT_SWEEP_SETTINGS,
  decideSweep,
  type SweepSettings,
} from "./decide-sweep.ts";
import { deriveSubmission, readReminder, type SubmissionView } from "./derive.ts";
import { executePlan } from "./execute.ts";
import { fetchPullRequestInfo } from "./fetch.ts";
import {
  applyValidationOutcome,
  type BotOptions,
  handleSubmissionEvent,
  latestValidationRun,
  readValidationRun,
  VALIDATE_WORKFLOW_PATH,
} from "./handle.ts";

export interface SweepOptions extends BotOptions {
  /** The portal app's id: only its gate check counts. */
  appId: number;
  settings: SweepSettings;
  /** Requests left for the bot and the publish job: the sweep stops before the budget falls below. */
  reserve: number;
}

export interface SweepResult {
  swept: SweptPullRequest[];
  /** Pull requests whose validation run waits for a maintainer's approval. */
  awaitingRunApproval: number[];
  /** Open pull requests the budget left for the next sweep. */
  deferred: number[];
  /** The core budget when the sweep stopped (null when GitHub does not report one). */
  remaining: number | null;
  /** Pull requests where a step failed (the others were still swept). */
  failed: number[];
}

/** What sweeping one pull request may cost: its reads, and a report's ~20 writes. */
const REQUESTS_PER_PULL_REQUEST = 40;
/** Steps per pull request: a missed push, then its lost report, then its gate. */
const MAX_STEPS = 3;

/** The `sweep` object of portal.config.json (already checked against its schema), defaults filled in. */
export function sweepSettingsOf(config: unknown): SweepSettings {
  const sweep = (config as { sweep?: Partial<SweepSettings> } | null)?.sweep ?? {};
  return { ...DEFAULT_SWEEP_SETTINGS, ...sweep };
}

async function remainingRequests(api: GitHubApi): Promise<number | null> {
  try {
    const { data } = await api.rest.rateLimit.get();
    return data.resources.core.remaining;
  } catch {
    // A server without rate limiting (some GitHub Enterprise Servers) answers 404.
    return null;
  }
}

export async function sweepPullRequests(
  api: GitHubApi,
  repo: RepoRef,
  options: SweepOptions,
): Promise<SweepResult> {
  const pulls = await api.paginate(api.rest.pulls.list, {
    ...repo,
    state: "open",
    // Least recently changed first: when the budget stops a sweep, the next one starts where it stopped.
    sort: "updated",
    direction: "asc",
    per_page: 100,
  });
  const result: SweepResult = {
    swept: [],
    awaitingRunApproval: [],
    deferred: [],
    remaining: null,
    failed: [],
  };
  for (const [index, pull] of pulls.entries()) {
    result.remaining = await remainingRequests(api);
    if (result.remaining !== null && result.remaining < options.reserve + REQUESTS_PER_PULL_REQUEST) {
      result.deferred = pulls.slice(index).map((p) => p.number);
      options.log?.(
        `sweep: ${result.remaining} requests left; ${result.deferred.length} pull request(s) deferred`,
      );
      break;
    }
    try {
      const { swept, view } = await sweepPullRequest(api, repo, pull.number, options);
      result.swept.push(swept);
      if (view?.awaitingRunApproval) result.awaitingRunApproval.push(pull.number);
    } catch (error) {
      // One pull request's failure (a conflict, a refusal) must not stop the others.
      const message = error instanceof Error ? error.message : String(error);
      options.log?.(`sweep: #${pull.number}: ${message}`);
      result.swept.push({ number: pull.number, did: [], note: `failed: ${message}` });
      result.failed.push(pull.number);
    }
  }
  return result;
}

async function headCheckRuns(api: GitHubApi, repo: RepoRef, headSha: string): Promise<CheckRunFact[]> {
  const runs = await api.paginate(api.rest.checks.listForRef, {
    ...repo,
    ref: headSha,
    filter: "latest",
    per_page: 100,
  });
  return runs.map((r) => ({
    name: r.name,
    status: r.status,
    conclusion: r.conclusion ?? null,
    appId: r.app?.id ?? null,
  }));
}

/** One pull request, step by step until nothing is left to do. */
export async function sweepPullRequest(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
  options: SweepOptions,
): Promise<{ swept: SweptPullRequest; view: SubmissionView | null }> {
  const swept: SweptPullRequest = { number, did: [], note: null };
  const trust = { botLogins: options.botLogins, statusKey: options.statusKey };
  const now = options.clock ?? (() => new Date());
  let view: SubmissionView | null = null;
  for (let step = 0; step < MAX_STEPS; step++) {
    const info = await fetchPullRequestInfo(api, repo, number);
    view = deriveSubmission(info, trust);
    const next = decideSweep(
      view,
      {
        now: now(),
        updatedAt: info.updatedAt,
        checkRuns: info.open ? await headCheckRuns(api, repo, info.headSha) : [],
        appId: options.appId,
        reminder: readReminder(info.comments, info.headSha, options.botLogins),
        mergeable: info.mergeable,
      },
      options.settings,
    );
    if (next.kind === "none") {
      swept.note = next.why;
      break;
    }
    if (next.kind === "push") {
      await handleSubmissionEvent(api, repo, number, { kind: "pushed", action: next.action }, options);
      swept.did.push(`handled the missed push of ${info.headSha.slice(0, 12)}`);
      continue;
    }
    if (next.kind === "plan") {
      await executePlan(api, repo, number, next.plan, {
        ...(options.dryRun !== undefined ? { dryRun: options.dryRun } : {}),
        defaultBranch: info.defaultBranch,
        botLogins: options.botLogins,
        statusKey: options.statusKey,
        ...(options.clock ? { clock: options.clock } : {}),
      });
      swept.did.push(next.did);
      continue;
    }
    const read = await readHeadRun(api, repo, number, info.headSha, options);
    if (read.kind === "waiting") {
      swept.note = read.why;
      break;
    }
    swept.did.push(read.did);
  }
  return { swept, view };
}

/** The head's validation run, applied as its workflow_run delivery would have been. */
async function readHeadRun(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
  headSha: string,
  options: SweepOptions,
): Promise<{ kind: "waiting"; why: string } | { kind: "applied"; did: string }> {
  const path = options.validateWorkflowPath ?? VALIDATE_WORKFLOW_PATH;
  const run = await latestValidationRun(api, repo, headSha, path);
  if (!run) return { kind: "waiting", why: "no validation run of the head commit exists: a push starts one" };
  // GitHub lists a run held for approval as waiting, or as completed with action_required. The run
  // was found by this pull request's head: it is this pull request's (a fork's run names none).
  const held = {
    ...run,
    pullRequests: [number],
    ...(run.status === "waiting" ? { conclusion: "action_required" } : {}),
  };
  if (held.status !== "completed" && held.conclusion !== "action_required")
    return { kind: "waiting", why: `the validation run is ${run.status ?? "queued"}` };
  const outcome = await readValidationRun(api, repo, held, options);
  if (outcome.kind === "ignored") return { kind: "waiting", why: outcome.why };
  const handled = await applyValidationOutcome(api, repo, outcome, options);
  const moved = handled.find((h) => h.plan && h.plan.actions.length > 0)?.plan;
  if (!moved) return { kind: "waiting", why: handled.flatMap((h) => h.log).join("; ") || "nothing to apply" };
  return {
    kind: "applied",
    did:
      outcome.kind === "awaiting_approval"
        ? "marked: the validation run waits for a maintainer's approval"
        : `applied the validation run's ${outcome.kind === "report" ? "report" : "failure"} (${moved.from} -> ${moved.to})`,
  };
}
