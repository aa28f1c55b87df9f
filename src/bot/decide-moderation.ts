/**
 * decide, for what people do on a submission: reviews, `/svc` commands, portal API decisions, and
 * edits of the status comment by anyone but the app. Pure, like decide.ts. No one reviews or
 * moderates a release they submitted, nor one of a mod they own or collaborate on.
 */
import {
  commandUsageReply,
  type ConflictReason,
  conflictReply,
  decisionNote,
  illegalMoveReply,
  portalDecisionNote,
  revalidateNote,
  revalidateUnavailableReply,
  STATUS_VOID_PROBLEM,
  stateLabel,
  statusEditedReply,
} from "./comments.ts";
import type { SubmissionView } from "./derive.ts";
import {
  type BotAction,
  type BotEvent,
  type Membership,
  nothing,
  type Plan,
  statusActions,
  walk,
} from "./plan.ts";

/** Why this person's review or command does not count here, or null when it may. */
export function conflictOf(
  view: SubmissionView,
  login: string,
  membership: Membership | undefined,
): ConflictReason | null {
  if (view.submitter === null) return "submitter_unknown";
  if (view.submitter.toLowerCase() === login.toLowerCase()) return "submitter";
  if (membership === "member") return "member";
  if (membership === "unreadable") return "ownership_unreadable";
  return null;
}

function conflicted(view: SubmissionView, login: string, what: string, reason: ConflictReason): Plan {
  const modId = view.shape.kind === "submission" ? view.shape.sidecar.modId : "";
  return {
    from: view.state,
    to: view.state,
    actions: [{ type: "reply", body: conflictReply(login, what, reason, modId) }],
    log: [`${login}: ${reason}; the decision does not count`],
  };
}

/**
 * The stored state did not verify: nothing is decided on it. The status comment is written again,
 * sealed, as a validation failure that a push or `/svc revalidate` retries, and says why.
 */
export function voidStatus(view: SubmissionView): Plan {
  return {
    from: view.state,
    to: "validation_failed",
    actions: statusActions(view, "validation_failed", { problems: [STATUS_VOID_PROBLEM], retryable: true }),
    log: ["the stored state does not verify; written again as a retryable validation failure"],
  };
}

/**
 * Someone other than the app edited the status comment: whatever it says now counts for nothing.
 * The text from before the edit is written back when its seal verifies (re-sealed now); otherwise
 * the state is void. The editor is told either way.
 */
export function decideStatusEdited(
  view: SubmissionView,
  event: Extract<BotEvent, { kind: "status_edited" }>,
): Plan {
  if (event.commentId !== view.statusCommentId)
    return nothing(view, `comment ${event.commentId} is not the status comment`);
  const reply: BotAction = {
    type: "reply",
    body: statusEditedReply(event.editor, event.restorable !== null),
  };
  if (!event.restorable) {
    const voided = voidStatus(view);
    return { ...voided, actions: [...voided.actions, reply] };
  }
  const { stored, body } = event.restorable;
  const label = stateLabel(stored.state);
  const remove = view.stateLabels.filter((l) => l !== label);
  const relabel: BotAction[] =
    remove.length > 0 || !view.stateLabels.includes(label)
      ? [{ type: "set_state_label", add: label, remove }]
      : [];
  return {
    from: view.state,
    to: stored.state,
    actions: [...relabel, { type: "upsert_status_comment", commentId: event.commentId, stored, body }, reply],
    log: [`${event.editor} edited the status comment; restored as the app wrote it`],
  };
}

export function decideReview(view: SubmissionView, event: Extract<BotEvent, { kind: "review" }>): Plan {
  if (event.verdict !== "approved" && event.verdict !== "changes_requested")
    return nothing(view, "a plain review comment");
  if (!event.isModerator)
    return nothing(view, `${event.reviewer} is not a moderator; the review does not count`);
  const what = event.verdict === "approved" ? "This approval" : "This request for changes";
  const conflict = conflictOf(view, event.reviewer, event.membership);
  if (conflict) return conflicted(view, event.reviewer, what, conflict);
  if (view.statusVoid) return voidStatus(view);
  if (event.commitId !== view.headSha)
    return nothing(view, `the review is of ${event.commitId}, not the head ${view.headSha}`);
  // The state is that of the commit it was decided for: a push the bot has not handled yet (its
  // delivery still queued or given up on) leaves the head unvalidated, and nothing approves it.
  if (view.stored?.headSha !== view.headSha)
    return nothing(
      view,
      `the state is for ${view.stored?.headSha ?? "no commit"}, not the head ${view.headSha}`,
    );
  const action = event.verdict === "approved" ? "approve" : "request_changes";
  const moved = walk(view.state, [[action, "moderator"]]);
  if (!moved.ok) {
    return {
      from: view.state,
      to: view.state,
      actions: [
        {
          type: "reply",
          body: illegalMoveReply(event.reviewer, what, view.state),
        },
      ],
      log: [moved.message],
    };
  }
  return {
    from: view.state,
    to: moved.to,
    actions: statusActions(view, moved.to, { notes: [decisionNote(action, event.reviewer)] }),
    log: [],
  };
}

