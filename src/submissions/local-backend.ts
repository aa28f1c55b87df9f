import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { appendAuditEvent } from "../accounts/audit.ts";
import {
  findPublishedRelease,
  findRelease,
  hideRelease,
  type PublisherOptions,
  publishRelease,
  unhideRelease,
} from "../catalog/publisher.ts";
import type { ModDetailDocument } from "../contracts/catalog.ts";
import { carryForward } from "../contracts/carry-forward.ts";
import type { ModOwnership } from "../contracts/ownership.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import { RECORD_PATHS } from "../contracts/records.ts";
import { SvcError } from "../errors.ts";
import type { Sidecar } from "../validation/types.ts";
import type { SubmissionState } from "../workflow/machine.ts";
import {
  encodeCursor,
  failedChecks,
  isStaff,
  type PublishResult,
  type PublishSummary,
  type QueuePage,
  type QueueQuery,
  type StagedPackageFile,
  type SubmissionBackend,
  type SubmissionCaller,
  type UploadInput,
  type UploadListPage,
  type UploadListQuery,
  type UploadTarget,
} from "./backend.ts";
import {
  assertMayDecide,
  assertMayUpload,
  changeModOwnership,
  isModId,
  type OwnershipRequest,
  readOwnership,
  submissionOwnership,
} from "./ownership.ts";
import { completePublication, followReleaseStatuses } from "./publication.ts";
import { findResubmittable, resubmitSubmission } from "./resubmit.ts";
import {
  applySubmissionAction,
  applySubmissionActionIn,
  createSubmission,
  type Decision,
  loadSubmission,
  medianWaitSeconds,
  type NewSubmission,
  newSubmissionId,
  queueInfo,
  SUBMISSION_AUDIT,
  type SubmissionDeps,
  type SubmissionRow,
  type SubmissionView,
  submissionView,
} from "./service.ts";
import { listOwnedSubmissions, listSubmissions } from "./submission-lists.ts";
import { releaseDetails, staffDetails } from "./review.ts";
import { removeStaged, stagedFile } from "./staging.ts";

export interface LocalBackendOptions extends SubmissionDeps {
  /** Private storage root: staged packages live under uploads/staging/ below it, never under site/. */
  storageRoot: string;
  /** null on Vercel: publication runs in the publish workflow, never in a function. */
  publisher: PublisherOptions | null;
  /**
   * Where ownership records are read when this process does not publish: the records a Vercel
   * function carries (vercel.json includeFiles) or a GitHub-backed portal's checkout. They trail
   * git by at most one deployment; the publish workflow's publisher, reading the default branch,
   * stays the authority and refuses a stranger at publication whatever was answered here.
   */
  recordsDir?: string;
  /** Wakes the mod-validation worker after an upload (it also polls). */
  kickWorker: () => void;
  /** False on Vercel: package bytes never pass through a function capped at 4.5 MB. */
  acceptsPackageBytes: boolean;
  log: (line: string) => void;
}

/** States the bot can no longer move on GitHub; a list brings only the others in line with their pull requests. */
const SETTLED_STATES: SubmissionState[] = ["cancelled", "rejected", "superseded"];

/**
 * Submissions in the database: the SQL service moves them, the portal's worker validates the
 * staged bytes, and publish_catalog publishes through the local publisher. The protected steps are
 * where the GitHub implementation adds its pull request; here they do nothing beyond the database.
 */
export class LocalSubmissionBackend implements SubmissionBackend {
  acceptsPackageBytes: boolean;
  readonly acceptsPackageUrl: boolean = false;
  /** Whether publish_catalog's summary counts merged pull requests. */
  protected readonly reportsMerges: boolean = false;
  protected readonly deps: SubmissionDeps;
  protected readonly options: LocalBackendOptions;

  constructor(options: LocalBackendOptions) {
    this.options = options;
    this.deps = { store: options.store, config: options.config, now: options.now, random: options.random };
    this.acceptsPackageBytes = options.acceptsPackageBytes;
  }

