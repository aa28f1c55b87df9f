import semver from "semver";
import type { PortalConfig } from "../config/portal-config.ts";
import type { Author, Dependency, Entrypoint, Links, ReleaseRecord } from "../catalog/records.ts";
import { portalUrls } from "./urls.ts";

export interface VersionRecord {
  version: string;
  targetGameBuild: string;
  packageUrl: string;
  fileName: string;
  packageSizeBytes: number;
  sha256: string;
  artifactStatus: "published";
  downloadEnabled: boolean;
  dependencies: Dependency[];
  entrypoints: Entrypoint[];
  publishedAt: string;
  status: "published" | "superseded";
  releaseNotes: string;
  modConfig?: unknown;
}

export interface ModSummary {
  id: string;
  name: string;
  summary: string;
  authors: Author[];
  tags: string[];
  latestVersion: string;
  detailUrl: string;
  versionsUrl: string;
  pageUrl: string;
  updatedAt: string;
}

export interface CatalogMod extends ModSummary {
  versions: VersionRecord[];
}

export interface CatalogDocument {
  schema: "svc.catalog.v1";
  generatedAt: string;
  baseUrl: string;
  game: { name: string; storeAppId: string };
  runtimeUrl: string;
  frameworkUrl: string;
  managerUrl: string;
  gameBuildCompatibilityUrl: string;
  supportedGameBuilds: string[];
  modsIndexUrl: string;
  mods: CatalogMod[];
}

export interface ModsIndexDocument {
  schema: "svc.mods-index.v1";
  generatedAt: string;
  count: number;
  mods: Array<ModSummary & { targetGameBuild: string; versionCount: number }>;
}

export interface ModDetailDocument extends ModSummary {
  schema: "svc.mod-detail.v1";
  generatedAt: string;
  description: string;
  links: Links;
  versions: VersionRecord[];
}

export interface ModVersionsDocument {
  schema: "svc.mod-versions.v1";
  generatedAt: string;
  modId: string;
  latestVersion: string;
  versions: VersionRecord[];
}

/** A mod as the catalog sees it: its visible records, newest first, and the record its summary comes from. */
export interface ModView {
  modId: string;
  newest: ReleaseRecord;
  visible: ReleaseRecord[];
}

/** Groups records by mod and keeps only what the public may see: hidden versions are left out. */
export function visibleMods(records: readonly ReleaseRecord[]): ModView[] {
  const byMod = new Map<string, ReleaseRecord[]>();
  for (const record of records) {
    if (record.status === "hidden") continue;
    const list = byMod.get(record.modId) ?? [];
    list.push(record);
    byMod.set(record.modId, list);
  }
  return [...byMod.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([modId, list]) => {
      const visible = list.sort((a, b) => semver.rcompare(a.version, b.version));
      return { modId, newest: visible[0]!, visible };
    });
}

export function toVersionRecord(record: ReleaseRecord): VersionRecord {
  const version: VersionRecord = {
    version: record.version,
    targetGameBuild: record.targetGameBuild,
    packageUrl: record.packageUrl,
    fileName: record.fileName,
    packageSizeBytes: record.packageSizeBytes,
    sha256: record.sha256,
    artifactStatus: "published",
    downloadEnabled: record.status === "published" || record.status === "superseded",
    dependencies: record.dependencies,
    entrypoints: record.entrypoints,
    publishedAt: record.publishedAt,
    status: record.status === "superseded" ? "superseded" : "published",
    releaseNotes: record.releaseNotes,
  };
  if (record.modConfig !== undefined) version.modConfig = record.modConfig;
  return version;
}

function modSummary(view: ModView, baseUrl: string): ModSummary {
  const urls = portalUrls(baseUrl);
  const updatedAt = view.visible
    .map((r) => r.publishedAt)
    .sort()
    .at(-1)!;
  return {
    id: view.modId,
    name: view.newest.name,
    summary: view.newest.summary,
    authors: view.newest.authors,
    tags: view.newest.tags,
    latestVersion: view.newest.version,
    detailUrl: urls.modDetail(view.modId),
    versionsUrl: urls.modVersions(view.modId),
    pageUrl: urls.modPage(view.modId),
    updatedAt,
  };
}

export function buildCatalog(
  config: PortalConfig,
  mods: readonly ModView[],
  supportedGameBuilds: string[],
  generatedAt: string,
): CatalogDocument {
  const urls = portalUrls(config.baseUrl);
  return {
    schema: "svc.catalog.v1",
    generatedAt,
    baseUrl: config.baseUrl,
    game: { name: config.game.name, storeAppId: config.game.storeAppId },
    runtimeUrl: urls.runtime,
    frameworkUrl: urls.framework,
    managerUrl: urls.manager,
    gameBuildCompatibilityUrl: urls.gameBuilds,
    supportedGameBuilds,
    modsIndexUrl: urls.modsIndex,
    mods: mods.map((view) => ({
      ...modSummary(view, config.baseUrl),
      versions: view.visible.map(toVersionRecord),
    })),
  };
}

export function buildModsIndex(
  config: PortalConfig,
  mods: readonly ModView[],
  generatedAt: string,
): ModsIndexDocument {
  return {
    schema: "svc.mods-index.v1",
    generatedAt,
    count: mods.length,
    mods: mods.map((view) => ({
      ...modSummary(view, config.baseUrl),
      targetGameBuild: view.newest.targetGameBuild,
      versionCount: view.visible.length,
    })),
  };
}

export function buildModDetail(config: PortalConfig, view: ModView, generatedAt: string): ModDetailDocument {
  return {
    schema: "svc.mod-detail.v1",
    generatedAt,
    ...modSummary(view, config.baseUrl),
    description: view.newest.description,
    links: view.newest.links,
    versions: view.visible.map(toVersionRecord),
  };
}

export function buildModVersions(view: ModView, generatedAt: string): ModVersionsDocument {
  return {
    schema: "svc.mod-versions.v1",
    generatedAt,
    modId: view.modId,
    latestVersion: view.newest.version,
    versions: view.visible.map(toVersionRecord),
  };
}
