import { createHash } from "node:crypto";
import * as semver from "./semver.ts";
import type { PortalConfig } from "../config/portal-config.ts";
import type { Author, Dependency, Entrypoint, Links, ReleaseFile, ReleaseRecord } from "./records.ts";
import { type ModOwnership, type PublicOwnership, publicOwnership } from "./ownership.ts";
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
  /** Every installed file's size and sha256 (versions.json and mod detail only, never catalog.json). */
  files?: ReleaseFile[];
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

/** A catalog version record: the versions.json record of the same version without its release notes. */
export type CatalogVersionRecord = Omit<VersionRecord, "releaseNotes" | "files">;

/**
 * A mod as catalog.json lists it: its summary, the sha256 of the exact bytes of its versions.json
 * (a manager refetches that document only when this changes) and only its newest visible version,
 * the one a manager installs by default. Every version, with release notes, is in versions.json.
 */
export interface CatalogMod extends ModSummary {
  versionsSha256: string;
  versions: CatalogVersionRecord[];
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
  /** The newest visible version's license (an SPDX expression); null when it has none. */
  license: string | null;
  /** Who may publish the mod; null until a submission claims it (svc.mod-ownership.v1). */
  ownership: PublicOwnership | null;
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
  ownership: PublicOwnership | null;
}

/** Groups records by mod and keeps only what the public may see: hidden versions are left out. */
export function visibleMods(
  records: readonly ReleaseRecord[],
  ownerships: ReadonlyMap<string, ModOwnership> = new Map(),
): ModView[] {
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
      const ownership = ownerships.get(modId);
      return {
        modId,
        newest: visible[0]!,
        visible,
        ownership: ownership ? publicOwnership(ownership) : null,
      };
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
  if (record.files !== undefined) version.files = record.files;
  return version;
}

/** What catalog.json keeps of a version record (decision recorded in catalog.schema.json). */
export function toCatalogVersionRecord(version: VersionRecord): CatalogVersionRecord {
  // Per-file hashes stay in versions.json: the catalog is what every manager downloads first.
  const { releaseNotes: _, files: _files, ...rest } = version;
  return rest;
}

/** The catalog entry of one mod; versionsSha256 is the hash of the exact bytes of its versions.json. */
export function buildCatalogMod(baseUrl: string, view: ModView, versionsSha256: string): CatalogMod {
  return {
    ...modSummary(view, baseUrl),
    versionsSha256,
    versions: [toCatalogVersionRecord(toVersionRecord(view.newest))],
  };
}

export function buildModsIndexEntry(baseUrl: string, view: ModView): ModsIndexDocument["mods"][number] {
  return {
    ...modSummary(view, baseUrl),
    targetGameBuild: view.newest.targetGameBuild,
    versionCount: view.visible.length,
  };
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

/**
 * versionsSha256 gives, per mod, the sha256 of the exact bytes of its versions.json; by default the
 * hash of that document generated at the same generatedAt (a site build replaces it with the hash of
 * the bytes it writes).
 */
export function buildCatalog(
  config: PortalConfig,
  mods: readonly ModView[],
  supportedGameBuilds: string[],
  generatedAt: string,
  versionsSha256: (view: ModView) => string = (view) =>
    createHash("sha256")
      .update(`${JSON.stringify(buildModVersions(view, generatedAt), null, 2)}\n`)
      .digest("hex"),
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
    mods: mods.map((view) => buildCatalogMod(config.baseUrl, view, versionsSha256(view))),
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
    mods: mods.map((view) => buildModsIndexEntry(config.baseUrl, view)),
  };
}

export function buildModDetail(config: PortalConfig, view: ModView, generatedAt: string): ModDetailDocument {
  return {
    schema: "svc.mod-detail.v1",
    generatedAt,
    ...modSummary(view, config.baseUrl),
    description: view.newest.description,
    links: view.newest.links,
    license: view.newest.license ?? null,
    ownership: view.ownership,
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