  async uploadTarget(caller: SubmissionCaller, sidecar: Sidecar): Promise<UploadTarget> {
    const records = this.ownershipReader();
    // Where the records are out of reach, publication still refuses a stranger (the publisher checks).
    if (records) assertMayUpload(readOwnership(records, sidecar.modId), sidecar.modId, caller.account.id);
    const resubmits = await findResubmittable(
      this.deps.store,
      caller.account.id,
      sidecar.modId,
      sidecar.version,
    );
    return {
      submissionId: resubmits?.id ?? newSubmissionId(this.deps.random),
      storageRoot: this.options.storageRoot,
      resubmits,
    };
  }

  async createUpload(
    caller: SubmissionCaller,
    target: UploadTarget,
    upload: UploadInput,
  ): Promise<SubmissionView> {
    const sidecar = this.carriedForward(upload.sidecar);
    const row = await this.recordUpload(target, { ownerAccountId: caller.account.id, ...upload, sidecar });
    if (upload.staged.path !== null) this.options.kickWorker();
    return this.view(row, caller);
  }

  /**
   * The sidecar with the page metadata it leaves out (description, links, tags, license, authors)
   * taken from the mod's public detail document, its last published version: the submission then
   * shows moderators what will be published. Without a local site (GitHub), the publisher carries
   * them at publication.
   */
  protected carriedForward(sidecar: Sidecar): Sidecar {
    const siteDir = this.options.publisher?.siteDir;
    const path = siteDir ? join(siteDir, SITE_PATHS.modDetail(sidecar.modId)) : null;
    if (!path || !existsSync(path)) return sidecar;
    const detail = JSON.parse(readFileSync(path, "utf8")) as ModDetailDocument;
    return carryForward(sidecar, detail).sidecar;
  }

  discardUpload(target: UploadTarget): void {
    if (!target.resubmits) removeStaged(target.storageRoot, target.submissionId);
  }

  async status(caller: SubmissionCaller, submissionId: string): Promise<SubmissionView> {
    const row = await loadSubmission(this.deps.store, submissionId);
    if (!row || (row.owner_account_id !== caller.account.id && !isStaff(caller)))
      throw new SvcError("not_found", `no submission ${submissionId}`);
    return this.view(await this.current(row), caller);
  }

  async cancel(caller: SubmissionCaller, submissionId: string): Promise<SubmissionView> {
    const isAdmin = caller.roles.includes("admin");
    const visibleTo = (r: SubmissionRow) => r.owner_account_id === caller.account.id || isAdmin;
    await this.beforeCancel(submissionId, visibleTo);
    const row = await applySubmissionAction(
      this.deps,
      submissionId,
      "cancel",
      { accountId: caller.account.id, kind: "modder" },
      { visibleTo },
    );
    removeStaged(this.options.storageRoot, row.id);
    return this.view(row, caller);
  }

  async listUploads(caller: SubmissionCaller, query: UploadListQuery): Promise<UploadListPage> {
    const store = this.deps.store;
    const rows = await listOwnedSubmissions(store, {
      owner: query.all ? null : caller.account.id,
      limit: query.limit + 1,
      ...(query.before ? { before: query.before } : {}),
    });
    const page = rows.slice(0, query.limit);
    const now = this.deps.now();
    const items = [];
    for (const listed of page) {
      // GitHub-backed: the rows the portal keeps, each open one first brought in line with its pull
      // request (as upload_status does), so the list never shows a state the pull request has left.
      const row = SETTLED_STATES.includes(listed.state) ? listed : await this.current(listed);
      items.push({
        submissionId: row.id,
        ownerAccountId: row.owner_account_id,
        modId: row.mod_id,
        version: row.version,
        state: row.state,
        revision: row.revision,
        package: {
          fileName: row.package_file_name,
          sizeBytes: Number(row.package_size_bytes),
          sha256: row.package_sha256,
        },
        queuePosition:
          row.state === "pending_review" ? (await queueInfo(store, row, now)).queuePosition : null,
        failedChecks: failedChecks(row.validation_checks),
        pullRequestUrl: row.github_pull_request_url,
        packageUrl: row.publication?.packageUrl ?? null,
        createdAt: new Date(row.created_at).toISOString(),
        updatedAt: new Date(row.updated_at).toISOString(),
        statusUrl: `/api/v1/uploads/${row.id}`,
      });
    }
    const last = page.at(-1);
    return {
      items,
      nextCursor: rows.length > query.limit && last ? encodeCursor(last) : null,
      medianWaitSeconds: await medianWaitSeconds(store, now),
    };
  }

