/**
 * decideSweep: what the scheduled sweep does next with one open pull request, from what the bot
 * derived of it and a few facts read beside it (the head's check runs, the sweep's reminder, the
 * clock). Pure, like decide: one step at a time; the sweep reads the pull request again after each.
 */
import { checkRunName, GATE_CHECK_ID, type GateVerdict } from "./comments.ts";
import {
  autoMergedNote,
  type ReminderRecord,
  staleClosedNote,
  staleReminderComment,
} from "./sweep-comments.ts";
import type { SubmissionView } from "./derive.ts";
import { voidStatus } from "./decide-moderation.ts";
import { gateCheckRun, gateVerdict, type Plan, statusActions, walk } from "./plan.ts";

/** portal.config.json `sweep` (schemas/schemas/portal-config.schema.json), defaults filled in. */
export interface SweepSettings {
  /** A submission waiting this many days for changes gets one reminder. */
  remindAfterDays: number;
  /** ...and is closed this many days after the reminder, when nothing was pushed. */
  closeAfterDays: number;
  /** Merge a submission approved at its head with every check green (off: an admin merges). */
  autoMerge: boolean;
}

export const DEFAULT_SWEEP_SETTINGS: SweepSettings = {
  remindAfterDays: 14,
  closeAfterDays: 14,
  autoMerge: false,
};

/**
 * What changed this recently is the bot's: its delivery of that change may still be queued (or
 * running its retries), and two writers at once would write everything twice.
 */
export const SWEEP_GRACE_MS = 15 * 60_000;
const DAY_MS = 24 * 3600_000;
const PASSING = new Set(["success", "neutral", "skipped"]);

export interface CheckRunFact {
  name: string;
  status: string;
  conclusion: string | null;
  /** The app that wrote it (null when not reported). */
  appId: number | null;
}

export interface SweepFacts {
  now: Date;
  /** When the pull request last changed. */
  updatedAt: string | null;
  /** The newest check run of each name on the head commit. */
  checkRuns: CheckRunFact[];
  /** The portal app: only its gate counts, as only its gate satisfies the ruleset. */
  appId: number;
  reminder: ReminderRecord | null;
  mergeable: boolean | null;
}

export type SweepStep =
  | { kind: "none"; why: string | null }
  /** A push the bot never handled: handled now as the pull_request event would have been. */
  | { kind: "push"; action: "opened" | "synchronize" }
  /** Waiting for a report whose delivery may be lost: the head's validation run is read now. */
  | { kind: "read_run" }
  | { kind: "plan"; plan: Plan; did: string };

function gateOf(facts: SweepFacts): GateVerdict | "other" | null {
  const gate = facts.checkRuns.find((r) => r.name === checkRunName(GATE_CHECK_ID) && r.appId === facts.appId);
  if (!gate) return null;
  if (gate.status !== "completed") return "pending";
  return gate.conclusion === "success" || gate.conclusion === "failure" ? gate.conclusion : "other";
}

const plan = (view: SubmissionView, actions: Plan["actions"], did: string, to = view.state): SweepStep => ({
  kind: "plan",
  plan: { from: view.state, to, actions, log: [did] },
  did,
});

export function decideSweep(view: SubmissionView, facts: SweepFacts, settings: SweepSettings): SweepStep {
  if (!view.open) return { kind: "none", why: null };
  const now = facts.now.getTime();
  const gate = gateOf(facts);
  if (view.shape.kind === "not_a_submission") {
    if (gate === "success") return { kind: "none", why: null };
    return plan(
      view,
      [gateCheckRun(view.headSha, "success", { kind: "not_a_submission" })],
      "gate: success (not a submission)",
    );
  }
  if (!view.stored || view.stored.headSha !== view.headSha) {
    const changed = facts.updatedAt ? Date.parse(facts.updatedAt) : 0;
    if (now - changed < SWEEP_GRACE_MS)
      return { kind: "none", why: "changed moments ago: the bot handles it" };
    return { kind: "push", action: view.stored ? "synchronize" : "opened" };
  }
  if (view.statusVoid)
    return plan(view, voidStatus(view).actions, "status comment void: written again", "validation_failed");
  // A state without its time (the Actions reporter without the app's key) is taken as old.
  const since = view.stored.at ? Date.parse(view.stored.at) : 0;
  if (view.state === "validating") {
    if (now - since < SWEEP_GRACE_MS) return { kind: "none", why: "validation started moments ago" };
    return { kind: "read_run" };
  }
  const want = gateVerdict(view.state);
  if (gate !== want)
    return plan(
      view,
      [gateCheckRun(view.headSha, want, { kind: "state", state: view.state })],
      `gate: ${want}`,
    );
  if (view.state === "changes_requested") return decideStale(view, facts, settings, since);
  if (view.state === "approved" && settings.autoMerge) return decideMerge(view, facts);
  return { kind: "none", why: null };
}

/** A submission left waiting for changes: a reminder, then (after closeAfterDays more) closed. */
function decideStale(
  view: SubmissionView,
  facts: SweepFacts,
  settings: SweepSettings,
  since: number,
): SweepStep {
  const now = facts.now.getTime();
  if (!facts.reminder) {
    const waited = Math.floor((now - since) / DAY_MS);
    if (waited < settings.remindAfterDays) return { kind: "none", why: null };
    const body = staleReminderComment({
      record: { headSha: view.headSha, at: facts.now.toISOString() },
      submitter: view.submitter,
      waitedDays: waited,
      closeAfterDays: settings.closeAfterDays,
    });
    return plan(view, [{ type: "reply", body }], `reminded (changes requested ${waited} days ago)`);
  }
  if (now - Date.parse(facts.reminder.at) < settings.closeAfterDays * DAY_MS)
    return { kind: "none", why: null };
  // Closing it is the submitter's withdrawal by default, as closing it themselves would be.
  const moved = walk(view.state, [["cancel", "modder"]]);
  if (!moved.ok) return { kind: "none", why: moved.message };
  return plan(
    view,
    [
      ...statusActions(view, moved.to, { notes: [staleClosedNote(settings.closeAfterDays)] }),
      { type: "close_pull_request" },
    ],
    "closed (nothing pushed since the reminder)",
    moved.to,
  );
}

/**
 * Merges an approved submission, only when everything on its head passed. The app is the
 * ruleset's bypass actor, so GitHub would merge it even with a check failing: this is the check.
 */
function decideMerge(view: SubmissionView, facts: SweepFacts): SweepStep {
  const running = facts.checkRuns.filter((r) => r.status !== "completed");
  if (running.length > 0) return { kind: "none", why: `not merged: ${running[0]!.name} is still running` };
  const failing = facts.checkRuns.filter((r) => !PASSING.has(r.conclusion ?? ""));
  if (failing.length > 0) return { kind: "none", why: `not merged: ${failing[0]!.name} did not pass` };
  if (facts.mergeable !== true)
    return {
      kind: "none",
      why:
        facts.mergeable === false
          ? "not merged: GitHub reports a conflict"
          : "not merged: mergeability not known yet",
    };
  return plan(
    view,
    [
      { type: "merge_pull_request", sha: view.headSha },
      { type: "reply", body: autoMergedNote() },
    ],
    "merged (approved, every check passed)",
  );
}
