import type { GameBuildEntry, PortalConfig } from "../config/portal-config.ts";
import type { TrackedRelease } from "./records.ts";

/** runtime/latest.json: the operator's pinned runtime; never "latest upstream". */
export function buildRuntimeProfile(config: PortalConfig, generatedAt: string) {
  const { runtime } = config;
  const asset = runtime.asset
    ? {
        artifactStatus: "published" as const,
        downloadEnabled: true,
        name: runtime.asset.name,
        url: runtime.asset.url,
        sha256: runtime.asset.sha256,
        sizeBytes: runtime.asset.sizeBytes,
      }
    : { artifactStatus: "planned" as const, downloadEnabled: false };
  return {
    schema: "svc.runtime-profile.v1" as const,
    generatedAt,
    name: runtime.name,
    repo: runtime.repo,
    tag: runtime.tag,
    releaseUrl: `https://github.com/${runtime.repo}/releases/tag/${encodeURIComponent(runtime.tag)}`,
    pinned: true as const,
    resolveLatest: false as const,
    asset,
    layout: runtime.layout,
  };
}

/** framework/latest.json from what `svc sync releases` recorded; planned until a real ZIP was hashed. */
export function buildFrameworkRelease(
  config: PortalConfig,
  tracked: TrackedRelease | null,
  generatedAt: string,
) {
  const base = {
    schema: "svc.framework-release.v1" as const,
    generatedAt,
    name: config.framework.name,
    repo: config.framework.repo,
    version: tracked?.version ?? null,
    runtimeTag: config.runtime.tag,
  };
  if (!tracked?.url || !tracked.sha256 || !tracked.sizeBytes || !tracked.fileName || !tracked.tag) {
    return { ...base, ...plannedRelease(tracked) };
  }
  return {
    ...base,
    ...publishedRelease(tracked, tracked.tag),
    fileName: tracked.fileName,
    packageUrl: tracked.url,
    sha256: tracked.sha256,
    packageSizeBytes: tracked.sizeBytes,
  };
}

/** A tracked release whose artifact is not known yet: no URL, no hash, nothing to download. */
function plannedRelease(tracked: TrackedRelease | null) {
  return {
    ...(tracked?.tag ? { tag: tracked.tag } : {}),
    ...(tracked?.releaseUrl ? { releaseUrl: tracked.releaseUrl } : {}),
    artifactStatus: "planned" as const,
    downloadEnabled: false,
  };
}

/** The release fields of a tracked release whose artifact is published. */
function publishedRelease(tracked: TrackedRelease, tag: string) {
  return {
    tag,
    ...(tracked.releaseUrl ? { releaseUrl: tracked.releaseUrl } : {}),
    ...(tracked.publishedAt ? { publishedAt: tracked.publishedAt } : {}),
    artifactStatus: "published" as const,
    downloadEnabled: true,
  };
}

/** manager/latest.json: the manager ZIP stays a release asset on its code host. */
export function buildManagerRelease(
  config: PortalConfig,
  tracked: TrackedRelease | null,
  generatedAt: string,
) {
  const base = {
    schema: "svc.manager-release.v1" as const,
    generatedAt,
    repo: config.manager.repo,
    version: tracked?.version ?? null,
  };
  if (!tracked?.url || !tracked.sha256 || !tracked.sizeBytes || !tracked.assetName || !tracked.tag) {
    return { ...base, ...plannedRelease(tracked) };
  }
  return {
    ...base,
    ...publishedRelease(tracked, tracked.tag),
    assetName: tracked.assetName,
    downloadUrl: tracked.url,
    ...(tracked.permalinkUrl ? { permalinkUrl: tracked.permalinkUrl } : {}),
    sha256: tracked.sha256,
    packageSizeBytes: tracked.sizeBytes,
  };
}

export function supportedBuilds(builds: readonly GameBuildEntry[]): string[] {
  return builds.filter((b) => b.validationStatus === "validated").map((b) => b.buildId);
}

/** game-builds/latest.json: the synced matrix when present, else the seed from portal.config.json. */
export function buildGameBuildMatrix(
  config: PortalConfig,
  builds: readonly GameBuildEntry[],
  frameworkVersion: string | null,
  generatedAt: string,
) {
  return {
    schema: "svc.game-build-compatibility.v1" as const,
    generatedAt,
    game: { name: config.game.name, storeAppId: config.game.storeAppId },
    frameworkVersion,
    runtimeTag: config.runtime.tag,
    builds: [...builds],
    supportedGameBuilds: supportedBuilds(builds),
  };
}
