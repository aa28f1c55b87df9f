/**
 * What decide works with: the events the bot reacts to, the actions a plan takes, and the helpers
 * every decision shares (machine walks, the status comment and its label).
 */
import type { SubmissionProblem } from "../github/submission-files.ts";
import type { ReportCheck, SubmissionReport } from "../github/submission-report.ts";
import { sha256Hex } from "../lib/hash.ts";
import { type Action, type Actor, type SubmissionState, transition } from "../workflow/machine.ts";
import {
  AWAITING_RUN_APPROVAL_LABEL,
  checkRunName,
  GATE_CHECK_ID,
  type GateVerdict,
  gateCheckOutput,
  renderStatusComment,
  type StoredStatus,
  stateLabel,
} from "./comments.ts";
import type { PublishReceipt } from "./receipt-comments.ts";
import type { SubmissionView } from "./derive.ts";
import type { ModReleasesRead } from "./fetch.ts";

export type SvcCommand =
  | { name: "reject"; reason: string }
  | { name: "hide" }
  | { name: "unhide" }
  | { name: "revalidate" }
  | { name: "invalid"; message: string };

/** The latest validate-submission run of the head commit, looked up for `/svc revalidate`. */
export interface ValidationRunRef {
  id: number;
  status: string | null;
  conclusion: string | null;
}

export type BotEvent =
  | { kind: "pushed"; action: "opened" | "reopened" | "synchronize" }
  | {
      kind: "report";
      report: SubmissionReport;
      runUrl: string | null;
      /** The mod's published records, read when the report carries the facts of a release diff. */
      releases?: ModReleasesRead;
    }
  | {
      kind: "review";
      reviewer: string;
      verdict: "approved" | "changes_requested" | "commented" | "dismissed";
      commitId: string | null;
      isModerator: boolean;
      /** Whether the reviewer owns or collaborates on the mod; undefined when not looked up. */
      membership?: Membership;
      body: string;
    }
  | {
      kind: "command";
      commenter: string;
      command: SvcCommand;
      isModerator: boolean;
      /** Whether the commenter owns or collaborates on the mod; undefined when not looked up. */
      membership?: Membership;
      /** Only for revalidate: undefined when not looked up, null when the head has no run. */
      validationRun?: ValidationRunRef | null;
    }
  /**
   * A validation run of `headSha` that ended without a usable report (it failed, was cancelled, or
   * its artifact is missing or invalid).
   */
  | { kind: "validation_incomplete"; headSha: string; problem: SubmissionProblem; runUrl: string | null }
  /** The bot gave up on an event for this pull request after every retry. */
  | { kind: "delivery_failed"; event: string; deliveryId: string; attempts: number; error: string }
  /**
   * A validation run of `headSha` ended `action_required`: GitHub holds a first-time contributor's
   * workflows until a maintainer approves them.
   */
  | { kind: "run_awaiting_approval"; headSha: string; runUrl: string | null }
  | { kind: "closed"; merged: boolean }
  | { kind: "published"; receipt: PublishReceipt }
  /**
   * A decision taken through the portal API (moderation_decision) on a pull request the portal
   * opened. The API has already checked the caller's role and that they are not the submitter.
   */
  | {
      kind: "portal_decision";
      decision: "approve" | "request_changes" | "reject" | "hide" | "unhide";
      moderator: string;
      notes: string;
    }
  /**
   * Someone other than the app edited a comment that holds (or held) the stored state. `restorable`
   * is the text from before the edit (GitHub sends it with the webhook) when its seal verifies.
   */
  | {
      kind: "status_edited";
      editor: string;
      commentId: number;
      restorable: { stored: StoredStatus; body: string } | null;
    };

/** Whether a person owns or collaborates on the mod (its entry of records/owners/{shard}.json on the default branch). */
export type Membership = "member" | "none" | "unreadable";

export interface CheckRunAction {
  type: "create_check_run";
  name: string;
  headSha: string;
  /** null: the run is written in_progress (a verdict still to come; it blocks a required check). */
  conclusion: "success" | "failure" | "skipped" | null;
  title: string;
  summary: string;
  text?: string;
  annotations: Array<{
    path: string;
    start_line: number;
    end_line: number;
    annotation_level: "failure";
    message: string;
    title: string;
  }>;
}

export type BotAction =
  | { type: "set_state_label"; add: string; remove: string[] }
  /** A label beside the state label (AWAITING_RUN_APPROVAL_LABEL). */
  | { type: "add_label"; name: string }
  | { type: "remove_label"; name: string }
  | { type: "close_pull_request" }
  /** Deletes the pull request's intake branch (svc/release/..., the portal's own); gone already is fine. */
  | { type: "delete_branch"; ref: string }
  /** Merges the pull request only while its head is still `sha` (GitHub refuses otherwise). */
  | { type: "merge_pull_request"; sha: string }
  /** The body carries `stored` unsealed; execute seals it as it writes (the key never reaches decide). */
  | { type: "upsert_status_comment"; commentId: number | null; stored: StoredStatus; body: string }
  | CheckRunAction
  | { type: "dismiss_review"; reviewId: number; message: string }
  | { type: "reply"; body: string }
  | { type: "dispatch_visibility"; action: "hide" | "unhide"; modId: string; version: string }
  | { type: "rerun_validation"; runId: number };

export interface Plan {
  from: SubmissionState;
  to: SubmissionState;
  actions: BotAction[];
  /** Why nothing (or less) happened: for the log, never posted. */
  log: string[];
}

