import type { Role } from "../config/portal-config.ts";
import type { ModOwnership } from "../contracts/ownership.ts";
import type { Sidecar } from "../validation/types.ts";
import type { SubmissionState } from "../workflow/machine.ts";
import type { OwnershipRequest, SubmissionOwnership } from "./ownership.ts";
import type { CheckEntry, Decision, NewSubmission, SubmissionRow, SubmissionView } from "./service.ts";

/**
 * The one port the submission routes use (the local server's and the Vercel functions'), in the
 * manner of release-please's `Scm`: LocalSubmissionBackend keeps submissions in the database and
 * publishes with the local publisher; the GitHub implementation (pipeline/github-backend.ts) adds
 * the submission pull request and reads the state back from it. Refusals are thrown as SvcError
 * codes, which the HTTP layer maps to the one error body.
 */
export interface SubmissionBackend {
  /** False on Vercel: package bytes never pass through a function capped at 4.5 MB; send a URL. */
  acceptsPackageBytes: boolean;
  /** True when an upload may name its package by URL (JSON body): GitHub-backed submissions only. */
  readonly acceptsPackageUrl: boolean;
  /**
   * The submission an upload of this sidecar creates or continues (a new revision of the caller's
   * resubmittable one), and where its bytes are staged. Asked once the metadata is accepted and
   * before any package byte is stored.
   */
  uploadTarget(caller: SubmissionCaller, sidecar: Sidecar): Promise<UploadTarget>;
  /** Records an accepted upload whose bytes are staged (or named by URL); the svc.upload-submission.v1 view. */
  createUpload(caller: SubmissionCaller, target: UploadTarget, upload: UploadInput): Promise<SubmissionView>;
  /** Drops what a refused upload staged: a new submission's folder goes, a resubmission's earlier revision stays. */
  discardUpload(target: UploadTarget): void;
  /** upload_status: the owner, moderators and admins see a submission; to anyone else it does not exist. */
  status(caller: SubmissionCaller, submissionId: string): Promise<SubmissionView>;
  /** cancel_upload: the owner or an admin. */
  cancel(caller: SubmissionCaller, submissionId: string): Promise<SubmissionView>;
  /** list_uploads: the caller's own submissions (every account's with all), newest first. */
  listUploads(caller: SubmissionCaller, query: UploadListQuery): Promise<UploadListPage>;
  /** moderation_queue: by state, oldest first, with positions and ages. */
  moderationQueue(query: QueueQuery): Promise<QueuePage>;
  /** moderation_decision: hide and unhide also change the public catalog. */
  decide(
    caller: SubmissionCaller,
    submissionId: string,
    decision: Decision,
    notes: string,
  ): Promise<SubmissionView>;
  /**
   * moderation_package: the staged package of a submission for a moderator or admin to download,
   * audited before a byte is sent; not_found once it left staging (published, cancelled)
   * or where it was never staged here (a package named by URL).
   */
  stagedPackage(caller: SubmissionCaller, submissionId: string): Promise<StagedPackageFile>;
  /** publish_catalog: every approved submission, oldest first, each with its outcome. */
  publishApproved(caller: SubmissionCaller): Promise<PublishSummary>;
  /**
   * mod_ownership: the mod's whole ownership record, history included; not_found while unclaimed.
   * The ownership routes are the local portal's: where this process does not publish (Vercel, a
   * GitHub-backed portal, whose records live in git) they are not_implemented.
   */
  modOwnership(caller: SubmissionCaller, modId: string): Promise<ModOwnership>;
  /** The ownership routes' changes (collaborators, trusted publishers, source repository, transfer). */
  changeModOwnership(
    caller: SubmissionCaller,
    modId: string,
    request: OwnershipRequest,
  ): Promise<ModOwnership>;
}

/** An authenticated account and its effective roles; the HTTP guard has already checked the route's roles. */
export interface SubmissionCaller {
  account: { id: string };
  roles: readonly Role[];
}

