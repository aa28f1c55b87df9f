/**
 * decide: given the derived view and one event, the state the submission moves to and the exact
 * GitHub actions to take. Pure: the same input always gives the same plan, so tests snapshot it.
 * Every move goes through transition() of the state machine; nothing re-encodes the states.
 */
import type { SubmissionProblem } from "../github/submission-files.ts";
import type { ReportCheck, SubmissionReport } from "../github/submission-report.ts";
import type { Action, Actor } from "../workflow/machine.ts";
import {
  AWAITING_RUN_APPROVAL_LABEL,
  annotationMessage,
  checkRunName,
  checkRunOutput,
  DISMISSAL_MESSAGE,
  deliveryFailedNote,
  runApprovalNote,
  SHAPE_CHECK_ID,
  shapeCheckOutput,
} from "./comments.ts";
import { type PublishReceipt, receiptComment } from "./receipt-comments.ts";
import {
  decideCommand,
  decidePortalDecision,
  decideReview,
  decideStatusEdited,
} from "./decide-moderation.ts";
import { releaseDiffFor } from "./decide-diff.ts";
import type { SubmissionView } from "./derive.ts";
import {
  type BotAction,
  type BotEvent,
  type CheckRunAction,
  gateCheckRun,
  nothing,
  type Plan,
  type SvcCommand,
  statusActions,
  walk,
} from "./plan.ts";

export type {
  BotAction,
  BotEvent,
  CheckRunAction,
  Membership,
  Plan,
  SvcCommand,
  ValidationRunRef,
} from "./plan.ts";

/** GitHub accepts at most 50 annotations per request. */
const MAX_ANNOTATIONS = 50;

/**
 * Failures that are not in the package: validating the same revision again may pass, so the
 * status comment offers `/svc revalidate`. Anything else needs a new push.
 */
export const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  "package_download_failed",
  "scanner_unavailable",
  "scanner_timeout",
  "scanner_error",
  "check_error",
  "validation_error",
  "validation_run_failed",
  "report_invalid",
  "bot_delivery_failed",
]);

