/**
 * GitHub-backed submissions: with a portal repository and a GitHub App configured, an upload
 * through the API becomes a submission pull request on the portal, and the pull request is the
 * one truth for its state. The API reads the state back from the bot's status comment (mirroring
 * it into the submissions table) and writes moderation decisions through the same bot pipeline a
 * review or a `/svc` comment goes through.
 *
 * Two kinds of upload:
 * - a package sent to the server (multipart, the local/Node portal): held privately as an asset of
 *   a draft release `svc-upload-{submissionId}` of the portal repository (draft assets are visible
 *   only with push access), validated by the portal's own worker over the staged bytes, and
 *   reported to the pull request as check runs and the status comment. The sidecar on the pull
 *   request carries no package.url: the publish workflow (contents: write) reads the draft asset.
 * - a package named by URL (JSON body; the only kind on Vercel, whose bodies stop at 4.5 MB):
 *   nothing is downloaded by the API; the pull request is validated by the validate-submission
 *   workflow like any other.
 */
import { readFileSync } from "node:fs";
import { appendAuditEvent } from "../accounts/audit.ts";
import { uploadPullRequest } from "../bot/intake-comments.ts";
import { deriveSubmission, type SubmissionView as PullRequestView } from "../bot/derive.ts";
import { fetchPullRequestInfo } from "../bot/fetch.ts";
import { type BotOptions, handleSubmissionEvent } from "../bot/handle.ts";
import { type StatusKey, sealSubmitter } from "../bot/status-seal.ts";
import { type GitHubApi, isNotFound, type RepoRef, splitRepository } from "../github/api.ts";
import {
  findStagingRelease,
  openSubmissionPullRequest,
  updateSubmissionFile,
} from "../github/open-submission-pr.ts";
import { STAGING_TAG_PREFIX, submissionPath } from "../github/submission-files.ts";
import {
  reportPackage,
  SUBMISSION_REPORT_SCHEMA,
  type SubmissionReport,
} from "../github/submission-report.ts";
import { SvcError } from "../errors.ts";
import type { SqlExecutor } from "../store/store.ts";
import type { Sidecar } from "../validation/types.ts";
import type { SubmissionState } from "../workflow/machine.ts";
import {
  type CheckEntry,
  type Decision,
  loadSubmission,
  type SubmissionDeps,
  type SubmissionRow,
} from "../submissions/service.ts";

export interface GitHubLinkOptions {
  /** owner/name of the portal repository. */
  repository: string;
  /** An Octokit authenticated as the app's installation on the portal repository. */
  api: () => Promise<GitHubApi>;
  botLogins: () => Promise<string[]>;
  /** Seals the status and submitter records the API writes (deriveStatusKey of the app's private key). */
  statusKey: StatusKey;
  log: (line: string) => void;
}

export interface PullRequestState {
  state: SubmissionState;
  headSha: string;
  open: boolean;
  merged: boolean;
  checks: CheckEntry[] | null;
}

export interface GitHubLink {
  repository: string;
  repo: RepoRef;
  /** Opens the pull request of a new upload, or pushes the new revision of a resubmitted one. */
  submit(input: {
    submissionId: string;
    ownerAccountId: string;
    sidecar: Sidecar;
    /** The privately staged package, for an upload that sent its bytes. */
    stagedFile: string | null;
    existing: { number: number } | null;
  }): Promise<{ number: number; htmlUrl: string; headSha: string }>;
  /** Posts the portal worker's validation result to the pull request (check runs, label, status comment). */
  reportValidation(row: SubmissionRow): Promise<void>;
  /** The PR's state; with checks, also its `svc / *` check runs (a URL upload's validation). */
  read(number: number, options: { checks: boolean }): Promise<PullRequestState>;
  decide(
    number: number,
    decision: Decision,
    moderator: string,
    notes: string,
  ): Promise<{ from: SubmissionState; to: SubmissionState }>;
  /** Squash-merges an approved pull request; the publish workflow then publishes it. */
  merge(number: number): Promise<{ sha: string }>;
  /** Closes the pull request of a cancelled upload (the bot moves it to cancelled). */
  close(number: number): Promise<void>;
}

