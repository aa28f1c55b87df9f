import { createHash } from "node:crypto";
import type { Octokit } from "@octokit/rest";
import {
  type ArtifactKey,
  type ArtifactStore,
  artifactExistsError,
  type PromotedArtifact,
} from "../catalog/artifact-store.ts";
import { SvcError } from "../errors.ts";

export interface GitHubReleaseStoreOptions {
  /** Constructed at the edge (token, baseUrl); tests point baseUrl at a loopback server. */
  octokit: Octokit;
  /** The portal repository that holds one release per mod version, "owner/name". */
  repository: string;
  /** Release tag of a mod version; default `{modId}-v{version}` (both are slugs, so tags never collide). */
  tagFor?: (key: ArtifactKey) => string;
  /** Public download origin; default https://github.com. */
  downloadBaseUrl?: string;
}

function splitRepo(repository: string): { owner: string; repo: string } {
  const [owner, repo, ...rest] = repository.split("/");
  if (!owner || !repo || rest.length > 0)
    throw new SvcError("config_invalid", `repository must be owner/name: ${repository}`);
  return { owner, repo };
}

function status(error: unknown): number | undefined {
  return (error as { status?: number }).status;
}

/** Streams a web ReadableStream through sha256. */
async function hashStream(
  stream: ReadableStream<Uint8Array>,
): Promise<{ sha256: string; sizeBytes: number }> {
  const hash = createHash("sha256");
  let sizeBytes = 0;
  const reader = stream.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    hash.update(value);
    sizeBytes += value.length;
  }
  return { sha256: hash.digest("hex"), sizeBytes };
}

/**
 * Artifacts as GitHub release assets on the portal repository: one release per mod version, tagged
 * `{modId}-v{version}`, holding exactly one asset. promote() refuses when the release or the tag
 * already exists, creates the release, uploads the bytes, downloads the stored asset back through the
 * API and hashes that (and compares GitHub's own `digest` when it reports one). abort() deletes the
 * release and its tag so a failed publication can be retried; after a commit nothing is ever deleted.
 * Enable "immutable releases" on the repository so published assets cannot be replaced on GitHub either.
 */
export function githubReleaseArtifactStore(options: GitHubReleaseStoreOptions): ArtifactStore {
  const { owner, repo } = splitRepo(options.repository);
  const octokit = options.octokit;
  const tagFor = options.tagFor ?? ((key: ArtifactKey) => `${key.modId}-v${key.version}`);
  const downloadBase = (options.downloadBaseUrl ?? "https://github.com").replace(/\/+$/, "");
  const urlFor = (key: ArtifactKey) =>
    `${downloadBase}/${owner}/${repo}/releases/download/${encodeURIComponent(tagFor(key))}/${encodeURIComponent(key.fileName)}`;

  const exists = async (key: ArtifactKey): Promise<boolean> => {
    const tag = tagFor(key);
    try {
      await octokit.rest.repos.getReleaseByTag({ owner, repo, tag });
      return true;
    } catch (error) {
      if (status(error) !== 404) throw error;
    }
    // A tag without a release still blocks: the release would silently point at old code or bytes.
    try {
      await octokit.rest.git.getRef({ owner, repo, ref: `tags/${tag}` });
      return true;
    } catch (error) {
      if (status(error) === 404) return false;
      throw error;
    }
  };

  return {
    kind: "github-releases",
    description: `GitHub releases of ${owner}/${repo}`,
    urlFor,
    exists,
    async promote(key, bytes): Promise<PromotedArtifact> {
      const tag = tagFor(key);
      if (await exists(key))
        throw artifactExistsError(key, urlFor(key), `release ${tag} on ${owner}/${repo}`);
      let release: { id: number; upload_url: string };
      try {
        ({ data: release } = await octokit.rest.repos.createRelease({
          owner,
          repo,
          tag_name: tag,
          name: `${key.modId} ${key.version}`,
          body: `Immutable package of ${key.modId} ${key.version}, published by the svc catalog publisher.`,
          draft: false,
          prerelease: false,
          make_latest: "false",
        }));
      } catch (error) {
        // 422 already_exists: another publisher took the tag between exists() and now.
        if (status(error) === 422)
          throw artifactExistsError(key, urlFor(key), `release ${tag} on ${owner}/${repo}`);
        throw error;
      }
      const abort = async () => {
        await octokit.rest.repos.deleteRelease({ owner, repo, release_id: release.id });
        try {
          await octokit.rest.git.deleteRef({ owner, repo, ref: `tags/${tag}` });
        } catch (error) {
          if (status(error) !== 404 && status(error) !== 422) throw error;
        }
      };
      try {
        const { data: asset } = await octokit.request({
          method: "POST",
          url: release.upload_url,
          name: key.fileName,
          data: bytes as unknown as string,
          headers: { "content-type": "application/zip", "content-length": bytes.length },
        });
        const uploaded = asset as {
          id: number;
          name: string;
          size: number;
          digest?: string | null;
          browser_download_url: string;
        };
        if (uploaded.name !== key.fileName) {
          throw new SvcError(
            "internal_error",
            `GitHub stored the asset as ${uploaded.name}, not ${key.fileName}`,
          );
        }
        // Read back what GitHub stores, through the API (302 to the blob), and hash it.
        const download = await octokit.request("GET /repos/{owner}/{repo}/releases/assets/{asset_id}", {
          owner,
          repo,
          asset_id: uploaded.id,
          headers: { accept: "application/octet-stream" },
          request: { parseSuccessResponseBody: false },
        });
        const measured = await hashStream(download.data as unknown as ReadableStream<Uint8Array>);
        if (uploaded.digest && uploaded.digest !== `sha256:${measured.sha256}`) {
          throw new SvcError(
            "internal_error",
            `GitHub reports digest ${uploaded.digest} but the downloaded asset hashes to sha256:${measured.sha256}`,
          );
        }
        return {
          key,
          url: urlFor(key),
          ...measured,
          files: new Map(),
          finish: async () => {},
          abort,
        };
      } catch (error) {
        await abort().catch(() => {});
        throw error;
      }
    },
  };
}