export function parseCommand(body: string): SvcCommand | null {
  const line = body.split(/\r?\n/, 1)[0]!.trim();
  const match = /^\/svc(?:\s+(\S+))?(?:\s+([\s\S]*))?$/.exec(line);
  if (!match) return null;
  const name = match[1]?.toLowerCase();
  const rest = (match[2] ?? "").trim();
  if (name === "reject") {
    if (rest.length === 0)
      return { name: "invalid", message: "`/svc reject` needs a reason: `/svc reject <reason>`." };
    return { name: "reject", reason: rest.slice(0, 1000) };
  }
  if (name === "hide" || name === "unhide" || name === "revalidate")
    return rest.length === 0
      ? { name }
      : { name: "invalid", message: `\`/svc ${name}\` takes no arguments.` };
  return { name: "invalid", message: `unknown command${name ? ` \`${name.replace(/`/g, "")}\`` : ""}.` };
}

export function decide(view: SubmissionView, event: BotEvent): Plan {
  if (view.shape.kind === "not_a_submission") return decideNotASubmission(view, event);
  switch (event.kind) {
    case "pushed":
      return decidePush(view, event.action);
    case "report":
      return decideReport(
        view,
        event.report,
        event.runUrl,
        releaseDiffFor(view, event.report, event.releases),
      );
    case "review":
      return decideReview(view, event);
    case "command":
      return decideCommand(view, event);
    case "closed":
      return decideClosed(view, event.merged);
    case "published":
      return decidePublished(view, event.receipt);
    case "portal_decision":
      return decidePortalDecision(view, event);
    case "validation_incomplete":
      return decideValidationIncomplete(view, event);
    case "delivery_failed":
      return decideDeliveryFailed(view, event);
    case "status_edited":
      return decideStatusEdited(view, event);
    case "run_awaiting_approval":
      return decideRunAwaitingApproval(view, event);
  }
}

/**
 * A pull request that adds nothing under submissions/ (a maintainer's change to the portal): svc has
 * no verdict, and its gate passes on every new head so the ruleset's required check is there; the
 * branch's review rules decide. Nothing else is written on it.
 */
function decideNotASubmission(view: SubmissionView, event: BotEvent): Plan {
  if (event.kind !== "pushed" || !view.open) return nothing(view, "not a submission pull request");
  return {
    from: view.state,
    to: view.state,
    actions: [gateCheckRun(view.headSha, "success", { kind: "not_a_submission" })],
    log: ["not a submission pull request: the gate passes"],
  };
}

/**
 * The head's validation run waits for a maintainer's approval: the status comment says so and the
 * label lists it for moderators; the state stays validating (the approved run reports as usual).
 */
function decideRunAwaitingApproval(
  view: SubmissionView,
  event: Extract<BotEvent, { kind: "run_awaiting_approval" }>,
): Plan {
  if (event.headSha !== view.headSha)
    return nothing(view, `the held run is of ${event.headSha}; a newer push (${view.headSha}) superseded it`);
  if (view.state !== "validating" || view.stored?.headSha !== view.headSha)
    return nothing(view, `not waiting for a report (state ${view.state})`);
  if (view.awaitingRunApproval) return nothing(view, "already marked as waiting for the run's approval");
  return {
    from: view.state,
    to: view.state,
    actions: [
      { type: "add_label", name: AWAITING_RUN_APPROVAL_LABEL },
      ...statusActions(view, view.state, {
        notes: [runApprovalNote(event.runUrl)],
        runUrl: event.runUrl,
        keepAwaitingLabel: true,
      }),
      gateCheckRun(view.headSha, "pending", { kind: "run_awaiting_approval" }),
    ],
    log: ["the validation run waits for a maintainer's approval"],
  };
}

/**
 * The bot's own judgement of the pull request's shape, from the file list it read through the API:
 * a pull request that changes anything outside submissions/ fails here, whatever a report says.
 * Only the failing shape check run is written for it, never a check run from a report.
 */
function shapeFailure(view: SubmissionView, steps: Array<[Action, Actor]>): Plan {
  if (view.shape.kind !== "malformed") throw new Error("shapeFailure needs a malformed shape");
  const moved = walk(view.state, [...steps, ["fail_validation", "system"]]);
  if (!moved.ok) return nothing(view, `a malformed pull request in state ${view.state}: ${moved.message}`);
  const problems = view.shape.problems;
  return {
    from: view.state,
    to: moved.to,
    actions: [shapeCheckRun(view, problems), ...statusActions(view, moved.to, { problems })],
    log: [],
  };
}

function shapeCheckRun(view: SubmissionView, problems: readonly SubmissionProblem[]): CheckRunAction {
  return {
    type: "create_check_run",
    name: checkRunName(SHAPE_CHECK_ID),
    headSha: view.headSha,
    conclusion: "failure",
    ...shapeCheckOutput(problems),
    annotations: [],
  };
}

/** Every failure is one RETRYABLE_CODES names (a check without a reason code counts as its id). */
function isRetryable(problems: readonly SubmissionProblem[], failedChecks: readonly ReportCheck[]): boolean {
  const codes = [...problems.map((p) => p.code), ...failedChecks.map((c) => c.reasonCode ?? c.id)];
  return codes.length > 0 && codes.every((code) => RETRYABLE_CODES.has(code));
}

/**
 * The report is data from an unprivileged job: what it says it validated must be what the bot
 * itself reads at the head commit (path, id, version, and the package hash and size whenever the
 * report claims they matched).
 */
function crossCheckReport(view: SubmissionView, report: SubmissionReport): SubmissionProblem[] {
  if (view.shape.kind !== "submission") return [];
  const problems: SubmissionProblem[] = [];
  const mismatch = (message: string) => problems.push({ code: "report_mismatch", message });
  const expectedPath = view.shape.sidecar.path;
  if (report.sidecarPath !== expectedPath)
    mismatch(`the report read ${report.sidecarPath ?? "no sidecar"}, the pull request adds ${expectedPath}`);
  const validation = report.report;
  if (!validation) return problems;
  const sidecar = view.sidecarIdentity;
  const claimsMatch =
    validation.passed || validation.checks.some((c) => c.id === "artifact_hash" && c.status === "passed");
  if (!sidecar) {
    if (validation.passed)
      mismatch(`the report passed, but ${expectedPath} cannot be read at the head commit`);
    return problems;
  }
  const differs = (name: string, reported: unknown, actual: unknown, strict: boolean) => {
    if (reported === actual || (!strict && reported === null)) return;
    mismatch(
      `the report says ${name} ${JSON.stringify(reported)}, ${expectedPath} says ${JSON.stringify(actual)}`,
    );
  };
  differs("modId", validation.modId, sidecar.modId, validation.passed);
  differs("version", validation.version, sidecar.version, validation.passed);
  if (claimsMatch) {
    differs("package sha256", validation.packageSha256, sidecar.sha256, true);
    differs("package size", validation.packageSizeBytes, sidecar.sizeBytes, true);
  }
  return problems;
}

function decidePush(view: SubmissionView, action: "opened" | "reopened" | "synchronize"): Plan {
  if (!view.open) return nothing(view, "the pull request is closed");
  if (view.stored?.headSha === view.headSha && action !== "synchronize") {
    return nothing(view, `commit ${view.headSha} is already ${view.state}`);
  }
  // A push while validating restarts validation on the new head: the old run's report no longer matches.
  const steps: Array<[Action, Actor]> =
    view.state === "draft"
      ? [
          ["submit", "modder"],
          ["start_validation", "system"],
        ]
      : view.state === "uploaded"
        ? [["start_validation", "system"]]
        : view.state === "validating"
          ? []
          : [
              ["resubmit", "modder"],
              ["start_validation", "system"],
            ];
  if (view.shape.kind === "malformed") return withDismissals(view, action, shapeFailure(view, steps));
  const moved = walk(view.state, steps);
  if (!moved.ok) {
    return nothing(view, `a new push cannot reopen a ${view.state} submission: ${moved.message}`);
  }
  const actions: BotAction[] = [];
  const notes: string[] = [];
  if (action === "synchronize") {
    for (const approval of view.approvals) {
      actions.push({ type: "dismiss_review", reviewId: approval.id, message: DISMISSAL_MESSAGE });
    }
    if (view.approvals.length > 0) notes.push(DISMISSAL_MESSAGE);
  }
  actions.push(...statusActions(view, moved.to, { notes }));
  return { from: view.state, to: moved.to, actions, log: [] };
}

function withDismissals(view: SubmissionView, action: string, plan: Plan): Plan {
  if (action !== "synchronize" || view.approvals.length === 0 || plan.actions.length === 0) return plan;
  const dismissals: BotAction[] = view.approvals.map((a) => ({
    type: "dismiss_review",
    reviewId: a.id,
    message: DISMISSAL_MESSAGE,
  }));
  return { ...plan, actions: [...dismissals, ...plan.actions] };
}

function decideReport(
  view: SubmissionView,
  report: SubmissionReport,
  runUrl: string | null,
  releaseDiff: string | null,
): Plan {
  if (report.pullRequest !== view.number) return nothing(view, `the report is for #${report.pullRequest}`);
  if (report.headSha !== view.headSha) {
    return nothing(view, `stale report: it validated ${report.headSha}, the head is now ${view.headSha}`);
  }
  if (view.state !== "validating" || view.stored?.headSha !== view.headSha) {
    return nothing(view, `not waiting for a report (state ${view.state})`);
  }
  // The bot's own reading of the pull request decides first; the report cannot overrule it.
  if (view.shape.kind === "malformed") return shapeFailure(view, []);
  const expectedPath = view.shape.kind === "submission" ? view.shape.sidecar.path : null;
  const mismatches = crossCheckReport(view, report);
  if (mismatches.length > 0) {
    const moved = walk(view.state, [["fail_validation", "system"]]);
    if (!moved.ok) return nothing(view, moved.message);
    return {
      from: view.state,
      to: moved.to,
      actions: [
        shapeCheckRun(view, mismatches),
        ...statusActions(view, moved.to, { problems: mismatches, runUrl, releaseDiff: null }),
      ],
      log: ["the report does not match the pull request; none of its checks is shown"],
    };
  }
  const problems = [...report.problems];
  const checks = report.report?.checks ?? [];
  const failedChecks = checks.filter((c) => c.status === "failed" || (c.required && c.status !== "passed"));
  const passed =
    problems.length === 0 && report.report !== null && report.report.passed && failedChecks.length === 0;
  const moved = walk(view.state, [[passed ? "pass_validation" : "fail_validation", "system"]]);
  if (!moved.ok) return nothing(view, moved.message);

  const actions: BotAction[] = [];
  const annotationPath = expectedPath ?? report.sidecarPath;
  if (problems.length > 0) actions.push(shapeCheckRun(view, problems));
  let annotationBudget = MAX_ANNOTATIONS;
  for (const check of checks) {
    const out = checkRunOutput(check);
    const failed = failedChecks.includes(check);
    const annotations: CheckRunAction["annotations"] = [];
    if (failed && annotationPath && annotationBudget > 0) {
      annotationBudget -= 1;
      annotations.push({
        path: annotationPath,
        start_line: 1,
        end_line: 1,
        annotation_level: "failure",
        title: `${check.id}${check.reasonCode ? `: ${check.reasonCode}` : ""}`,
        message: annotationMessage(check),
      });
    }
    actions.push({
      type: "create_check_run",
      name: checkRunName(check.id),
      headSha: view.headSha,
      conclusion: failed ? "failure" : check.status === "passed" ? "success" : "skipped",
      title: out.title,
      summary: out.summary,
      ...(out.text ? { text: out.text } : {}),
      annotations,
    });
  }
  const retryable = !passed && isRetryable(problems, failedChecks);
  actions.push(...statusActions(view, moved.to, { failedChecks, problems, runUrl, retryable, releaseDiff }));
  return { from: view.state, to: moved.to, actions, log: [] };
}

