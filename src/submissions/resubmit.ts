/** A new package revision of a submission its owner may still resubmit. */
import { appendAuditEvent } from "../accounts/audit.ts";
import { SvcError } from "../errors.ts";
import type { SqlExecutor } from "../store/store.ts";
import { transition } from "../workflow/machine.ts";
import {
  enqueueValidation,
  loadSubmission,
  type NewSubmission,
  pendingChecks,
  SUBMISSION_AUDIT,
  type SubmissionDeps,
  type SubmissionRow,
} from "./service.ts";

/**
 * A new package revision for a submission the modder may resubmit (changes requested, or a new
 * push while queued or approved): the staged bytes are replaced, validation starts again, and the
 * review history is kept.
 */
export async function resubmitSubmission(
  deps: SubmissionDeps,
  submissionId: string,
  input: Omit<NewSubmission, "id">,
): Promise<SubmissionRow> {
  const now = deps.now();
  return deps.store.transaction(async (tx) => {
    const row = await loadSubmission(tx, submissionId, true);
    if (!row || row.owner_account_id !== input.ownerAccountId)
      throw new SvcError("not_found", `no submission ${submissionId}`);
    const step = transition(row.state, "resubmit", "modder");
    if (!step.ok)
      throw new SvcError("illegal_transition", step.message, {
        details: { from: row.state, action: "resubmit" },
      });
    const updated = await tx.query<SubmissionRow>(
      `UPDATE submissions SET state = $2, revision = revision + 1, package_size_bytes = $3, package_content_type = $4,
         package_sha256 = $5, metadata_sha256 = $6, metadata = $7::jsonb, staging_path = $8, validation_checks = $9::jsonb,
         detail_page = NULL, pending_since = NULL, updated_at = $10::timestamptz, package_file_name = $11,
         package_files = NULL
       WHERE id = $1 RETURNING *`,
      [
        row.id,
        step.to,
        input.staged.sizeBytes,
        input.contentType,
        input.staged.sha256,
        input.metadataSha256,
        JSON.stringify(input.sidecar),
        input.staged.path,
        JSON.stringify(pendingChecks()),
        now.toISOString(),
        input.sidecar.package.fileName,
      ],
    );
    const next = updated.rows[0]!;
    if (input.staged.path !== null) await enqueueValidation(tx, row.id, next.revision, now);
    await appendAuditEvent(
      tx,
      {
        actorAccountId: input.ownerAccountId,
        action: SUBMISSION_AUDIT.resubmitted,
        targetType: "submission",
        targetId: row.id,
        metadata: {
          from: row.state,
          to: step.to,
          revision: next.revision,
          packageSha256: input.staged.sha256,
        },
      },
      { now, random: deps.random },
    );
    return next;
  });
}

/** The submission a new upload of the same version would continue, when its owner may resubmit it. */
export async function findResubmittable(
  db: SqlExecutor,
  ownerAccountId: string,
  modId: string,
  version: string,
): Promise<SubmissionRow | null> {
  const result = await db.query<SubmissionRow>(
    `SELECT * FROM submissions WHERE owner_account_id = $1 AND mod_id = $2 AND version = $3
       AND state IN ('changes_requested', 'validation_failed', 'pending_review', 'approved') LIMIT 1`,
    [ownerAccountId, modId, version],
  );
  return result.rows[0] ?? null;
}
