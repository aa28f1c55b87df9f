/**
 * Opens (or updates) a submission pull request on the portal repository: a branch from the default
 * branch's head, one commit adding the sidecar, the pull request. Shared by release intake and
 * uploads through the API, so both produce the same shape the bot and the validate action read.
 */
import type { GitHubApi, RepoRef } from "./api.ts";
import { isNotFound } from "./api.ts";
import { STAGING_TAG_PREFIX } from "./submission-files.ts";

export interface SubmissionPullRequestInput {
  branch: string;
  path: string;
  sidecar: Record<string, unknown>;
  title: string;
  body: string;
  message: string;
}

export interface OpenedPullRequest {
  number: number;
  htmlUrl: string;
  headSha: string;
}

export function sidecarFileContent(sidecar: Record<string, unknown>): string {
  return Buffer.from(`${JSON.stringify(sidecar, null, 2)}\n`).toString("base64");
}

export async function openSubmissionPullRequest(
  api: GitHubApi,
  portal: RepoRef,
  input: SubmissionPullRequestInput,
): Promise<OpenedPullRequest> {
  const { data: repository } = await api.rest.repos.get({ ...portal });
  const base = repository.default_branch;
  const { data: ref } = await api.rest.git.getRef({ ...portal, ref: `heads/${base}` });
  await api.rest.git.createRef({ ...portal, ref: `refs/heads/${input.branch}`, sha: ref.object.sha });
  const { data: written } = await api.rest.repos.createOrUpdateFileContents({
    ...portal,
    path: input.path,
    branch: input.branch,
    message: input.message,
    content: sidecarFileContent(input.sidecar),
  });
  const { data: created } = await api.rest.pulls.create({
    ...portal,
    title: input.title,
    head: input.branch,
    base,
    body: input.body,
  });
  return {
    number: created.number,
    htmlUrl: created.html_url,
    headSha: written.commit?.sha ?? created.head.sha,
  };
}

/** A new revision of the sidecar on the pull request's branch: one commit, which GitHub reports as a push. */
export async function updateSubmissionFile(
  api: GitHubApi,
  portal: RepoRef,
  input: { branch: string; path: string; sidecar: Record<string, unknown>; message: string },
): Promise<string> {
  let sha: string | undefined;
  try {
    const { data } = await api.rest.repos.getContent({ ...portal, path: input.path, ref: input.branch });
    if (!Array.isArray(data) && data.type === "file") sha = data.sha;
  } catch (error) {
    if (!isNotFound(error)) throw error;
  }
  const { data: written } = await api.rest.repos.createOrUpdateFileContents({
    ...portal,
    path: input.path,
    branch: input.branch,
    message: input.message,
    content: sidecarFileContent(input.sidecar),
    ...(sha ? { sha } : {}),
  });
  return written.commit?.sha ?? "";
}

/** The draft release holding an upload's privately staged package (one per submission), if any. */
export async function findStagingRelease(api: GitHubApi, portal: RepoRef, submissionId: string) {
  const tag = `${STAGING_TAG_PREFIX}${submissionId}`;
  const releases = await api.paginate(api.rest.repos.listReleases, { ...portal, per_page: 100 });
  return releases.find((r) => r.tag_name === tag && r.draft);
}
