/**
 * derive: pure facts about a submission from what fetch read. No I/O.
 */
import { classifySubmission, type SubmissionShape } from "../github/submission-files.ts";
import { STATES, type SubmissionState } from "../workflow/machine.ts";
import {
  AWAITING_RUN_APPROVAL_LABEL,
  REMINDER_MARKER,
  STATE_LABEL_PREFIX,
  STATUS_MARKER,
  type StoredStatus,
  SUBMITTER_MARKER,
  type SubmitterRecord,
} from "./comments.ts";
import { RELEASE_BRANCH_PREFIX } from "./intake-comments.ts";
import type { ReminderRecord } from "./sweep-comments.ts";
import type { PullRequestInfo } from "./pull-request.ts";
import { readDiffSection } from "./release-diff-section.ts";
import { type StatusKey, verifyStatus, verifySubmitter } from "./status-seal.ts";

/** Whose records count: the app's logins, and the key its records are sealed with. */
export interface TrustOptions {
  botLogins: readonly string[];
  /**
   * With a key, only sealed records count (the bot, the API, the publish workflow). null only for
   * the Actions reporter run without the app's key: it trusts the logins alone, and nothing it
   * trusts can be published, since publication requires a sealed approval.
   */
  statusKey: StatusKey | null;
}

export interface SubmissionView {
  number: number;
  open: boolean;
  merged: boolean;
  headSha: string;
  /**
   * The person who submitted: the pull request's author, or for a pull request the app opened the
   * person its sealed record names (the human behind a release, a portal account). null when it
   * cannot be established (no valid record, or a bot account): then no review or command counts.
   */
  submitter: string | null;
  /** The app's sealed record of a pull request it opened: the source repository and any claim. */
  submitterRecord: SubmitterRecord | null;
  /**
   * A status comment exists but its stored state does not verify (edited by someone else, or never
   * sealed): it counts for nothing, and the submission is treated as a retryable validation failure.
   */
  statusVoid: boolean;
  shape: SubmissionShape;
  /** The current state: what the bot's status comment stores; draft for a new submission. */
  state: SubmissionState;
  stored: StoredStatus | null;
  statusCommentId: number | null;
  /** state:* labels currently on the pull request. */
  stateLabels: string[];
  /** The pull request carries AWAITING_RUN_APPROVAL_LABEL (its validation run waits for a maintainer). */
  awaitingRunApproval: boolean;
  /** Approving reviews still on record (a push dismisses them). */
  approvals: Array<{ id: number; login: string }>;
  pendingQueue: number[];
  packageUrl: string | null;
  packageFileName: string | null;
  /** What the sidecar at the head commit says, read by the bot itself: a report is checked against it. */
  sidecarIdentity: SidecarIdentity | null;
  /**
   * The release diff section of the status comment whose digest the stored state seals: a later
   * write for the same commit keeps it. null when there is none (or it does not hash to the seal).
   */
  releaseDiff: string | null;
  /**
   * The head branch when it is an intake branch the app opened in the portal repository itself
   * (svc/release/..., never the default branch): deleted once the pull request is closed.
   */
  intakeBranch?: string | null;
}

export interface SidecarIdentity {
  modId: unknown;
  version: unknown;
  sha256: unknown;
  sizeBytes: unknown;
}

const STATE_IDS = new Set<string>(STATES.map((s) => s.id));

export function parseStoredStatus(body: string): StoredStatus | null {
  if (!body.startsWith(STATUS_MARKER)) return null;
  const end = body.indexOf("-->");
  if (end < 0) return null;
  try {
    const value = JSON.parse(body.slice(STATUS_MARKER.length, end)) as {
      state?: unknown;
      headSha?: unknown;
      retryable?: unknown;
      diff?: unknown;
      at?: unknown;
      sig?: unknown;
    };
    if (typeof value.state !== "string" || !STATE_IDS.has(value.state)) return null;
    if (typeof value.headSha !== "string" || !/^[0-9a-f]{40}$/.test(value.headSha)) return null;
    return {
      state: value.state as SubmissionState,
      headSha: value.headSha,
      ...(value.retryable === true ? { retryable: true } : {}),
      ...(typeof value.diff === "string" && /^[0-9a-f]{64}$/.test(value.diff) ? { diff: value.diff } : {}),
      ...(typeof value.at === "string" ? { at: value.at } : {}),
      ...(typeof value.sig === "string" ? { sig: value.sig } : {}),
    };
  } catch {
    return null;
  }
}