function decideValidationIncomplete(
  view: SubmissionView,
  event: Extract<BotEvent, { kind: "validation_incomplete" }>,
): Plan {
  if (event.headSha !== view.headSha)
    return nothing(view, `the run validated ${event.headSha}; a newer push (${view.headSha}) superseded it`);
  if (view.state !== "validating" || view.stored?.headSha !== view.headSha)
    return nothing(view, `not waiting for a report (state ${view.state})`);
  const moved = walk(view.state, [["fail_validation", "system"]]);
  if (!moved.ok) return nothing(view, moved.message);
  const problems = [event.problem];
  return {
    from: view.state,
    to: moved.to,
    actions: statusActions(view, moved.to, {
      problems,
      runUrl: event.runUrl,
      retryable: isRetryable(problems, []),
    }),
    log: [],
  };
}

/**
 * The bot gave up on an event: a submission waiting for validation ends visible and retryable;
 * any other keeps its state, and its status comment says it may be out of date.
 */
function decideDeliveryFailed(
  view: SubmissionView,
  event: Extract<BotEvent, { kind: "delivery_failed" }>,
): Plan {
  const note = deliveryFailedNote(event);
  if (view.state === "validating" && view.stored?.headSha === view.headSha) {
    const moved = walk(view.state, [["fail_validation", "system"]]);
    if (moved.ok) {
      const problems = [
        {
          code: "bot_delivery_failed",
          message: `the ${event.event} event could not be processed: ${event.error}`,
        },
      ];
      return {
        from: view.state,
        to: moved.to,
        actions: statusActions(view, moved.to, { problems, notes: [note], retryable: true }),
        log: [],
      };
    }
  }
  return {
    from: view.state,
    to: view.state,
    actions: statusActions(view, view.state, {
      notes: [note],
      retryable: view.stored?.retryable === true,
      ...(view.stored ? { headSha: view.stored.headSha } : {}),
    }),
    log: [],
  };
}

