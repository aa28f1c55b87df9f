/**
 * The shapes of the records under records/: release records, tracked releases, their paths.
 *
 * Decision (issue 24, item 10): the records are the source of truth in git, and git must stay small
 * at 10,000 mods x 5 versions (under 15,000 files on the default branch, no directory over 1,000
 * entries, under 200 KB of changed blobs per publication). One file per published version (50,000
 * files) and one directory per mod (10,000 entries in records/mods) cannot, so records are stored
 * per mod and sharded:
 *
 * - records/mods/{shard}/{modId}.json: every release record of the mod (svc.mod-records.v1, each
 *   element a svc.release-record.v1 record, semver ascending). The design's "one record per
 *   published version" still holds logically; only the storage is per mod, and a publication
 *   rewrites only its mod's file.
 * - records/owners/{shard}.json: the ownership records of that shard's mods (svc.owners-shard.v1,
 *   sorted by mod id). Ownership can exist without a release (a claimed id), so it is not in the
 *   mod file.
 * - records/changes/{floor(page/1000)}/{page}.json: changes pages in folders of 1,000.
 * - records/publication/{shard}/{modId}/{version}.json: the publication ledger (refused or pending
 *   versions only; deleted when the version is published).
 *
 * {shard} is the first two hex characters of sha256(modId): 256 folders, uniform whatever the
 * naming habits of a community (10,000 mods are ~39 per folder; ~256,000 mods before a folder passes
 * 1,000). Name prefixes (crates.io) or first letters (winget-pkgs) crowd where names crowd. A person
 * finds a mod's file with `git ls-files 'records/mods/* /<modId>.json'` (without the space). A portal
 * still on the older layout is refused with records_layout_outdated until `svc records migrate`
 * rewrites it.
 */
import { createHash } from "node:crypto";

export interface Dependency {
  modId: string;
  versionRange: string;
  optional?: boolean;
}
export interface Entrypoint {
  path: string;
  kind: "native" | "pak" | "script" | "asset";
}
export interface Author {
  name: string;
  github?: string;
  url?: string;
}
export interface Links {
  homepage?: string;
  source?: string;
  issues?: string;
}

/**
 * One file a version installs, at `path` below the mod's folder, with the size and sha256 the
 * validator measured while it inflated the entry for its checks.
 */
export interface ReleaseFile {
  path: string;
  sizeBytes: number;
  sha256: string;
}

/** One published version: an element of records/mods/{shard}/{modId}.json (ModRecords.releases). */
export interface ReleaseRecord {
  schema: "svc.release-record.v1";
  modId: string;
  version: string;
  name: string;
  summary: string;
  description: string;
  authors: Author[];
  tags: string[];
  links: Links;
  /** The license the release is offered under (an SPDX expression, e.g. MIT); absent when none was given. */
  license?: string;
  targetGameBuild: string;
  releaseNotes: string;
  fileName: string;
  packageUrl: string;
  sha256: string;
  packageSizeBytes: number;
  dependencies: Dependency[];
  entrypoints: Entrypoint[];
  modConfig?: unknown;
  /** Every file the package installs; absent only on records published before per-file hashes. */
  files?: ReleaseFile[];
  publishedAt: string;
  status: "published" | "superseded" | "hidden";
  statusBeforeHidden?: "published" | "superseded";
  source: {
    kind: "import" | "upload" | "pull_request";
    submissionId?: string;
    pullRequestUrl?: string;
    validationReportSha256?: string;
  };
  updatedAt: string;
}

/** What sync keeps about the manager and framework releases (records/manager.json, records/framework.json). */
export interface TrackedRelease {
  version: string | null;
  tag?: string;
  releaseUrl?: string;
  publishedAt?: string;
  fileName?: string;
  assetName?: string;
  url?: string;
  permalinkUrl?: string;
  sha256?: string;
  sizeBytes?: number;
}

/** records/mods/{shard}/{modId}.json: every release record of one mod, semver ascending. */
export interface ModRecords {
  schema: "svc.mod-records.v1";
  modId: string;
  releases: ReleaseRecord[];
}

/** records/owners/{shard}.json: the ownership records of one shard's mods, sorted by mod id. */
export interface OwnersShard<Ownership = unknown> {
  schema: "svc.owners-shard.v1";
  shard: string;
  owners: Ownership[];
}

/** Changes pages per folder of records/changes. */
export const CHANGES_PAGES_PER_FOLDER = 1000;

/** The shard of a mod id: the first two hex characters of sha256(modId) (module comment). */
export function recordShard(modId: string): string {
  return createHash("sha256").update(modId).digest("hex").slice(0, 2);
}

/** A shard name: two lower-case hex characters. */
export const SHARD_PATTERN = /^[0-9a-f]{2}$/;

/** Paths below records/. */
export const RECORD_PATHS = {
  modsDir: "mods",
  /** The file holding every release record of a mod. */
  modRecords: (modId: string) => `mods/${recordShard(modId)}/${modId}.json`,
  manager: "manager.json",
  framework: "framework.json",
  gameBuilds: "game-builds.json",
  postPublishSmoke: "smoke/post-publish.json",
  changesDir: "changes",
  changesPage: (page: number) => `changes/${Math.floor(page / CHANGES_PAGES_PER_FOLDER)}/${page}.json`,
  ownersDir: "owners",
  /** The owners shard file that holds the mod's ownership record. */
  ownersShard: (modId: string) => `owners/${recordShard(modId)}.json`,
  publicationDir: "publication",
  /** The publication ledger entry of a version. */
  ledger: (modId: string, version: string) => `publication/${recordShard(modId)}/${modId}/${version}.json`,
} as const;
