import { join } from "node:path";
import { appendAuditEvent } from "../accounts/audit.ts";
import { readSubmissionCatalog } from "../catalog/validation-catalog.ts";
import { readValidationDocuments } from "../catalog/validator.ts";
import type { CatalogDocument } from "../contracts/catalog.ts";
import type { AntivirusScanner } from "../validation/antivirus/scanner.ts";
import { detailPageRequirements } from "../validation/checks/detail_page.ts";
import { completeFromCatalog, validatePackage } from "../validation/runner.ts";
import type { Sidecar, ValidationReport } from "../validation/types.ts";
import { transition } from "../workflow/machine.ts";
import { type CheckEntry, loadSubmission, SUBMISSION_AUDIT, type SubmissionDeps } from "./service.ts";

export const VALIDATION_QUEUE = "mod-validation";

/** Reason codes that mean "the scanner could not answer": retried with backoff, never passed. */
const SCANNER_UNAVAILABLE = new Set(["scanner_unavailable", "scanner_timeout"]);

export interface WorkerDeps extends SubmissionDeps {
  siteDir: string;
  /** Private storage root; staged packages live under uploads/staging/ below it. */
  storageRoot: string;
  /** Creates the scanner for one run; null when none is configured (antivirus then fails closed). */
  scanner: () => AntivirusScanner | null;
  /** How long a claimed job stays locked; a worker that dies releases it when the lease ends. */
  leaseMs?: number;
  /** Attempts while the scanner is unavailable before the submission fails validation. */
  maxAttempts?: number;
  /** Backoff before retry n (1-based). */
  backoffMs?: (attempt: number) => number;
  log?: (line: string) => void;
  /**
   * Called once a submission's validation is final (pending_review or validation_failed), after the
   * row is committed: GitHub-backed submissions report the result to their pull request here. A
   * failure is logged, never retried here: the next read of the submission reports it again.
   */
  onCompleted?: (submissionId: string) => Promise<void>;
}

export const defaultBackoffMs = (attempt: number): number =>
  Math.min(10 * 60_000, 5_000 * 2 ** (attempt - 1));

interface ClaimedJob {
  submission_id: string;
  revision: number;
  attempts: number;
}

/**
 * Claims the next due job of the mod-validation queue (an expired lease counts as due: that is how
 * a job survives a crash), moving its submission uploaded -> validating.
 */
async function claimJob(deps: WorkerDeps): Promise<ClaimedJob | null> {
  const now = deps.now();
  const lease = new Date(now.getTime() + (deps.leaseMs ?? 5 * 60_000));
  return deps.store.transaction(async (tx) => {
    const due = await tx.query<ClaimedJob>(
      `SELECT submission_id, revision, attempts FROM validation_jobs
        WHERE queue = $1 AND run_after <= $2::timestamptz AND (locked_until IS NULL OR locked_until < $2::timestamptz)
        ORDER BY run_after, submission_id LIMIT 1 FOR UPDATE SKIP LOCKED`,
      [VALIDATION_QUEUE, now.toISOString()],
    );
    const job = due.rows[0];
    if (!job) return null;
    await tx.query(
      `UPDATE validation_jobs SET locked_until = $2::timestamptz, attempts = attempts + 1 WHERE submission_id = $1`,
      [job.submission_id, lease.toISOString()],
    );
    const row = await loadSubmission(tx, job.submission_id, true);
    if (!row || (row.state !== "uploaded" && row.state !== "validating") || row.revision !== job.revision) {
      // Cancelled or resubmitted meanwhile: this job has nothing left to do.
      await tx.query(`DELETE FROM validation_jobs WHERE submission_id = $1 AND revision = $2`, [
        job.submission_id,
        job.revision,
      ]);
      return null;
    }
    if (row.state === "uploaded") {
      const step = transition("uploaded", "start_validation", "system");
      if (!step.ok) throw new Error(step.message);
      const running = row.validation_checks.map((c) => ({
        ...c,
        status: "running" as const,
        log: [],
        reasonCode: null,
      }));
      await tx.query(
        `UPDATE submissions SET state = $2, validation_checks = $3::jsonb, updated_at = $4::timestamptz WHERE id = $1`,
        [row.id, step.to, JSON.stringify(running), now.toISOString()],
      );
      await appendAuditEvent(
        tx,
        {
          actorAccountId: null,
          action: SUBMISSION_AUDIT.validationStarted,
          targetType: "submission",
          targetId: row.id,
          metadata: { queue: VALIDATION_QUEUE, attempt: job.attempts + 1 },
        },
        { now, random: deps.random },
      );
    }
    return { ...job, attempts: job.attempts + 1 };
  });
}

export type JobOutcome =
  | { submissionId: string; outcome: "pending_review" | "validation_failed"; report: ValidationReport }
  | { submissionId: string; outcome: "retry"; retryAt: string; reasonCode: string };

