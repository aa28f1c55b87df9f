/**
 * Release-upload intake: a release published in a mod's own repository becomes a submission pull
 * request on the portal. The sidecar comes from the release's svc-release.json asset (or a ```json
 * block in its body); the package fields are measured from the downloaded ZIP asset.
 *
 * Who may: the submitter is the person behind the release (release-submitter.ts), never a bot. A
 * claimed mod id is accepted only from its source repository (by id: a renamed or transferred
 * repository keeps working, a new one under the old name does not) and only from a person who owns
 * or collaborates on it; an unclaimed one becomes a claim the moderator sees on the pull request.
 * Each source repository has its own branch per mod version, so nobody's pull request answers for
 * another repository's release, and intake is rate-limited per repository and per owner.
 */
import type { GitHubApi, RepoRef } from "../github/api.ts";
import { type DownloadResult, downloadCapped, type FetchLike } from "../github/download.ts";
import {
  type OpenedPullRequest,
  openSubmissionPullRequest,
  type SubmissionPullRequestInput,
  updateSubmissionFile,
} from "../github/open-submission-pr.ts";
import { parseSubmissionPath, submissionPath } from "../github/submission-files.ts";
import { maySubmit } from "../contracts/ownership.ts";
import { recordShard } from "../contracts/records.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { releasePullRequest } from "./intake-comments.ts";
import { fetchOwnership, type OwnershipRead } from "./fetch.ts";
import type { IntakeAdmission, IntakeLimiter } from "./intake-limits.ts";
import { type ReleaseSender, resolveReleaseSubmitter } from "./release-submitter.ts";
import { type StatusKey, sealSubmitter } from "./status-seal.ts";

export const RELEASE_SIDECAR_ASSET = "svc-release.json";

export interface ReleaseAsset {
  name: string;
  browserDownloadUrl: string;
  size: number;
}

export interface PublishedRelease {
  sourceRepository: string;
  /** The repository's id: what an ownership record names, and what a rename or transfer keeps. */
  repositoryId: number;
  ownerLogin: string;
  ownerId: number;
  /** A private repository's assets need a token to download: no validator or player could fetch them. */
  repositoryPrivate?: boolean;
  htmlUrl: string;
  tagName: string;
  body: string;
  /** The account that published it (the webhook's sender): a person, or a bot when a workflow did. */
  sender: ReleaseSender;
  publishedAt: string | null;
  draft: boolean;
  prerelease: boolean;
  assets: ReleaseAsset[];
}

export interface ReleaseIntakeOptions {
  maxPackageBytes: number;
  /** Seals the submitter record of the pull request (the portal app's key). */
  statusKey: StatusKey;
  /** Counts the release against its source's limits; null counts nothing (a retry of an admitted delivery). */
  limiter: IntakeLimiter | null;
  fetch?: FetchLike;
  dryRun?: boolean;
  /** Loopback tests serve assets over http. */
  allowHttp?: boolean;
  clock?: () => Date;
}

export type ReleaseIntakeResult =
  | {
      ok: true;
      pullRequest: number | null;
      sidecar: Record<string, unknown>;
      branch: string;
      submitter: string;
      claim: boolean;
    }
  | {
      ok: false;
      code: string;
      message: string;
      /** The person behind the release, once known. */
      submitter?: string;
      /** Set for release_rate_limited: which limit, and when its window closes. */
      limited?: Extract<IntakeAdmission, { ok: false }>;
    };

const JSON_BLOCK = /```json\s*\n([\s\S]*?)\n```/;

function fail(code: string, message: string, submitter?: string): ReleaseIntakeResult {
  return { ok: false, code, message, ...(submitter ? { submitter } : {}) };
}

