/**
 * derive: pure facts about a submission from what fetch read. No I/O.
 */
import { classifySubmission, type SubmissionShape } from "../github/submission-files.ts";
import { STATES, type SubmissionState } from "../workflow/machine.ts";
import { STATE_LABEL_PREFIX, STATUS_MARKER, type StoredStatus, SUBMITTER_MARKER } from "./comments.ts";
import type { PullRequestInfo } from "./fetch.ts";

export interface SubmissionView {
  number: number;
  open: boolean;
  merged: boolean;
  headSha: string;
  /** The person who submitted: the PR author, or the release publisher for a PR the app opened. */
  submitter: string;
  shape: SubmissionShape;
  /** The current state: what the bot's status comment stores; draft for a new submission. */
  state: SubmissionState;
  stored: StoredStatus | null;
  statusCommentId: number | null;
  /** state:* labels currently on the pull request. */
  stateLabels: string[];
  /** Approving reviews still on record (a push dismisses them). */
  approvals: Array<{ id: number; login: string }>;
  pendingQueue: number[];
  packageUrl: string | null;
  packageFileName: string | null;
  /** What the sidecar at the head commit says, read by the bot itself: a report is checked against it. */
  sidecarIdentity: SidecarIdentity | null;
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
    };
    if (typeof value.state !== "string" || !STATE_IDS.has(value.state)) return null;
    if (typeof value.headSha !== "string" || !/^[0-9a-f]{40}$/.test(value.headSha)) return null;
    return {
      state: value.state as SubmissionState,
      headSha: value.headSha,
      ...(value.retryable === true ? { retryable: true } : {}),
    };
  } catch {
    return null;
  }
}

function submitterOf(info: PullRequestInfo, botLogins: readonly string[]): string {
  if (!isBot(info.authorLogin, botLogins)) return info.authorLogin;
  const at = info.body.indexOf(SUBMITTER_MARKER);
  if (at < 0) return info.authorLogin;
  const end = info.body.indexOf("-->", at);
  try {
    const value = JSON.parse(info.body.slice(at + SUBMITTER_MARKER.length, end)) as { login?: unknown };
    return typeof value.login === "string" ? value.login : info.authorLogin;
  } catch {
    return info.authorLogin;
  }
}

export function isBot(login: string, botLogins: readonly string[]): boolean {
  return botLogins.some((b) => b.toLowerCase() === login.toLowerCase());
}

/**
 * The status comment is trusted only when the bot wrote it: anyone can type the marker into a
 * comment of their own, and the stored state must not be forgeable.
 */
export function deriveSubmission(info: PullRequestInfo, botLogins: readonly string[]): SubmissionView {
  // The oldest one: when two were ever written at once, the execute step keeps the oldest.
  const statusComment = info.comments
    .filter((c) => isBot(c.authorLogin, botLogins) && c.body.startsWith(STATUS_MARKER))
    .sort((a, b) => a.id - b.id)[0];
  const stored = statusComment ? parseStoredStatus(statusComment.body) : null;
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
    submitter: submitterOf(info, botLogins),
    shape: shapeOf(info),
    state: stored?.state ?? "draft",
    stored,
    statusCommentId: statusComment?.id ?? null,
    stateLabels: info.labels.filter((l) => l.startsWith(STATE_LABEL_PREFIX)),
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
  };
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