function decideClosed(view: SubmissionView, merged: boolean): Plan {
  // The intake branch has served its purpose either way: the merge commit (or the closed pull
  // request) keeps its commits, and the branch list stays the open submissions.
  const branch: BotAction[] = view.intakeBranch ? [{ type: "delete_branch", ref: view.intakeBranch }] : [];
  const plan = merged
    ? nothing(view, "merged: the publish workflow takes over")
    : (() => {
        const moved = walk(view.state, [["cancel", "modder"]]);
        if (!moved.ok) return nothing(view, `closed without merging; ${moved.message}`);
        return { from: view.state, to: moved.to, actions: statusActions(view, moved.to), log: [] };
      })();
  return { ...plan, actions: [...plan.actions, ...branch] };
}

function decidePublished(view: SubmissionView, receipt: PublishReceipt): Plan {
  const reply: BotAction = { type: "reply", body: receiptComment(receipt) };
  if (!receipt.ok) return { from: view.state, to: view.state, actions: [reply], log: ["publication failed"] };
  const moved = walk(view.state, [["publish", "system"]]);
  if (!moved.ok) return { from: view.state, to: view.state, actions: [reply], log: [moved.message] };
  return { from: view.state, to: moved.to, actions: [...statusActions(view, moved.to), reply], log: [] };
}
