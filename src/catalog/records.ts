import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.ts";
import { formatIssues, type SchemaRegistry } from "../contracts/schemas.ts";

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
} as const;

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new SvcError("invalid_payload", `${path} is not valid JSON: ${(error as Error).message}`);
  }
}

/** Loads and schema-checks every release record; a broken record stops the build with its path. */
export function loadReleaseRecords(recordsDir: string, registry: SchemaRegistry): ReleaseRecord[] {
  const modsDir = join(recordsDir, RECORD_PATHS.modsDir);
  if (!existsSync(modsDir)) return [];
  const records: ReleaseRecord[] = [];
  for (const modId of readdirSync(modsDir).sort())
    records.push(...loadModRecords(recordsDir, modId, registry));
  return records;
}

/** The release records of one mod (every status), schema-checked: what a publication of that mod reads. */
export function loadModRecords(recordsDir: string, modId: string, registry: SchemaRegistry): ReleaseRecord[] {
  const modDir = join(recordsDir, RECORD_PATHS.modsDir, modId);
  if (!existsSync(modDir)) return [];
  const records: ReleaseRecord[] = [];
  for (const file of readdirSync(modDir).sort()) {
    if (!file.endsWith(".json")) continue;
    const path = join(modDir, file);
    const result = registry.validate<ReleaseRecord>("release-record", readJson(path));
    if (!result.ok) {
      throw new SvcError(
        "invalid_payload",
        `${path} is not a valid release record:\n${formatIssues(result.issues)}`,
        {
          details: result.issues,
        },
      );
    }
    const record = result.value;
    if (record.modId !== modId || `${record.version}.json` !== file) {
      throw new SvcError(
        "invalid_payload",
        `${path} holds ${record.modId}@${record.version}; its path must match`,
      );
    }
    records.push(record);
  }
  return records;
}

export function loadOptionalJson<T>(recordsDir: string, relativePath: string): T | null {
  const path = join(recordsDir, relativePath);
  return existsSync(path) ? (readJson(path) as T) : null;
}
