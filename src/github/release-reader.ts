import type { Octokit } from "@octokit/rest";
import type { HostedRelease, ReleaseReader } from "../catalog/sync.ts";
import { SvcError } from "../errors.ts";

/** The sync port over Octokit: GET /repos/{owner}/{repo}/releases/latest. */
export function octokitReleaseReader(octokit: Octokit): ReleaseReader {
  return {
    async latestRelease(repository: string): Promise<HostedRelease> {
      const [owner, repo] = repository.split("/");
      if (!owner || !repo)
        throw new SvcError("config_invalid", `repository must be owner/name: ${repository}`);
      try {
        const { data } = await octokit.rest.repos.getLatestRelease({ owner, repo });
        return {
          tag: data.tag_name,
          htmlUrl: data.html_url,
          publishedAt: data.published_at,
          assets: data.assets.map((a) => ({
            name: a.name,
            size: a.size,
            digest: a.digest ?? null,
            browserDownloadUrl: a.browser_download_url,
          })),
        };
      } catch (error) {
        if ((error as { status?: number }).status === 404) {
          throw new SvcError("not_found", `${repository} has no published release`);
        }
        throw error;
      }
    },
  };
}
