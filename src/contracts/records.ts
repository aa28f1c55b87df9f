/** The shapes of the records under records/: release records, tracked releases, their paths. */
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

/** records/mods/{modId}/{version}.json: the source of truth for one published version. */
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

export const RECORD_PATHS = {
  modsDir: "mods",
  release: (modId: string, version: string) => `mods/${modId}/${version}.json`,
  manager: "manager.json",
  framework: "framework.json",
  gameBuilds: "game-builds.json",
  postPublishSmoke: "smoke/post-publish.json",
  changesDir: "changes",
  changesPage: (page: number) => `changes/${page}.json`,
  ownersDir: "owners",
  ownership: (modId: string) => `owners/${modId}.json`,
} as const;