export async function intakeRelease(
  portalApi: GitHubApi,
  portal: RepoRef,
  release: PublishedRelease,
  options: ReleaseIntakeOptions,
): Promise<ReleaseIntakeResult> {
  if (release.draft) return fail("release_draft", "draft releases are not submitted");
  if (release.repositoryPrivate)
    return fail(
      "release_repository_private",
      `${release.sourceRepository} is private: the package URL must be public, for validation, the catalog and every player`,
    );
  const now = (options.clock ?? (() => new Date()))();
  const resolved = await resolveReleaseSubmitter(portalApi, release, now);
  if (!resolved.ok) return fail(resolved.code, resolved.message);
  const submitter = resolved.login;
  if (options.limiter && !options.dryRun) {
    const admitted = await options.limiter.admit({
      repositoryId: release.repositoryId,
      ownerId: release.ownerId,
    });
    if (!admitted.ok)
      return {
        ok: false,
        code: "release_rate_limited",
        message: `${release.sourceRepository} is over the release intake limit per ${admitted.scope} (${admitted.limit} in ${admitted.windowSeconds} s); retry after ${admitted.retryAt.toISOString()}`,
        submitter,
        limited: admitted,
      };
  }
  const download = (url: string, max: number): Promise<DownloadResult> =>
    downloadCapped(url, max, options.fetch, { allowHttp: options.allowHttp ?? false });

  let sidecarSource: Uint8Array | string | null = null;
  const sidecarAsset = release.assets.find((a) => a.name === RELEASE_SIDECAR_ASSET);
  if (sidecarAsset) {
    const got = await download(sidecarAsset.browserDownloadUrl, 256 * 1024);
    if (!got.ok) return fail(got.code, got.message, submitter);
    sidecarSource = got.bytes;
  } else {
    const block = JSON_BLOCK.exec(release.body);
    if (block) sidecarSource = block[1]!;
  }
  if (sidecarSource === null) {
    return fail(
      "release_sidecar_missing",
      `the release has no ${RELEASE_SIDECAR_ASSET} asset and no \`\`\`json block in its notes`,
      submitter,
    );
  }
  const parsed = parseUntrustedJson(sidecarSource, { maxBytes: 256 * 1024, maxDepth: 32 });
  if (
    !parsed.ok ||
    typeof parsed.value !== "object" ||
    parsed.value === null ||
    Array.isArray(parsed.value)
  ) {
    return fail(
      "release_sidecar_invalid",
      `the release sidecar is not a JSON object${parsed.ok ? "" : `: ${parsed.message}`}`,
      submitter,
    );
  }
  const sidecar = parsed.value as Record<string, unknown>;
  const modId = typeof sidecar.modId === "string" ? sidecar.modId : "";
  const version = typeof sidecar.version === "string" ? sidecar.version : "";
  const path = submissionPath(modId, version);
  if (!parseSubmissionPath(path))
    return fail(
      "release_sidecar_invalid",
      "the sidecar's modId or version is not usable in a path",
      submitter,
    );

  // A dry run (svc new's rehearsal of a release) reads nothing from the portal: it checks the release.
  const ownership: OwnershipRead = options.dryRun
    ? { kind: "unclaimed" }
    : await fetchOwnership(
        portalApi,
        portal,
        modId,
        (await portalApi.rest.repos.get({ ...portal })).data.default_branch,
      );
  if (ownership.kind === "unreadable")
    return fail("release_ownership_unreadable", `${modId}: ${ownership.message}`, submitter);
  if (ownership.kind === "claimed") {
    const source = ownership.ownership.sourceRepository;
    if (source && source.id !== release.repositoryId)
      return fail(
        "release_source_mismatch",
        `${modId} is claimed, and its releases are accepted only from its source repository ${source.fullName} (repository id ${source.id}); ${release.sourceRepository} is repository id ${release.repositoryId}`,
        submitter,
      );
    if (!maySubmit(ownership.ownership, [{ github: submitter }]))
      return fail(
        "release_submitter_not_owner",
        `${modId} is claimed, and ${submitter} neither owns nor collaborates on it (records/owners/${recordShard(modId)}.json)`,
        submitter,
      );
  }
  const claim = ownership.kind === "unclaimed";

  const declaredFile = (sidecar.package as { fileName?: unknown } | undefined)?.fileName;
  const zips = release.assets.filter((a) => a.name.toLowerCase().endsWith(".zip"));
  const zip =
    typeof declaredFile === "string"
      ? zips.find((a) => a.name === declaredFile)
      : zips.length === 1
        ? zips[0]
        : undefined;
  if (!zip)
    return fail(
      "release_package_missing",
      "the release needs exactly one .zip asset (or the one the sidecar's package.fileName names)",
      submitter,
    );
  const pkg = await download(zip.browserDownloadUrl, options.maxPackageBytes);
  if (!pkg.ok) return fail(pkg.code, pkg.message, submitter);
  const complete = {
    ...sidecar,
    package: {
      fileName: zip.name,
      url: zip.browserDownloadUrl,
      sha256: pkg.sha256,
      sizeBytes: pkg.sizeBytes,
    },
  };
  const repository = `${portal.owner}/${portal.repo}`;
  const pr = releasePullRequest({
    modId,
    version,
    source: { fullName: release.sourceRepository, id: release.repositoryId },
    releaseUrl: release.htmlUrl,
    submitter,
    claim,
    seal: (record, branch) => sealSubmitter(options.statusKey, { repository, branch }, record),
  });
  if (options.dryRun)
    return { ok: true, pullRequest: null, sidecar: complete, branch: pr.branch, submitter, claim };

  const created = await openOrResume(portalApi, portal, {
    branch: pr.branch,
    path,
    sidecar: complete,
    title: pr.title,
    body: pr.body,
    message: `Submit ${modId}@${version} from ${release.sourceRepository}`,
  });
  return { ok: true, pullRequest: created.number, sidecar: complete, branch: pr.branch, submitter, claim };
}

/**
 * Intake runs from a queue that retries, so it must be safe to run twice: an open or merged pull
 * request of this release's branch (this source repository, mod and version) is the answer; a
 * branch left by an attempt that stopped half-way gets its sidecar and its pull request. A closed,
 * unmerged one (rejected or withdrawn) is not: the same repository may submit the version again.
 */
async function openOrResume(
  api: GitHubApi,
  portal: RepoRef,
  input: SubmissionPullRequestInput,
): Promise<Pick<OpenedPullRequest, "number">> {
  const existing = async () => {
    const pulls = await api.paginate(api.rest.pulls.list, {
      ...portal,
      head: `${portal.owner}:${input.branch}`,
      state: "all",
      per_page: 100,
    });
    return pulls.find((p) => p.state === "open" || p.merged_at !== null) ?? null;
  };
  const found = await existing();
  if (found) return { number: found.number };
  try {
    return await openSubmissionPullRequest(api, portal, input);
  } catch (error) {
    if ((error as { status?: number }).status !== 422) throw error;
  }
  await updateSubmissionFile(api, portal, {
    branch: input.branch,
    path: input.path,
    sidecar: input.sidecar,
    message: input.message,
  });
  const again = await existing();
  if (again) return { number: again.number };
  const { data: repository } = await api.rest.repos.get({ ...portal });
  const { data: created } = await api.rest.pulls.create({
    ...portal,
    title: input.title,
    head: input.branch,
    base: repository.default_branch,
    body: input.body,
  });
  return { number: created.number };
}
