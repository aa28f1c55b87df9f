import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import * as semver from "../contracts/semver.ts";
import type { GameBuildEntry, PortalConfig } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import { recoverPending } from "./atomic-files.ts";
import type { ArtifactStore, PromotedArtifact } from "./artifact-store.ts";
import { commitRecordUpdates, type RebuildOptions } from "./rebuild.ts";
import { RECORD_PATHS, type TrackedRelease } from "../contracts/records.ts";

/** One release as the code host reports it (the port sync reads; src/github implements it with Octokit). */
export interface HostedRelease {
  tag: string;
  htmlUrl: string;
  publishedAt: string | null;
  assets: HostedAsset[];
}

export interface HostedAsset {
  name: string;
  size: number;
  /** GitHub's asset digest, "sha256:<hex>", when the host reports one. */
  digest: string | null;
  /** The public download URL (https://github.com/{repo}/releases/download/{tag}/{name}). */
  browserDownloadUrl: string;
}

export interface ReleaseReader {
  latestRelease(repository: string): Promise<HostedRelease>;
}

export interface SyncOptions extends RebuildOptions {
  reader: ReleaseReader;
  fetch?: typeof fetch;
  /** The public download origin recorded in documents (default https://github.com). */
  publicDownloadBase?: string;
  /** Where downloads are actually fetched from (default: publicDownloadBase); tests use a loopback server. */
  fetchDownloadBase?: string;
  /**
   * Where the framework ZIP is published on a GitHub portal: a release of the portal repository
   * (src/github/release-artifact-store.ts), so no ZIP enters git. Default: create-only under
   * site/downloads/framework/{version}/ (the local portal).
   */
  frameworkStore?: ArtifactStore;
}

/** The asset the game-build matrix is read from, in the latest framework release. */
export const GAME_BUILDS_ASSET = "game-builds.json";
const DIGEST_SUFFIX = ".sha256";

function toFetchUrl(options: SyncOptions, publicUrl: string): string {
  const publicBase = (options.publicDownloadBase ?? "https://github.com").replace(/\/+$/, "");
  const fetchBase = (options.fetchDownloadBase ?? publicBase).replace(/\/+$/, "");
  return publicUrl.startsWith(`${publicBase}/`)
    ? `${fetchBase}${publicUrl.slice(publicBase.length)}`
    : publicUrl;
}

