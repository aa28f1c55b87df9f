/**
 * Every text the bot writes: the living status comment, check run output, replies, the publish
 * receipt, the release-intake pull request and the job summary. Untrusted values (file names from a
 * ZIP, reasons typed by people, URLs from a sidecar) are neutralised here and nowhere else.
 */
import { type SubmissionState, stateDefinition } from "../workflow/machine.ts";
import type { SubmissionProblem } from "../github/submission-files.ts";
import type { ReportCheck, SubmissionReport } from "../github/submission-report.ts";
import { recordShard } from "../contracts/records.ts";

/** The hidden marker that finds the status comment; the JSON after it is the stored state. */
export const STATUS_MARKER = "<!-- svc:status";
/** Marks who submitted a pull request the app opened for a release (the PR author is then the app). */
export const SUBMITTER_MARKER = "<!-- svc:submitter";
export const STATE_LABEL_PREFIX = "state:";
export const CHECK_RUN_PREFIX = "svc / ";
export const SHAPE_CHECK_ID = "submission";
/**
 * The one check the default branch's ruleset requires (pinned to the app): on every pull request,
 * submission or not, for its head commit. Rulesets take exact contexts, so it has to exist on every
 * pull request: the per-check runs exist only once a validation run reported, and validation runs
 * only for pull requests that touch submissions/.
 */
export const GATE_CHECK_ID = "gate";
/** Marks the sweep's reminder on a submission waiting for changes; the JSON after it is its record. */
export const REMINDER_MARKER = "<!-- svc:reminder";
/** Marks a pull request whose validation run waits for a maintainer's "Approve and run". */
export const AWAITING_RUN_APPROVAL_LABEL = "svc:awaiting-run-approval";

export function stateLabel(state: SubmissionState): string {
  return `${STATE_LABEL_PREFIX}${state}`;
}

export function checkRunName(checkId: string): string {
  return `${CHECK_RUN_PREFIX}${checkId}`;
}

