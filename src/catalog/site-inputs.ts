/**
 * What a build reads (SiteInputs): operator configuration and the records, loaded whole
 * (loadSiteInputs) or with the release records left on disk to be read one mod at a time
 * (streamSiteInputs, what svc build renders from).
 */
import type { GameBuildEntry, PortalConfig } from "../config/portal-config.ts";
import { ENDPOINTS, type EndpointDefinition } from "../contracts/endpoints.ts";
import type { ModOwnership } from "../contracts/ownership.ts";
import type { BackendSmokeSummary, SmokeSummary } from "../contracts/readiness.ts";
import { RECORD_PATHS, type ReleaseRecord, type TrackedRelease } from "../contracts/records.ts";
import type { ChangesPage } from "../contracts/changes.ts";
import { formatIssues, schemaRegistry } from "../contracts/schemas.ts";
import { readRootFiles } from "../distribution/tuf-root.ts";
import { SvcError } from "../errors.ts";
import { loadChangesPages } from "./changes.ts";
import { recordsAtBase } from "./portal-base.ts";
import {
  listModRecordFiles,
  loadOptionalJson,
  loadOwnerships,
  loadReleaseRecords,
  readModRecordsFile,
} from "./records.ts";

/** Everything a build reads: operator configuration and the records. Nothing else feeds site/api/v1. */
export interface SiteInputs {
  config: PortalConfig;
  records: ReleaseRecord[];
  manager: TrackedRelease | null;
  framework: TrackedRelease | null;
  gameBuilds: GameBuildEntry[];
  postPublishSmoke: SmokeSummary | null;
  backendSmoke: BackendSmokeSummary | null;
  endpoints: readonly EndpointDefinition[];
  /** records/changes, oldest page first (omitted: an empty feed). */
  changes?: ChangesPage[];
  /** records/owners, by mod id (omitted: no mod is claimed). */
  ownerships?: ReadonlyMap<string, ModOwnership>;
  /** records/tuf: the TUF root metadata by file name, copied to site/tuf (omitted: none). */
  tufRoots?: ReadonlyMap<string, string>;
}

export { type ProjectPaths, projectPaths } from "./project-paths.ts";

/** What loadSiteInputs reads besides the release records, checked in its order. */
function loadSiteSources(
  config: PortalConfig,
  recordsDir: string,
  records: () => ReleaseRecord[],
): SiteInputs {
  const registry = schemaRegistry(config.baseUrl);
  const synced = loadOptionalJson<{ builds: GameBuildEntry[] }>(recordsDir, RECORD_PATHS.gameBuilds);
  const smoke = loadOptionalJson<SmokeSummary>(recordsDir, RECORD_PATHS.postPublishSmoke);
  if (smoke) {
    const result = registry.validate("post-publish-smoke", smoke);
    if (!result.ok)
      throw new SvcError(
        "invalid_payload",
        `records/${RECORD_PATHS.postPublishSmoke}: ${formatIssues(result.issues)}`,
      );
  }
  return {
    config,
    records: records(),
    manager: loadOptionalJson<TrackedRelease>(recordsDir, RECORD_PATHS.manager),
    framework: loadOptionalJson<TrackedRelease>(recordsDir, RECORD_PATHS.framework),
    gameBuilds: synced?.builds ?? config.gameBuilds,
    postPublishSmoke: smoke,
    backendSmoke: null,
    endpoints: ENDPOINTS,
    changes: loadChangesPages(recordsDir, registry),
    ownerships: loadOwnerships(recordsDir, registry),
    tufRoots: readRootFiles(recordsDir),
  };
}

export function loadSiteInputs(config: PortalConfig, recordsDir: string): SiteInputs {
  // Every reader sees the records at this portal's base (a loopback portal follows its port).
  return loadSiteSources(config, recordsDir, () =>
    recordsAtBase(loadReleaseRecords(recordsDir, schemaRegistry(config.baseUrl)), config.baseUrl),
  );
}

/**
 * SiteInputs whose release records are read one mod at a time, as the render reaches each mod
 * (svc build): the records of 50,000 mods x 5 are ~370 MB of objects, and none but one mod's are
 * ever held.
 */
export interface StreamedSiteInputs extends Omit<SiteInputs, "records"> {
  /** The id of every mod with a records file, in the order visibleMods sorts mods. */
  modIds: readonly string[];
  /** One mod's release records (every status), as loadSiteInputs holds them. */
  modRecords(modId: string): ReleaseRecord[];
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * loadSiteInputs with the records left on disk (StreamedSiteInputs). Whatever would make
 * loadSiteInputs fail fails the same way, with the same error: the records folder's layout is
 * checked here, and when one mod's records (read later) or another input fail, the records are
 * loaded whole once, so that the first problem loadSiteInputs would meet is the one reported.
 */
export function streamSiteInputs(config: PortalConfig, recordsDir: string): StreamedSiteInputs {
  const registry = schemaRegistry(config.baseUrl);
  const asLoaded = (error: unknown): never => {
    loadSiteInputs(config, recordsDir);
    throw error;
  };
  let files: Array<{ modId: string; path: string }> = [];
  let sources: SiteInputs;
  try {
    // The files are listed (and the folder's layout checked) where loadSiteInputs reads the records.
    sources = loadSiteSources(config, recordsDir, () => {
      files = listModRecordFiles(recordsDir);
      return [];
    });
  } catch (error) {
    return asLoaded(error);
  }
  const { records: _, ...rest } = sources;
  const paths = new Map(files.map((file) => [file.modId, file.path]));
  return {
    ...rest,
    modIds: files.map((file) => file.modId).sort(byId),
    modRecords(modId) {
      try {
        return recordsAtBase(readModRecordsFile(paths.get(modId)!, modId, registry), config.baseUrl);
      } catch (error) {
        return asLoaded(error);
      }
    },
  };
}
