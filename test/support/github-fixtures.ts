/**
 * Objects as GitHub's REST API returns them: a user, a release and its assets complete (every
 * required field), for replies a test scripts field by field; and the objects the state model
 * (github-repository.ts) answers with, built from its state (the server completes them from
 * GitHub's examples).
 */
import { createHash } from "node:crypto";
import type {
  AssetState,
  CommentState,
  PullRequestFile,
  PullRequestState,
  ReleaseState,
} from "./github-repository.ts";

/** A simple-user as GitHub returns it. */
export function githubUser(login = "svc-bot", id = 1) {
  // A bot's login (`dependabot[bot]`) is percent-encoded in its URLs, as GitHub writes them.
  const path = encodeURIComponent(login);
  const api = `https://api.github.com/users/${path}`;
  return {
    login,
    id,
    node_id: `U_${id}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${id}`,
    gravatar_id: "",
    url: api,
    html_url: `https://github.com/${path}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: "User",
    site_admin: false,
  };
}

/** A release-asset as GitHub returns it. */
export function releaseAsset(fields: {
  id: number;
  name: string;
  size: number;
  repo: string;
  tag: string;
  digest?: string | null;
  apiUrl?: string;
  downloadBase?: string;
}) {
  const api = fields.apiUrl ?? "https://api.github.com";
  return {
    url: `${api}/repos/${fields.repo}/releases/assets/${fields.id}`,
    browser_download_url: `${fields.downloadBase ?? "https://github.com"}/${fields.repo}/releases/download/${fields.tag}/${fields.name}`,
    id: fields.id,
    node_id: `RA_${fields.id}`,
    name: fields.name,
    label: null,
    state: "uploaded" as const,
    content_type: "application/zip",
    size: fields.size,
    digest: fields.digest ?? null,
    download_count: 0,
    created_at: "2026-11-01T10:00:00Z",
    updated_at: "2026-11-01T10:00:00Z",
    uploader: githubUser(),
  };
}

/** A release as GitHub returns it. */
export function githubRelease(fields: {
  id: number;
  tag: string;
  repo: string;
  name?: string;
  body?: string;
  assets?: ReturnType<typeof releaseAsset>[];
  apiUrl?: string;
  uploadUrl?: string;
  publishedAt?: string;
}) {
  const api = fields.apiUrl ?? "https://api.github.com";
  const base = `${api}/repos/${fields.repo}/releases/${fields.id}`;
  return {
    url: base,
    html_url: `https://github.com/${fields.repo}/releases/tag/${fields.tag}`,
    assets_url: `${base}/assets`,
    upload_url: `${fields.uploadUrl ?? "https://uploads.github.com"}/repos/${fields.repo}/releases/${fields.id}/assets{?name,label}`,
    tarball_url: `${api}/repos/${fields.repo}/tarball/${fields.tag}`,
    zipball_url: `${api}/repos/${fields.repo}/zipball/${fields.tag}`,
    id: fields.id,
    node_id: `RE_${fields.id}`,
    tag_name: fields.tag,
    target_commitish: "main",
    name: fields.name ?? fields.tag,
    body: fields.body ?? null,
    draft: false,
    prerelease: false,
    immutable: false,
    created_at: "2026-11-01T10:00:00Z",
    published_at: fields.publishedAt ?? "2026-11-01T10:00:00Z",
    updated_at: "2026-11-01T10:00:00Z",
    author: githubUser(),
    assets: fields.assets ?? [],
  };
}

export function gitBlobSha(bytes: Buffer): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** One entry of GET /pulls/{pull_number}/files, the `index`th file of a pull request. */
export function pullRequestFile(filename: string, status: string, index = 0) {
  return { sha: `${index}`.padStart(40, "0"), filename, status, additions: 1, deletions: 0, changes: 1 };
}

/** A pull request as GET /repos/{owner}/{repo}/pulls lists it. */
export function simplePullRequest(repo: string, pr: PullRequestState): Record<string, unknown> {
  return {
    number: pr.number,
    state: pr.state,
    html_url: `https://github.com/${repo}/pull/${pr.number}`,
    body: pr.body,
    merged_at: pr.mergedAt,
    user: { login: pr.author, id: 21031067, type: pr.authorType ?? "User" },
    labels: pr.labels.map((name) => ({ name })),
    requested_reviewers: [],
    requested_teams: [],
    head: { sha: pr.headSha, ref: pr.headRef, repo: { full_name: pr.headRepo } },
    base: { ref: "main", repo: { default_branch: "main", full_name: repo } },
  };
}

/** A pull request as GET /repos/{owner}/{repo}/pulls/{pull_number} returns it. */
export function pullRequest(repo: string, pr: PullRequestState): Record<string, unknown> {
  return { ...simplePullRequest(repo, pr), merged: pr.merged, changed_files: pr.files.length };
}

/** A file of a pull request's file list (its blob sha when the state holds its content). */
export function pullRequestFileEntry(
  repo: string,
  pr: PullRequestState,
  file: PullRequestFile,
  index: number,
): Record<string, unknown> {
  return {
    ...pullRequestFile(file.filename, file.status, index),
    ...(file.content ? { sha: gitBlobSha(file.content) } : {}),
    blob_url: `https://github.com/${repo}/blob/${pr.headSha}/${file.filename}`,
    raw_url: `https://github.com/${repo}/raw/${pr.headSha}/${file.filename}`,
    contents_url: `https://api.github.com/repos/${repo}/contents/${file.filename}?ref=${pr.headSha}`,
  };
}

export function issueComment(comment: CommentState): Record<string, unknown> {
  return {
    id: comment.id,
    body: comment.body,
    user: { ...comment.user, id: 1 },
    ...(comment.createdAt ? { created_at: comment.createdAt } : {}),
    ...(comment.updatedAt ? { updated_at: comment.updatedAt } : {}),
  };
}

/** A comment as the repository-wide listing returns it: with the issue it belongs to. */
export function repositoryIssueComment(
  comment: CommentState,
  on: { repo: string; number: number },
): Record<string, unknown> {
  return {
    ...issueComment(comment),
    issue_url: `https://api.github.com/repos/${on.repo}/issues/${on.number}`,
    html_url: `https://github.com/${on.repo}/pull/${on.number}#issuecomment-${comment.id}`,
  };
}

/** A file as GET /repos/{owner}/{repo}/contents/{path} returns it. */
export function contentFile(path: string, bytes: Buffer): Record<string, unknown> {
  return {
    type: "file",
    encoding: "base64",
    name: path.split("/").pop(),
    path,
    size: bytes.length,
    sha: gitBlobSha(bytes),
    content: bytes.toString("base64"),
  };
}

export function releaseAssetOf(repo: string, apiUrl: string, release: ReleaseState, asset: AssetState) {
  return releaseAsset({
    id: asset.id,
    name: asset.name,
    size: asset.bytes.length,
    repo,
    tag: release.tag,
    digest: `sha256:${createHash("sha256").update(asset.bytes).digest("hex")}`,
    apiUrl,
  });
}

/** A release of the state model; `apiUrl` is the fake's, so its upload and asset URLs lead back there. */
export function releaseOf(repo: string, apiUrl: string, immutable: boolean, release: ReleaseState) {
  return {
    ...githubRelease({
      id: release.id,
      tag: release.tag,
      repo,
      apiUrl,
      uploadUrl: apiUrl,
      assets: release.assets.map((a) => releaseAssetOf(repo, apiUrl, release, a)),
    }),
    draft: release.draft,
    immutable: !release.draft && immutable,
    published_at: release.draft ? null : "2026-11-21T10:05:00Z",
  };
}