/** Runs several machine moves in a row; stops at the first illegal one. */
export function walk(
  from: SubmissionState,
  steps: Array<[Action, Actor]>,
): { ok: true; to: SubmissionState } | { ok: false; at: SubmissionState; message: string } {
  let state = from;
  for (const [action, actor] of steps) {
    const result = transition(state, action, actor);
    if (!result.ok) return { ok: false, at: state, message: result.message };
    state = result.to;
  }
  return { ok: true, to: state };
}

export interface StatusExtras {
  failedChecks?: ReportCheck[];
  problems?: SubmissionReport["problems"];
  notes?: string[];
  runUrl?: string | null;
  retryable?: boolean;
  /**
   * The commit the written state is for, when it is not the head: a state kept as it was (a
   * delivery that failed) stays the state of the commit it was decided for, never the head's.
   */
  headSha?: string;
  /** Keep AWAITING_RUN_APPROVAL_LABEL (every other status write removes it). */
  keepAwaitingLabel?: boolean;
  /**
   * The release diff section (releaseDiffSection) a report brought; null: none. Undefined keeps the
   * comment's sealed section while the state is written for the same commit.
   */
  releaseDiff?: string | null;
}

/** What the gate lets merge in each state: only an approval (or what follows it) passes. */
export function gateVerdict(state: SubmissionState): GateVerdict {
  switch (state) {
    case "approved":
    case "published":
    case "hidden":
    case "superseded":
      return "success";
    case "validation_failed":
    case "changes_requested":
    case "rejected":
    case "cancelled":
      return "failure";
    case "draft":
    case "uploaded":
    case "validating":
    case "pending_review":
      return "pending";
  }
}

/** The gate check run on `headSha`. */
export function gateCheckRun(
  headSha: string,
  verdict: GateVerdict,
  why: Parameters<typeof gateCheckOutput>[1],
): CheckRunAction {
  return {
    type: "create_check_run",
    name: checkRunName(GATE_CHECK_ID),
    headSha,
    conclusion: verdict === "pending" ? null : verdict,
    ...gateCheckOutput(verdict, why),
    annotations: [],
  };
}

/**
 * The gate after a status write, when it changes: a state written for another commit than the head
 * leaves the head unvalidated (pending), whatever the state. Unchanged (same commit, same verdict,
 * a stored state that verified), it is not written again: the gate of that commit already says it,
 * and the sweep writes it where it is missing.
 */
function gateAfter(view: SubmissionView, to: SubmissionState, stateHead: string): CheckRunAction | null {
  const verdict = stateHead === view.headSha ? gateVerdict(to) : "pending";
  const before =
    view.stored && !view.statusVoid && view.stored.headSha === view.headSha
      ? gateVerdict(view.stored.state)
      : null;
  if (before === verdict) return null;
  return gateCheckRun(
    view.headSha,
    verdict,
    stateHead === view.headSha ? { kind: "state", state: to } : { kind: "not_validated" },
  );
}

export function statusActions(
  view: SubmissionView,
  to: SubmissionState,
  extras: StatusExtras = {},
): BotAction[] {
  const inQueue = view.pendingQueue.indexOf(view.number);
  const queueLength = view.pendingQueue.length + (inQueue < 0 && to === "pending_review" ? 1 : 0);
  const position = to === "pending_review" ? (inQueue < 0 ? queueLength : inQueue + 1) : null;
  const headSha = extras.headSha ?? view.headSha;
  const releaseDiff =
    extras.releaseDiff !== undefined
      ? extras.releaseDiff
      : view.stored?.headSha === headSha
        ? view.releaseDiff
        : null;
  const stored: StoredStatus = {
    state: to,
    headSha,
    ...(extras.retryable ? { retryable: true } : {}),
    ...(releaseDiff ? { diff: sha256Hex(releaseDiff) } : {}),
  };
  const record = view.submitterRecord;
  const body = renderStatusComment({
    stored,
    number: view.number,
    sidecarPath: view.shape.kind === "submission" ? view.shape.sidecar.path : null,
    packageUrl: view.packageUrl,
    packageFileName: view.packageFileName,
    failedChecks: extras.failedChecks ?? [],
    problems: extras.problems ?? (view.shape.kind === "malformed" ? view.shape.problems : []),
    queuePosition: position,
    queueLength,
    notes: extras.notes ?? [],
    runUrl: extras.runUrl ?? null,
    submitter: view.submitter,
    claim:
      record?.claim && view.shape.kind === "submission"
        ? { modId: view.shape.sidecar.modId, repository: record.repository?.fullName ?? null }
        : null,
    releaseDiff,
  });
  const actions: BotAction[] = [];
  const label = stateLabel(to);
  const remove = view.stateLabels.filter((l) => l !== label);
  if (remove.length > 0 || !view.stateLabels.includes(label))
    actions.push({ type: "set_state_label", add: label, remove });
  actions.push({ type: "upsert_status_comment", commentId: view.statusCommentId, stored, body });
  if (view.awaitingRunApproval && !extras.keepAwaitingLabel)
    actions.push({ type: "remove_label", name: AWAITING_RUN_APPROVAL_LABEL });
  // After the comment: the gate never says more than the stored state it follows.
  const gate = gateAfter(view, to, stored.headSha);
  if (gate) actions.push(gate);
  return actions;
}

export function nothing(view: SubmissionView, why: string): Plan {
  return { from: view.state, to: view.state, actions: [], log: [why] };
}
