/**
 * Publication as a reconciliation (the publish workflow on push, on its schedule and on a plain
 * dispatch): every sidecar under submissions/ on the default branch that has no release record yet
 * is published when, and only when, the pull request that added it earns it:
 *
 * - the commits that touched the file on the default branch lead to a merged pull request whose
 *   changed files are exactly that one added sidecar (a push that smuggles a second sidecar beside an
 *   approved one finds no such pull request for the second);
 * - the bot's status comment (only the bot's login counts, and only with the app's seal) says
 *   `approved` for that pull request's head commit;
 * - the person who submitted it is known (the author, or the app's sealed record of the person
 *   behind a release or upload) and may submit the mod: the publisher claims an unclaimed mod id for
 *   them or refuses someone who neither owns nor collaborates on it;
 * - the file on the default branch is byte for byte the approved one (its git blob sha equals the
 *   blob sha the pull request's files API reports at that head);
 * - the package downloaded now hashes to the sidecar's sha256.
 *
 * An already published version with the same sha256 is a no-op (no API call at all); a different
 * sha256 for a published version is refused. So a cancelled or failed run is simply caught up by the
 * next one, and running twice publishes nothing twice.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PublishReceipt } from "../bot/comments.ts";
import { readStoredStatus, submitterOf, type TrustOptions } from "../bot/derive.ts";
import type { StatusKey } from "../bot/status-seal.ts";
import type { Principal } from "../contracts/ownership.ts";
import type { PublisherOptions } from "../catalog/publisher.ts";
import { publishRelease } from "../catalog/publisher.ts";
import { RECORD_PATHS, type ReleaseRecord } from "../contracts/records.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import { isSvcError } from "../errors.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import type { GitHubApi, RepoRef } from "../github/api.ts";
import { type DownloadResult, downloadCapped, type FetchLike } from "../github/download.ts";
import { findStagingRelease } from "../github/open-submission-pr.ts";
import {
  parseSubmissionPath,
  STAGING_TAG_PREFIX,
  SUBMISSIONS_DIR,
  type SubmissionPath,
  stagedUploadId,
} from "../github/submission-files.ts";

/** Stable codes of a sidecar that is not published (nothing is written for it). */
export const PUBLISH_REFUSALS = {
  sidecar_unreadable: "the sidecar on the default branch is not a JSON object",
  sidecar_path_mismatch: "the sidecar's modId/version differ from its path",
  published_sha256_differs: "this version is published with other bytes; published versions are immutable",
  no_pull_request: "no merged pull request brought this file to the default branch",
  pull_request_mismatch:
    "the merged pull request that brought this file did not add exactly this one sidecar",
  not_approved:
    "the bot's status comment on the pull request does not say approved (or is not sealed by the app)",
  submitter_unknown:
    "the person who submitted the pull request cannot be established (a bot account, or the app's submitter record is missing or edited)",
  approval_stale: "the approval is for another commit than the one merged",
  sidecar_changed: "the file on the default branch is not the approved file",
} as const;
export type PublishRefusalCode = keyof typeof PUBLISH_REFUSALS;

export type PublishOutcome = "published" | "already_published" | "refused" | "failed";

/** One sidecar's result; the receipts job posts `receipt` on `pullRequest`. */
export interface PublicationEntry {
  path: string;
  pullRequest: number | null;
  outcome: PublishOutcome;
  receipt: PublishReceipt;
}

export interface ReconcileInput {
  repo: RepoRef;
  /** The default branch the checkout is at. */
  branch: string;
  publisher: PublisherOptions;
  botLogins: readonly string[];
  /** The app's seal: a status or submitter record counts only when it verifies. */
  statusKey: StatusKey;
  /** Reads pull requests, their files and comments (the workflow token: pull-requests read). */
  reader: GitHubApi;
  /** Reads the private draft of a staged upload (the app token: contents write). */
  writer: GitHubApi;
  fetch?: FetchLike;
  allowHttp?: boolean;
}