async function download(options: SyncOptions, publicUrl: string, maxBytes: number): Promise<Buffer> {
  const response = await (options.fetch ?? fetch)(toFetchUrl(options, publicUrl), {
    redirect: "follow",
    signal: AbortSignal.timeout(600_000),
  });
  if (response.status !== 200 || !response.body) {
    await response.body?.cancel();
    throw new SvcError("invalid_payload", `GET ${publicUrl}: HTTP ${response.status}`);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > maxBytes) {
      await reader.cancel();
      throw new SvcError("payload_too_large", `${publicUrl} is larger than ${maxBytes} bytes`);
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

/**
 * The digest a release publishes for an asset: GitHub's own `digest` field when present, else a
 * `{asset}.sha256` sidecar asset (sha256sum format: the hex digest first). Neither: unverifiable.
 */
async function expectedDigest(
  options: SyncOptions,
  release: HostedRelease,
  asset: HostedAsset,
): Promise<string> {
  const fromHost = /^sha256:([0-9a-f]{64})$/.exec(asset.digest ?? "");
  if (fromHost) return fromHost[1]!;
  const sidecar = release.assets.find((a) => a.name === `${asset.name}${DIGEST_SUFFIX}`);
  if (sidecar) {
    const text = (await download(options, sidecar.browserDownloadUrl, 4096)).toString("utf8");
    const m = /^([0-9a-fA-F]{64})\b/.exec(text.trim());
    if (m) return m[1]!.toLowerCase();
    throw new SvcError("invalid_payload", `${sidecar.name} does not start with a sha256 hex digest`);
  }
  throw new SvcError(
    "invalid_payload",
    `release ${release.tag} publishes no digest for ${asset.name} (no GitHub asset digest and no ${asset.name}${DIGEST_SUFFIX} asset); refusing to record an unverifiable artifact`,
  );
}

function pickAsset(release: HostedRelease, pattern: string | undefined, what: string): HostedAsset {
  const regex = new RegExp(pattern ?? "\\.zip$");
  const candidates = release.assets.filter((a) => regex.test(a.name) && !a.name.endsWith(DIGEST_SUFFIX));
  if (candidates.length !== 1) {
    throw new SvcError(
      "invalid_payload",
      `${what} release ${release.tag}: expected exactly one asset matching /${regex.source}/, found ${candidates.length} (${candidates.map((a) => a.name).join(", ") || "none"})`,
    );
  }
  return candidates[0]!;
}

function versionOf(tag: string): string {
  const version = tag.replace(/^v/i, "");
  if (semver.valid(version) !== version)
    throw new SvcError("invalid_payload", `release tag ${tag} is not a semantic version`);
  return version;
}

function verify(bytes: Buffer, asset: HostedAsset, sha256: string, where: string): void {
  const actual = createHash("sha256").update(bytes).digest("hex");
  if (actual !== sha256)
    throw new SvcError(
      "invalid_payload",
      `${where}: sha256 ${actual} differs from the published digest ${sha256}`,
    );
  if (bytes.length !== asset.size)
    throw new SvcError("invalid_payload", `${where}: ${bytes.length} bytes, the release lists ${asset.size}`);
}

export interface SyncReleasesResult {
  manager: TrackedRelease;
  framework: TrackedRelease;
  written: string[];
}

/**
 * `svc sync releases`: the latest manager release is downloaded through the latest-release permalink
 * and its sha256 verified against the digest the release publishes, then its asset URL and hash are
 * recorded (the ZIP stays on the code host); the latest framework ZIP is verified the same way and
 * published under site/downloads/framework/{version}/ (create-only), with packageSizeBytes. Records
 * and the rebuilt site are one transaction.
 */
export async function syncReleases(options: SyncOptions): Promise<SyncReleasesResult> {
  const { config } = options;
  // The framework check below reads the site before the lock: a crashed transaction is finished first.
  await recoverPending(options, { timeoutMs: options.lockTimeoutMs ?? 60_000 });
  const publicBase = (options.publicDownloadBase ?? "https://github.com").replace(/\/+$/, "");
  const maxBytes = config.limits.maxPackageBytes * 4;

  const managerRelease = await options.reader.latestRelease(config.manager.repo);
  const managerAsset = pickAsset(managerRelease, config.manager.assetPattern, "manager");
  const managerDigest = await expectedDigest(options, managerRelease, managerAsset);
  const permalinkUrl = `${publicBase}/${config.manager.repo}/releases/latest/download/${encodeURIComponent(managerAsset.name)}`;
  const managerBytes = await download(options, permalinkUrl, maxBytes);
  verify(managerBytes, managerAsset, managerDigest, `manager ${permalinkUrl}`);
  const manager: TrackedRelease = {
    version: versionOf(managerRelease.tag),
    tag: managerRelease.tag,
    releaseUrl: managerRelease.htmlUrl,
    ...(managerRelease.publishedAt
      ? { publishedAt: new Date(managerRelease.publishedAt).toISOString() }
      : {}),
    assetName: managerAsset.name,
    url: managerAsset.browserDownloadUrl,
    permalinkUrl,
    sha256: managerDigest,
    sizeBytes: managerBytes.length,
  };

  const frameworkRelease = await options.reader.latestRelease(config.framework.repo);
  const frameworkAsset = pickAsset(frameworkRelease, config.framework.assetPattern, "framework");
  const frameworkDigest = await expectedDigest(options, frameworkRelease, frameworkAsset);
  const frameworkVersion = versionOf(frameworkRelease.tag);
  const sitePath = `downloads/framework/${frameworkVersion}/${frameworkAsset.name}`;
  const framework: TrackedRelease = {
    version: frameworkVersion,
    tag: frameworkRelease.tag,
    releaseUrl: frameworkRelease.htmlUrl,
    ...(frameworkRelease.publishedAt
      ? { publishedAt: new Date(frameworkRelease.publishedAt).toISOString() }
      : {}),
    fileName: frameworkAsset.name,
    assetName: frameworkAsset.name,
    url: options.frameworkStore
      ? options.frameworkStore.urlFor(frameworkKey(frameworkVersion, frameworkAsset.name))
      : `${config.baseUrl}/${sitePath}`,
    sha256: frameworkDigest,
    sizeBytes: frameworkAsset.size,
  };
  const artifacts: Array<{ path: string; bytes: Uint8Array; sha256: string }> = [];
  const stored = join(options.siteDir, sitePath);
  let promoted: PromotedArtifact | null = null;
  if (options.frameworkStore) {
    promoted = await promoteFramework(options, options.frameworkStore, framework, frameworkAsset, maxBytes);
  } else if (existsSync(stored)) {
    // Already published by an earlier sync: immutable, so it must be the very same bytes.
    const actual = createHash("sha256").update(readFileSync(stored)).digest("hex");
    if (actual !== frameworkDigest) {
      throw new SvcError(
        "artifact_exists",
        `${sitePath} already exists with sha256 ${actual}; release ${frameworkRelease.tag} now publishes ${frameworkDigest}, and a published artifact is never replaced`,
      );
    }
  } else {
    const bytes = await download(options, frameworkAsset.browserDownloadUrl, maxBytes);
    verify(bytes, frameworkAsset, frameworkDigest, `framework ${frameworkAsset.browserDownloadUrl}`);
    artifacts.push({ path: sitePath, bytes, sha256: frameworkDigest });
  }

  let result: Awaited<ReturnType<typeof commitRecordUpdates>>;
  try {
    result = await commitRecordUpdates(
      options,
      [
        {
          path: RECORD_PATHS.manager,
          text: `${JSON.stringify(manager, null, 2)}\n`,
          apply: (inputs) => ({ ...inputs, manager }),
        },
        {
          path: RECORD_PATHS.framework,
          text: `${JSON.stringify(framework, null, 2)}\n`,
          apply: (inputs) => ({ ...inputs, framework }),
        },
      ],
      artifacts,
    );
  } catch (error) {
    await promoted?.abort();
    throw error;
  }
  await promoted?.finish();
  return { manager, framework, written: result.written };
}

export interface SyncGameBuildsResult {
  builds: GameBuildEntry[];
  supportedGameBuilds: string[];
  written: string[];
}

/**
 * `svc sync game-builds`: the compatibility matrix comes from the `game-builds.json` asset of the
 * latest framework release ({"builds": [{buildId, manifestIds, validationStatus, ...}]}), verified
 * against its published digest like every other asset. It is recorded in records/game-builds.json;
 * game-builds/latest.json and the catalog's supportedGameBuilds follow in the same transaction.
 */
export async function syncGameBuilds(options: SyncOptions): Promise<SyncGameBuildsResult> {
  const release = await options.reader.latestRelease(options.config.framework.repo);
  const asset = release.assets.find((a) => a.name === GAME_BUILDS_ASSET);
  if (!asset) {
    throw new SvcError(
      "invalid_payload",
      `framework release ${release.tag} has no ${GAME_BUILDS_ASSET} asset (see docs/publishing.md)`,
    );
  }
  const digest = await expectedDigest(options, release, asset);
  const bytes = await download(options, asset.browserDownloadUrl, 1024 * 1024);
  verify(bytes, asset, digest, `${GAME_BUILDS_ASSET} of ${release.tag}`);
  let builds: GameBuildEntry[];
  try {
    const parsed = JSON.parse(bytes.toString("utf8")) as { builds?: unknown };
    if (!Array.isArray(parsed.builds)) throw new Error("builds must be an array");
    builds = parsed.builds as GameBuildEntry[];
  } catch (error) {
    throw new SvcError(
      "invalid_payload",
      `${GAME_BUILDS_ASSET} of ${release.tag}: ${(error as Error).message}`,
    );
  }
  const seen = new Set<string>();
  for (const build of builds) {
    if (seen.has(build?.buildId)) throw new SvcError("invalid_payload", `duplicate buildId ${build.buildId}`);
    seen.add(build?.buildId);
  }
  // The rebuild validates game-builds/latest.json against its schema before anything is written.
  const result = await commitRecordUpdates(options, [
    {
      path: RECORD_PATHS.gameBuilds,
      text: `${JSON.stringify({ builds }, null, 2)}\n`,
      apply: (inputs) => ({ ...inputs, gameBuilds: builds }),
    },
  ]);
  return {
    builds,
    supportedGameBuilds: builds.filter((b) => b.validationStatus === "validated").map((b) => b.buildId),
    written: result.written,
  };
}

export type { PortalConfig };

/** The framework's key in an artifact store; a GitHub store tags it with frameworkTag. */
function frameworkKey(version: string, fileName: string) {
  return { modId: "framework", version, fileName };
}

/** Release tag of a framework version in the portal's store: `_` never occurs in a mod's `{modId}-v{version}`. */
export function frameworkTag(key: { version: string }): string {
  return `framework_v${key.version}`;
}

/**
 * The framework ZIP into the store: nothing to do when the record already names this store's URL
 * with this sha256; else download, verify against the published digest and promote (the store
 * refuses other bytes under a taken URL, and adopts the same bytes a cancelled run left).
 */
async function promoteFramework(
  options: SyncOptions,
  store: ArtifactStore,
  framework: TrackedRelease,
  asset: HostedAsset,
  maxBytes: number,
): Promise<PromotedArtifact | null> {
  const recordPath = join(options.recordsDir, RECORD_PATHS.framework);
  if (existsSync(recordPath)) {
    const current = JSON.parse(readFileSync(recordPath, "utf8")) as TrackedRelease;
    if (current.url === framework.url && current.sha256 === framework.sha256) return null;
  }
  const bytes = await download(options, asset.browserDownloadUrl, maxBytes);
  verify(bytes, asset, framework.sha256!, `framework ${asset.browserDownloadUrl}`);
  const promoted = await store.promote(frameworkKey(framework.version!, asset.name), bytes);
  if (promoted.sha256 !== framework.sha256) {
    await promoted.abort();
    throw new SvcError(
      "internal_error",
      `the stored framework asset hashes to ${promoted.sha256}, not ${framework.sha256}`,
    );
  }
  return promoted;
}