/** One line of untrusted text, safe inside inline code: no backticks, no line breaks, bounded. */
export function inlineCode(value: string, max = 200): string {
  const clean = value.replace(/[\u0000-\u001f\u007f\u202a-\u202e\u2066-\u2069`]/g, "?");
  return `\`${clean.length > max ? `${clean.slice(0, max)}…` : clean}\``;
}

/** Untrusted lines inside a fenced block: a line of backticks can never close the fence. */
export function codeBlock(lines: readonly string[], max = 40): string {
  const shown = lines
    .slice(0, max)
    .map((l) => l.replace(/`/g, "'").replace(/[\u0000-\u0008\u000b-\u001f\u007f]/g, "?"));
  if (lines.length > max) shown.push(`... ${lines.length - max} more line(s)`);
  return ["```text", ...shown, "```"].join("\n");
}

/** An https URL that may stand in a comment as it is (no markup, no spaces). */
export const SAFE_URL = /^https:\/\/[A-Za-z0-9.-]+(?::[0-9]+)?\/[A-Za-z0-9._~!$&()*+,;=:@%/-]*$/;
const SAFE_FILE = /^[A-Za-z0-9][A-Za-z0-9._-]*\.zip$/;

export interface StoredStatus {
  state: SubmissionState;
  headSha: string;
  /** A validation that failed for a reason outside the package: `/svc revalidate` may run it again. */
  retryable?: boolean;
  /**
   * The sha256 of the release diff section the comment carries (releaseDiffSection), under the
   * seal: a later write keeps the section only while it still hashes to this.
   */
  diff?: string;
  /** When the app wrote it, and the MAC over it (src/bot/status-seal.ts). */
  at?: string;
  sig?: string;
}

export function renderStoredStatus(stored: StoredStatus): string {
  return `${STATUS_MARKER} ${JSON.stringify({
    state: stored.state,
    headSha: stored.headSha,
    ...(stored.retryable ? { retryable: true } : {}),
    ...(stored.diff !== undefined ? { diff: stored.diff } : {}),
    ...(stored.at !== undefined ? { at: stored.at } : {}),
    ...(stored.sig !== undefined ? { sig: stored.sig } : {}),
  })} -->`;
}

/** The status comment's body with another stored state in its marker line (a sealed one). */
export function replaceStoredStatus(body: string, stored: StoredStatus): string {
  const end = body.startsWith(STATUS_MARKER) ? body.indexOf("-->") : -1;
  return end < 0
    ? `${renderStoredStatus(stored)}\n${body}`
    : `${renderStoredStatus(stored)}${body.slice(end + 3)}`;
}

/**
 * Who submitted a pull request the app opened (the pull request's author is then the app): a
 * GitHub login, or `portal:{accountId}` for an upload through the API. A release's record names the
 * repository it came from and whether it claims an unclaimed mod id. Sealed by the app.
 */
export interface SubmitterRecord {
  login: string;
  /** What the pull request came from, for people: `owner/name` of a release, `upload {id}`. */
  source: string;
  repository?: { fullName: string; id: number };
  claim?: boolean;
  sig?: string;
}

export function renderSubmitterMarker(record: SubmitterRecord): string {
  return `${SUBMITTER_MARKER} ${JSON.stringify(record)} -->`;
}

/** How the status comment names the submitter. */
export function submitterName(login: string): string {
  return login.startsWith("portal:") ? `the portal account ${inlineCode(login.slice(7), 80)}` : `@${login}`;
}

export interface StatusContent {
  stored: StoredStatus;
  number: number;
  sidecarPath: string | null;
  packageUrl: string | null;
  packageFileName: string | null;
  failedChecks: ReportCheck[];
  problems: SubmissionProblem[];
  queuePosition: number | null;
  queueLength: number;
  notes: string[];
  runUrl: string | null;
  /** The person who submitted, when known (a sealed record or the pull request's human author). */
  submitter?: string | null;
  /** An unclaimed mod id this submission claims for its submitter once published. */
  claim?: { modId: string; repository: string | null } | null;
  /** The release diff section (releaseDiffSection), markers included; null or absent: none. */
  releaseDiff?: string | null;
}

const STATE_HEADLINES: Record<SubmissionState, string> = {
  draft: "Waiting for the submission.",
  uploaded: "Submitted; validation starts shortly.",
  validating: "Validating: every check runs on the package this pull request names.",
  validation_failed:
    "Validation failed. Fix what is listed below and push again; validation reruns on every push.",
  cancelled: "Cancelled.",
  pending_review: "Every check passed. Waiting for a moderator's review.",
  changes_requested: "A moderator requested changes. Push a fix; validation and review run again.",
  approved: "Approved by a moderator. An admin merges it and the publish workflow puts it in the catalog.",
  published: "Published: the release is in the public catalog.",
  rejected: "Rejected by a moderator.",
  hidden: "Hidden from the public catalog by a moderator.",
  superseded: "Superseded by a newer version; still listed and downloadable.",
};

/** The exact commands that reproduce the validation locally. */
export function reproduceCommands(
  content: Pick<StatusContent, "number" | "sidecarPath" | "packageUrl" | "packageFileName">,
): string[] {
  if (!content.sidecarPath) return [];
  const file =
    content.packageFileName && SAFE_FILE.test(content.packageFileName)
      ? content.packageFileName
      : "package.zip";
  const lines = [`gh pr checkout ${content.number}`];
  if (content.packageUrl && SAFE_URL.test(content.packageUrl))
    lines.push(`curl -fL -o ${file} '${content.packageUrl}'`);
  lines.push(`npx svc validate --package ${file} --metadata ${content.sidecarPath}`);
  return lines;
}

export function renderStatusComment(content: StatusContent): string {
  const state = content.stored.state;
  const out: string[] = [renderStoredStatus(content.stored)];
  out.push(`### svc submission: ${stateDefinition(state).label}`, "");
  out.push(STATE_HEADLINES[state], "");
  out.push(`| | |`, `|---|---|`);
  out.push(`| state | \`${state}\` |`);
  out.push(`| commit | \`${content.stored.headSha.slice(0, 12)}\` |`);
  if (content.sidecarPath) out.push(`| sidecar | \`${content.sidecarPath}\` |`);
  if (content.submitter) out.push(`| submitted by | ${submitterName(content.submitter)} |`);
  if (content.queuePosition !== null) {
    out.push(
      `| review queue | position ${content.queuePosition} of ${Math.max(content.queueLength, content.queuePosition)} |`,
    );
  }
  if (content.runUrl && SAFE_URL.test(content.runUrl))
    out.push(`| validation run | [logs](${content.runUrl}) |`);
  out.push("");
  if (content.problems.length > 0) {
    out.push("#### What is wrong with this pull request", "");
    for (const p of content.problems) out.push(`- \`${p.code}\`: ${inlineCode(p.message, 400)}`);
    out.push("");
  }
  if (content.failedChecks.length > 0) {
    out.push("#### Failed checks", "");
    for (const check of content.failedChecks) {
      out.push(`- **\`${check.id}\`** (${check.reasonCode ? `\`${check.reasonCode}\`` : "no reason code"})`);
      if (check.log.length > 0) out.push("", codeBlock(check.log, 12), "");
    }
    out.push("");
  }
  if (content.releaseDiff) out.push(content.releaseDiff, "");
  const commands = reproduceCommands(content);
  if (
    commands.length > 0 &&
    (state === "validation_failed" || state === "validating" || state === "pending_review")
  ) {
    out.push("#### Reproduce locally", "", "```sh", ...commands, "```", "");
  }
  if (state === "validation_failed" && content.stored.retryable) {
    out.push(
      "#### Validate again",
      "",
      "This failure is not in the package (a download, the virus scanner or the validation run itself failed). The submitter or a moderator can run the same validation again by commenting `/svc revalidate`.",
      "",
    );
  }
  if (content.claim && content.submitter) out.push(`> ${claimNote(content.claim, content.submitter)}`, "");
  for (const note of content.notes) out.push(`> ${note}`, "");
  out.push(
    "<sub>This comment is edited in place by the svc bot. Moderators: approve or request changes with a review; `/svc reject <reason>`, `/svc hide`, `/svc unhide` as a comment. The submitter or a moderator: `/svc revalidate` after a failure that was not in the package.</sub>",
  );
  return `${out.join("\n").trimEnd()}\n`;
}

export function checkRunOutput(check: ReportCheck): {
  title: string;
  summary: string;
  text: string | undefined;
} {
  const title =
    check.status === "passed"
      ? `${check.id} passed`
      : check.status === "skipped"
        ? `${check.id} skipped`
        : `${check.id} failed${check.reasonCode ? `: ${check.reasonCode}` : ""}`;
  const summary = `${check.required ? "Required" : "Optional"} check \`${check.id}\`: **${check.status}**${
    check.reasonCode ? ` (reason code \`${check.reasonCode}\`)` : ""
  }.`;
  return { title, summary, text: check.log.length > 0 ? codeBlock(check.log, 200) : undefined };
}

export function shapeCheckOutput(problems: readonly SubmissionProblem[]): {
  title: string;
  summary: string;
  text: string;
} {
  return {
    title: problems.length === 0 ? "submission ok" : `submission invalid: ${problems[0]!.code}`,
    summary:
      "A submission pull request adds exactly one sidecar file `submissions/{modId}/{version}.json` and nothing else.",
    text: problems.map((p) => `- \`${p.code}\`: ${inlineCode(p.message, 400)}`).join("\n"),
  };
}

export function annotationMessage(check: ReportCheck): string {
  const lines = check.log.length > 0 ? check.log : [`${check.id} failed`];
  const text = lines.slice(0, 10).join("\n");
  return text.length > 4000 ? `${text.slice(0, 4000)}…` : text;
}

/** The verdict the gate check carries: what the ruleset lets merge. */
export type GateVerdict = "success" | "failure" | "pending";

/**
 * The gate check's text. `why` says what it waits for or what refused it; the status comment has
 * the details, so the text does not go stale when the state moves without the gate changing.
 */
export function gateCheckOutput(
  verdict: GateVerdict,
  why:
    | { kind: "not_a_submission" }
    | { kind: "state"; state: SubmissionState }
    | { kind: "not_validated" }
    | { kind: "run_awaiting_approval" },
): { title: string; summary: string } {
  if (why.kind === "not_a_submission")
    return {
      title: "Not a submission",
      summary:
        "This pull request changes no file under `submissions/`, so svc has no verdict on it: the branch's review rules decide.",
    };
  if (why.kind === "run_awaiting_approval")
    return {
      title: "Waiting for a maintainer to approve the validation run",
      summary:
        "GitHub holds the workflows of a first-time contributor until a maintainer with write access approves them (**Approve and run**). Validation starts then.",
    };
  if (why.kind === "not_validated")
    return {
      title: "This commit is not validated yet",
      summary: "svc lets a submission merge once a moderator approved it at its head commit.",
    };
  const label = stateDefinition(why.state).label;
  if (verdict === "success")
    return {
      title: `Approved: ${label}`,
      summary: "A moderator approved this submission at this commit; an admin may merge it.",
    };
  if (verdict === "failure")
    return {
      title: `Not mergeable: ${label}`,
      summary: "This submission cannot be merged as it is; the svc status comment says why and what to do.",
    };
  return {
    title: "Waiting for validation and a moderator's review",
    summary:
      "svc lets a submission merge once every check passed and a moderator approved it at its head commit; the svc status comment says where it stands.",
  };
}

/** The note on the status comment while the validation run waits for a maintainer's approval. */
export function runApprovalNote(runUrl: string | null): string {
  return `**The validation run waits for approval.** GitHub does not run the workflows of a first-time contributor's pull request until a maintainer with write access approves them, so a maintainer must approve the first run${
    runUrl && SAFE_URL.test(runUrl) ? ` ([the run](${runUrl}))` : ""
  }: **Approve and run** on this pull request (or in the Actions tab). Validation starts then; the submitter has nothing to do. Moderators find every such pull request under the label \`${AWAITING_RUN_APPROVAL_LABEL}\`.`;
}

export const DISMISSAL_MESSAGE =
  "A new commit was pushed after this approval; the submission is validated and reviewed again.";

export function illegalMoveReply(login: string, what: string, state: SubmissionState): string {
  return `@${login} ${what} does not apply: this submission is \`${state}\` (${stateDefinition(state).label}).`;
}

export function commandUsageReply(login: string, message: string): string {
  return `@${login} ${message}\n\nCommands: \`/svc reject <reason>\`, \`/svc hide\`, \`/svc unhide\`, \`/svc revalidate\`.`;
}

export function revalidateNote(login: string): string {
  return `@${login} asked to validate this revision again.`;
}

export function revalidateUnavailableReply(login: string, why: string): string {
  return `@${login} \`/svc revalidate\` cannot run: ${why}`;
}

/**
 * The note the status comment carries when the bot gave up on an event: the state shown may be out
 * of date, and it says what brings it back.
 */
export function deliveryFailedNote(input: {
  event: string;
  deliveryId: string;
  attempts: number;
  error: string;
}): string {
  return `The svc bot could not process a ${inlineCode(input.event, 60)} event for this pull request (delivery ${inlineCode(input.deliveryId, 80)}, ${input.attempts} attempts; last error ${inlineCode(input.error, 300)}), so this comment may be out of date. The operator can redeliver it from the app's settings (Advanced → Recent deliveries); after a validation failure \`/svc revalidate\` runs validation again.`;
}

const DECISION_VERBS = {
  approve: "approved",
  request_changes: "requested changes",
  reject: "rejected this submission",
  hide: "hid this release",
  unhide: "restored this release",
} as const;

export function decisionNote(
  kind: "approve" | "request_changes" | "reject" | "hide" | "unhide",
  login: string,
  reason?: string,
): string {
  return `@${login} ${DECISION_VERBS[kind]}${reason ? `: ${inlineCode(reason, 500)}` : "."}`;
}

/** A decision taken through the portal API: the moderator is a portal account, not a GitHub login. */
export function portalDecisionNote(
  kind: "approve" | "request_changes" | "reject" | "hide" | "unhide",
  moderator: string,
  notes: string,
): string {
  return `A portal moderator (${inlineCode(moderator, 80)}) ${DECISION_VERBS[kind]} through the portal API: ${inlineCode(notes, 500)}`;
}

/** What a moderator is told about a submission of an unclaimed mod id. */
export function claimNote(claim: { modId: string; repository: string | null }, submitter: string): string {
  return `**Claim.** \`${claim.modId}\` has no owner yet: publishing this release makes ${submitterName(submitter)} its owner${
    claim.repository
      ? `, and release intake then accepts releases of it only from ${inlineCode(claim.repository, 140)} (by repository id)`
      : ""
  }. Check that this is the mod's real author before approving.`;
}

/** The problem a status comment shows when its stored state did not verify. */
export const STATUS_VOID_PROBLEM = {
  code: "status_comment_void",
  message:
    "the stored state in this status comment was not written by the svc app (it was edited, or its seal does not verify), so it counts for nothing: validate again with a push or `/svc revalidate`",
};

/** The reply to an edit of the status comment by someone other than the app. */
export function statusEditedReply(editor: string, restored: boolean): string {
  return `@${editor} edited the svc status comment. Only the svc app writes a submission's state (it is sealed), so the edit counts for nothing${
    restored
      ? " and the comment was restored as the app wrote it."
      : "; the state before it could not be verified either, so this submission must be validated again (push a commit, or `/svc revalidate`)."
  }`;
}

/** Why a review or command by this person does not count. */
export type ConflictReason = "submitter" | "member" | "submitter_unknown" | "ownership_unreadable";

export function conflictReply(login: string, what: string, reason: ConflictReason, modId: string): string {
  const why = {
    submitter: "you submitted this release, and no one reviews or moderates their own submission",
    member: `you own or collaborate on \`${modId}\` (records/owners/${recordShard(modId)}.json), and no owner or collaborator reviews or moderates a release of their own mod`,
    submitter_unknown:
      "the person who submitted this pull request cannot be established (the svc app's submitter record is missing, was edited, or names a bot account), so no review or moderation of it counts; the submitter opens it again",
    ownership_unreadable: `the ownership record of ${modId} (records/owners/${recordShard(modId)}.json) on the default branch cannot be read, so it is not known whether you own this mod`,
  }[reason];
  return `@${login} ${what} does not count: ${why}. Another moderator decides.`;
}

/** The job summary of the validate action: one table row per check. */
export function validationSummary(report: SubmissionReport): string {
  const out = [`## svc validation of #${report.pullRequest} (\`${report.headSha.slice(0, 12)}\`)`, ""];
  if (report.sidecarPath) out.push(`Sidecar: \`${report.sidecarPath}\``, "");
  for (const p of report.problems) out.push(`- :x: \`${p.code}\`: ${inlineCode(p.message, 400)}`);
  if (report.problems.length > 0) out.push("");
  if (report.report) {
    out.push(
      `Result: **${report.report.passed ? "passed" : "failed"}**`,
      "",
      "| check | required | status | reason |",
      "|---|---|---|---|",
    );
    for (const c of report.report.checks) {
      out.push(
        `| \`${c.id}\` | ${c.required ? "yes" : "no"} | ${c.status === "passed" ? ":white_check_mark:" : c.status === "failed" ? ":x:" : ":white_circle:"} ${c.status} | ${c.reasonCode ? `\`${c.reasonCode}\`` : ""} |`,
      );
    }
  }
  return `${out.join("\n")}\n`;
}