  async moderationQueue(query: QueueQuery): Promise<QueuePage> {
    const store = this.deps.store;
    await this.refreshQueue();
    const rows = await listSubmissions(store, {
      states: query.states,
      limit: query.limit + 1,
      ...(query.after ? { after: query.after } : {}),
    });
    const page = rows.slice(0, query.limit);
    const now = this.deps.now();
    const items = [];
    for (const row of page) {
      const view = await this.view(row);
      items.push({
        submissionId: view.submissionId,
        modId: view.modId,
        version: view.version,
        state: view.state,
        ownerAccountId: view.ownerAccountId,
        packageSha256: view.packageSha256,
        queuePosition: view.review.queuePosition,
        ageSeconds: Math.max(0, Math.round((now.getTime() - new Date(view.createdAt).getTime()) / 1000)),
        failedChecks: failedChecks(view.validationChecks),
        ...(view.ownership ? { ownership: view.ownership } : {}),
        createdAt: view.createdAt,
        updatedAt: view.updatedAt,
        statusUrl: `/api/v1/uploads/${view.submissionId}`,
      });
    }
    const last = page.at(-1);
    return {
      items,
      nextCursor: rows.length > query.limit && last ? encodeCursor(last) : null,
      medianWaitSeconds: await medianWaitSeconds(store, now),
    };
  }

  async decide(
    caller: SubmissionCaller,
    submissionId: string,
    decision: Decision,
    notes: string,
  ): Promise<SubmissionView> {
    const found = await loadSubmission(this.deps.store, submissionId);
    if (!found) throw new SvcError("not_found", `no submission ${submissionId}`);
    if (found.owner_account_id === caller.account.id)
      throw new SvcError("forbidden", "a moderator cannot decide on their own submission");
    const records = this.ownershipReader();
    if (records)
      assertMayDecide(readOwnership(records, found.mod_id), found.mod_id, caller.account.id, decision);
    await this.recordDecision(caller, await this.current(found), decision, notes);
    // A local hide or unhide changed the catalog, which settled the mod's statuses: the row takes
    // its record's status and the mod's other rows follow theirs, in one transaction.
    const follows = found.github_pull_request === null && (decision === "hide" || decision === "unhide");
    const recordOf = (version: string) =>
      follows ? findRelease(this.publisher(), found.mod_id, version) : null;
    const restored = decision === "unhide" ? recordOf(found.version)?.status : undefined;
    const row = await this.deps.store.transaction(async (tx) => {
      const moved = await applySubmissionActionIn(
        tx,
        this.deps,
        submissionId,
        decision,
        { accountId: caller.account.id, kind: "moderator" },
        { notes, ...(restored && restored !== "hidden" ? { unhideTo: restored } : {}) },
      );
      if (follows) await followReleaseStatuses(tx, this.deps, found.mod_id, recordOf, submissionId);
      return moved;
    });
    return this.view(row, caller);
  }

  async publishApproved(caller: SubmissionCaller): Promise<PublishSummary> {
    await this.refreshApproved();
    const approved = await listSubmissions(this.deps.store, { states: ["approved"], limit: 100 });
    const results: PublishResult[] = [];
    for (const row of approved) results.push(await this.publishOne(caller, row));
    const published = results.filter((r) => r.outcome === "published").length;
    const merged = results.filter((r) => r.outcome === "merged").length;
    return {
      published,
      ...(this.reportsMerges ? { merged } : {}),
      failed: results.length - published - merged,
      results,
    };
  }

  async modOwnership(_caller: SubmissionCaller, modId: string): Promise<ModOwnership> {
    const ownership = readOwnership(this.requireOwnershipReader(), modId);
    if (!ownership)
      throw new SvcError(
        "not_found",
        isModId(modId)
          ? `mod ${modId} has no owners yet: its first published release claims it`
          : `no mod ${modId}`,
        { details: { modId } },
      );
    return ownership;
  }

