import { existsSync, readdirSync, rmdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { appendAuditEvent } from "../accounts/audit.ts";
import { findPublishedRelease, findRelease, type PublisherOptions } from "../catalog/publisher.ts";
import { completePublication } from "./publication.ts";
import { loadSubmission, type SubmissionDeps, type SubmissionRow } from "./service.ts";
import { removeStaged, stagingPath } from "./staging.ts";
import { VALIDATION_QUEUE } from "./worker.ts";

export interface StartupRecoveryDeps extends SubmissionDeps {
  /** Private storage root: staged packages live under uploads/staging/ below it. */
  storageRoot: string;
  /**
   * True when no other process can use this store or storage root (PGlite holds its data folder
   * exclusively): every lease and every partial file then belongs to a dead process.
   */
  exclusive: boolean;
  /** Where the catalog lives (null where this process does not publish). */
  publisher: Pick<PublisherOptions, "recordsDir"> | null;
  log?: (line: string) => void;
}

export interface StartupRecovery {
  /** Upload files cut off mid-stream (uploads/staging/{id}/.partial-*), removed. */
  partialFiles: number;
  /** Complete staged packages no submission names (a crash between staging and the row), removed. */
  orphanedPackages: number;
  /** Validation jobs whose worker died holding them, released to run now instead of after the lease. */
  resumedValidations: number;
  /** Approved submissions whose release a crash left published on disk with the row behind, completed. */
  completedPublications: string[];
  /** Submissions whose hide or unhide a crash left committed in the catalog with the row behind, moved to follow it. */
  reconciledVisibility: string[];
}

/** The audit action of a row moved to follow the catalog at start (the moderator's own event was lost with the process). */
export const RECONCILED_AUDIT = "submission.reconciled";

/**
 * Without the exclusive lock another live process may be mid-upload in the same storage root: only
 * files untouched this long are taken for a crash's leftovers (uploads write continuously).
 */
const FOREIGN_ORPHAN_AGE_MS = 60 * 60_000;

/**
 * What a crash of the previous process left behind, put right before this one serves (run once at
 * start; orphans only appear when a process dies, and a live process cleans up after itself):
 * partial and unnamed staged uploads are removed, validations a dead worker held resume at once,
 * an approved submission whose exact release is already in the catalog is completed (row,
 * audit event, staging clean-up) instead of staying approved, and a row a crash left on the other
 * side of a hide or unhide follows the catalog.
 */
export async function recoverSubmissionsAtStart(deps: StartupRecoveryDeps): Promise<StartupRecovery> {
  const result: StartupRecovery = {
    partialFiles: 0,
    orphanedPackages: 0,
    resumedValidations: 0,
    completedPublications: [],
    reconciledVisibility: [],
  };
  if (deps.exclusive) {
    const released = await deps.store.query(
      `UPDATE validation_jobs SET locked_until = NULL WHERE queue = $1 AND locked_until IS NOT NULL`,
      [VALIDATION_QUEUE],
    );
    result.resumedValidations = released.rowCount;
  }
  if (deps.publisher) {
    const approved = await deps.store.query<SubmissionRow>(
      `SELECT * FROM submissions WHERE state = 'approved' AND github_pull_request IS NULL ORDER BY created_at, id`,
    );
    for (const row of approved.rows) {
      const record = findPublishedRelease(deps.publisher, row.metadata, row.package_sha256);
      if (!record) continue;
      try {
        await completePublication(deps, row.id, record, null, { reconciled: true });
      } catch (error) {
        // Moved on meanwhile (a moderator acted): the next publish request reconciles it instead.
        deps.log?.(
          `start-up: ${row.id} left approved: ${error instanceof Error ? error.message : String(error)}`,
        );
        continue;
      }
      removeStaged(deps.storageRoot, row.id);
      result.completedPublications.push(row.id);
    }
    result.reconciledVisibility = await reconcileVisibility(deps, deps.publisher);
  }
  await removeOrphanedUploads(deps, result);
  return result;
}

/**
 * Hide and unhide change the catalog first (one journaled commit, signed) and the row after it: the
 * catalog is the truth and the row its derivation. A crash between the two leaves a row that says
 * published while its record says hidden (or the reverse), and both decisions then refuse with
 * illegal_transition; here the row follows its release's record: hidden or not, and published or
 * superseded (the decision settled the mod's other versions too). One record read per visible
 * or hidden local submission, at start only. Without the exclusive lock (PostgreSQL) a live process
 * may be inside that window: its row moves here and its own move is then refused although the
 * catalog changed, which a start inside those milliseconds makes rare, and the catalog is right.
 */
async function reconcileVisibility(
  deps: StartupRecoveryDeps,
  publisher: Pick<PublisherOptions, "recordsDir">,
): Promise<string[]> {
  const reconciled: string[] = [];
  const rows = await deps.store.query<SubmissionRow>(
    `SELECT * FROM submissions WHERE state IN ('published', 'superseded', 'hidden') AND github_pull_request IS NULL ORDER BY created_at, id`,
  );
  for (const row of rows.rows) {
    const record = findRelease(publisher, row.mod_id, row.version);
    // Another release under the version (an import after this submission ended) is not this row's.
    if (!record || record.sha256 !== row.package_sha256) continue;
    const hiddenInCatalog = record.status === "hidden";
    if (record.status === row.state) continue;
    const to = record.status;
    // Hidden or not, and published or superseded (a hide or unhide settles the mod's other versions).
    const action = hiddenInCatalog
      ? "hide"
      : row.state === "hidden"
        ? "unhide"
        : to === "superseded"
          ? "supersede"
          : "reinstate";
    const moved = await deps.store.transaction(async (tx) => {
      const current = await loadSubmission(tx, row.id, true);
      if (!current || current.state !== row.state) return false;
      const now = deps.now();
      await tx.query(
        `UPDATE submissions SET state = $2, state_before_hidden = $3, updated_at = $4::timestamptz WHERE id = $1`,
        [row.id, to, hiddenInCatalog ? (record.statusBeforeHidden ?? row.state) : null, now.toISOString()],
      );
      await appendAuditEvent(
        tx,
        {
          actorAccountId: null,
          action: RECONCILED_AUDIT,
          targetType: "submission",
          targetId: row.id,
          metadata: {
            from: row.state,
            to,
            action,
            reason: "the catalog committed the decision; the process stopped before the row recorded it",
          },
        },
        { now, random: deps.random },
      );
      return true;
    });
    if (moved) reconciled.push(row.id);
  }
  return reconciled;
}

async function removeOrphanedUploads(deps: StartupRecoveryDeps, result: StartupRecovery): Promise<void> {
  const staging = join(deps.storageRoot, "uploads", "staging");
  if (!existsSync(staging)) return;
  const now = Date.now();
  const abandoned = (path: string) => deps.exclusive || now - statSync(path).mtimeMs > FOREIGN_ORPHAN_AGE_MS;
  for (const id of readdirSync(staging)) {
    const dir = join(staging, id);
    if (!statSync(dir).isDirectory()) continue;
    const row = await loadSubmission(deps.store, id);
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (!abandoned(path)) continue;
      if (name.startsWith(".partial-")) {
        rmSync(path, { force: true });
        result.partialFiles++;
      } else if (row?.staging_path !== stagingPath(id, name)) {
        rmSync(path, { recursive: true, force: true });
        result.orphanedPackages++;
      }
    }
    try {
      rmdirSync(dir);
    } catch {
      // not empty: the submission's package lives here
    }
  }
}
