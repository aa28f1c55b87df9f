/**
 * The bot's pipelines, one per kind of event: fetch -> derive -> decide -> execute. Platform-free:
 * the Probot app, the Actions adapter and tests all call these with a GitHubApi.
 */
import type { GitHubApi, RepoRef } from "../github/api.ts";
import {
  intakeSubmissionReport,
  SUBMISSION_REPORT_ARTIFACT,
  SUBMISSION_REPORT_FILE,
  SUBMISSION_REPORT_MAX_BYTES,
} from "../github/submission-report.ts";
import { inflateEntry, readZipStructure } from "../validation/zip/reader.ts";
import type { PublishReceipt } from "./comments.ts";
import { type BotEvent, decide, parseCommand, type Plan } from "./decide.ts";
import { deriveSubmission, isBot } from "./derive.ts";
import { type ExecutedAction, executePlan } from "./execute.ts";
import { fetchModeratorPolicy, fetchPullRequestInfo, isModerator } from "./fetch.ts";

export interface BotOptions {
  /** Logins whose status comments are trusted (the app's `slug[bot]`, or github-actions[bot]). */
  botLogins: string[];
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
  | { kind: "comment_pending"; commenter: string; body: string };

/** Runs one pull-request-scoped event through the whole pipeline. */
export async function handleSubmissionEvent(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
  pending: PendingEvent,
  options: BotOptions,
): Promise<HandledEvent> {
  const info = await fetchPullRequestInfo(api, repo, number);
  const view = deriveSubmission(info, options.botLogins);
  if (view.shape.kind === "not_a_submission")
    return { number, plan: null, executed: [], log: ["not a submission pull request"] };
  let event: BotEvent;
  if (pending.kind === "review_pending" || pending.kind === "comment_pending") {
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
    }
  } else {
    event = pending;
  }
  const plan = decide(view, event);
  for (const line of plan.log) options.log?.(`#${number}: ${line}`);
  const executed = await executePlan(api, repo, number, plan, {
    ...(options.dryRun !== undefined ? { dryRun: options.dryRun } : {}),
    defaultBranch: info.defaultBranch,
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
}

/**
 * The privileged half of validation: downloads the report artifact of a finished validation run,
 * re-validates it (schema, repository, head SHA) and only then acts on the pull request it names.
 */
export async function handleValidationRun(
  api: GitHubApi,
  repo: RepoRef,
  run: WorkflowRunInfo,
  options: BotOptions,
): Promise<HandledEvent> {
  const ignore = (why: string): HandledEvent => {
    options.log?.(why);
    return { number: null, plan: null, executed: [], log: [why] };
  };
  if (run.path !== (options.validateWorkflowPath ?? VALIDATE_WORKFLOW_PATH))
    return ignore(`not the validation workflow: ${run.path}`);
  if (run.event !== "pull_request") return ignore(`validation run triggered by ${run.event}`);
  const bytes = await downloadReportArtifact(api, repo, run.id);
  if (!bytes) return ignore(`run ${run.id} has no ${SUBMISSION_REPORT_ARTIFACT} artifact`);
  return handleReportBytes(api, repo, bytes, { headSha: run.headSha, runUrl: run.htmlUrl }, options);
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

export async function downloadReportArtifact(
  api: GitHubApi,
  repo: RepoRef,
  runId: number,
): Promise<Uint8Array | null> {
  const artifacts = await api.paginate(api.rest.actions.listWorkflowRunArtifacts, {
    ...repo,
    run_id: runId,
    per_page: 100,
  });
  const artifact = artifacts.find((a) => a.name === SUBMISSION_REPORT_ARTIFACT && !a.expired);
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