/** git's object id of a blob: what the pull request files API reports as `sha`. */
export function gitBlobSha(bytes: Uint8Array): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** Every sidecar path under submissions/ in the checkout, sorted. */
export function listSidecars(root: string): SubmissionPath[] {
  const dir = join(root, SUBMISSIONS_DIR);
  if (!existsSync(dir)) return [];
  const out: SubmissionPath[] = [];
  for (const modId of readdirSync(dir, { withFileTypes: true })) {
    if (!modId.isDirectory()) continue;
    for (const file of readdirSync(join(dir, modId.name))) {
      const parsed = parseSubmissionPath(`${SUBMISSIONS_DIR}/${modId.name}/${file}`);
      if (parsed) out.push(parsed);
    }
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The sidecars of the checkout without a release record: what a run would look at through the API. */
export function pendingSidecars(root: string, recordsDir: string): SubmissionPath[] {
  return listSidecars(root).filter(
    (s) => !existsSync(join(recordsDir, RECORD_PATHS.release(s.modId, s.version))),
  );
}

interface Sidecar {
  modId?: unknown;
  version?: unknown;
  package?: { url?: string; sha256?: string; fileName?: string };
}

type PullRequest = Awaited<
  ReturnType<GitHubApi["rest"]["repos"]["listPullRequestsAssociatedWithCommit"]>
>["data"][number];

class Refusal {
  constructor(
    readonly code: PublishRefusalCode,
    readonly message: string,
    readonly pullRequest: number | null = null,
  ) {}
}

/** The merged pull request that added exactly this sidecar, with the file's blob sha at its head. */
async function findAddingPullRequest(
  input: ReconcileInput,
  path: string,
): Promise<{ pr: PullRequest; blobSha: string }> {
  const { reader, repo } = input;
  const commits = await reader.paginate(reader.rest.repos.listCommits, {
    ...repo,
    sha: input.branch,
    path,
    per_page: 100,
  });
  const seen = new Set<number>();
  const mismatched: number[] = [];
  // Oldest first: the commit that added the file comes before any later edit of it.
  for (const commit of [...commits].reverse()) {
    const { data: pulls } = await reader.rest.repos.listPullRequestsAssociatedWithCommit({
      ...repo,
      commit_sha: commit.sha,
    });
    for (const pr of pulls) {
      if (!pr.merged_at || pr.base.ref !== input.branch || seen.has(pr.number)) continue;
      seen.add(pr.number);
      const files = await reader.paginate(reader.rest.pulls.listFiles, {
        ...repo,
        pull_number: pr.number,
        per_page: 100,
      });
      const only = files.length === 1 ? files[0] : undefined;
      if (only?.sha && only.filename === path && only.status === "added") return { pr, blobSha: only.sha };
      mismatched.push(pr.number);
    }
  }
  if (mismatched.length > 0)
    throw new Refusal(
      "pull_request_mismatch",
      `${path} reached ${input.branch} through ${mismatched.map((n) => `#${n}`).join(", ")}, which did not add exactly this one file; a sidecar is published only under the approval of the pull request that added it alone`,
      mismatched.length === 1 ? mismatched[0]! : null,
    );
  throw new Refusal(
    "no_pull_request",
    `${path} reached ${input.branch} without a merged submission pull request (${commits.length} commit(s) touched it)`,
  );
}

const trustOf = (input: ReconcileInput): TrustOptions => ({
  botLogins: input.botLogins,
  statusKey: input.statusKey,
});

/** The state the bot stored on the pull request: its own status comment, sealed for this pull request. */
async function storedStatus(input: ReconcileInput, number: number) {
  const comments = await input.reader.paginate(input.reader.rest.issues.listComments, {
    ...input.repo,
    issue_number: number,
    per_page: 100,
  });
  return readStoredStatus(
    comments.map((c) => ({ id: c.id, body: c.body ?? "", authorLogin: c.user?.login ?? "" })),
    { repository: `${input.repo.owner}/${input.repo.repo}`, pullRequest: number },
    trustOf(input),
  );
}

/** Who the publisher checks and claims for: the person behind the pull request, never a bot. */
function submitterOfPull(input: ReconcileInput, pr: PullRequest) {
  const { login, record } = submitterOf(
    {
      authorLogin: pr.user?.login ?? "",
      authorType: pr.user?.type ?? "",
      body: pr.body ?? "",
      headRef: pr.head.ref,
      repo: input.repo,
    },
    trustOf(input),
  );
  if (!login)
    throw new Refusal(
      "submitter_unknown",
      `#${pr.number}: ${PUBLISH_REFUSALS.submitter_unknown}; nothing is published for a submitter nobody can own`,
      pr.number,
    );
  const principal: Principal = login.startsWith("portal:") ? { account: login.slice(7) } : { github: login };
  return {
    identity: [principal],
    claimAs: principal,
    ...(record?.repository ? { sourceRepository: record.repository } : {}),
  };
}

async function downloadPackage(
  input: ReconcileInput,
  pr: PullRequest,
  sidecar: Sidecar,
): Promise<DownloadResult> {
  const maxBytes = input.publisher.config.limits.maxPackageBytes;
  const staged = sidecar.package?.url
    ? null
    : stagedUploadId(
        { ref: pr.head.ref, repository: pr.head.repo?.full_name ?? null },
        `${input.repo.owner}/${input.repo.repo}`,
      );
  if (staged)
    return downloadStagedPackage(input.writer, input.repo, staged, sidecar.package?.fileName ?? "", maxBytes);
  return downloadCapped(sidecar.package?.url ?? "", maxBytes, input.fetch, {
    allowHttp: input.allowHttp ?? false,
  });
}

async function reconcileOne(input: ReconcileInput, sidecarPath: SubmissionPath): Promise<PublicationEntry> {
  const { modId, version, path } = sidecarPath;
  const entry = (
    outcome: PublishOutcome,
    pullRequest: number | null,
    receipt: Omit<PublishReceipt, "modId" | "version">,
  ): PublicationEntry => ({ path, pullRequest, outcome, receipt: { modId, version, ...receipt } });
  const refuse = (
    code: string,
    message: string,
    pullRequest: number | null = null,
    outcome: PublishOutcome = "refused",
  ) => entry(outcome, pullRequest, { ok: false, error: { code, message } });
  try {
    const bytes = readFileSync(join(input.publisher.root, path));
    const parsed = parseUntrustedJson(bytes, { maxBytes: 256 * 1024, maxDepth: 32 });
    const sidecar = parsed.ok ? (parsed.value as Sidecar) : null;
    if (!sidecar || typeof sidecar !== "object" || Array.isArray(sidecar))
      throw new Refusal("sidecar_unreadable", `${path}: ${parsed.ok ? "not a JSON object" : parsed.message}`);
    if (sidecar.modId !== modId || sidecar.version !== version)
      throw new Refusal(
        "sidecar_path_mismatch",
        `${path} names ${String(sidecar.modId)}@${String(sidecar.version)}, not ${modId}@${version}`,
      );
    const recordPath = join(input.publisher.recordsDir, RECORD_PATHS.release(modId, version));
    if (existsSync(recordPath)) {
      const record = JSON.parse(readFileSync(recordPath, "utf8")) as ReleaseRecord;
      if (record.sha256 === sidecar.package?.sha256)
        return entry("already_published", null, {
          ok: true,
          artifactUrl: record.packageUrl,
          sha256: record.sha256,
        });
      throw new Refusal(
        "published_sha256_differs",
        `${modId}@${version} is published with sha256 ${record.sha256}; ${path} now says ${String(sidecar.package?.sha256)}. Published versions are immutable: submit a new version`,
      );
    }
    const { pr, blobSha } = await findAddingPullRequest(input, path);
    const status = await storedStatus(input, pr.number);
    const stored = status.stored;
    if (stored?.state !== "approved")
      throw new Refusal(
        "not_approved",
        status.void
          ? `#${pr.number} has no state sealed by the app (its status comment was edited, or never written by it), so it counts for nothing; only an approved submission is published`
          : `#${pr.number} is ${stored?.state ?? "without a status from the bot"}; only an approved submission is published`,
        pr.number,
      );
    if (stored.headSha !== pr.head.sha)
      throw new Refusal(
        "approval_stale",
        `#${pr.number} was approved at ${stored.headSha} but merged at ${pr.head.sha}`,
        pr.number,
      );
    if (gitBlobSha(bytes) !== blobSha)
      throw new Refusal(
        "sidecar_changed",
        `${path} on ${input.branch} (blob ${gitBlobSha(bytes)}) is not the file #${pr.number} added and had approved (blob ${blobSha})`,
        pr.number,
      );
    const submitter = submitterOfPull(input, pr);
    const download = await downloadPackage(input, pr, sidecar);
    if (!download.ok) return refuse(download.code, download.message, pr.number, "failed");
    if (download.sha256 !== sidecar.package?.sha256)
      return refuse(
        "hash_mismatch",
        `the package now hashes to ${download.sha256}, the approved sidecar says ${sidecar.package?.sha256}`,
        pr.number,
        "failed",
      );
    try {
      const published = await publishRelease(input.publisher, {
        packageBytes: download.bytes,
        sidecar,
        source: { kind: "pull_request", pullRequestUrl: pr.html_url },
        submitter,
      });
      const base = input.publisher.config.baseUrl;
      return entry("published", pr.number, {
        ok: true,
        ...(published.artifact
          ? {
              artifactUrl: published.artifact.url,
              sha256: published.artifact.sha256,
              sizeBytes: published.artifact.sizeBytes,
            }
          : {}),
        catalogUrl: `${base}/${SITE_PATHS.catalog}`,
        detailUrl: `${base}/${SITE_PATHS.modDetail(modId)}`,
      });
    } catch (error) {
      if (!isSvcError(error)) throw error;
      return refuse(error.code, error.message, pr.number, "failed");
    }
  } catch (error) {
    if (error instanceof Refusal) return refuse(error.code, error.message, error.pullRequest);
    throw error;
  }
}

/**
 * Publishes every approved, merged, unpublished sidecar of the checkout; one entry per sidecar.
 * An unexpected error (GitHub down, a release that could not be published) propagates: the caller
 * then pushes nothing, and the next run starts over from the records in git.
 */
export async function reconcilePublications(input: ReconcileInput): Promise<PublicationEntry[]> {
  const entries: PublicationEntry[] = [];
  for (const sidecar of listSidecars(input.publisher.root)) entries.push(await reconcileOne(input, sidecar));
  return entries;
}

/**
 * The package of an upload the portal staged privately: the asset of the draft release
 * svc-upload-{submissionId}, read through the API with a token that sees drafts (contents: write).
 */
export async function downloadStagedPackage(
  api: GitHubApi,
  repo: RepoRef,
  submissionId: string,
  fileName: string,
  maxBytes: number,
): Promise<DownloadResult> {
  const tag = `${STAGING_TAG_PREFIX}${submissionId}`;
  const release = await findStagingRelease(api, repo, submissionId);
  const asset = release?.assets.find((a) => a.name === fileName);
  if (!asset)
    return {
      ok: false,
      code: "download_failed",
      message: `the staged package ${fileName} of upload ${submissionId} is not in the draft release ${tag}`,
    };
  if (asset.size > maxBytes)
    return {
      ok: false,
      code: "package_too_large",
      message: `${fileName} is ${asset.size} bytes; the limit is ${maxBytes}`,
    };
  const { data } = await api.request("GET /repos/{owner}/{repo}/releases/assets/{asset_id}", {
    ...repo,
    asset_id: asset.id,
    headers: { accept: "application/octet-stream" },
  });
  const bytes = Buffer.from(data as unknown as ArrayBuffer);
  if (bytes.length > maxBytes)
    return { ok: false, code: "package_too_large", message: `${fileName} is over ${maxBytes} bytes` };
  return {
    ok: true,
    bytes,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    sizeBytes: bytes.length,
  };
}
