import type { ModOwnership } from "../contracts/ownership.ts";
import { sha256Hex } from "../lib/hash.ts";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { GameBuildEntry, PortalConfig } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import { buildBackendContract } from "../contracts/backend-contract.ts";
import {
  buildCatalog,
  type CatalogDocument,
  buildModDetail,
  buildModsIndex,
  buildModVersions,
  visibleMods,
} from "../contracts/catalog.ts";
import {
  buildFrameworkRelease,
  buildGameBuildMatrix,
  buildManagerRelease,
  buildRuntimeProfile,
  supportedBuilds,
} from "../contracts/distribution.ts";
import { ENDPOINTS, type EndpointDefinition } from "../contracts/endpoints.ts";
import {
  type BackendSmokeSummary,
  buildReadinessDocument,
  computeReadiness,
  type SmokeSummary,
} from "../contracts/readiness.ts";
import {
  formatIssues,
  publishedSchemaText,
  type SchemaName,
  schemaFiles,
  schemaRegistry,
} from "../contracts/schemas.ts";
import { CHANGES_PATHS, SITE_PATHS } from "../contracts/urls.ts";
import { buildValidationContract } from "../contracts/validation-contract.ts";
import { buildWorkflowDocument } from "../contracts/workflow.ts";
import { TUF_DIR } from "../distribution/tuf-layout.ts";
import { readRootFiles } from "../distribution/tuf-root.ts";
import { listPageFiles, renderPages } from "../pages/render-pages.ts";
import { CHECKS } from "../validation/checks/index.ts";
import { recordsAtBase } from "./portal-base.ts";
import { type CommitOptions, type CommitResult, commitFiles } from "./atomic-files.ts";
import { listFilesUnder } from "../lib/walk.ts";
import { loadChangesPages } from "./changes.ts";
import { buildChangesHead, type ChangesPage, serializeChangesPage } from "../contracts/changes.ts";
import { loadOptionalJson, loadOwnerships, loadReleaseRecords } from "./records.ts";
import { RECORD_PATHS, type ReleaseRecord, type TrackedRelease } from "../contracts/records.ts";

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

export interface ProjectPaths {
  root: string;
  configPath: string;
  recordsDir: string;
  siteDir: string;
}

export function projectPaths(root: string, overrides: Partial<ProjectPaths> = {}): ProjectPaths {
  return {
    root,
    configPath: overrides.configPath ?? join(root, "portal.config.json"),
    recordsDir: overrides.recordsDir ?? join(root, "records"),
    siteDir: overrides.siteDir ?? join(root, "site"),
  };
}

