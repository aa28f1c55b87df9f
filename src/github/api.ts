import type { Octokit } from "@octokit/rest";

/**
 * The part of an Octokit the pipeline uses. Probot's context.octokit, an @octokit/rest client with
 * GITHUB_TOKEN (the Actions adapter) and a test client all satisfy it.
 */
export type GitHubApi = Pick<Octokit, "rest" | "paginate" | "request">;

export interface RepoRef {
  owner: string;
  repo: string;
}

export function splitRepository(fullName: string): RepoRef {
  const [owner, repo, ...rest] = fullName.split("/");
  if (!owner || !repo || rest.length > 0) throw new Error(`not an owner/name repository: ${fullName}`);
  return { owner, repo };
}

export function isNotFound(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { status?: number }).status === 404;
}