export function decideCommand(view: SubmissionView, event: Extract<BotEvent, { kind: "command" }>): Plan {
  if (event.command.name === "revalidate") return decideRevalidate(view, event);
  if (!event.isModerator)
    return nothing(view, `${event.commenter} is not a moderator; /svc commands are ignored`);
  const command = event.command;
  const conflict = conflictOf(view, event.commenter, event.membership);
  if (conflict) return conflicted(view, event.commenter, `\`/svc ${command.name}\``, conflict);
  if (view.statusVoid && command.name !== "invalid") return voidStatus(view);
  if (command.name === "invalid") {
    return {
      from: view.state,
      to: view.state,
      actions: [{ type: "reply", body: commandUsageReply(event.commenter, command.message) }],
      log: [],
    };
  }
  const moved = walk(view.state, [[command.name, "moderator"]]);
  if (!moved.ok) {
    return {
      from: view.state,
      to: view.state,
      actions: [
        { type: "reply", body: illegalMoveReply(event.commenter, `\`/svc ${command.name}\``, view.state) },
      ],
      log: [moved.message],
    };
  }
  const note = decisionNote(
    command.name,
    event.commenter,
    command.name === "reject" ? command.reason : undefined,
  );
  // The status comment moves first: the publish workflow the dispatch starts re-reads it.
  const actions: BotAction[] = statusActions(view, moved.to, { notes: [note] });
  if ((command.name === "hide" || command.name === "unhide") && view.shape.kind === "submission") {
    actions.push({
      type: "dispatch_visibility",
      action: command.name,
      modId: view.shape.sidecar.modId,
      version: view.shape.sidecar.version,
    });
  }
  return { from: view.state, to: moved.to, actions, log: [] };
}

/**
 * `/svc revalidate`: the submitter or a moderator re-runs the head commit's validation run after a
 * failure; the run's new report then arrives like any other.
 */
function decideRevalidate(view: SubmissionView, event: Extract<BotEvent, { kind: "command" }>): Plan {
  const isSubmitter =
    view.submitter !== null && event.commenter.toLowerCase() === view.submitter.toLowerCase();
  if (!event.isModerator && !isSubmitter)
    return nothing(
      view,
      `${event.commenter} is neither the submitter nor a moderator; /svc revalidate is ignored`,
    );
  const reply = (why: string): Plan => ({
    from: view.state,
    to: view.state,
    actions: [{ type: "reply", body: revalidateUnavailableReply(event.commenter, why) }],
    log: [why],
  });
  if (!view.open) return reply("the pull request is closed.");
  if (view.shape.kind !== "submission")
    return reply(
      "the pull request itself is not a valid submission (see the status comment); push a fix instead.",
    );
  // An upload the portal holds privately is validated by the portal's worker, not by the workflow.
  if (view.packageUrl === null)
    return reply("the sidecar names no package URL, so the validation workflow has nothing to download.");
  const moved = walk(view.state, [["revalidate", event.isModerator ? "moderator" : "modder"]]);
  if (!moved.ok || view.stored?.headSha !== view.headSha)
    return {
      from: view.state,
      to: view.state,
      actions: [{ type: "reply", body: illegalMoveReply(event.commenter, "`/svc revalidate`", view.state) }],
      log: [moved.ok ? "the stored state is for another commit" : moved.message],
    };
  const run = event.validationRun;
  if (!run)
    return reply(`no validation run of \`${view.headSha.slice(0, 12)}\` exists to run again; push a commit.`);
  if (run.status !== "completed") return reply("the validation run of this commit has not finished yet.");
  // A first-time contributor's run waits for a maintainer's approval; a re-run would be refused.
  if (run.conclusion === "action_required")
    return reply("the validation run of this commit waits for a maintainer to approve it (Actions tab).");
  return {
    from: view.state,
    to: moved.to,
    // The run is restarted first: if GitHub refuses, the state has not moved.
    actions: [
      { type: "rerun_validation", runId: run.id },
      ...statusActions(view, moved.to, { notes: [revalidateNote(event.commenter)] }),
    ],
    log: [],
  };
}

export function decidePortalDecision(
  view: SubmissionView,
  event: Extract<BotEvent, { kind: "portal_decision" }>,
): Plan {
  if (view.statusVoid) return voidStatus(view);
  const moved = walk(view.state, [[event.decision, "moderator"]]);
  if (!moved.ok) return nothing(view, moved.message);
  if (
    (event.decision === "approve" || event.decision === "request_changes") &&
    view.stored?.headSha !== view.headSha
  )
    return nothing(
      view,
      `the state is for ${view.stored?.headSha ?? "no commit"}, not the head ${view.headSha}`,
    );
  if (!view.open && event.decision !== "hide" && event.decision !== "unhide")
    return nothing(view, "the pull request is closed");
  const note = portalDecisionNote(event.decision, event.moderator, event.notes);
  // The status comment moves first: the publish workflow the dispatch starts re-reads it.
  const actions: BotAction[] = statusActions(view, moved.to, { notes: [note] });
  if ((event.decision === "hide" || event.decision === "unhide") && view.shape.kind === "submission") {
    actions.push({
      type: "dispatch_visibility",
      action: event.decision,
      modId: view.shape.sidecar.modId,
      version: view.shape.sidecar.version,
    });
  }
  return { from: view.state, to: moved.to, actions, log: [] };
}