/** The submitter record after SUBMITTER_MARKER in a pull request body, unverified; null when absent or malformed. */
export function parseSubmitterRecord(body: string): SubmitterRecord | null {
  const at = body.indexOf(SUBMITTER_MARKER);
  if (at < 0) return null;
  const end = body.indexOf("-->", at);
  if (end < 0) return null;
  try {
    const value = JSON.parse(body.slice(at + SUBMITTER_MARKER.length, end)) as Record<string, unknown>;
    if (typeof value.login !== "string" || value.login.length === 0) return null;
    const repository = value.repository as { fullName?: unknown; id?: unknown } | undefined;
    const validRepository =
      repository !== undefined &&
      typeof repository.fullName === "string" &&
      Number.isSafeInteger(repository.id);
    if (repository !== undefined && !validRepository) return null;
    return {
      login: value.login,
      source: typeof value.source === "string" ? value.source : "",
      ...(validRepository
        ? { repository: { fullName: repository.fullName as string, id: repository.id as number } }
        : {}),
      ...(value.claim === true ? { claim: true } : {}),
      ...(typeof value.sig === "string" ? { sig: value.sig } : {}),
    };
  } catch {
    return null;
  }
}

/** A bot account: one of the app's logins, GitHub's own (github-actions[bot]) or any `[bot]` login. */
export function isBotAccount(login: string, type = ""): boolean {
  return type === "Bot" || /\[bot\]$/i.test(login);
}

/**
 * The person behind the pull request. A pull request the app opened names them in its sealed
 * record; any other is its author's, unless the author is a bot account: a bot is never a submitter.
 */
export function submitterOf(
  info: Pick<PullRequestInfo, "authorLogin" | "authorType" | "body" | "headRef" | "repo">,
  trust: TrustOptions,
): { login: string | null; record: SubmitterRecord | null } {
  if (!isBot(info.authorLogin, trust.botLogins)) {
    const human = !isBotAccount(info.authorLogin, info.authorType) && info.authorLogin !== "";
    return { login: human ? info.authorLogin : null, record: null };
  }
  const record = parseSubmitterRecord(info.body);
  if (!record) return { login: null, record: null };
  const scope = { repository: `${info.repo.owner}/${info.repo.repo}`, branch: info.headRef };
  if (trust.statusKey && !verifySubmitter(trust.statusKey, scope, record))
    return { login: null, record: null };
  return { login: isBotAccount(record.login) ? null : record.login, record };
}

export function isBot(login: string, botLogins: readonly string[]): boolean {
  return botLogins.some((b) => b.toLowerCase() === login.toLowerCase());
}

/**
 * The stored state of the status comment. It counts only when the app wrote it: the comment must be
 * the app's, and with a key its seal must verify for this pull request (anyone with write access
 * can edit the app's comment, and GitHub keeps showing the app as its author).
 */
export function readStoredStatus(
  comments: ReadonlyArray<{ id: number; body: string; authorLogin: string }>,
  scope: { repository: string; pullRequest: number },
  trust: TrustOptions,
): { commentId: number | null; stored: StoredStatus | null; void: boolean; releaseDiff: string | null } {
  // The oldest one: when two were ever written at once, the execute step keeps the oldest.
  const comment = comments
    .filter((c) => isBot(c.authorLogin, trust.botLogins) && c.body.startsWith(STATUS_MARKER))
    .sort((a, b) => a.id - b.id)[0];
  if (!comment) return { commentId: null, stored: null, void: false, releaseDiff: null };
  const stored = parseStoredStatus(comment.body);
  const sealed =
    stored !== null && (trust.statusKey === null || verifyStatus(trust.statusKey, scope, stored));
  return {
    commentId: comment.id,
    stored: sealed ? stored : null,
    void: !sealed,
    releaseDiff: sealed && stored.diff ? readDiffSection(comment.body, stored.diff) : null,
  };
}

/**
 * The sweep's newest reminder for `headSha`, written by the app (a person's comment with the marker
 * counts for nothing); null when there is none.
 */