  async changeModOwnership(
    caller: SubmissionCaller,
    modId: string,
    request: OwnershipRequest,
  ): Promise<ModOwnership> {
    const publisher = this.requireOwnershipRecords();
    return changeModOwnership({ ...this.deps, publisher }, caller, modId, request);
  }

  /**
   * The svc.upload-submission.v1 view. With the caller it is the one submission's own page: the
   * release, its files and diff, and for staff the uploader and earlier submissions; lists leave
   * those out (each would read the mod's records).
   */
  protected async view(row: SubmissionRow, caller?: SubmissionCaller): Promise<SubmissionView> {
    const records = this.ownershipReader();
    const ownership = records
      ? submissionOwnership(readOwnership(records, row.mod_id), row.owner_account_id)
      : undefined;
    const now = this.deps.now();
    const details = caller
      ? {
          release: releaseDetails(row, this.deps.config, records),
          ...(isStaff(caller) ? { staff: await staffDetails(this.deps.store, row, now) } : {}),
        }
      : {};
    return submissionView(this.deps.store, row, this.deps.config, now, ownership, details);
  }

  async stagedPackage(caller: SubmissionCaller, submissionId: string): Promise<StagedPackageFile> {
    if (!isStaff(caller)) throw new SvcError("forbidden", "the staged package is for moderators and admins");
    const row = await loadSubmission(this.deps.store, submissionId);
    if (!row) throw new SvcError("not_found", `no submission ${submissionId}`);
    const file = row.staging_path ? stagedFile(this.options.storageRoot, row.id, row.staging_path) : null;
    if (!file)
      throw new SvcError(
        "not_found",
        row.metadata.package?.url
          ? `submission ${submissionId}'s package is not staged here: it is named by URL (${row.metadata.package.url})`
          : `submission ${submissionId} has no staged package (published and cancelled packages are removed from staging)`,
        { details: { state: row.state } },
      );
    await this.deps.store.transaction((tx) =>
      appendAuditEvent(
        tx,
        {
          actorAccountId: caller.account.id,
          action: SUBMISSION_AUDIT.packageDownloaded,
          targetType: "submission",
          targetId: row.id,
          metadata: {
            modId: row.mod_id,
            version: row.version,
            revision: row.revision,
            state: row.state,
            packageSha256: row.package_sha256,
            sizeBytes: Number(row.package_size_bytes),
          },
        },
        { now: this.deps.now(), random: this.deps.random },
      ),
    );
    return {
      path: file.path,
      fileName: row.package_file_name,
      sizeBytes: file.sizeBytes,
      sha256: row.package_sha256,
    };
  }

  /**
   * Where ownership records are read and written: this process's publisher. null where it does not
   * publish: on Vercel (no publisher) and on a GitHub-backed portal, where publishing is merging
   * (reportsMerges) and the records live in git, written by the publish workflow.
   */
  protected ownershipRecords(): PublisherOptions | null {
    return this.reportsMerges ? null : this.options.publisher;
  }

  /** Where ownership records are read: this process's publisher, or the records it was given. */
  protected ownershipReader(): Pick<PublisherOptions, "recordsDir" | "config"> | null {
    const records = this.options.publisher ?? null;
    if (records) return records;
    return this.options.recordsDir
      ? { recordsDir: this.options.recordsDir, config: this.options.config }
      : null;
  }

  private requireOwnershipReader(): Pick<PublisherOptions, "recordsDir" | "config"> {
    const records = this.ownershipReader();
    if (!records) return this.requireOwnershipRecords();
    return records;
  }

  private requireOwnershipRecords(): PublisherOptions {
    const records = this.ownershipRecords();
    if (!records)
      throw new SvcError(
        "not_implemented",
        "mod ownership is served by the local portal only: here the records live in git on the portal repository (records/owners/{shard}.json), which this deployment does not write",
      );
    return records;
  }

  protected publisher(): PublisherOptions {
    if (!this.options.publisher)
      throw new SvcError(
        "not_implemented",
        "this deployment does not publish by itself: merged submission pull requests are published by the publish workflow",
      );
    return this.options.publisher;
  }

  /** Here the database row is the truth; on GitHub the pull request is, and the row follows it. */
  protected async current(row: SubmissionRow): Promise<SubmissionRow> {
    return row;
  }

