/**
 * The submission state machine: the contract's 12 states and transitions, plus the moves the
 * contract leaves open, decided here (source "decision") and published in workflow.json.
 */
export type SubmissionState =
  | "draft"
  | "uploaded"
  | "validating"
  | "validation_failed"
  | "cancelled"
  | "pending_review"
  | "changes_requested"
  | "approved"
  | "published"
  | "rejected"
  | "hidden"
  | "superseded";

export type Actor = "modder" | "system" | "moderator";
export type Decision = "approve" | "reject" | "request_changes" | "hide" | "unhide";
export type Action =
  | "submit"
  | "start_validation"
  | "fail_validation"
  | "pass_validation"
  | "cancel"
  | "resubmit"
  | "publish"
  | "supersede"
  | "reinstate"
  | "revalidate"
  | Decision;

export interface StateDefinition {
  id: SubmissionState;
  label: string;
  publicCatalogVisible: boolean;
  downloadEnabled: boolean;
  description: string;
}

export const STATES: readonly StateDefinition[] = [
  {
    id: "draft",
    label: "Draft",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "Started, package not yet submitted.",
  },
  {
    id: "uploaded",
    label: "Uploaded",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "An immutable staged package exists; waiting for the mod-validation queue.",
  },
  {
    id: "validating",
    label: "Validating",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "The validation worker is running every required check.",
  },
  {
    id: "validation_failed",
    label: "Validation failed",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "A required check failed; the logs say what to fix.",
  },
  {
    id: "cancelled",
    label: "Cancelled",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "Withdrawn by the modder. Terminal.",
  },
  {
    id: "pending_review",
    label: "Pending review",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "Every check passed; in the moderation queue.",
  },
  {
    id: "changes_requested",
    label: "Changes requested",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "A moderator asked for changes; the modder resubmits or cancels.",
  },
  {
    id: "approved",
    label: "Approved",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "Approved by a moderator; waiting for catalog publication.",
  },
  {
    id: "published",
    label: "Published",
    publicCatalogVisible: true,
    downloadEnabled: true,
    description: "In the public catalog and downloadable.",
  },
  {
    id: "rejected",
    label: "Rejected",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "Refused by a moderator. Terminal.",
  },
  {
    id: "hidden",
    label: "Hidden",
    publicCatalogVisible: false,
    downloadEnabled: false,
    description: "Removed from the public catalog by a moderator; unhide restores it.",
  },
  {
    id: "superseded",
    label: "Superseded",
    publicCatalogVisible: true,
    downloadEnabled: true,
    description: "A newer release of the mod is published; this one stays visible and downloadable.",
  },
];

export interface TransitionDefinition {
  from: SubmissionState;
  to: SubmissionState;
  actor: Actor;
  action: Action;
  condition: string;
  effect: string;
  source: "contract" | "decision";
}

