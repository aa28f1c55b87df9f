import { createHash } from "node:crypto";
import {
  type ArtifactKey,
  type ArtifactStore,
  artifactExistsError,
  type PromotedArtifact,
} from "../catalog/artifact-store.ts";
import { SvcError } from "../errors.ts";
import type { GitHubApi } from "./api.ts";

export interface GitHubReleaseStoreOptions {
  /** Constructed at the edge (a token with contents: write, baseUrl); tests point baseUrl at a loopback server. */
  octokit: GitHubApi;
  /** The portal repository that holds one release per mod version, "owner/name". */
  repository: string;
  /** Release tag of a mod version; default `{modId}-v{version}` (both are slugs, so tags never collide). */
  tagFor?: (key: ArtifactKey) => string;
  /** Public download origin; default https://github.com. */
  downloadBaseUrl?: string;
  /** How many of the newest releases are searched for drafts a cancelled run left (default 100, one page). */
  draftScanLimit?: number;
}

/**
 * Thrown when publishing the verified draft fails after the publisher's local commit. It is not an
 * SvcError on purpose: callers treat it as fatal and push nothing, so no record ever names a
 * release that is not public; the next run finds the draft gone or the release published and
 * converges (see promote()).
 */
export class ReleasePublishError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ReleasePublishError";
  }
}

type Release = Awaited<ReturnType<GitHubApi["rest"]["repos"]["getReleaseByTag"]>>["data"];

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
 * `{modId}-v{version}`, holding exactly one asset.
 *
 * Immutable releases (the repository setting this store is meant for) lock a release's assets and
 * tag the moment it is published, and a deleted immutable release burns its tag for good. So
 * promote() creates a *draft* (invisible to the public, no tag yet), uploads the bytes, downloads the
 * stored asset back through the API and hashes that; finish(), called after the publisher's commit,
 * publishes the draft; abort() deletes the draft. Nothing public is ever deleted.
 *
 * A run cancelled after finish() but before its catalog commit reached git leaves a published
 * release and no record. The next run's promote() finds that release and adopts it when its one
 * asset has the same name and exactly the same bytes (hashed again); anything else at that tag is
 * artifact_exists, never replaced. Drafts a cancelled run left behind are deleted before a new one
 * is made.
 */
export function githubReleaseArtifactStore(options: GitHubReleaseStoreOptions): ArtifactStore {
  const { owner, repo } = splitRepo(options.repository);
  const octokit = options.octokit;
  const tagFor = options.tagFor ?? ((key: ArtifactKey) => `${key.modId}-v${key.version}`);
  const downloadBase = (options.downloadBaseUrl ?? "https://github.com").replace(/\/+$/, "");
  const urlFor = (key: ArtifactKey) =>
    `${downloadBase}/${owner}/${repo}/releases/download/${encodeURIComponent(tagFor(key))}/${encodeURIComponent(key.fileName)}`;
  const where = (tag: string) => `release ${tag} on ${owner}/${repo}`;

  const publishedRelease = async (tag: string): Promise<Release | null> => {
    try {
      return (await octokit.rest.repos.getReleaseByTag({ owner, repo, tag })).data;
    } catch (error) {
      if (status(error) === 404) return null;
      throw error;
    }
  };

  const tagExists = async (tag: string): Promise<boolean> => {
    try {
      await octokit.rest.git.getRef({ owner, repo, ref: `tags/${tag}` });
      return true;
    } catch (error) {
      if (status(error) === 404) return false;
      throw error;
    }
  };

  /** The stored asset's bytes, read back through the API (302 to the blob) and hashed. */
  const measureAsset = async (assetId: number) => {
    const download = await octokit.request("GET /repos/{owner}/{repo}/releases/assets/{asset_id}", {
      owner,
      repo,
      asset_id: assetId,
      headers: { accept: "application/octet-stream" },
      request: { parseSuccessResponseBody: false },
    });
    return hashStream(download.data as unknown as ReadableStream<Uint8Array>);
  };

  /** A published release of this key holding exactly these bytes (a cancelled run's), or artifact_exists. */
  const adopt = async (key: ArtifactKey, release: Release, sha256: string): Promise<PromotedArtifact> => {
    const tag = tagFor(key);
    const asset = release.assets.length === 1 ? release.assets[0] : undefined;
    if (!asset || asset.name !== key.fileName || asset.state !== "uploaded")
      throw artifactExistsError(key, urlFor(key), where(tag));
    if (asset.digest && asset.digest !== `sha256:${sha256}`)
      throw artifactExistsError(key, urlFor(key), `${where(tag)}, digest ${asset.digest}`);
    const measured = await measureAsset(asset.id);
    if (measured.sha256 !== sha256)
      throw artifactExistsError(key, urlFor(key), `${where(tag)}, sha256 ${measured.sha256}`);
    const noop = async () => {};
    return { key, url: urlFor(key), ...measured, files: new Map(), finish: noop, abort: noop };
  };

  /** Drafts of this tag that a cancelled run left: never public, safe to delete. */
  const deleteLeftoverDrafts = async (tag: string) => {
    const { data: releases } = await octokit.rest.repos.listReleases({
      owner,
      repo,
      per_page: Math.min(options.draftScanLimit ?? 100, 100),
    });
    for (const r of releases.filter((r) => r.draft && r.tag_name === tag))
      await octokit.rest.repos.deleteRelease({ owner, repo, release_id: r.id });
  };

  return {
    kind: "github-releases",
    description: `GitHub releases of ${owner}/${repo}`,
    urlFor,
    // Drafts do not count: they are private, hold nothing public and are replaced by the next attempt.
    exists: async (key) => (await publishedRelease(tagFor(key))) !== null || (await tagExists(tagFor(key))),
    async promote(key, bytes): Promise<PromotedArtifact> {
      const tag = tagFor(key);
      const sha256 = createHash("sha256").update(bytes).digest("hex");
      const existing = await publishedRelease(tag);
      if (existing) return adopt(key, existing, sha256);
      // A tag without a release still blocks: the release would silently point at other code or bytes.
      if (await tagExists(tag)) throw artifactExistsError(key, urlFor(key), `tag ${tag} on ${owner}/${repo}`);
      await deleteLeftoverDrafts(tag);
      const { data: draft } = await octokit.rest.repos.createRelease({
        owner,
        repo,
        tag_name: tag,
        name: `${key.modId} ${key.version}`,
        body: `Immutable package of ${key.modId} ${key.version}, published by the svc catalog publisher.`,
        draft: true,
        prerelease: false,
      });
      const deleteDraft = async () => {
        try {
          await octokit.rest.repos.deleteRelease({ owner, repo, release_id: draft.id });
        } catch (error) {
          if (status(error) !== 404) throw error;
        }
      };
      try {
        const { data: asset } = await octokit.request({
          method: "POST",
          url: draft.upload_url,
          name: key.fileName,
          data: bytes as unknown as string,
          headers: { "content-type": "application/zip", "content-length": bytes.length },
        });
        const uploaded = asset as { id: number; name: string; digest?: string | null };
        if (uploaded.name !== key.fileName) {
          throw new SvcError(
            "internal_error",
            `GitHub stored the asset as ${uploaded.name}, not ${key.fileName}`,
          );
        }
        const measured = await measureAsset(uploaded.id);
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
          finish: async () => {
            try {
              const { data: published } = await octokit.rest.repos.updateRelease({
                owner,
                repo,
                release_id: draft.id,
                draft: false,
                make_latest: "false",
              });
              if (published.draft || published.tag_name !== tag)
                throw new Error(
                  `the release is ${published.draft ? "still a draft" : `tagged ${published.tag_name}`}`,
                );
            } catch (error) {
              throw new ReleasePublishError(
                `publishing the verified draft of ${where(tag)} failed: ${(error as Error).message}`,
              );
            }
          },
          abort: deleteDraft,
        };
      } catch (error) {
        await deleteDraft().catch(() => {});
        throw error;
      }
    },
  };
}