/** A GitHub failure becomes github_unavailable with what GitHub said; our own errors pass through. */
async function upstream<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof SvcError) throw error;
    const status = (error as { status?: number }).status;
    throw new SvcError("github_unavailable", `GitHub refused or failed to ${what}`, {
      details: { status: status ?? null, message: (error as Error).message?.slice(0, 300) ?? null },
    });
  }
}

export function createGitHubLink(options: GitHubLinkOptions): GitHubLink {
  const repo = splitRepository(options.repository);
  const botOptions = async (): Promise<BotOptions> => ({
    botLogins: await options.botLogins(),
    statusKey: options.statusKey,
    log: options.log,
  });
  const view = async (api: GitHubApi, number: number): Promise<PullRequestView> =>
    deriveSubmission(await fetchPullRequestInfo(api, repo, number), {
      botLogins: await options.botLogins(),
      statusKey: options.statusKey,
    });

  async function stageAsset(api: GitHubApi, submissionId: string, fileName: string, path: string) {
    const tag = `${STAGING_TAG_PREFIX}${submissionId}`;
    let release = await findStagingRelease(api, repo, submissionId);
    release ??= (
      await api.rest.repos.createRelease({
        ...repo,
        tag_name: tag,
        name: `Staged upload ${submissionId}`,
        body: "Private staging of an upload through the portal API: a draft release, never published. The publish workflow promotes the approved bytes to the artifact store.",
        draft: true,
        prerelease: true,
      })
    ).data;
    // A resubmission replaces the staged bytes: the draft is private, the published artifact is not.
    for (const asset of release.assets ?? []) {
      if (asset.name === fileName) await api.rest.repos.deleteReleaseAsset({ ...repo, asset_id: asset.id });
    }
    const bytes = readFileSync(path);
    await api.request({
      method: "POST",
      url: release.upload_url,
      name: fileName,
      data: bytes as unknown as string,
      headers: { "content-type": "application/zip", "content-length": bytes.length },
    });
  }

  return {
    repository: options.repository,
    repo,

    async submit(input) {
      const api = await upstream("authenticate as the app", options.api);
      return upstream("open the submission pull request", async () => {
        const { sidecar } = input;
        if (input.stagedFile)
          await stageAsset(api, input.submissionId, sidecar.package.fileName, input.stagedFile);
        // A staged package is found by the publish workflow through the draft release, not by URL.
        const { url: _url, ...stagedPackage } = sidecar.package;
        const clean: Record<string, unknown> = input.stagedFile
          ? { ...sidecar, package: stagedPackage }
          : { ...sidecar };
        const pr = uploadPullRequest({
          submissionId: input.submissionId,
          modId: sidecar.modId,
          version: sidecar.version,
          ownerAccountId: input.ownerAccountId,
          staged: input.stagedFile !== null,
          seal: (record, branch) =>
            sealSubmitter(options.statusKey, { repository: options.repository, branch }, record),
        });
        const path = submissionPath(sidecar.modId, sidecar.version);
        let opened: { number: number; htmlUrl: string; headSha: string };
        let action: "opened" | "synchronize";
        if (input.existing) {
          const headSha = await updateSubmissionFile(api, repo, {
            branch: pr.branch,
            path,
            sidecar: clean,
            message: `Resubmit ${sidecar.modId}@${sidecar.version} (upload ${input.submissionId})`,
          });
          const { data } = await api.rest.pulls.get({ ...repo, pull_number: input.existing.number });
          opened = { number: data.number, htmlUrl: data.html_url, headSha };
          action = "synchronize";
        } else {
          opened = await openSubmissionPullRequest(api, repo, {
            branch: pr.branch,
            path,
            sidecar: clean,
            title: pr.title,
            body: pr.body,
            message: `Submit ${sidecar.modId}@${sidecar.version} (upload ${input.submissionId})`,
          });
          action = "opened";
        }
        // The status comment says validating at once; the webhook of the same push then finds nothing to do.
        await handleSubmissionEvent(api, repo, opened.number, { kind: "pushed", action }, await botOptions());
        return opened;
      });
    },

    async reportValidation(row) {
      if (row.github_pull_request === null) return;
      const number = row.github_pull_request;
      const api = await upstream("authenticate as the app", options.api);
      await upstream("report validation to the pull request", async () => {
        const current = await view(api, number);
        const checks = row.validation_checks;
        const startedAt = checks.find((c) => c.startedAt)?.startedAt ?? new Date(0).toISOString();
        const finishedAt = checks.find((c) => c.finishedAt)?.finishedAt ?? startedAt;
        const report: SubmissionReport = {
          schema: SUBMISSION_REPORT_SCHEMA,
          repository: options.repository,
          pullRequest: number,
          headSha: current.headSha,
          sidecarPath: submissionPath(row.mod_id, row.version),
          problems: [],
          report: {
            schema: "svc.validation-report.v1",
            modId: row.mod_id,
            version: row.version,
            packageSha256: row.package_sha256,
            packageSizeBytes: Number(row.package_size_bytes),
            passed: row.state === "pending_review",
            checks: checks.map((c) => ({
              id: c.id,
              status: c.status === "passed" || c.status === "failed" ? c.status : "skipped",
              reasonCode: c.reasonCode,
              log: c.log.slice(0, 50),
              required: c.required,
            })),
            startedAt,
            finishedAt,
          },
        };
        // The staged package's files as the worker measured them: the bot's release diff compares them.
        const facts = reportPackage(row.package_files, row.metadata);
        if (facts) report.package = facts;
        await handleSubmissionEvent(
          api,
          repo,
          number,
          { kind: "report", report, runUrl: null },
          await botOptions(),
        );
      });
    },

    async read(number, { checks }) {
      const api = await upstream("authenticate as the app", options.api);
      return upstream("read the submission pull request", async () => {
        const current = await view(api, number);
        return {
          state: current.state,
          headSha: current.headSha,
          open: current.open,
          merged: current.merged,
          checks: checks ? await readCheckRuns(api, repo, current.headSha) : null,
        };
      });
    },

    async decide(number, decision, moderator, notes) {
      const api = await upstream("authenticate as the app", options.api);
      return upstream("record the decision on the pull request", async () => {
        // The bot's plan is the legality check: an illegal move plans nothing and writes nothing.
        const { plan } = await handleSubmissionEvent(
          api,
          repo,
          number,
          { kind: "portal_decision", decision, moderator, notes },
          await botOptions(),
        );
        if (!plan || plan.to === plan.from)
          throw new SvcError("illegal_transition", plan?.log[0] ?? "the pull request did not move", {
            details: { state: plan?.from ?? null },
          });
        return { from: plan.from, to: plan.to };
      });
    },

    async merge(number) {
      const api = await upstream("authenticate as the app", options.api);
      return upstream("merge the approved pull request", async () => {
        const current = await view(api, number);
        if (current.state !== "approved")
          throw new SvcError(
            "illegal_transition",
            `#${number} is ${current.state}; only an approved submission is merged`,
          );
        const { data } = await api.rest.pulls.merge({
          ...repo,
          pull_number: number,
          sha: current.headSha,
          merge_method: "squash",
        });
        return { sha: data.sha };
      });
    },

    async close(number) {
      const api = await upstream("authenticate as the app", options.api);
      await upstream("close the pull request", async () => {
        await api.rest.pulls.update({ ...repo, pull_number: number, state: "closed" });
        await handleSubmissionEvent(api, repo, number, { kind: "closed", merged: false }, await botOptions());
      });
    },
  };
}

