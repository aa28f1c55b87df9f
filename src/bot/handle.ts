/**
 * The bot's pipelines, one per kind of event: fetch -> derive -> decide -> execute. Platform-free:
 * the Probot app, the Actions adapter and tests all call these with a GitHubApi.
 */
import type { GitHubApi, RepoRef } from "../github/api.ts";
import type { SubmissionProblem } from "../github/submission-files.ts";
import {
  intakeSubmissionReport,
  SUBMISSION_REPORT_ARTIFACT,
  SUBMISSION_REPORT_FILE,
  SUBMISSION_REPORT_MAX_BYTES,
  type SubmissionReport,
  submissionReportArtifact,
} from "../github/submission-report.ts";
import { inflateEntry, readZipStructure } from "../validation/zip/reader.ts";
import { maySubmit } from "../contracts/ownership.ts";
import type { PublishReceipt } from "./receipt-comments.ts";
import {
  type BotEvent,
  decide,
  type Membership,
  parseCommand,
  type Plan,
  type ValidationRunRef,
} from "./decide.ts";
import { deriveSubmission, isBot, parseStoredStatus, type SubmissionView } from "./derive.ts";
import { type ExecutedAction, executePlan } from "./execute.ts";
import {
  fetchModeratorPolicy,
  fetchModReleases,
  fetchOwnership,
  fetchPullRequestInfo,
  isModerator,
} from "./fetch.ts";
import type { PullRequestInfo } from "./pull-request.ts";
import { type StatusKey, verifyStatus } from "./status-seal.ts";

export interface BotOptions {
  /** Logins whose status comments are trusted (the app's `slug[bot]`). */
  botLogins: string[];
  /**
   * The key the app seals its records with (deriveStatusKey of its private key). null only for the
   * Actions reporter run without the key: it writes and trusts unsealed states, none of which can
   * be published.
   */
  statusKey: StatusKey | null;
  clock?: () => Date;
  dryRun?: boolean;
  /** The validation workflow's file name; its workflow_run events carry the report artifact. */
  validateWorkflowPath?: string;
  log?: (message: string) => void;
}

export interface HandledEvent {
  number: number | null;
  plan: Plan | null;
  executed: ExecutedAction[];
  log: string[];
}

export const VALIDATE_WORKFLOW_PATH = ".github/workflows/validate-submission.yml";

type PendingEvent =
  | BotEvent
  | { kind: "review_pending"; reviewer: string; verdict: string; commitId: string | null; body: string }
  | { kind: "comment_pending"; commenter: string; body: string }
  /** issue_comment.edited of a comment the app wrote: `previousBody` is changes.body.from. */
  | { kind: "status_edit_pending"; editor: string; commentId: number; previousBody: string | null };

/** Decisions that move a submission: the ones no owner or collaborator of the mod may take. */
function isDecision(event: BotEvent): boolean {
  if (event.kind === "review") return event.verdict === "approved" || event.verdict === "changes_requested";
  return event.kind === "command" && event.command.name !== "revalidate";
}

/** Whether `login` owns or collaborates on the submitted mod, from the ownership record on the default branch. */
async function membershipOf(
  api: GitHubApi,
  repo: RepoRef,
  info: PullRequestInfo,
  view: SubmissionView,
  login: string,
): Promise<Membership> {
  if (view.shape.kind !== "submission") return "none";
  const read = await fetchOwnership(api, repo, view.shape.sidecar.modId, info.defaultBranch);
  if (read.kind === "unreadable") return "unreadable";
  if (read.kind === "unclaimed") return "none";
  return maySubmit(read.ownership, [{ github: login }]) ? "member" : "none";
}

/**
 * The mod's published records are read for a report only when it can be applied (for the head, a
 * submission waiting for it) and carries the package facts a release diff compares with them.
 */
function reportNeedsReleases(view: SubmissionView, report: SubmissionReport): boolean {
  return (
    report.package !== undefined &&
    view.shape.kind === "submission" &&
    report.headSha === view.headSha &&
    view.state === "validating" &&
    view.stored?.headSha === view.headSha
  );
}

