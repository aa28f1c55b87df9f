/** What the sweep writes: its reminder, the notes of what it closed or merged, its job summary. */
import { AWAITING_RUN_APPROVAL_LABEL, inlineCode, REMINDER_MARKER, submitterName } from "./comments.ts";

/** The sweep's reminder on a submission that has waited for changes: the record is for one commit. */
export interface ReminderRecord {
  headSha: string;
  at: string;
}

export function staleReminderComment(input: {
  record: ReminderRecord;
  submitter: string | null;
  waitedDays: number;
  closeAfterDays: number;
}): string {
  const who = input.submitter ? `${submitterName(input.submitter)}, a` : "A";
  return [
    `${REMINDER_MARKER} ${JSON.stringify(input.record)} -->`,
    `${who} moderator requested changes to this submission ${input.waitedDays} days ago, and nothing has been pushed since. Push a fix and validation and review run again; or close this pull request if you no longer want to submit it.`,
    "",
    `Without a push, this pull request is closed in ${input.closeAfterDays} days (nothing is lost: the same release can be submitted again later).`,
  ].join("\n");
}

export function staleClosedNote(closeAfterDays: number): string {
  return `Closed by the svc sweep: changes were requested, and nothing was pushed in the ${closeAfterDays} days after the reminder. The release can be submitted again at any time (a new pull request, or the release again through release intake).`;
}

export function autoMergedNote(): string {
  return "Merged by the svc sweep: a moderator approved this commit and every check passed. The publish workflow puts it in the catalog and posts the receipt here.";
}

/** What the sweep did with one pull request, for the job summary. */
export interface SweptPullRequest {
  number: number;
  /** The steps taken, in order (each a short phrase); empty when nothing was needed. */
  did: string[];
  /** Why nothing (more) was done, when that is worth saying. */
  note: string | null;
}

/** The sweep's job summary: what it did to each pull request, what waits for people, what it left. */
export function sweepSummary(input: {
  swept: SweptPullRequest[];
  awaitingRunApproval: number[];
  deferred: number[];
  remaining: number | null;
}): string {
  const out = ["## svc sweep", ""];
  const acted = input.swept.filter((p) => p.did.length > 0 || p.note);
  out.push(
    `${input.swept.length} open pull request(s) re-derived, ${input.swept.filter((p) => p.did.length > 0).length} changed.`,
    "",
  );
  if (acted.length > 0) {
    out.push("| pull request | done | note |", "|---|---|---|");
    for (const p of acted)
      out.push(
        `| #${p.number} | ${p.did.join("; ") || "nothing"} | ${p.note ? inlineCode(p.note, 300) : ""} |`,
      );
    out.push("");
  }
  if (input.awaitingRunApproval.length > 0)
    out.push(
      `**Waiting for a maintainer to approve the validation run** (label \`${AWAITING_RUN_APPROVAL_LABEL}\`): ${input.awaitingRunApproval.map((n) => `#${n}`).join(", ")}`,
      "",
    );
  if (input.deferred.length > 0)
    out.push(
      `**Left for the next sweep** (the API budget ran low${input.remaining === null ? "" : `: ${input.remaining} requests left`}): ${input.deferred.map((n) => `#${n}`).join(", ")}`,
      "",
    );
  return `${out.join("\n").trimEnd()}\n`;
}
