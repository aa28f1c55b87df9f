import { join } from "node:path";
import { appendAuditEvent } from "../accounts/audit.ts";
import { SvcError } from "../errors.ts";
import type { PublishResult, SubmissionCaller, UploadTarget } from "../submissions/backend.ts";
import { type LocalBackendOptions, LocalSubmissionBackend } from "../submissions/local-backend.ts";
import {
  assertNoOpenSubmission,
  createSubmission,
  type Decision,
  loadSubmission,
  type NewSubmission,
  type SubmissionRow,
} from "../submissions/service.ts";
import { resubmitSubmission } from "../submissions/resubmit.ts";
import { transition } from "../workflow/machine.ts";
import {
  type GitHubLink,
  linkPullRequest,
  listApprovedPullRequestRows,
  listOpenPullRequestRows,
  syncFromPullRequest,
} from "./github-submissions.ts";

/**
 * GitHub-backed submissions: the local backend's database rows, each with its submission pull
 * request on the portal repository, which is the one truth for its state. Uploads open (or push
 * to) the pull request before the row is written; reads bring a row in line with its pull request
 * first; decisions, cancels and publication go through the pull request (the bot records them,
 * the publish workflow publishes a merge). A row without a pull request (an upload from before
 * GitHub was configured) is handled as the local backend handles it.
 */
export class GitHubSubmissionBackend extends LocalSubmissionBackend {
  override readonly acceptsPackageUrl: boolean = true;
  protected override readonly reportsMerges: boolean = true;
  readonly link: GitHubLink;

  constructor(options: LocalBackendOptions, link: GitHubLink) {
    super(options);
    this.link = link;
  }

  /** On a GitHub-backed portal the pull request holds the state: the row is brought in line first. */
  protected override async current(row: SubmissionRow): Promise<SubmissionRow> {
    return row.github_pull_request !== null ? syncFromPullRequest(this.deps, this.link, row) : row;
  }

  /** Reviews and /svc commands on GitHub move submissions too: the open ones are brought in line first. */
  protected override async refreshQueue(): Promise<void> {
    for (const row of await listOpenPullRequestRows(this.deps.store))
      await syncFromPullRequest(this.deps, this.link, row);
  }

  protected override async refreshApproved(): Promise<void> {
    for (const row of await listApprovedPullRequestRows(this.deps.store)) await this.current(row);
  }

  /**
   * The pull request comes first (a staged package goes to the portal's private draft release);
   * the row is written only once GitHub holds the submission, and a row that cannot be written
   * closes the pull request again.
   */
  protected override async recordUpload(
    target: UploadTarget,
    input: Omit<NewSubmission, "id">,
  ): Promise<SubmissionRow> {
    const resubmitting = target.resubmits;
    if (!resubmitting) await assertNoOpenSubmission(this.deps.store, input.sidecar, input.ownerAccountId);
    else if (!transition(resubmitting.state, "resubmit", "modder").ok)
      throw new SvcError("illegal_transition", `a ${resubmitting.state} submission cannot be resubmitted`, {
        details: { from: resubmitting.state, action: "resubmit" },
      });
    const pr = await this.link.submit({
      submissionId: target.submissionId,
      ownerAccountId: input.ownerAccountId,
      sidecar: input.sidecar,
      stagedFile: input.staged.path === null ? null : join(this.options.storageRoot, input.staged.path),
      existing: resubmitting?.github_pull_request ? { number: resubmitting.github_pull_request } : null,
    });
    let row: SubmissionRow;
    try {
      row = resubmitting
        ? await resubmitSubmission(this.deps, resubmitting.id, input)
        : await createSubmission(this.deps, { id: target.submissionId, ...input });
    } catch (error) {
      if (!resubmitting) await this.link.close(pr.number).catch(() => {});
      throw error;
    }
    row = await linkPullRequest(this.deps, row.id, pr);
    // A package named by URL is validated on the pull request: the row follows its state from now on.
    return input.staged.path === null ? syncFromPullRequest(this.deps, this.link, row) : row;
  }

  protected override async beforeCancel(
    submissionId: string,
    visibleTo: (row: SubmissionRow) => boolean,
  ): Promise<void> {
    const existing = await loadSubmission(this.deps.store, submissionId);
    if (!existing || !visibleTo(existing) || existing.github_pull_request === null) return;
    // The pull request is closed first (the bot moves it to cancelled); the row then follows.
    const synced = await this.current(existing);
    const step = transition(synced.state, "cancel", "modder");
    if (!step.ok)
      throw new SvcError("illegal_transition", step.message, {
        details: { from: synced.state, action: "cancel" },
      });
    await this.link.close(existing.github_pull_request);
  }

  protected override async recordDecision(
    caller: SubmissionCaller,
    existing: SubmissionRow,
    decision: Decision,
    notes: string,
  ): Promise<void> {
    if (existing.github_pull_request === null) return super.recordDecision(caller, existing, decision, notes);
    // The pull request is the truth: the bot records the decision there (status comment, label, and
    // for hide/unhide a dispatch of the publish workflow, which changes the catalog); the row follows.
    await this.link.decide(existing.github_pull_request, decision, caller.account.id, notes);
  }

  protected override async publishOne(caller: SubmissionCaller, row: SubmissionRow): Promise<PublishResult> {
    if (row.github_pull_request === null) return super.publishOne(caller, row);
    // Merging is publishing on GitHub: the publish workflow promotes the approved bytes, commits the
    // catalog, deploys Pages and posts the receipt; the row becomes published when the PR says so.
    try {
      const merged = await this.link.merge(row.github_pull_request);
      await this.deps.store.transaction((tx) =>
        appendAuditEvent(
          tx,
          {
            actorAccountId: caller.account.id,
            action: "catalog.publish_requested",
            targetType: "submission",
            targetId: row.id,
            metadata: { pullRequest: row.github_pull_request, mergeCommit: merged.sha },
          },
          { now: this.deps.now(), random: this.deps.random },
        ),
      );
      return {
        submissionId: row.id,
        modId: row.mod_id,
        version: row.version,
        outcome: "merged",
        pullRequestUrl: row.github_pull_request_url,
        mergeCommit: merged.sha,
      };
    } catch (error) {
      if (!(error instanceof SvcError)) throw error;
      return {
        submissionId: row.id,
        modId: row.mod_id,
        version: row.version,
        outcome: "failed",
        code: error.code,
        message: error.message,
      };
    }
  }
}