/** Runs one pull-request-scoped event through the whole pipeline. */
export async function handleSubmissionEvent(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
  pending: PendingEvent,
  options: BotOptions,
): Promise<HandledEvent> {
  const trust = { botLogins: options.botLogins, statusKey: options.statusKey };
  const info = await fetchPullRequestInfo(api, repo, number);
  const view = deriveSubmission(info, trust);
  // A pull request that is not a submission only gets its gate, on a push.
  if (view.shape.kind === "not_a_submission" && pending.kind !== "pushed")
    return { number, plan: null, executed: [], log: ["not a submission pull request"] };
  let event: BotEvent;
  if (pending.kind === "status_edit_pending") {
    if (isBot(pending.editor, options.botLogins))
      return { number, plan: null, executed: [], log: ["the app's own edit"] };
    const previous = pending.previousBody === null ? null : parseStoredStatus(pending.previousBody);
    const scope = { repository: `${repo.owner}/${repo.repo}`, pullRequest: number };
    const verified =
      previous !== null && (options.statusKey === null || verifyStatus(options.statusKey, scope, previous));
    event = {
      kind: "status_edited",
      editor: pending.editor,
      commentId: pending.commentId,
      restorable:
        verified && pending.previousBody !== null ? { stored: previous, body: pending.previousBody } : null,
    };
  } else if (pending.kind === "review_pending" || pending.kind === "comment_pending") {
    const actor = pending.kind === "review_pending" ? pending.reviewer : pending.commenter;
    if (isBot(actor, options.botLogins))
      return { number, plan: null, executed: [], log: ["the bot's own event"] };
    const policy = await fetchModeratorPolicy(api, repo, info.defaultBranch);
    const moderator = await isModerator(api, policy, actor);
    if (pending.kind === "review_pending") {
      const verdict = pending.verdict.toLowerCase();
      event = {
        kind: "review",
        reviewer: actor,
        verdict:
          verdict === "approved" || verdict === "changes_requested" || verdict === "dismissed"
            ? verdict
            : "commented",
        commitId: pending.commitId,
        isModerator: moderator,
        body: pending.body,
      };
    } else {
      const command = parseCommand(pending.body);
      if (!command) return { number, plan: null, executed: [], log: ["not a /svc command"] };
      event = { kind: "command", commenter: actor, command, isModerator: moderator };
      if (
        command.name === "revalidate" &&
        (moderator || actor.toLowerCase() === view.submitter?.toLowerCase())
      )
        event.validationRun = await findValidationRun(
          api,
          repo,
          info.headSha,
          options.validateWorkflowPath ?? VALIDATE_WORKFLOW_PATH,
        );
    }
    // Read only for a moderator's decision that could count: the record decides whether it does.
    if (
      (event.kind === "review" || event.kind === "command") &&
      event.isModerator &&
      isDecision(event) &&
      view.submitter !== null &&
      view.submitter.toLowerCase() !== actor.toLowerCase()
    )
      event.membership = await membershipOf(api, repo, info, view, actor);
  } else if (pending.kind === "report" && reportNeedsReleases(view, pending.report)) {
    const { modId } = view.shape.kind === "submission" ? view.shape.sidecar : { modId: "" };
    event = { ...pending, releases: await fetchModReleases(api, repo, modId, info.defaultBranch) };
  } else {
    event = pending;
  }
  const plan = decide(view, event);
  for (const line of plan.log) options.log?.(`#${number}: ${line}`);
  const executed = await executePlan(api, repo, number, plan, {
    ...(options.dryRun !== undefined ? { dryRun: options.dryRun } : {}),
    defaultBranch: info.defaultBranch,
    botLogins: options.botLogins,
    statusKey: options.statusKey,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  return { number, plan, executed, log: plan.log };
}

export interface WorkflowRunInfo {
  id: number;
  path: string;
  event: string;
  conclusion: string | null;
  headSha: string;
  htmlUrl: string;
  /** Which attempt of the run finished (a re-run is the same run, attempt 2 and on); null when not sent. */
  attempt?: number | null;
  /** Pull requests GitHub attached to the run (empty for a pull request from a fork). */
  pullRequests?: number[];
  /** The head branch and its owner: how a fork's pull request is found. */
  headBranch?: string | null;
  headOwner?: string | null;
}

/** The workflow_run fields of a webhook payload or a runner's event (unchecked JSON). */
export interface WorkflowRunPayload {
  id: number;
  path: string;
  event: string;
  conclusion: string | null;
  head_sha: string;
  html_url: string;
  run_attempt?: number | null;
  pull_requests?: Array<{ number: number } | null> | null;
  head_branch?: string | null;
  head_repository?: { owner?: { login?: string } | null } | null;
}

/** A workflow_run payload as the bot reads it. */
export function workflowRunInfo(run: WorkflowRunPayload): WorkflowRunInfo {
  return {
    id: run.id,
    path: run.path,
    event: run.event,
    conclusion: run.conclusion ?? null,
    headSha: run.head_sha,
    htmlUrl: run.html_url,
    attempt:
      Number.isSafeInteger(run.run_attempt) && (run.run_attempt as number) > 0 ? run.run_attempt : null,
    pullRequests: (run.pull_requests ?? []).flatMap((pr) => (pr ? [pr.number] : [])),
    headBranch: run.head_branch ?? null,
    headOwner: run.head_repository?.owner?.login ?? null,
  };
}

/** What a finished validation run means for the pull requests it validated. */
export type ValidationOutcome =
  | { kind: "ignored"; why: string }
  /** GitHub holds the run for a maintainer's approval (a first-time contributor's pull request). */
  | { kind: "awaiting_approval"; numbers: number[]; headSha: string; runUrl: string }
  | { kind: "report"; number: number; report: SubmissionReport; runUrl: string }
  | { kind: "incomplete"; numbers: number[]; headSha: string; problem: SubmissionProblem; runUrl: string };

/** Conclusions of a run that did not validate: the PR would otherwise say validating forever. */
const UNFINISHED_CONCLUSIONS = new Set(["failure", "cancelled", "timed_out", "startup_failure"]);

/**
 * Reads a finished validation run: its report artifact re-validated as untrusted input (schema,
 * repository, head SHA), or, when there is no usable report, which pull requests the run left
 * waiting. Nothing is written here.
 */
export async function readValidationRun(
  api: GitHubApi,
  repo: RepoRef,
  run: WorkflowRunInfo,
  options: Pick<BotOptions, "validateWorkflowPath">,
): Promise<ValidationOutcome> {
  if (run.path !== (options.validateWorkflowPath ?? VALIDATE_WORKFLOW_PATH))
    return { kind: "ignored", why: `not the validation workflow: ${run.path}` };
  if (run.event !== "pull_request")
    return { kind: "ignored", why: `validation run triggered by ${run.event}` };
  const incomplete = async (problem: SubmissionProblem): Promise<ValidationOutcome> => {
    const numbers = await findPullRequestsOfRun(api, repo, run);
    if (numbers.length === 0)
      return { kind: "ignored", why: `${problem.code}: no open pull request has head ${run.headSha}` };
    return { kind: "incomplete", numbers, headSha: run.headSha, problem, runUrl: run.htmlUrl };
  };
  // Held for "Approve and run": no job ran, so there is no artifact to look for.
  if (run.conclusion === "action_required") {
    const numbers = await findPullRequestsOfRun(api, repo, run);
    if (numbers.length === 0)
      return { kind: "ignored", why: `action_required: no open pull request has head ${run.headSha}` };
    return { kind: "awaiting_approval", numbers, headSha: run.headSha, runUrl: run.htmlUrl };
  }
  const bytes = await downloadReportArtifact(api, repo, run.id, run.attempt ?? null);
  if (!bytes) {
    // A successful run without a report is the portal's own staged upload (its worker reports).
    if (!UNFINISHED_CONCLUSIONS.has(run.conclusion ?? ""))
      return {
        kind: "ignored",
        why: `run ${run.id} (${run.conclusion}) has no ${SUBMISSION_REPORT_ARTIFACT} artifact for attempt ${run.attempt ?? "?"}`,
      };
    return incomplete({
      code: "validation_run_failed",
      message: `the validation run ended ${run.conclusion} without a report`,
    });
  }
  const intake = intakeSubmissionReport(bytes, {
    repository: `${repo.owner}/${repo.repo}`,
    headSha: run.headSha,
  });
  // A report for another repository or commit than the run is not this run's report: refused. One
  // that breaks its schema is this run's, broken (a stale validator, a truncated upload): the pull
  // request it leaves waiting ends failed, and may be validated again.
  if (!intake.ok && intake.code === "report_mismatch")
    return { kind: "ignored", why: `${intake.code}: ${intake.message}` };
  if (!intake.ok) return incomplete({ code: intake.code, message: intake.message });
  return { kind: "report", number: intake.report.pullRequest, report: intake.report, runUrl: run.htmlUrl };
}

/** Applies an outcome: the report to its pull request, or the incomplete run to each it left waiting. */
export async function applyValidationOutcome(
  api: GitHubApi,
  repo: RepoRef,
  outcome: ValidationOutcome,
  options: BotOptions,
): Promise<HandledEvent[]> {
  if (outcome.kind === "ignored") {
    options.log?.(outcome.why);
    return [{ number: null, plan: null, executed: [], log: [outcome.why] }];
  }
  if (outcome.kind === "report")
    return [
      await handleSubmissionEvent(
        api,
        repo,
        outcome.number,
        { kind: "report", report: outcome.report, runUrl: outcome.runUrl },
        options,
      ),
    ];
  const handled: HandledEvent[] = [];
  for (const number of outcome.numbers)
    handled.push(await handleSubmissionEvent(api, repo, number, outcomeEvent(outcome), options));
  return handled;
}

/** The event an outcome about several pull requests is for each of them. */
export function outcomeEvent(
  outcome: Extract<ValidationOutcome, { kind: "incomplete" | "awaiting_approval" }>,
): Extract<BotEvent, { kind: "validation_incomplete" | "run_awaiting_approval" }> {
  return outcome.kind === "awaiting_approval"
    ? { kind: "run_awaiting_approval", headSha: outcome.headSha, runUrl: outcome.runUrl }
    : {
        kind: "validation_incomplete",
        headSha: outcome.headSha,
        problem: outcome.problem,
        runUrl: outcome.runUrl,
      };
}

/**
 * The privileged half of validation in one call (the Actions adapter): read the finished run, then
 * act on the pull request it names.
 */
export async function handleValidationRun(
  api: GitHubApi,
  repo: RepoRef,
  run: WorkflowRunInfo,
  options: BotOptions,
): Promise<HandledEvent> {
  const outcome = await readValidationRun(api, repo, run, options);
  const handled = await applyValidationOutcome(api, repo, outcome, options);
  return handled.length === 1
    ? handled[0]!
    : {
        number: handled.find((h) => h.number !== null)?.number ?? null,
        plan: handled.find((h) => h.plan)?.plan ?? null,
        executed: handled.flatMap((h) => h.executed),
        log: handled.flatMap((h) => h.log),
      };
}

/**
 * The open pull requests whose head is the run's commit. GitHub attaches them to the run only for
 * branches of the repository itself; a fork's is found by its head branch.
 */
export async function findPullRequestsOfRun(
  api: GitHubApi,
  repo: RepoRef,
  run: WorkflowRunInfo,
): Promise<number[]> {
  if (run.pullRequests && run.pullRequests.length > 0) return run.pullRequests;
  if (!run.headBranch || !run.headOwner) return [];
  const pulls = await api.paginate(api.rest.pulls.list, {
    ...repo,
    state: "open",
    head: `${run.headOwner}:${run.headBranch}`,
    per_page: 100,
  });
  return pulls.filter((p) => p.head.sha === run.headSha).map((p) => p.number);
}

/** The latest run of the validation workflow for a commit (what `/svc revalidate` re-runs). */
export async function findValidationRun(
  api: GitHubApi,
  repo: RepoRef,
  headSha: string,
  workflowPath: string,
): Promise<ValidationRunRef | null> {
  const run = await latestValidationRun(api, repo, headSha, workflowPath);
  return run ? { id: run.id, status: run.status, conclusion: run.conclusion } : null;
}

/**
 * The latest run of the validation workflow for a commit as the reporter reads a finished one (the
 * sweep's catch-up when its workflow_run delivery was lost), with its status.
 */
export async function latestValidationRun(
  api: GitHubApi,
  repo: RepoRef,
  headSha: string,
  workflowPath: string,
): Promise<(WorkflowRunInfo & { status: string | null }) | null> {
  const { data } = await api.rest.actions.listWorkflowRuns({
    ...repo,
    workflow_id: workflowPath.split("/").pop()!,
    head_sha: headSha,
    event: "pull_request",
    per_page: 1,
  });
  const run = data.workflow_runs[0];
  if (!run) return null;
  return {
    ...workflowRunInfo({ ...run, path: run.path ?? workflowPath, event: run.event ?? "pull_request" }),
    status: run.status ?? null,
  };
}

/** After every retry failed: the pull request's status comment says so (and may end retryable). */
export async function handleDeliveryFailure(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
  failure: { event: string; deliveryId: string; attempts: number; error: string },
  options: BotOptions,
): Promise<HandledEvent> {
  return handleSubmissionEvent(api, repo, number, { kind: "delivery_failed", ...failure }, options);
}

/** The report as bytes (downloaded by the app, or by actions/download-artifact in the Actions adapter). */
export async function handleReportBytes(
  api: GitHubApi,
  repo: RepoRef,
  bytes: Uint8Array,
  run: { headSha: string; runUrl: string | null },
  options: BotOptions,
): Promise<HandledEvent> {
  const intake = intakeSubmissionReport(bytes, {
    repository: `${repo.owner}/${repo.repo}`,
    headSha: run.headSha,
  });
  if (!intake.ok) {
    options.log?.(`${intake.code}: ${intake.message}`);
    return { number: null, plan: null, executed: [], log: [`${intake.code}: ${intake.message}`] };
  }
  return handleSubmissionEvent(
    api,
    repo,
    intake.report.pullRequest,
    { kind: "report", report: intake.report, runUrl: run.runUrl },
    options,
  );
}

export async function handlePublishReceipt(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
  receipt: PublishReceipt,
  options: BotOptions,
): Promise<HandledEvent> {
  return handleSubmissionEvent(api, repo, number, { kind: "published", receipt }, options);
}

/**
 * The report of one attempt of a validation run (submissionReportArtifact). Another attempt's
 * report is never taken for it: a re-run whose upload failed has no report, which is a retryable
 * failure, not the earlier attempt's verdict. Without an attempt (an event that does not say), the
 * newest attempt's is read.
 */
export async function downloadReportArtifact(
  api: GitHubApi,
  repo: RepoRef,
  runId: number,
  attempt: number | null = null,
): Promise<Uint8Array | null> {
  const artifacts = await api.paginate(api.rest.actions.listWorkflowRunArtifacts, {
    ...repo,
    run_id: runId,
    per_page: 100,
  });
  const attemptOf = (name: string): number | null => {
    // Runs that started before the per-attempt name uploaded `submission-report`: only a first attempt did.
    if (name === SUBMISSION_REPORT_ARTIFACT) return 1;
    const match = /^submission-report-([1-9][0-9]{0,5})$/.exec(name);
    return match ? Number(match[1]) : null;
  };
  const candidates = artifacts
    .filter((a) => !a.expired)
    .map((a) => ({ artifact: a, attempt: attemptOf(a.name) }))
    .filter((c) => c.attempt !== null && (attempt === null || c.attempt === attempt))
    .sort(
      (a, b) =>
        b.attempt! - a.attempt! || (a.artifact.name === submissionReportArtifact(a.attempt!) ? -1 : 1),
    );
  const artifact = candidates[0]?.artifact;
  if (!artifact) return null;
  if (artifact.size_in_bytes > SUBMISSION_REPORT_MAX_BYTES) return null;
  const { data } = await api.rest.actions.downloadArtifact({
    ...repo,
    artifact_id: artifact.id,
    archive_format: "zip",
  });
  return extractReportFile(Buffer.from(data as ArrayBuffer));
}

/** The one JSON file inside the artifact ZIP, read with the validator's safe ZIP reader and caps. */
export function extractReportFile(zip: Buffer): Uint8Array | null {
  if (zip.length > SUBMISSION_REPORT_MAX_BYTES) return null;
  const structure = readZipStructure(zip, {
    maxEntries: 4,
    maxNameBytes: 128,
    maxPathDepth: 2,
    maxEntryUncompressedBytes: SUBMISSION_REPORT_MAX_BYTES,
    maxTotalUncompressedBytes: SUBMISSION_REPORT_MAX_BYTES,
    maxCompressionRatio: 200,
    compressionRatioMinBytes: 64 * 1024,
  });
  if (structure.unsafeToInflate) return null;
  const entry = structure.entries.find((e) => e.name === SUBMISSION_REPORT_FILE && !e.isDirectory);
  if (!entry) return null;
  const result = inflateEntry(zip, entry);
  return result.ok ? result.data : null;
}
