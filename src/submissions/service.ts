import { randomBytes } from "node:crypto";
import { appendAuditEvent } from "../accounts/audit.ts";
import type { RandomBytes } from "../accounts/secrets.ts";
import type { PortalConfig } from "../config/portal-config.ts";
import { CHECKS } from "../validation/checks/index.ts";
import { portalUrls } from "../contracts/urls.ts";
import { SvcError } from "../errors.ts";
import type { SqlExecutor, Store } from "../store/store.ts";
import type { PackageInventory, Sidecar } from "../validation/types.ts";
import { type Action, type Actor, type SubmissionState, transition } from "../workflow/machine.ts";
import type { SubmissionOwnership } from "./ownership.ts";
import type { ReleaseDetails, StaffDetails } from "./review.ts";

export type Decision = "approve" | "reject" | "request_changes" | "hide" | "unhide";

export interface CheckEntry {
  id: string;
  required: boolean;
  status: "pending" | "running" | "passed" | "failed" | "skipped";
  reasonCode: string | null;
  log: string[];
  startedAt?: string;
  finishedAt?: string;
}

export interface SubmissionRow {
  id: string;
  owner_account_id: string;
  mod_id: string;
  version: string;
  state: SubmissionState;
  revision: number;
  package_file_name: string;
  package_size_bytes: string | number;
  package_content_type: string;
  package_sha256: string;
  metadata_sha256: string;
  metadata: Sidecar;
  staging_path: string | null;
  validation_checks: CheckEntry[];
  /** What the last finished validation run read from the package (migration 007); null before. */
  package_files: PackageInventory | null;
  detail_page: {
    requirements: Array<{ id: string; satisfied: boolean; message?: string }>;
    satisfied: boolean;
  } | null;
  publication: Record<string, string> | null;
  state_before_hidden: SubmissionState | null;
  pending_since: Date | string | null;
  /** Set for a GitHub-backed submission: the pull request on the portal repository. */
  github_pull_request: number | null;
  github_pull_request_url: string | null;
  github_reported_revision: number | null;
  created_at: Date | string;
  updated_at: Date | string;
}

/** Where a published submission's release lives (the upload-submission document's publication). */
export interface Publication {
  packageUrl: string;
  catalogUrl: string;
  detailUrl: string;
  versionsUrl: string;
  pageUrl: string;
  publishedAt: string;
}

export interface DecisionRow {
  decision: Decision;
  reviewer_account_id: string;
  notes: string;
  from_state: string;
  to_state: string;
  decided_at: Date | string;
}

export interface SubmissionDeps {
  store: Store;
  config: PortalConfig;
  now: () => Date;
  random: RandomBytes;
}

export const SUBMISSION_AUDIT = {
  created: "upload.created",
  cancelled: "upload.cancelled",
  resubmitted: "upload.resubmitted",
  validationStarted: "validation.started",
  validationRetried: "validation.retried",
  validationCompleted: "validation.completed",
  decided: "moderation.decided",
  published: "catalog.published",
  superseded: "submission.superseded",
  packageDownloaded: "submission.package_downloaded",
} as const;

const iso = (value: Date | string | null): string | null =>
  value === null ? null : (value instanceof Date ? value : new Date(value)).toISOString();

/** sub_ + 26 base36 characters (128 random bits), the form svc.upload-submission.v1 requires. */
export function newSubmissionId(random: RandomBytes = randomBytes): string {
  const n = BigInt(`0x${random(16).toString("hex")}`);
  return `sub_${n.toString(36).padStart(25, "0")}`;
}

export function pendingChecks(): CheckEntry[] {
  return CHECKS.filter((c) => c.scope === "package").map((c) => ({
    id: c.id,
    required: c.required,
    status: "pending" as const,
    reasonCode: null,
    log: [],
  }));
}