/** Runs one due job, if any. Returns what happened, or null when the queue had nothing due. */
export async function runNextValidationJob(deps: WorkerDeps): Promise<JobOutcome | null> {
  const job = await claimJob(deps);
  if (!job) return null;
  const row = (await loadSubmission(deps.store, job.submission_id))!;
  // Only the catalog entries this submission's checks read, not the whole catalog.json.
  const documents = {
    ...readValidationDocuments(deps.siteDir, { catalog: false }),
    catalog: readSubmissionCatalog(deps.siteDir, row.metadata),
  };
  const { report, inventory } = await validatePackage({
    package: { path: join(deps.storageRoot, row.staging_path ?? "") },
    sidecar: row.metadata,
    ...documents,
    scanner: deps.scanner(),
    clock: deps.now,
  });
  const now = deps.now();
  const antivirus = report.checks.find((c) => c.id === "antivirus_scan");
  const scannerDown = antivirus?.status === "failed" && SCANNER_UNAVAILABLE.has(antivirus.reasonCode ?? "");
  const onlyScannerFailed =
    scannerDown && report.checks.every((c) => c.status !== "failed" || c.id === "antivirus_scan");
  if (onlyScannerFailed && job.attempts < (deps.maxAttempts ?? 6)) {
    const retryAt = new Date(now.getTime() + (deps.backoffMs ?? defaultBackoffMs)(job.attempts));
    await deps.store.transaction(async (tx) => {
      const checks: CheckEntry[] = report.checks.map((c) =>
        c.id === "antivirus_scan"
          ? {
              ...c,
              status: "pending",
              log: [
                ...c.log,
                `Scanner unavailable on attempt ${job.attempts}; retrying at ${retryAt.toISOString()}.`,
              ],
            }
          : { ...c, finishedAt: report.finishedAt },
      );
      await tx.query(
        `UPDATE submissions SET validation_checks = $2::jsonb, updated_at = $3::timestamptz WHERE id = $1 AND revision = $4`,
        [row.id, JSON.stringify(checks), now.toISOString(), job.revision],
      );
      await tx.query(
        `UPDATE validation_jobs SET run_after = $2::timestamptz, locked_until = NULL, last_error = $3 WHERE submission_id = $1`,
        [row.id, retryAt.toISOString(), antivirus!.reasonCode],
      );
      await appendAuditEvent(
        tx,
        {
          actorAccountId: null,
          action: SUBMISSION_AUDIT.validationRetried,
          targetType: "submission",
          targetId: row.id,
          metadata: {
            reasonCode: antivirus!.reasonCode,
            attempt: job.attempts,
            retryAt: retryAt.toISOString(),
          },
        },
        { now, random: deps.random },
      );
    });
    deps.log?.(
      `mod-validation: ${row.id} scanner unavailable, retry ${job.attempts} at ${retryAt.toISOString()}`,
    );
    return {
      submissionId: row.id,
      outcome: "retry",
      retryAt: retryAt.toISOString(),
      reasonCode: antivirus!.reasonCode!,
    };
  }
  const step = transition("validating", report.passed ? "pass_validation" : "fail_validation", "system");
  if (!step.ok) throw new Error(step.message);
  const detail = detailPage(report, row.metadata, documents.catalog);
  await deps.store.transaction(async (tx) => {
    const current = await loadSubmission(tx, row.id, true);
    if (current?.state !== "validating" || current.revision !== job.revision) return;
    const checks = report.checks.map((c) => ({
      ...c,
      startedAt: report.startedAt,
      finishedAt: report.finishedAt,
    }));
    await tx.query(
      `UPDATE submissions SET state = $2, validation_checks = $3::jsonb, detail_page = $4::jsonb, updated_at = $5::timestamptz,
         pending_since = CASE WHEN $2 = 'pending_review' THEN $5::timestamptz ELSE pending_since END,
         package_files = $6::jsonb
       WHERE id = $1`,
      [
        row.id,
        step.to,
        JSON.stringify(checks),
        JSON.stringify(detail),
        now.toISOString(),
        inventory === null ? null : JSON.stringify(inventory),
      ],
    );
    await tx.query(`DELETE FROM validation_jobs WHERE submission_id = $1`, [row.id]);
    await appendAuditEvent(
      tx,
      {
        actorAccountId: null,
        action: SUBMISSION_AUDIT.validationCompleted,
        targetType: "submission",
        targetId: row.id,
        metadata: {
          passed: report.passed,
          to: step.to,
          failedChecks: report.checks
            .filter((c) => c.status === "failed")
            .map((c) => `${c.id}:${c.reasonCode}`),
        },
      },
      { now, random: deps.random },
    );
  });
  deps.log?.(`mod-validation: ${row.id} ${row.mod_id}@${row.version} -> ${step.to}`);
  if (deps.onCompleted) {
    try {
      await deps.onCompleted(row.id);
    } catch (error) {
      deps.log?.(
        `mod-validation: ${row.id} validated, but reporting it failed: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
  }
  return { submissionId: row.id, outcome: step.to as "pending_review" | "validation_failed", report };
}

function detailPage(report: ValidationReport, sidecar: Sidecar, catalog: CatalogDocument | null) {
  const check = report.checks.find((c) => c.id === "detail_page");
  if (!check || check.reasonCode?.startsWith("blocked")) return { requirements: [], satisfied: false };
  const requirements = detailPageRequirements(completeFromCatalog(sidecar, catalog), catalog);
  return { requirements, satisfied: requirements.every((r) => r.satisfied) };
}

/** Polls the queue until stopped; one job at a time per process. */
export function startValidationWorker(
  deps: WorkerDeps,
  options: { intervalMs?: number; startAfter?: Promise<unknown> } = {},
): { stop: () => Promise<void>; kick: () => void } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    if (stopped) return;
    running = (async () => {
      try {
        while (!stopped && (await runNextValidationJob(deps))) {
          // Drain what is due before sleeping.
        }
      } catch (error) {
        deps.log?.(
          `mod-validation: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
      }
      if (!stopped) timer = setTimeout(tick, options.intervalMs ?? 1000);
    })();
  };
  // Start-up recovery (released leases, orphans) runs before the first claim; its failure is logged there.
  (options.startAfter ?? Promise.resolve()).then(tick, tick);
  return {
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
    kick: () => {
      if (timer) {
        clearTimeout(timer);
        timer = undefined;
        tick();
      }
    },
  };
}
