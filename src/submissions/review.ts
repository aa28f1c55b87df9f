/**
 * What a moderator reviews beyond the checks (svc.upload-submission.v1's release, packageFiles,
 * releaseDiff, uploader and earlierSubmissions): the release as it will be published, the files the
 * validation run read with their signatures, the diff against the mod's last published version, and
 * for staff the uploader (name, account age, history, suspension) and the earlier submissions of
 * the same version with their decisions and notes.
 */
import { findAccounts } from "../accounts/account-lookup.ts";
import { suspensionHistory } from "../accounts/upload-suspensions.ts";
import { loadModRecords } from "../catalog/records.ts";
import type { PortalConfig } from "../config/portal-config.ts";
import {
  computeReleaseDiff,
  isNativeFile,
  lastPublishedRecord,
  type NativeRules,
  type ReleaseDiff,
  recordSide,
} from "../contracts/release-diff.ts";
import { schemaRegistry } from "../contracts/schemas.ts";
import { buildValidationContract } from "../contracts/validation-contract.ts";
import type { SqlExecutor } from "../store/store.ts";
import type { PackageInventory, Sidecar } from "../validation/types.ts";

/** The columns of a submission row this module reads (SubmissionRow has them all). */
export interface ReviewedRow {
  id: string;
  owner_account_id: string;
  mod_id: string;
  version: string;
  package_size_bytes: string | number;
  metadata: Sidecar;
  package_files: PackageInventory | null;
  created_at: Date | string;
}

/** Where release records are read: the baseline of the diff. */
export interface RecordsSource {
  recordsDir: string;
  config: PortalConfig;
}

export function releaseView(sidecar: Sidecar) {
  return {
    name: sidecar.name,
    summary: sidecar.summary,
    // As the publisher writes the record: an absent description is the empty string (the mod page
    // then shows the summary in its place).
    description: sidecar.description ?? "",
    releaseNotes: sidecar.releaseNotes,
    targetGameBuild: sidecar.targetGameBuild,
    license: sidecar.license ?? null,
    tags: sidecar.tags ?? [],
    links: sidecar.links ?? {},
    authors: sidecar.authors ?? [],
    dependencies: sidecar.dependencies,
    entrypoints: sidecar.entrypoints,
    modConfig: sidecar.modConfig ?? null,
    ...(sidecar.package.url ? { packageUrl: sidecar.package.url } : {}),
  };
}

/** The rules the portal's own validation contract publishes for what is native. */
export function nativeRules(config: PortalConfig): NativeRules {
  return buildValidationContract(config, [], null, [], new Date(0).toISOString()).content;
}

function packageFilesView(inventory: PackageInventory | null, rules: NativeRules) {
  if (inventory === null) return null;
  return {
    complete: inventory.complete,
    totalBytes: inventory.files.reduce((total, f) => total + f.sizeBytes, 0),
    files: inventory.files.map((f) => ({ ...f, native: isNativeFile(f, rules) })),
  };
}

/**
 * The release, its files and its diff: for everyone who may see the submission. releaseDiff is
 * null until a complete file list is known (validation running, failed part-way, or a package
 * validated on its pull request), and absent where release records cannot be read.
 */
export function releaseDetails(row: ReviewedRow, config: PortalConfig, records: RecordsSource | null) {
  const rules = nativeRules(config);
  const packageFiles = packageFilesView(row.package_files, rules);
  let releaseDiff: ReleaseDiff | null | undefined;
  if (records) {
    const inventory = row.package_files;
    if (inventory?.complete) {
      const published = loadModRecords(
        records.recordsDir,
        row.mod_id,
        schemaRegistry(records.config.baseUrl),
      );
      const baseline = lastPublishedRecord(published, row.version);
      const sidecar = row.metadata;
      releaseDiff = computeReleaseDiff(
        {
          version: row.version,
          packageSizeBytes: Number(row.package_size_bytes),
          files: inventory.files,
          entrypoints: sidecar.entrypoints,
          dependencies: sidecar.dependencies,
          modConfig: sidecar.modConfig ?? null,
        },
        baseline ? recordSide(baseline) : null,
        rules,
      );
    } else releaseDiff = null;
  }
  return {
    release: releaseView(row.metadata),
    packageFiles,
    ...(releaseDiff !== undefined ? { releaseDiff } : {}),
  };
}

export type ReleaseDetails = ReturnType<typeof releaseDetails>;

interface DecisionRow {
  submission_id: string;
  decision: string;
  reviewer_account_id: string;
  notes: string;
  from_state: string;
  to_state: string;
  decided_at: Date | string;
}

interface HistoryRow {
  id: string;
  owner_account_id: string;
  mod_id: string;
  version: string;
  state: string;
  revision: number;
  created_at: Date | string;
  updated_at: Date | string;
}

const iso = (value: Date | string | null) => (value === null ? null : new Date(value).toISOString());
const DAY_MS = 86_400_000;
/** Enough to judge a pattern; the audit log and list_uploads?all=1 hold the rest. */
const RECENT_LIMIT = 10;

async function decisionsOf(db: SqlExecutor, submissionIds: readonly string[]): Promise<DecisionRow[]> {
  if (submissionIds.length === 0) return [];
  const rows = await db.query<DecisionRow>(
    `SELECT submission_id, decision, reviewer_account_id, notes, from_state, to_state, decided_at
       FROM submission_decisions WHERE submission_id = ANY($1::text[]) ORDER BY decided_at, id`,
    [submissionIds],
  );
  return rows.rows;
}