export function readReminder(
  comments: ReadonlyArray<{ body: string; authorLogin: string }>,
  headSha: string,
  botLogins: readonly string[],
): ReminderRecord | null {
  let newest: ReminderRecord | null = null;
  for (const comment of comments) {
    if (!isBot(comment.authorLogin, botLogins) || !comment.body.startsWith(REMINDER_MARKER)) continue;
    const end = comment.body.indexOf("-->");
    if (end < 0) continue;
    try {
      const value = JSON.parse(comment.body.slice(REMINDER_MARKER.length, end)) as Partial<ReminderRecord>;
      if (value.headSha !== headSha || typeof value.at !== "string" || Number.isNaN(Date.parse(value.at)))
        continue;
      if (!newest || value.at > newest.at) newest = { headSha, at: value.at };
    } catch {
      // A reminder whose record does not parse is not a reminder.
    }
  }
  return newest;
}

export function deriveSubmission(info: PullRequestInfo, trust: TrustOptions): SubmissionView {
  const status = readStoredStatus(
    info.comments,
    { repository: `${info.repo.owner}/${info.repo.repo}`, pullRequest: info.number },
    trust,
  );
  // A void state is a validation failure anyone may retry: nothing it said is believed, and a push
  // or `/svc revalidate` validates the head again.
  const stored: StoredStatus | null = status.void
    ? { state: "validation_failed", headSha: info.headSha, retryable: true }
    : status.stored;
  const submitter = submitterOf(info, trust);
  const sidecar = info.sidecar as {
    modId?: unknown;
    version?: unknown;
    package?: { url?: unknown; fileName?: unknown; sha256?: unknown; sizeBytes?: unknown };
  } | null;
  // The latest review per reviewer counts; an approval later replaced by a comment still stands on GitHub.
  const approvals = info.reviews
    .filter((r) => r.state === "APPROVED")
    .map((r) => ({ id: r.id, login: r.authorLogin }));
  return {
    number: info.number,
    open: info.open,
    merged: info.merged,
    headSha: info.headSha,
    submitter: submitter.login,
    submitterRecord: submitter.record,
    statusVoid: status.void,
    shape: shapeOf(info),
    state: stored?.state ?? "draft",
    stored,
    statusCommentId: status.commentId,
    releaseDiff: status.void ? null : status.releaseDiff,
    stateLabels: info.labels.filter((l) => l.startsWith(STATE_LABEL_PREFIX)),
    awaitingRunApproval: info.labels.includes(AWAITING_RUN_APPROVAL_LABEL),
    approvals,
    pendingQueue: info.pendingQueue,
    packageUrl: typeof sidecar?.package?.url === "string" ? sidecar.package.url : null,
    packageFileName: typeof sidecar?.package?.fileName === "string" ? sidecar.package.fileName : null,
    sidecarIdentity:
      sidecar && typeof sidecar === "object"
        ? {
            modId: sidecar.modId,
            version: sidecar.version,
            sha256: sidecar.package?.sha256,
            sizeBytes: sidecar.package?.sizeBytes,
          }
        : null,
    intakeBranch: intakeBranchOf(info),
  };
}

/** The head branch when it is the portal's own svc/release/ branch (see SubmissionView.intakeBranch). */
export function intakeBranchOf(
  info: Pick<PullRequestInfo, "repo" | "headRef" | "headRepository" | "defaultBranch">,
): string | null {
  const portal = `${info.repo.owner}/${info.repo.repo}`.toLowerCase();
  if ((info.headRepository ?? "").toLowerCase() !== portal) return null;
  if (info.headRef === info.defaultBranch || !info.headRef.startsWith(RELEASE_BRANCH_PREFIX)) return null;
  return info.headRef;
}

/**
 * The shape from the whole file list. GitHub lists at most 3,000 files of a pull request: when it
 * has more than the list holds, the files not seen could be anything, so it is never a submission.
 */
export function shapeOf(info: Pick<PullRequestInfo, "files" | "changedFiles">): SubmissionShape {
  const shape = classifySubmission(info.files);
  if (
    shape.kind === "not_a_submission" ||
    info.changedFiles === null ||
    info.changedFiles <= info.files.length
  )
    return shape;
  const problems = shape.kind === "malformed" ? [...shape.problems] : [];
  problems.push({
    code: "submission_touches_other_files",
    message: `the pull request changes ${info.changedFiles} files and GitHub lists only ${info.files.length}; a submission changes one`,
  });
  return { kind: "malformed", problems };
}
