/**
 * Release-upload intake: a release published in a mod's own repository becomes a submission pull
 * request on the portal. The sidecar comes from the release's svc-release.json asset (or a ```json
 * block in its body); the package fields are measured from the downloaded ZIP asset.
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
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { releasePullRequest } from "./comments.ts";

export const RELEASE_SIDECAR_ASSET = "svc-release.json";

export interface ReleaseAsset {
  name: string;
  browserDownloadUrl: string;
  size: number;
}

export interface PublishedRelease {
  sourceRepository: string;
  /** A private repository's assets need a token to download: no validator or player could fetch them. */
  repositoryPrivate?: boolean;
  htmlUrl: string;
  tagName: string;
  body: string;
  authorLogin: string;
  draft: boolean;
  prerelease: boolean;
  assets: ReleaseAsset[];
}

export interface ReleaseIntakeOptions {
  maxPackageBytes: number;
  fetch?: FetchLike;
  dryRun?: boolean;
  /** Loopback tests serve assets over http. */
  allowHttp?: boolean;
}

export type ReleaseIntakeResult =
  | { ok: true; pullRequest: number | null; sidecar: Record<string, unknown>; branch: string }
  | { ok: false; code: string; message: string };

const JSON_BLOCK = /```json\s*\n([\s\S]*?)\n```/;

function fail(code: string, message: string): ReleaseIntakeResult {
  return { ok: false, code, message };
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
  const download = (url: string, max: number): Promise<DownloadResult> =>
    downloadCapped(url, max, options.fetch, { allowHttp: options.allowHttp ?? false });

  let sidecarSource: Uint8Array | string | null = null;
  const sidecarAsset = release.assets.find((a) => a.name === RELEASE_SIDECAR_ASSET);
  if (sidecarAsset) {
    const got = await download(sidecarAsset.browserDownloadUrl, 256 * 1024);
    if (!got.ok) return fail(got.code, got.message);
    sidecarSource = got.bytes;
  } else {
    const block = JSON_BLOCK.exec(release.body);
    if (block) sidecarSource = block[1]!;
  }
  if (sidecarSource === null) {
    return fail(
      "release_sidecar_missing",
      `the release has no ${RELEASE_SIDECAR_ASSET} asset and no \`\`\`json block in its notes`,
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
    );
  }
  const sidecar = parsed.value as Record<string, unknown>;
  const modId = typeof sidecar.modId === "string" ? sidecar.modId : "";
  const version = typeof sidecar.version === "string" ? sidecar.version : "";
  const path = submissionPath(modId, version);
  if (!parseSubmissionPath(path))
    return fail("release_sidecar_invalid", "the sidecar's modId or version is not usable in a path");

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
    );
  const pkg = await download(zip.browserDownloadUrl, options.maxPackageBytes);
  if (!pkg.ok) return fail(pkg.code, pkg.message);
  const complete = {
    ...sidecar,
    package: {
      fileName: zip.name,
      url: zip.browserDownloadUrl,
      sha256: pkg.sha256,
      sizeBytes: pkg.sizeBytes,
    },
  };
  const pr = releasePullRequest({
    modId,
    version,
    sourceRepository: release.sourceRepository,
    releaseUrl: release.htmlUrl,
    submitter: release.authorLogin,
  });
  if (options.dryRun) return { ok: true, pullRequest: null, sidecar: complete, branch: pr.branch };

  const created = await openOrResume(portalApi, portal, {
    branch: pr.branch,
    path,
    sidecar: complete,
    title: pr.title,
    body: pr.body,
    message: `Submit ${modId}@${version} from ${release.sourceRepository}`,
  });
  return { ok: true, pullRequest: created.number, sidecar: complete, branch: pr.branch };
}

/**
 * Intake runs from a queue that retries, so it must be safe to run twice: a pull request already
 * opened for this release's branch is the answer; a branch left by an attempt that stopped half-way
 * gets its sidecar and its pull request.
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
    return pulls[0] ?? null;
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