export const isStaff = (caller: SubmissionCaller): boolean =>
  caller.roles.includes("moderator") || caller.roles.includes("admin");

export interface UploadTarget {
  submissionId: string;
  /** Private storage root: staged packages live under uploads/staging/ below it, never under site/. */
  storageRoot: string;
  /** The caller's submission this upload continues as a new revision, or null for a new submission. */
  resubmits: SubmissionRow | null;
}

/** A staged package on this machine's disk, as the review download streams it. */
export interface StagedPackageFile {
  /** Absolute path below the storage root's uploads/staging/{submissionId}/. */
  path: string;
  fileName: string;
  sizeBytes: number;
  sha256: string;
}

/** An accepted upload; staged.path is null for a package named by URL (validated on its pull request). */
export type UploadInput = Omit<NewSubmission, "id" | "ownerAccountId">;

/** A keyset position: creation order never changes, so a page boundary holds while rows change state. */
export interface Cursor {
  createdAt: string;
  id: string;
}

export function encodeCursor(row: SubmissionRow): string {
  return Buffer.from(`${new Date(row.created_at).toISOString()}|${row.id}`).toString("base64url");
}

/** The position a cursor names, or null when it names none. */
export function decodeCursor(cursor: string): Cursor | null {
  const [createdAt, id] = Buffer.from(cursor, "base64url").toString("utf8").split("|");
  if (!createdAt || !id || Number.isNaN(Date.parse(createdAt))) return null;
  return { createdAt, id };
}

export interface UploadListQuery {
  /** 1 to 100. */
  limit: number;
  /** Every account's submissions (staff only; the HTTP layer refuses anyone else). */
  all: boolean;
  before?: Cursor;
}

export interface FailedCheck {
  id: string;
  reasonCode: string | null;
}

export interface UploadListItem {
  submissionId: string;
  ownerAccountId: string;
  modId: string;
  version: string;
  state: SubmissionState;
  revision: number;
  package: { fileName: string; sizeBytes: number; sha256: string };
  queuePosition: number | null;
  failedChecks: FailedCheck[];
  pullRequestUrl: string | null;
  packageUrl: string | null;
  createdAt: string;
  updatedAt: string;
  statusUrl: string;
}

export interface UploadListPage {
  items: UploadListItem[];
  nextCursor: string | null;
  medianWaitSeconds: number | null;
}

export interface QueueQuery {
  states: readonly SubmissionState[];
  /** 1 to 100. */
  limit: number;
  after?: Cursor;
}

export interface QueueItem {
  submissionId: string;
  modId: string;
  version: string;
  state: SubmissionState;
  ownerAccountId: string;
  packageSha256: string;
  queuePosition: number | null;
  ageSeconds: number;
  failedChecks: FailedCheck[];
  /** As upload_status shows it: the claim a moderator weighs (omitted where ownership cannot be read). */
  ownership?: SubmissionOwnership;
  createdAt: string;
  updatedAt: string;
  statusUrl: string;
}

export interface QueuePage {
  items: QueueItem[];
  nextCursor: string | null;
  medianWaitSeconds: number | null;
}

interface PublishedRef {
  submissionId: string;
  modId: string;
  version: string;
}

export type PublishResult =
  | (PublishedRef & {
      outcome: "published";
      packageUrl: string;
      sha256: string;
      sizeBytes: number;
      alreadyPublished?: true;
    })
  | (PublishedRef & { outcome: "merged"; pullRequestUrl: string | null; mergeCommit: string })
  | (PublishedRef & { outcome: "failed"; code: string; message: string });

export interface PublishSummary {
  published: number;
  /** Only on GitHub-backed portals, where merging the pull request is publishing. */
  merged?: number;
  failed: number;
  results: PublishResult[];
}

/** The checks that failed, as lists show them. */
export function failedChecks(checks: readonly CheckEntry[]): FailedCheck[] {
  return checks.filter((c) => c.status === "failed").map((c) => ({ id: c.id, reasonCode: c.reasonCode }));
}
