/**
 * The publish workflow's core (push to the default branch): for each sidecar the push added, it
 * requires the submission pull request to be approved (the bot's status comment), downloads the
 * package, checks the bytes against the sidecar, and hands exactly those bytes to the publisher
 * (artifact store -> records -> site, one transaction). Returns one receipt per sidecar.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { PublishReceipt } from "../bot/comments.ts";
import { deriveSubmission } from "../bot/derive.ts";
import { fetchPullRequestInfo } from "../bot/fetch.ts";
import type { PublisherOptions } from "../catalog/publisher.ts";
import { publishRelease } from "../catalog/publisher.ts";
import { isSvcError } from "../errors.ts";
import type { GitHubApi, RepoRef } from "./api.ts";
import { type DownloadResult, downloadCapped, type FetchLike } from "./download.ts";
import { findStagingRelease } from "./open-submission-pr.ts";
import { parseSubmissionPath, STAGING_TAG_PREFIX, stagedUploadId } from "./submission-files.ts";

export interface MergedSubmission {
  path: string;
  pullRequest: number | null;
  receipt: PublishReceipt;
}

export interface PublishMergedInput {
  repo: RepoRef;
  before: string;
  after: string;
  publisher: PublisherOptions;
  botLogins: string[];
  fetch?: FetchLike;
  allowHttp?: boolean;
}

export async function publishMergedSubmissions(
  api: GitHubApi,
  input: PublishMergedInput,
): Promise<MergedSubmission[]> {
  const { data: comparison } = await api.rest.repos.compareCommitsWithBasehead({
    ...input.repo,
    basehead: `${input.before}...${input.after}`,
  });
  const added = (comparison.files ?? []).filter(
    (f) => f.status === "added" && parseSubmissionPath(f.filename),
  );
  const results: MergedSubmission[] = [];
  for (const file of added) {
    const sidecarPath = parseSubmissionPath(file.filename)!;
    const fail = (pullRequest: number | null, code: string, message: string): MergedSubmission => ({
      path: file.filename,
      pullRequest,
      receipt: {
        ok: false,
        modId: sidecarPath.modId,
        version: sidecarPath.version,
        error: { code, message },
      },
    });
    const { data: pulls } = await api.rest.repos.listPullRequestsAssociatedWithCommit({
      ...input.repo,
      commit_sha: input.after,
    });
    const merged = pulls.find((p) => p.merged_at);
    if (!merged) {
      results.push(
        fail(
          null,
          "no_pull_request",
          `${file.filename} reached the default branch without a merged submission pull request`,
        ),
      );
      continue;
    }
    const view = deriveSubmission(
      await fetchPullRequestInfo(api, input.repo, merged.number),
      input.botLogins,
    );
    if (view.state !== "approved") {
      results.push(
        fail(
          merged.number,
          "not_approved",
          `#${merged.number} is ${view.state}; only an approved submission is published`,
        ),
      );
      continue;
    }
    const sidecar = JSON.parse(readFileSync(join(input.publisher.root, file.filename), "utf8")) as {
      package?: { url?: string; sha256?: string; fileName?: string };
    };
    const staged = sidecar.package?.url
      ? null
      : stagedUploadId(
          { ref: merged.head.ref, repository: merged.head.repo?.full_name ?? null },
          `${input.repo.owner}/${input.repo.repo}`,
        );
    const download = staged
      ? await downloadStagedPackage(
          api,
          input.repo,
          staged,
          sidecar.package?.fileName ?? "",
          input.publisher.config.limits.maxPackageBytes,
        )
      : await downloadCapped(
          sidecar.package?.url ?? "",
          input.publisher.config.limits.maxPackageBytes,
          input.fetch,
          {
            allowHttp: input.allowHttp ?? false,
          },
        );
    if (!download.ok) {
      results.push(fail(merged.number, download.code, download.message));
      continue;
    }
    if (download.sha256 !== sidecar.package?.sha256) {
      results.push(
        fail(
          merged.number,
          "hash_mismatch",
          `the package now hashes to ${download.sha256}, the approved sidecar says ${sidecar.package?.sha256}`,
        ),
      );
      continue;
    }
    try {
      const published = await publishRelease(input.publisher, {
        packageBytes: download.bytes,
        sidecar,
        source: { kind: "pull_request", pullRequestUrl: merged.html_url },
      });
      const base = input.publisher.config.baseUrl;
      results.push({
        path: file.filename,
        pullRequest: merged.number,
        receipt: {
          ok: true,
          modId: published.record.modId,
          version: published.record.version,
          ...(published.artifact
            ? {
                artifactUrl: published.artifact.url,
                sha256: published.artifact.sha256,
                sizeBytes: published.artifact.sizeBytes,
              }
            : {}),
          catalogUrl: `${base}/api/v1/catalog.json`,
          detailUrl: `${base}/api/v1/mods/${published.record.modId}/index.json`,
        },
      });
    } catch (error) {
      if (!isSvcError(error)) throw error;
      results.push(fail(merged.number, error.code, error.message));
    }
  }
  return results;
}

/**
 * The package of an upload the portal staged privately: the asset of the draft release
 * svc-upload-{submissionId}, read through the API with this job's token (contents: write sees drafts).
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