export const TRANSITIONS: readonly TransitionDefinition[] = [
  {
    from: "draft",
    to: "uploaded",
    actor: "modder",
    action: "submit",
    condition: "submission made",
    effect: "A staged immutable submission exists.",
    source: "contract",
  },
  {
    from: "uploaded",
    to: "validating",
    actor: "system",
    action: "start_validation",
    condition: "validation starts",
    effect: "Validation worker runs the required checks.",
    source: "contract",
  },
  {
    from: "validating",
    to: "validation_failed",
    actor: "system",
    action: "fail_validation",
    condition: "a check fails",
    effect: "Logs are recorded.",
    source: "contract",
  },
  {
    from: "validating",
    to: "pending_review",
    actor: "system",
    action: "pass_validation",
    condition: "all checks pass",
    effect: "Enters the moderation queue.",
    source: "contract",
  },
  {
    from: "validation_failed",
    to: "cancelled",
    actor: "modder",
    action: "cancel",
    condition: "cancel",
    effect: "None.",
    source: "contract",
  },
  {
    from: "pending_review",
    to: "changes_requested",
    actor: "moderator",
    action: "request_changes",
    condition: "request changes",
    effect: "Decision recorded with reviewer notes.",
    source: "contract",
  },
  {
    from: "pending_review",
    to: "rejected",
    actor: "moderator",
    action: "reject",
    condition: "reject",
    effect: "Decision recorded with reviewer notes.",
    source: "contract",
  },
  {
    from: "pending_review",
    to: "approved",
    actor: "moderator",
    action: "approve",
    condition: "approve",
    effect: "Decision recorded with reviewer notes.",
    source: "contract",
  },
  {
    from: "approved",
    to: "published",
    actor: "system",
    action: "publish",
    condition: "publication",
    effect: "Artifact promoted to the immutable public path; catalog, detail and versions JSON regenerated.",
    source: "contract",
  },
  {
    from: "published",
    to: "hidden",
    actor: "moderator",
    action: "hide",
    condition: "hide",
    effect: "Removed from the public catalog.",
    source: "contract",
  },
  {
    from: "published",
    to: "superseded",
    actor: "system",
    action: "supersede",
    condition: "a newer release supersedes it",
    effect: "Stays visible and downloadable.",
    source: "contract",
  },
  // Decisions for what the contract leaves open.
  {
    from: "draft",
    to: "cancelled",
    actor: "modder",
    action: "cancel",
    condition: "cancel",
    effect: "The cancel endpoint accepts a draft.",
    source: "decision",
  },
  {
    from: "uploaded",
    to: "cancelled",
    actor: "modder",
    action: "cancel",
    condition: "cancel before validation starts",
    effect: "The staged package is deleted.",
    source: "decision",
  },
  {
    from: "changes_requested",
    to: "cancelled",
    actor: "modder",
    action: "cancel",
    condition: "the modder withdraws instead of fixing",
    effect: "None.",
    source: "decision",
  },
  {
    from: "changes_requested",
    to: "uploaded",
    actor: "modder",
    action: "resubmit",
    condition: "a new package revision is submitted (new upload or a new push to the PR)",
    effect: "A new immutable staged revision; validation starts again and the review history is kept.",
    source: "decision",
  },
  {
    from: "validation_failed",
    to: "uploaded",
    actor: "modder",
    action: "resubmit",
    condition: "a fixed package revision is submitted",
    effect: "A new immutable staged revision; validation starts again.",
    source: "decision",
  },
  {
    from: "pending_review",
    to: "uploaded",
    actor: "modder",
    action: "resubmit",
    condition: "a new revision arrives while queued (a new push to the PR)",
    effect: "Revalidated; its queue position restarts.",
    source: "decision",
  },
  {
    from: "approved",
    to: "uploaded",
    actor: "modder",
    action: "resubmit",
    condition: "a new revision arrives after approval (a new push to the PR)",
    effect: "The approval is dismissed; revalidated and reviewed again.",
    source: "decision",
  },
  {
    from: "validation_failed",
    to: "validating",
    actor: "modder",
    action: "revalidate",
    condition:
      "the same revision is validated again after a failure that was not in the package (download, scanner or runner outage)",
    effect: "The validation run of the same commit runs again (`/svc revalidate`).",
    source: "decision",
  },
  {
    from: "validation_failed",
    to: "validating",
    actor: "moderator",
    action: "revalidate",
    condition: "a moderator validates the same revision again",
    effect: "The validation run of the same commit runs again (`/svc revalidate`).",
    source: "decision",
  },
  {
    from: "superseded",
    to: "hidden",
    actor: "moderator",
    action: "hide",
    condition: "hide",
    effect: "Removed from the public catalog.",
    source: "decision",
  },
  {
    from: "superseded",
    to: "published",
    actor: "system",
    action: "reinstate",
    condition: "every newer version was hidden",
    effect: "The newest visible version again: listed as the mod's latest version.",
    source: "decision",
  },
  {
    from: "hidden",
    to: "published",
    actor: "moderator",
    action: "unhide",
    condition: "unhide while no newer version is visible",
    effect: "Restored to the public catalog as the latest version.",
    source: "decision",
  },
  {
    from: "hidden",
    to: "superseded",
    actor: "moderator",
    action: "unhide",
    condition: "unhide while a newer version is visible",
    effect: "Restored to the public catalog as a superseded version.",
    source: "decision",
  },
];

export type TransitionResult =
  | { ok: true; from: SubmissionState; to: SubmissionState; transition: TransitionDefinition }
  | { ok: false; code: "illegal_transition"; from: SubmissionState; action: Action; message: string };

/**
 * Decides a move. `unhideTo` chooses between the two unhide targets (published when no newer
 * version is visible, superseded otherwise: the release record's settled status); nothing else
 * needs context.
 */
export function transition(
  from: SubmissionState,
  action: Action,
  actor: Actor,
  context: { unhideTo?: "published" | "superseded" } = {},
): TransitionResult {
  const candidates = TRANSITIONS.filter((t) => t.from === from && t.action === action && t.actor === actor);
  const chosen =
    action === "unhide" ? candidates.find((t) => t.to === (context.unhideTo ?? "published")) : candidates[0];
  if (!chosen) {
    return {
      ok: false,
      code: "illegal_transition",
      from,
      action,
      message: `a ${actor} cannot ${action.replaceAll("_", " ")} a submission in state ${from}`,
    };
  }
  return { ok: true, from, to: chosen.to, transition: chosen };
}

export function stateDefinition(id: SubmissionState): StateDefinition {
  return STATES.find((s) => s.id === id)!;
}

/** Moves open to an actor from a state: what a page or the bot may offer. */
export function availableActions(from: SubmissionState, actor: Actor): Action[] {
  return [...new Set(TRANSITIONS.filter((t) => t.from === from && t.actor === actor).map((t) => t.action))];
}