/** What withdrawing a version's bytes found and did (src/catalog/publication-ledger.ts keeps it). */
export type ReleaseWithdrawal = "deleted" | "gone" | "never_stored" | "not_ours";

/**
 * Withdraws a hidden version's bytes from GitHub Releases: the published release of its tag is
 * deleted, never the tag. Immutable releases allow nothing gentler (their assets cannot be deleted
 * or replaced, only the whole release), and GitHub then refuses the tag name to any new release; on
 * a repository without immutability the tag stays, and promote() refuses a tag without a release
 * (artifact_exists). Either way the record keeps its artifact URL, which answers 404 from then on
 * and can never serve other bytes. The result:
 * - deleted: this call deleted the release;
 * - gone: no release but the tag (an earlier withdrawal, or a run cancelled after it);
 * - never_stored: neither release nor tag (nothing was ever public at that URL);
 * - not_ours: the record's URL is not this store's URL for the key (nothing is touched).
 */
export async function withdrawReleaseArtifact(
  options: Pick<GitHubReleaseStoreOptions, "octokit" | "repository" | "tagFor" | "downloadBaseUrl">,
  key: ArtifactKey,
  recordedUrl: string,
): Promise<{ outcome: ReleaseWithdrawal; tag: string }> {
  const { owner, repo } = splitRepo(options.repository);
  const octokit = options.octokit;
  const tag = (options.tagFor ?? ((k: ArtifactKey) => `${k.modId}-v${k.version}`))(key);
  const downloadBase = (options.downloadBaseUrl ?? "https://github.com").replace(/\/+$/, "");
  const url = `${downloadBase}/${owner}/${repo}/releases/download/${encodeURIComponent(tag)}/${encodeURIComponent(key.fileName)}`;
  if (url !== recordedUrl) return { outcome: "not_ours", tag };
  let release: Release | null;
  try {
    release = (await octokit.rest.repos.getReleaseByTag({ owner, repo, tag })).data;
  } catch (error) {
    if (status(error) !== 404) throw error;
    release = null;
  }
  if (release) {
    try {
      await octokit.rest.repos.deleteRelease({ owner, repo, release_id: release.id });
    } catch (error) {
      if (status(error) !== 404) throw error;
    }
    return { outcome: "deleted", tag };
  }
  try {
    await octokit.rest.git.getRef({ owner, repo, ref: `tags/${tag}` });
    return { outcome: "gone", tag };
  } catch (error) {
    if (status(error) === 404) return { outcome: "never_stored", tag };
    throw error;
  }
}