  /** Nothing moves a submission outside the database here; on GitHub reviews and /svc commands do. */
  protected async refreshQueue(): Promise<void> {}

  /** As refreshQueue, for the approved submissions publish_catalog is about to publish. */
  protected async refreshApproved(): Promise<void> {}

  protected async recordUpload(
    target: UploadTarget,
    input: Omit<NewSubmission, "id">,
  ): Promise<SubmissionRow> {
    return target.resubmits
      ? resubmitSubmission(this.deps, target.resubmits.id, input)
      : createSubmission(this.deps, { id: target.submissionId, ...input });
  }

  /** The move alone cancels here; on GitHub the pull request is closed first. */
  protected async beforeCancel(
    _submissionId: string,
    _visibleTo: (row: SubmissionRow) => boolean,
  ): Promise<void> {}

  /** The effect of a decision beyond the row: hide and unhide change the public catalog. */
  protected async recordDecision(
    _caller: SubmissionCaller,
    existing: SubmissionRow,
    decision: Decision,
    _notes: string,
  ): Promise<void> {
    if (decision !== "hide" && decision !== "unhide") return;
    // The public catalog changes first (one atomic file commit); the move then records it.
    const publisher = this.publisher();
    if (decision === "hide" && (existing.state === "published" || existing.state === "superseded")) {
      await hideRelease(publisher, existing.mod_id, existing.version);
    } else if (decision === "unhide" && existing.state === "hidden") {
      await unhideRelease(publisher, existing.mod_id, existing.version);
    }
  }

  /** Publishes one approved submission with the local publisher; a failure is audited and reported, not thrown. */
  protected async publishOne(caller: SubmissionCaller, row: SubmissionRow): Promise<PublishResult> {
    const { storageRoot } = this.options;
    try {
      const publisher = this.publisher();
      const stagedFile = join(storageRoot, row.staging_path ?? "");
      // Publishing the same release again is a no-op success, so a retry after a crash between the
      // files and this row completes the submission. Bytes already gone (a crash after the row
      // moved) are fine when exactly this release is in the catalog.
      const inCatalog =
        row.staging_path && existsSync(stagedFile)
          ? null
          : findPublishedRelease(publisher, row.metadata, row.package_sha256);
      // The uploader is the submitter: the first release of an unclaimed mod id makes them its owner.
      const uploader = { account: row.owner_account_id };
      const published = inCatalog
        ? { record: inCatalog, alreadyPublished: true as const, written: [] as string[] }
        : await publishRelease(publisher, {
            packageBytes: readFileSync(stagedFile),
            sidecar: row.metadata,
            source: { kind: "upload", submissionId: row.id },
            submitter: { identity: [uploader], claimAs: uploader },
          });
      const claimed = published.written.some((path) =>
        path.endsWith(`/${RECORD_PATHS.ownersShard(row.mod_id)}`),
      );
      const done = await completePublication(
        this.deps,
        row.id,
        published.record,
        caller.account.id,
        published.alreadyPublished ? { reconciled: true } : claimed ? { claimed: true } : {},
      );
      removeStaged(storageRoot, row.id);
      return {
        submissionId: row.id,
        modId: row.mod_id,
        version: row.version,
        outcome: "published",
        packageUrl: done.publication?.packageUrl ?? published.record.packageUrl,
        sha256: published.record.sha256,
        sizeBytes: published.record.packageSizeBytes,
        ...(published.alreadyPublished ? { alreadyPublished: true as const } : {}),
      };
    } catch (error) {
      const code = error instanceof SvcError ? error.code : "internal_error";
      const message = error instanceof SvcError ? error.message : "publication failed";
      if (!(error instanceof SvcError))
        this.options.log(
          `publish_catalog ${row.id}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
        );
      await this.deps.store.transaction((tx) =>
        appendAuditEvent(
          tx,
          {
            actorAccountId: caller.account.id,
            action: "catalog.publish_failed",
            targetType: "submission",
            targetId: row.id,
            metadata: { code, message },
          },
          { now: this.deps.now(), random: this.deps.random },
        ),
      );
      return {
        submissionId: row.id,
        modId: row.mod_id,
        version: row.version,
        outcome: "failed",
        code,
        message,
      };
    }
  }
}