async function uploaderHistory(db: SqlExecutor, row: ReviewedRow) {
  const counts = await db.query<{ state: string; n: string | number }>(
    `SELECT state, count(*) AS n FROM submissions WHERE owner_account_id = $1 AND id <> $2 GROUP BY state`,
    [row.owner_account_id, row.id],
  );
  const byState = new Map(counts.rows.map((r) => [r.state, Number(r.n)]));
  const decided = await db.query<{ decision: string; n: string | number }>(
    `SELECT d.decision, count(*) AS n FROM submission_decisions d JOIN submissions s ON s.id = d.submission_id
       WHERE s.owner_account_id = $1 AND d.decision IN ('hide', 'reject', 'request_changes') GROUP BY d.decision`,
    [row.owner_account_id],
  );
  const decisions = new Map(decided.rows.map((r) => [r.decision, Number(r.n)]));
  const recent = await db.query<HistoryRow>(
    `SELECT id, owner_account_id, mod_id, version, state, revision, created_at, updated_at FROM submissions
       WHERE owner_account_id = $1 AND id <> $2 ORDER BY created_at DESC, id DESC LIMIT ${RECENT_LIMIT}`,
    [row.owner_account_id, row.id],
  );
  return {
    submissions: [...byState.values()].reduce((a, b) => a + b, 0),
    published: (byState.get("published") ?? 0) + (byState.get("superseded") ?? 0),
    rejected: byState.get("rejected") ?? 0,
    validationFailed: byState.get("validation_failed") ?? 0,
    cancelled: byState.get("cancelled") ?? 0,
    hiddenNow: byState.get("hidden") ?? 0,
    // Decisions over all of the account's submissions, this one included: a hide that was undone still counts.
    timesHidden: decisions.get("hide") ?? 0,
    timesRejected: decisions.get("reject") ?? 0,
    changesRequested: decisions.get("request_changes") ?? 0,
    recent: recent.rows.map((r) => ({
      submissionId: r.id,
      modId: r.mod_id,
      version: r.version,
      state: r.state,
      createdAt: iso(r.created_at)!,
    })),
  };
}

/**
 * For moderators and admins only: the uploader (display name, account age, history, the suspension
 * in force), the earlier submissions of the same mod version with their decisions and notes (a
 * re-upload of a rejected version starts with that history), and every reviewer's display name.
 */
export async function staffDetails(db: SqlExecutor, row: ReviewedRow, now: Date) {
  const earlier = await db.query<HistoryRow>(
    `SELECT id, owner_account_id, mod_id, version, state, revision, created_at, updated_at FROM submissions
       WHERE mod_id = $1 AND version = $2 AND id <> $3 AND created_at <= $4::timestamptz
       ORDER BY created_at DESC, id DESC LIMIT ${RECENT_LIMIT}`,
    [row.mod_id, row.version, row.id, iso(row.created_at)],
  );
  const decisions = await decisionsOf(db, [row.id, ...earlier.rows.map((r) => r.id)]);
  const suspensions = await suspensionHistory(db, row.owner_account_id);
  const inForce = suspensions.find((s) => s.liftedAt === null) ?? null;
  const accounts = await findAccounts(db, [
    row.owner_account_id,
    ...earlier.rows.map((r) => r.owner_account_id),
    ...decisions.map((d) => d.reviewer_account_id),
    ...(inForce ? [inForce.suspendedBy] : []),
  ]);
  const nameOf = (id: string) => accounts.get(id)?.displayName ?? null;
  const uploader = accounts.get(row.owner_account_id);
  const decisionView = (d: DecisionRow) => ({
    decision: d.decision,
    reviewerAccountId: d.reviewer_account_id,
    reviewerDisplayName: nameOf(d.reviewer_account_id),
    notes: d.notes,
    fromState: d.from_state,
    toState: d.to_state,
    decidedAt: iso(d.decided_at)!,
  });
  return {
    uploader: {
      accountId: row.owner_account_id,
      displayName: uploader?.displayName ?? null,
      createdAt: uploader?.createdAt ?? null,
      accountAgeDays: uploader
        ? Math.max(0, Math.floor((now.getTime() - Date.parse(uploader.createdAt)) / DAY_MS))
        : null,
      suspension: inForce
        ? {
            reason: inForce.reason,
            suspendedAt: inForce.suspendedAt,
            suspendedByAccountId: inForce.suspendedBy,
            suspendedByDisplayName: nameOf(inForce.suspendedBy),
            submissionId: inForce.submissionId,
          }
        : null,
      history: {
        ...(await uploaderHistory(db, row)),
        suspensions: suspensions.length,
      },
    },
    earlierSubmissions: earlier.rows.map((r) => ({
      submissionId: r.id,
      ownerAccountId: r.owner_account_id,
      ownerDisplayName: nameOf(r.owner_account_id),
      state: r.state,
      revision: r.revision,
      createdAt: iso(r.created_at)!,
      updatedAt: iso(r.updated_at)!,
      decisions: decisions.filter((d) => d.submission_id === r.id).map(decisionView),
    })),
    reviewerNames: new Map(decisions.map((d) => [d.reviewer_account_id, nameOf(d.reviewer_account_id)])),
  };
}

export type StaffDetails = Awaited<ReturnType<typeof staffDetails>>;