export function loadSiteInputs(config: PortalConfig, recordsDir: string): SiteInputs {
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
    // Every reader sees the records at this portal's base (a loopback portal follows its port).
    records: recordsAtBase(loadReleaseRecords(recordsDir, registry), config.baseUrl),
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

/** Placeholder swapped for a real timestamp only in documents whose content changed. */
const PENDING_TIMESTAMP = "1970-01-01T00:00:00.000Z";

interface GeneratedDocument {
  path: string;
  schema: SchemaName;
  document: Record<string, unknown> & { generatedAt?: string };
}

export interface RenderOptions {
  /**
   * Incremental publication: render the per-mod files (detail, versions) of these mods only; every
   * other mod's files are left as they are on disk. The indexes and global documents are always
   * rendered. Omitted: every file.
   */
  onlyMods?: ReadonlySet<string>;
}

/** Builds every document (unvalidated, timestamps pending). Paths are relative to the site root. */
export function generateDocuments(inputs: SiteInputs, options: RenderOptions = {}): GeneratedDocument[] {
  const { config } = inputs;
  const at = PENDING_TIMESTAMP;
  const supported = supportedBuilds(inputs.gameBuilds);
  const mods = visibleMods(inputs.records, inputs.ownerships);
  const readinessInputs = {
    config,
    endpoints: inputs.endpoints,
    postPublishSmoke: inputs.postPublishSmoke,
    backendSmoke: inputs.backendSmoke,
    backendVerifiedRelease:
      Boolean(inputs.postPublishSmoke?.passed) && inputs.records.some((r) => r.source.kind !== "import"),
  };
  const readiness = computeReadiness(readinessInputs);
  const frameworkVersion = inputs.framework?.version ?? null;
  const docs: GeneratedDocument[] = [
    {
      path: SITE_PATHS.catalog,
      schema: "catalog",
      // versionsSha256 is replaced by the hash of the final versions.json bytes in renderSite.
      document: { ...buildCatalog(config, mods, supported, at) },
    },
    {
      path: SITE_PATHS.readiness,
      schema: "readiness",
      document: buildReadinessDocument(readinessInputs, readiness, at),
    },
    { path: SITE_PATHS.runtime, schema: "runtime", document: buildRuntimeProfile(config, at) },
    {
      path: SITE_PATHS.framework,
      schema: "framework",
      document: buildFrameworkRelease(config, inputs.framework, at),
    },
    {
      path: SITE_PATHS.gameBuilds,
      schema: "game-builds",
      document: buildGameBuildMatrix(config, inputs.gameBuilds, frameworkVersion, at),
    },
    { path: SITE_PATHS.modsIndex, schema: "mods-index", document: { ...buildModsIndex(config, mods, at) } },
    {
      path: SITE_PATHS.manager,
      schema: "manager",
      document: buildManagerRelease(config, inputs.manager, at),
    },
    {
      path: SITE_PATHS.workflow,
      schema: "workflow",
      document: buildWorkflowDocument(config, readiness, CHECKS, at),
    },
    {
      path: SITE_PATHS.backendContract,
      schema: "backend-contract",
      document: buildBackendContract(config, inputs.endpoints, readiness, CHECKS, at),
    },
    {
      path: SITE_PATHS.validationContract,
      schema: "game-publishing-validation",
      document: { ...buildValidationContract(config, supported, frameworkVersion, CHECKS, at) },
    },
  ];
  const changes = inputs.changes ?? [];
  docs.push({
    path: CHANGES_PATHS.head,
    schema: "changes-head",
    document: { ...buildChangesHead(config.baseUrl, changes[0]?.page ?? 0, changes.at(-1) ?? null, at) },
  });
  for (const view of mods) {
    if (options.onlyMods && !options.onlyMods.has(view.modId)) continue;
    docs.push({
      path: SITE_PATHS.modDetail(view.modId),
      schema: "mod-detail",
      document: { ...buildModDetail(config, view, at) },
    });
    docs.push({
      path: SITE_PATHS.modVersions(view.modId),
      schema: "mod-versions",
      document: { ...buildModVersions(view, at) },
    });
  }
  return docs;
}

export function serializeDocument(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

/**
 * The exact bytes of every file under site/api/v1. A document whose content (all but generatedAt)
 * equals what is already on disk keeps its old bytes, so a rebuild with no input change changes no byte.
 */
export function renderSite(
  inputs: SiteInputs,
  siteDir: string,
  now: () => Date = () => new Date(),
  options: RenderOptions = {},
): Map<string, string> {
  const registry = schemaRegistry(inputs.config.baseUrl);
  const files = new Map<string, string>();
  const stamp = now().toISOString();
  const failures: string[] = [];
  const generated = generateDocuments(inputs, options);
  // The catalog carries the hash of each versions.json as written, so it is rendered last.
  const catalog = generated.find((d) => d.path === SITE_PATHS.catalog)!;
  for (const { path, schema, document } of [...generated.filter((d) => d !== catalog), catalog]) {
    if (document === catalog.document) {
      for (const mod of (document as unknown as CatalogDocument).mods) {
        const versionsText =
          files.get(SITE_PATHS.modVersions(mod.id)) ??
          readIfExists(join(siteDir, SITE_PATHS.modVersions(mod.id)));
        if (versionsText !== undefined) mod.versionsSha256 = sha256Hex(versionsText);
      }
    }
    const rendered = stampDocument(registry, siteDir, path, schema, document, stamp);
    if (!rendered.ok) failures.push(rendered.failure);
    files.set(path, rendered.text);
  }
  for (const page of inputs.changes ?? []) {
    const result = registry.validate("changes-page", page);
    if (!result.ok)
      failures.push(`${CHANGES_PATHS.page(page.page)} (changes-page):\n${formatIssues(result.issues)}`);
    files.set(CHANGES_PATHS.page(page.page), serializeChangesPage(page));
  }
  if (failures.length > 0) {
    throw new SvcError(
      "invalid_payload",
      `generated documents fail their schemas; nothing was written:\n${failures.join("\n")}`,
      {
        details: failures,
      },
    );
  }
  for (const file of schemaFiles())
    files.set(file.publicPath, publishedSchemaText(file, inputs.config.baseUrl));
  for (const [name, text] of inputs.tufRoots ?? []) files.set(`${TUF_DIR}/${name}`, text);
  // The HTML pages are rendered from these very documents, so they cannot disagree with the JSON.
  for (const [path, text] of renderPages(files, inputs.config)) files.set(path, text);
  return files;
}

function readIfExists(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}

/**
 * The bytes of one generated document, schema-checked. A document whose content (all but
 * generatedAt) equals what is already on disk keeps its old bytes, so a rebuild with no input change
 * changes no byte; otherwise it is stamped with `stamp`.
 */
export function stampDocument(
  registry: ReturnType<typeof schemaRegistry>,
  siteDir: string,
  path: string,
  schema: SchemaName,
  document: Record<string, unknown> & { generatedAt?: string },
  stamp: string,
): { ok: true; text: string } | { ok: false; text: string; failure: string } {
  const pending = serializeDocument({ ...document, generatedAt: PENDING_TIMESTAMP });
  const existing = readIfExists(join(siteDir, path));
  let text: string | undefined;
  if (existing !== undefined) {
    try {
      const parsed = JSON.parse(existing) as { generatedAt?: unknown };
      if (
        typeof parsed.generatedAt === "string" &&
        serializeDocument({ ...parsed, generatedAt: PENDING_TIMESTAMP }) === pending
      ) {
        text = serializeDocument({ ...document, generatedAt: parsed.generatedAt });
      }
    } catch {
      // An unparseable file is simply replaced.
    }
  }
  text ??= serializeDocument({ ...document, generatedAt: stamp });
  const result = registry.validate(schema, JSON.parse(text));
  if (!result.ok) return { ok: false, text, failure: `${path} (${schema}):\n${formatIssues(result.issues)}` };
  return { ok: true, text };
}

/** Every generated file currently on disk: site/api/v1 and the pages (relative to the site root). */
export function listGeneratedFiles(siteDir: string): string[] {
  return [...listFilesUnder(siteDir, ["api/v1"]), ...listPageFiles(siteDir)];
}

/**
 * Writes site/api/v1 as one transaction: every file or none; stale files are removed in the same
 * commit. `options`: the commit's hooks (a signing build notes what it owes, owingSignature).
 */
export function writeSite(
  siteDir: string,
  files: Map<string, string>,
  options: CommitOptions = {},
): CommitResult {
  const stale = listGeneratedFiles(siteDir).filter((path) => !files.has(path));
  return commitFiles(siteDir, { write: files, delete: stale }, options);
}