/** The `svc / <check>` check runs on the head commit, as the API's validation checks. */
async function readCheckRuns(api: GitHubApi, repo: RepoRef, headSha: string): Promise<CheckEntry[] | null> {
  try {
    const runs = await api.paginate(api.rest.checks.listForRef, { ...repo, ref: headSha, per_page: 100 });
    // The gate is the merge verdict, not a validation check.
    const ours = runs.filter((r) => r.name.startsWith("svc / ") && r.name !== "svc / gate");
    if (ours.length === 0) return null;
    return ours.map((r) => ({
      id: r.name.slice("svc / ".length),
      required: true,
      status:
        r.status !== "completed"
          ? "running"
          : r.conclusion === "success"
            ? "passed"
            : r.conclusion === "failure"
              ? "failed"
              : "skipped",
      reasonCode: null,
      log: [r.output?.title ?? "", r.output?.summary ?? ""].filter(Boolean),
      ...(r.started_at ? { startedAt: r.started_at } : {}),
      ...(r.completed_at ? { finishedAt: r.completed_at } : {}),
    }));
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/**
 * Brings a GitHub-backed row in line with its pull request: a validation result the worker could not
 * report yet is reported first; then the state the bot stores on the pull request becomes the row's.
 */
export async function syncFromPullRequest(
  deps: SubmissionDeps,
  link: GitHubLink,
  row: SubmissionRow,
): Promise<SubmissionRow> {
  if (row.github_pull_request === null) return row;
  if (row.staging_path !== null && row.github_reported_revision !== row.revision)
    await reportOnce(deps, link, row.id);
  // A staged upload's checks are the worker's own (richer logs); a URL upload's are the check runs.
  const pr = await link.read(row.github_pull_request, { checks: row.staging_path === null });
  const checks = pr.checks;
  if (pr.state === row.state && !checks) return row;
  const now = deps.now();
  return deps.store.transaction(async (tx) => {
    const current = (await loadSubmission(tx, row.id, true))!;
    if (current.state === pr.state && !checks) return current;
    const updated = await tx.query<SubmissionRow>(
      `UPDATE submissions SET state = $2,
         validation_checks = COALESCE($3::jsonb, validation_checks),
         pending_since = CASE WHEN $2 = 'pending_review' AND state <> 'pending_review' THEN $4::timestamptz ELSE pending_since END,
         updated_at = CASE WHEN state <> $2 THEN $4::timestamptz ELSE updated_at END
       WHERE id = $1 RETURNING *`,
      [row.id, pr.state, checks ? JSON.stringify(checks) : null, now.toISOString()],
    );
    if (current.state !== pr.state) {
      await appendAuditEvent(
        tx,
        {
          actorAccountId: null,
          action: "submission.synced_from_github",
          targetType: "submission",
          targetId: row.id,
          metadata: {
            from: current.state,
            to: pr.state,
            pullRequest: row.github_pull_request,
            headSha: pr.headSha,
          },
        },
        { now, random: deps.random },
      );
    }
    return updated.rows[0]!;
  });
}

/**
 * Reports a finished validation to the pull request exactly once per revision, whoever gets there
 * first (the worker as it finishes, or a read of the submission after a failed report): the report
 * is claimed in the store, and released again when GitHub could not take it.
 */
export async function reportOnce(
  deps: SubmissionDeps,
  link: GitHubLink,
  submissionId: string,
): Promise<void> {
  const claimed = await deps.store.query<SubmissionRow>(
    `UPDATE submissions SET github_reported_revision = revision
       WHERE id = $1 AND github_pull_request IS NOT NULL AND state IN ('pending_review', 'validation_failed')
         AND github_reported_revision IS DISTINCT FROM revision
     RETURNING *`,
    [submissionId],
  );
  const current = claimed.rows[0];
  if (!current) return;
  try {
    await link.reportValidation(current);
  } catch (error) {
    await deps.store.query(
      `UPDATE submissions SET github_reported_revision = NULL WHERE id = $1 AND github_reported_revision = $2`,
      [submissionId, current.revision],
    );
    throw error;
  }
}

export async function linkPullRequest(
  deps: SubmissionDeps,
  submissionId: string,
  pr: { number: number; htmlUrl: string },
): Promise<SubmissionRow> {
  const updated = await deps.store.query<SubmissionRow>(
    `UPDATE submissions SET github_pull_request = $2, github_pull_request_url = $3 WHERE id = $1 RETURNING *`,
    [submissionId, pr.number, pr.htmlUrl],
  );
  return updated.rows[0]!;
}

/** The rows whose pull request the bot can still move, most recently changed first (at most 200). */
export async function listOpenPullRequestRows(db: SqlExecutor): Promise<SubmissionRow[]> {
  const open = await db.query<SubmissionRow>(
    `SELECT * FROM submissions WHERE github_pull_request IS NOT NULL
       AND state NOT IN ('cancelled', 'rejected', 'superseded') ORDER BY updated_at DESC LIMIT 200`,
  );
  return open.rows;
}

/** The approved rows that have a pull request: publish_catalog brings them in line before it merges. */
export async function listApprovedPullRequestRows(db: SqlExecutor): Promise<SubmissionRow[]> {
  const approved = await db.query<SubmissionRow>(
    `SELECT * FROM submissions WHERE github_pull_request IS NOT NULL AND state = 'approved'`,
  );
  return approved.rows;
}