export async function loadSubmission(
  db: SqlExecutor,
  id: string,
  forUpdate = false,
): Promise<SubmissionRow | null> {
  const result = await db.query<SubmissionRow>(
    `SELECT * FROM submissions WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
    [id],
  );
  return result.rows[0] ?? null;
}

export interface NewSubmission {
  id: string;
  ownerAccountId: string;
  sidecar: Sidecar;
  metadataSha256: string;
  contentType: string;
  /** path is null for a package named by URL: it is validated on its pull request, not by the worker. */
  staged: { path: string | null; sha256: string; sizeBytes: number };
}

/**
 * Records a staged upload: draft -> uploaded in one step (the modder submits with the upload), a
 * queued mod-validation job and the audit events, all in one transaction.
 */
export async function createSubmission(deps: SubmissionDeps, input: NewSubmission): Promise<SubmissionRow> {
  const now = deps.now();
  const step = transition("draft", "submit", "modder");
  if (!step.ok) throw new SvcError("illegal_transition", step.message);
  return deps.store.transaction(async (tx) => {
    await assertNoOpenSubmission(tx, input.sidecar, input.ownerAccountId);
    const result = await tx.query<SubmissionRow>(
      `INSERT INTO submissions (id, owner_account_id, mod_id, version, state, revision, package_file_name,
         package_size_bytes, package_content_type, package_sha256, metadata_sha256, metadata, staging_path,
         validation_checks, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, 1, $6, $7, $8, $9, $10, $11::jsonb, $12, $13::jsonb, $14::timestamptz, $14::timestamptz)
       RETURNING *`,
      [
        input.id,
        input.ownerAccountId,
        input.sidecar.modId,
        input.sidecar.version,
        step.to,
        input.sidecar.package.fileName,
        input.staged.sizeBytes,
        input.contentType,
        input.staged.sha256,
        input.metadataSha256,
        JSON.stringify(input.sidecar),
        input.staged.path,
        JSON.stringify(pendingChecks()),
        now.toISOString(),
      ],
    );
    if (input.staged.path !== null) await enqueueValidation(tx, input.id, 1, now);
    await appendAuditEvent(
      tx,
      {
        actorAccountId: input.ownerAccountId,
        action: SUBMISSION_AUDIT.created,
        targetType: "submission",
        targetId: input.id,
        metadata: {
          modId: input.sidecar.modId,
          version: input.sidecar.version,
          packageSha256: input.staged.sha256,
          sizeBytes: input.staged.sizeBytes,
          state: step.to,
        },
      },
      { now, random: deps.random },
    );
    return result.rows[0]!;
  });
}

/**
 * One open submission per mod version: the check before a submission is recorded (also run before a
 * GitHub-backed upload opens its PR). Who may upload a mod at all is its ownership record's
 * question (ownership.ts), asked before any package byte is stored.
 */
/** States of a version that reached the catalog (hidden ones too: their version number stays taken). */
const PUBLISHED_STATES = new Set(["published", "superseded", "hidden"]);

export async function assertNoOpenSubmission(
  db: SqlExecutor,
  sidecar: Sidecar,
  ownerAccountId: string,
): Promise<void> {
  const open = await db.query<{ id: string; owner_account_id: string; state: string }>(
    `SELECT id, owner_account_id, state FROM submissions WHERE mod_id = $1 AND version = $2
       AND state NOT IN ('cancelled', 'rejected', 'validation_failed') LIMIT 1`,
    [sidecar.modId, sidecar.version],
  );
  const row = open.rows[0];
  if (row) {
    const details = row.owner_account_id === ownerAccountId ? { submissionId: row.id } : undefined;
    // A published version is not "open": say what it is, with the code the docs give for it.
    if (PUBLISHED_STATES.has(row.state))
      throw new SvcError(
        "version_exists",
        `${sidecar.modId}@${sidecar.version} is already published, and a published version never changes: upload it as a new version`,
        { details },
      );
    throw new SvcError("conflict", `${sidecar.modId}@${sidecar.version} already has an open submission`, {
      details,
    });
  }
}

export async function enqueueValidation(
  tx: SqlExecutor,
  submissionId: string,
  revision: number,
  now: Date,
): Promise<void> {
  await tx.query(
    `INSERT INTO validation_jobs (submission_id, revision, attempts, run_after, created_at)
     VALUES ($1, $2, 0, $3::timestamptz, $3::timestamptz)
     ON CONFLICT (submission_id) DO UPDATE SET revision = $2, attempts = 0, run_after = $3::timestamptz, locked_until = NULL, last_error = NULL`,
    [submissionId, revision, now.toISOString()],
  );
}

export interface ActorRef {
  accountId: string;
  kind: Actor;
}

/** What a move may carry: the reviewer's notes, where an unhide lands, who may see the row at all. */
export interface SubmissionActionOptions {
  notes?: string;
  unhideTo?: "published" | "superseded";
  /** A row this refuses is not_found to the caller. */
  visibleTo?: (row: SubmissionRow) => boolean;
}

/**
 * Moves a submission with the state machine, under a row lock, recording the decision (with the
 * reviewer's notes and how long the release waited) and one audit event in the same transaction.
 * An illegal move throws illegal_transition and changes nothing.
 */
export async function applySubmissionAction(
  deps: SubmissionDeps,
  submissionId: string,
  action: Action,
  actor: ActorRef,
  options: SubmissionActionOptions = {},
): Promise<SubmissionRow> {
  return deps.store.transaction((tx) =>
    applySubmissionActionIn(tx, deps, submissionId, action, actor, options),
  );
}

/** applySubmissionAction inside a transaction the caller holds (several moves that commit together). */
export async function applySubmissionActionIn(
  tx: SqlExecutor,
  deps: SubmissionDeps,
  submissionId: string,
  action: Action,
  actor: ActorRef,
  options: SubmissionActionOptions = {},
): Promise<SubmissionRow> {
  const now = deps.now();
  const row = await loadSubmission(tx, submissionId, true);
  if (!row || (options.visibleTo && !options.visibleTo(row)))
    throw new SvcError("not_found", `no submission ${submissionId}`);
  if (actor.kind === "moderator" && row.owner_account_id === actor.accountId) {
    throw new SvcError("forbidden", "a moderator cannot decide on their own submission");
  }
  let unhideTo = options.unhideTo;
  if (action === "unhide" && !unhideTo) {
    const newer = await tx.query<{ version: string }>(
      `SELECT version FROM submissions WHERE mod_id = $1 AND id <> $2 AND state = 'published'`,
      [row.mod_id, row.id],
    );
    unhideTo =
      newer.rows.length > 0
        ? "superseded"
        : row.state_before_hidden === "superseded"
          ? "superseded"
          : "published";
  }
  const step = transition(row.state, action, actor.kind, unhideTo ? { unhideTo } : {});
  if (!step.ok) {
    throw new SvcError("illegal_transition", step.message, { details: { from: row.state, action } });
  }
  const pendingSince = step.to === "pending_review" ? now.toISOString() : null;
  const stateBeforeHidden = step.to === "hidden" ? row.state : null;
  const updated = await tx.query<SubmissionRow>(
    `UPDATE submissions SET state = $2, updated_at = $3::timestamptz,
       pending_since = CASE WHEN $4::timestamptz IS NULL THEN pending_since ELSE $4::timestamptz END,
       state_before_hidden = $5
     WHERE id = $1 RETURNING *`,
    [row.id, step.to, now.toISOString(), pendingSince, stateBeforeHidden],
  );
  const isDecision = ["approve", "reject", "request_changes", "hide", "unhide"].includes(action);
  if (isDecision) {
    const waited =
      row.state === "pending_review" && row.pending_since
        ? Math.max(0, Math.round((now.getTime() - new Date(row.pending_since).getTime()) / 1000))
        : null;
    await tx.query(
      `INSERT INTO submission_decisions (id, submission_id, decision, reviewer_account_id, notes, from_state, to_state, decided_at, waited_seconds)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::timestamptz, $9)`,
      [
        newSubmissionId(deps.random).replace(/^sub_/, "dec_"),
        row.id,
        action,
        actor.accountId,
        options.notes ?? "",
        row.state,
        step.to,
        now.toISOString(),
        waited,
      ],
    );
  }
  await appendAuditEvent(
    tx,
    {
      actorAccountId: actor.kind === "system" ? null : actor.accountId,
      action: isDecision
        ? SUBMISSION_AUDIT.decided
        : action === "cancel"
          ? SUBMISSION_AUDIT.cancelled
          : `submission.${action}`,
      targetType: "submission",
      targetId: row.id,
      metadata: {
        from: row.state,
        to: step.to,
        action,
        ...(options.notes ? { notes: options.notes } : {}),
      },
    },
    { now, random: deps.random },
  );
  return updated.rows[0]!;
}

export interface QueueInfo {
  queuePosition: number | null;
  medianWaitSeconds: number | null;
}

/** Position among pending_review submissions (oldest first) and the median wait of decisions in the last 30 days. */
export async function queueInfo(db: SqlExecutor, row: SubmissionRow, now: Date): Promise<QueueInfo> {
  let queuePosition: number | null = null;
  if (row.state === "pending_review" && row.pending_since) {
    const ahead = await db.query<{ n: string | number }>(
      `SELECT count(*) AS n FROM submissions WHERE state = 'pending_review'
         AND (pending_since < $1::timestamptz OR (pending_since = $1::timestamptz AND id < $2))`,
      [iso(row.pending_since), row.id],
    );
    queuePosition = Number(ahead.rows[0]?.n ?? 0) + 1;
  }
  return { queuePosition, medianWaitSeconds: await medianWaitSeconds(db, now) };
}

export async function medianWaitSeconds(db: SqlExecutor, now: Date): Promise<number | null> {
  const since = new Date(now.getTime() - 30 * 86_400_000).toISOString();
  const median = await db.query<{ median: string | number | null }>(
    `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY waited_seconds) AS median FROM submission_decisions
       WHERE from_state = 'pending_review' AND waited_seconds IS NOT NULL AND decided_at >= $1::timestamptz`,
    [since],
  );
  const value = median.rows[0]?.median;
  return value === null || value === undefined ? null : Math.round(Number(value));
}

const REVIEW_STATE: Record<
  SubmissionState,
  "not_ready" | "pending" | "approved" | "changes_requested" | "rejected" | "hidden"
> = {
  draft: "not_ready",
  uploaded: "not_ready",
  validating: "not_ready",
  validation_failed: "not_ready",
  cancelled: "not_ready",
  pending_review: "pending",
  changes_requested: "changes_requested",
  approved: "approved",
  published: "approved",
  superseded: "approved",
  rejected: "rejected",
  hidden: "hidden",
};

/**
 * The svc.upload-submission.v1 view of a submission. `ownership` is how its uploader stands to the
 * mod, given where the backend can read the mod's ownership record (omitted where it cannot);
 * `details` what a reviewer reads (review.ts): the release and its diff for whoever may see the
 * submission, the uploader, earlier submissions and reviewers' names for staff only.
 */
export async function submissionView(
  db: SqlExecutor,
  row: SubmissionRow,
  config: PortalConfig,
  now: Date,
  ownership?: SubmissionOwnership,
  details: { release?: ReleaseDetails; staff?: StaffDetails } = {},
) {
  const staff = details.staff;
  const decisions = await db.query<DecisionRow>(
    `SELECT decision, reviewer_account_id, notes, from_state, to_state, decided_at FROM submission_decisions
       WHERE submission_id = $1 ORDER BY decided_at, id`,
    [row.id],
  );
  const queue = await queueInfo(db, row, now);
  const urls = portalUrls(config.baseUrl);
  return {
    schema: "svc.upload-submission.v1" as const,
    submissionId: row.id,
    ownerAccountId: row.owner_account_id,
    modId: row.mod_id,
    version: row.version,
    state: row.state,
    packageSha256: row.package_sha256,
    hashes: { packageSha256: row.package_sha256, metadataSha256: row.metadata_sha256 },
    package: {
      fileName: row.package_file_name,
      sizeBytes: Number(row.package_size_bytes),
      contentType: row.package_content_type,
    },
    source: row.github_pull_request_url
      ? { kind: "pull_request" as const, pullRequestUrl: row.github_pull_request_url }
      : { kind: "upload" as const },
    validationChecks: row.validation_checks,
    review: {
      state: REVIEW_STATE[row.state],
      decisions: decisions.rows.map((d) => ({
        decision: d.decision,
        reviewerAccountId: d.reviewer_account_id,
        ...(staff ? { reviewerDisplayName: staff.reviewerNames.get(d.reviewer_account_id) ?? null } : {}),
        notes: d.notes,
        fromState: d.from_state,
        toState: d.to_state,
        decidedAt: iso(d.decided_at)!,
      })),
      queuePosition: queue.queuePosition,
      medianWaitSeconds: queue.medianWaitSeconds,
    },
    detailPage: {
      requirements: row.detail_page?.requirements ?? [],
      satisfied: row.detail_page?.satisfied ?? false,
      pageUrl: urls.modPage(row.mod_id),
    },
    publication: row.publication as Publication | null,
    ...(ownership ? { ownership } : {}),
    ...(details.release ?? {}),
    ...(staff ? { uploader: staff.uploader, earlierSubmissions: staff.earlierSubmissions } : {}),
    createdAt: iso(row.created_at)!,
    updatedAt: iso(row.updated_at)!,
  };
}

export type SubmissionView = Awaited<ReturnType<typeof submissionView>>;

export const QUEUE_STATES: readonly SubmissionState[] = [
  "pending_review",
  "validation_failed",
  "approved",
  "hidden",
  "superseded",
  "changes_requested",
  "validating",
  "uploaded",
  "published",
  "rejected",
  "cancelled",
  "draft",
];
