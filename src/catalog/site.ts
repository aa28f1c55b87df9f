import type { ModOwnership } from "../contracts/ownership.ts";
import { sha256Hex } from "../lib/hash.ts";
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import type { GameBuildEntry, PortalConfig } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import { buildBackendContract } from "../contracts/backend-contract.ts";
import {
  buildCatalog,
  buildCatalogMod,
  type CatalogDocument,
  type CatalogMod,
  buildModDetail,
  buildModsIndex,
  buildModVersions,
  type ModDetailDocument,
  type ModView,
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
import type { GameBuildMatrix } from "../pages/compatibility.ts";
import { listPageFiles, PAGE_PATHS, sitePages } from "../pages/render-pages.ts";
import type { ReadinessView } from "../pages/status-page.ts";
import { CHECKS } from "../validation/checks/index.ts";
import { recordsAtBase } from "./portal-base.ts";
import { type CommitOptions, type CommitResult, commitFiles, type FileContent } from "./atomic-files.ts";
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

/** What every document of the site is built from: the visible mods, the supported builds, readiness. */
interface DocumentPlan {
  config: PortalConfig;
  mods: ModView[];
  supported: string[];
  /**
   * The site's global documents (everything but catalog.json and the per-mod documents), in order,
   * each made when called: mods/index.json lists every mod, and a render drops it once written.
   */
  globals: Array<() => GeneratedDocument>;
}

function planDocuments(inputs: SiteInputs): DocumentPlan {
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
  const changes = inputs.changes ?? [];
  const globals: Array<() => GeneratedDocument> = [
    () => ({
      path: SITE_PATHS.readiness,
      schema: "readiness",
      document: buildReadinessDocument(readinessInputs, readiness, at),
    }),
    () => ({ path: SITE_PATHS.runtime, schema: "runtime", document: buildRuntimeProfile(config, at) }),
    () => ({
      path: SITE_PATHS.framework,
      schema: "framework",
      document: buildFrameworkRelease(config, inputs.framework, at),
    }),
    () => ({
      path: SITE_PATHS.gameBuilds,
      schema: "game-builds",
      document: buildGameBuildMatrix(config, inputs.gameBuilds, frameworkVersion, at),
    }),
    () => ({
      path: SITE_PATHS.modsIndex,
      schema: "mods-index",
      document: { ...buildModsIndex(config, mods, at) },
    }),
    () => ({
      path: SITE_PATHS.manager,
      schema: "manager",
      document: buildManagerRelease(config, inputs.manager, at),
    }),
    () => ({
      path: SITE_PATHS.workflow,
      schema: "workflow",
      document: buildWorkflowDocument(config, readiness, CHECKS, at),
    }),
    () => ({
      path: SITE_PATHS.backendContract,
      schema: "backend-contract",
      document: buildBackendContract(config, inputs.endpoints, readiness, CHECKS, at),
    }),
    () => ({
      path: SITE_PATHS.validationContract,
      schema: "game-publishing-validation",
      document: { ...buildValidationContract(config, supported, frameworkVersion, CHECKS, at) },
    }),
    () => ({
      path: CHANGES_PATHS.head,
      schema: "changes-head",
      document: { ...buildChangesHead(config.baseUrl, changes[0]?.page ?? 0, changes.at(-1) ?? null, at) },
    }),
  ];
  return { config, mods, supported, globals };
}

/** One mod's documents: its detail and its versions list. */
function modDocuments(config: PortalConfig, view: ModView): [GeneratedDocument, GeneratedDocument] {
  const at = PENDING_TIMESTAMP;
  return [
    {
      path: SITE_PATHS.modDetail(view.modId),
      schema: "mod-detail",
      document: { ...buildModDetail(config, view, at) },
    },
    {
      path: SITE_PATHS.modVersions(view.modId),
      schema: "mod-versions",
      document: { ...buildModVersions(view, at) },
    },
  ];
}

/**
 * catalog.json; `versionsSha256` gives the hash of each mod's versions.json as written (undefined:
 * the hash of that document generated with the pending timestamp, as buildCatalog computes it).
 */
function catalogDocument(plan: DocumentPlan, versionsSha256: (view: ModView) => string | undefined) {
  const { config } = plan;
  const document = buildCatalog(
    config,
    plan.mods,
    plan.supported,
    PENDING_TIMESTAMP,
    (view) => versionsSha256(view) ?? sha256Hex(serializeDocument(buildModVersions(view, PENDING_TIMESTAMP))),
  );
  return { path: SITE_PATHS.catalog, schema: "catalog" as const, document: { ...document } };
}

/** Builds every document (unvalidated, timestamps pending). Paths are relative to the site root. */
export function generateDocuments(inputs: SiteInputs, options: RenderOptions = {}): GeneratedDocument[] {
  const plan = planDocuments(inputs);
  const docs: GeneratedDocument[] = [
    catalogDocument(plan, () => undefined),
    ...plan.globals.map((make) => make()),
  ];
  for (const view of plan.mods) {
    if (options.onlyMods && !options.onlyMods.has(view.modId)) continue;
    docs.push(...modDocuments(inputs.config, view));
  }
  return docs;
}

export function serializeDocument(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

/**
 * What a render already knows of a file on disk when it hands it over: "same" (the text is the
 * file's bytes), "differs" (the file is missing or has other bytes), or undefined (not compared).
 */
export type OnDisk = "same" | "differs" | undefined;

/**
 * Receives the files of a render one at a time (paths relative to the site root), each exactly once.
 * A receiver that keeps only what it needs (the full build keeps only changed files) keeps the
 * render's memory from growing with the site.
 */
export type SiteFileSink = (path: string, text: string, onDisk: OnDisk) => void;

/**
 * The exact bytes of every file under site/api/v1 and the pages, handed to `sink` one file at a time
 * as they are made: the global documents, then each mod's detail, versions list and page, then
 * catalog.json (it carries the hash of each versions.json as written) and the home page, the changes
 * pages, schemas, TUF root metadata and the other pages. A document whose content (all but
 * generatedAt) equals what is already on disk keeps its old bytes, so a rebuild with no input change
 * changes no byte. Every existing document is read once (to keep its timestamp) and its sink call
 * says whether it changed; files of other kinds are not compared (OnDisk undefined). Schema failures
 * are collected and thrown at the end, after every file was handed over: a sink that commits only
 * after this returns writes nothing then.
 *
 * Nothing here holds more than one mod's files at a time beyond what the indexes need (the
 * documents that list every mod, and a hash and an id per mod), and no step looks at every mod per
 * mod: the work is linear in the mods (test/catalog/site-render-work.test.ts counts it).
 */
export function renderSiteFiles(
  inputs: SiteInputs | (() => SiteInputs),
  siteDir: string,
  sink: SiteFileSink,
  now: () => Date = () => new Date(),
  options: RenderOptions = {},
): void {
  // Given a loader, nothing here keeps the inputs whole: each mod's records go once its files are
  // written (the records of 50,000 mods x 5 are ~370 MB of objects).
  let loaded: SiteInputs | undefined = typeof inputs === "function" ? inputs() : inputs;
  const { config } = loaded;
  const changes = loaded.changes ?? [];
  const tufRoots = loaded.tufRoots ?? new Map<string, string>();
  const plan = planDocuments(loaded);
  loaded = undefined;
  const registry = schemaRegistry(config.baseUrl);
  const stamp = now().toISOString();
  const failures: string[] = [];
  const pages = sitePages(config);
  /** Stamps, checks and hands over one document; its parsed value, or undefined when it fails its schema. */
  const emit = (make: () => GeneratedDocument): { path: string; value: unknown } => {
    const rendered = stampMade(registry, siteDir, make, stamp);
    if (!rendered.ok) failures.push(rendered.failure);
    sink(rendered.path, rendered.text, rendered.onDisk);
    return { path: rendered.path, value: rendered.ok ? rendered.value : undefined };
  };
  let matrix: GameBuildMatrix | undefined;
  let readiness: ReadinessView | undefined;
  for (const make of plan.globals) {
    const { path, value } = emit(make);
    if (path === SITE_PATHS.gameBuilds) matrix = value as GameBuildMatrix | undefined;
    if (path === SITE_PATHS.readiness) readiness = value as ReadinessView | undefined;
  }
  const modPage = pages.modPageRenderer(
    plan.supported,
    matrix ?? { builds: [], supportedGameBuilds: [] },
    new Set(plan.mods.map((view) => view.modId)),
  );
  // Made, the global documents (and what they were made from) are let go.
  plan.globals = [];
  // Each mod's catalog entry, with the hash of its versions.json as this render wrote it (mods it
  // does not render keep theirs), made as the mod is done; then its view (and records) are let go.
  const entries: CatalogMod[] = [];
  const views: Array<ModView | undefined> = plan.mods;
  for (let i = 0; i < views.length; i++) {
    const view = views[i]!;
    views[i] = undefined;
    let versionsSha256: string;
    if (options.onlyMods && !options.onlyMods.has(view.modId)) {
      const onDisk = readIfExists(join(siteDir, SITE_PATHS.modVersions(view.modId)));
      versionsSha256 = sha256Hex(onDisk ?? serializeDocument(buildModVersions(view, PENDING_TIMESTAMP)));
    } else {
      const [detail, versions] = modDocuments(config, view);
      const detailValue = emit(() => detail).value;
      const stamped = stampMade(registry, siteDir, () => versions, stamp);
      if (!stamped.ok) failures.push(stamped.failure);
      sink(versions.path, stamped.text, stamped.onDisk);
      versionsSha256 = sha256Hex(stamped.text);
      if (detailValue !== undefined && matrix !== undefined)
        sink(PAGE_PATHS.modPage(view.modId), modPage(detailValue as ModDetailDocument), undefined);
    }
    entries.push(buildCatalogMod(config.baseUrl, view, versionsSha256));
  }
  const catalog = emit(() => ({
    path: SITE_PATHS.catalog,
    schema: "catalog",
    document: { ...buildCatalog(config, [], plan.supported, PENDING_TIMESTAMP), mods: entries },
  })).value as CatalogDocument | undefined;
  entries.length = 0;
  if (catalog !== undefined && matrix !== undefined)
    sink(PAGE_PATHS.catalog, pages.catalogPage(catalog, matrix), undefined);
  for (const page of changes) {
    const result = registry.validate("changes-page", page);
    if (!result.ok)
      failures.push(`${CHANGES_PATHS.page(page.page)} (changes-page):\n${formatIssues(result.issues)}`);
    sink(CHANGES_PATHS.page(page.page), serializeChangesPage(page), undefined);
  }
  for (const file of schemaFiles())
    sink(file.publicPath, publishedSchemaText(file, config.baseUrl), undefined);
  for (const [name, text] of tufRoots) sink(`${TUF_DIR}/${name}`, text, undefined);
  if (failures.length > 0) {
    throw new SvcError(
      "invalid_payload",
      `generated documents fail their schemas; nothing was written:\n${failures.join("\n")}`,
      {
        details: failures,
      },
    );
  }
  for (const [path, text] of pages.otherPages(readiness)) sink(path, text, undefined);
}

/**
 * The exact bytes of every file under site/api/v1 and the pages (renderSiteFiles, kept in a map).
 * A document whose content (all but generatedAt) equals what is already on disk keeps its old bytes,
 * so a rebuild with no input change changes no byte.
 */
export function renderSite(
  inputs: SiteInputs,
  siteDir: string,
  now: () => Date = () => new Date(),
  options: RenderOptions = {},
): Map<string, string> {
  const files = new Map<string, string>();
  renderSiteFiles(inputs, siteDir, (path, text) => files.set(path, text), now, options);
  return files;
}

function readIfExists(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}

/** The top-level generatedAt of a document as serializeDocument writes it (two-space indented keys). */
const TOP_LEVEL_STAMP = /^ {2}"generatedAt": "([^"\\]*)"/m;

/**
 * The bytes of one generated document, schema-checked. A document whose content (all but
 * generatedAt) equals what is already on disk keeps its old bytes, so a rebuild with no input change
 * changes no byte; otherwise it is stamped with `stamp`. `value` is the document as its text parses
 * (what the pages are rendered from), `onDisk` whether the file on disk has exactly these bytes.
 */
export function stampDocument(
  registry: ReturnType<typeof schemaRegistry>,
  siteDir: string,
  path: string,
  schema: SchemaName,
  document: Record<string, unknown> & { generatedAt?: string },
  stamp: string,
): StampedDocument {
  return stampMade(registry, siteDir, () => ({ path, schema, document }), stamp);
}

export type StampedDocument =
  | { ok: true; text: string; value: unknown; onDisk: "same" | "differs" }
  | { ok: false; text: string; value: unknown; onDisk: "same" | "differs"; failure: string };

/**
 * stampDocument of a document made by `make`, which it lets go (and the file it read) before it
 * parses the text: a document that lists every mod is never held as an object twice.
 */
function stampMade(
  registry: ReturnType<typeof schemaRegistry>,
  siteDir: string,
  make: () => GeneratedDocument,
  stamp: string,
): StampedDocument & { path: string } {
  let made: GeneratedDocument | undefined = make();
  const { path, schema } = made;
  let existing = readIfExists(join(siteDir, path));
  let text: string | undefined;
  if (existing !== undefined) {
    // The common case first: the file is as this code writes it, so the document with the file's
    // timestamp either is its bytes or differs in content. One serialization, no parse.
    const kept = TOP_LEVEL_STAMP.exec(existing)?.[1];
    if (kept !== undefined) {
      const candidate = serializeDocument({ ...made.document, generatedAt: kept });
      if (candidate === existing) text = existing;
    }
    // Otherwise compare content as parsed (a file formatted by hand keeps its timestamp if its
    // content is the same).
    if (text === undefined) text = keptTimestampText(existing, made.document);
  }
  text ??= serializeDocument({ ...made.document, generatedAt: stamp });
  made = undefined;
  const onDisk = text === existing ? "same" : "differs";
  existing = undefined;
  const value = JSON.parse(text) as unknown;
  const result = registry.validate(schema, value);
  if (!result.ok)
    return {
      ok: false,
      path,
      text,
      value,
      onDisk,
      failure: `${path} (${schema}):\n${formatIssues(result.issues)}`,
    };
  return { ok: true, path, text, value, onDisk };
}

/** The document's text with the existing file's timestamp when their content is the same, else undefined. */
function keptTimestampText(
  existing: string,
  document: Record<string, unknown> & { generatedAt?: string },
): string | undefined {
  try {
    const parsed = JSON.parse(existing) as { generatedAt?: unknown };
    if (
      typeof parsed.generatedAt === "string" &&
      serializeDocument({ ...parsed, generatedAt: PENDING_TIMESTAMP }) ===
        serializeDocument({ ...document, generatedAt: PENDING_TIMESTAMP })
    ) {
      return serializeDocument({ ...document, generatedAt: parsed.generatedAt });
    }
  } catch {
    // An unparseable file is simply replaced.
  }
  return undefined;
}

/** Every generated file currently on disk: site/api/v1 and the pages (relative to the site root). */
export function listGeneratedFiles(siteDir: string): string[] {
  return [...listFilesUnder(siteDir, ["api/v1"]), ...listPageFiles(siteDir)];
}

/** Reused by sameAsDisk for files up to 1 MiB, so comparing 50,000 pages allocates no buffer each. */
const scratch = { file: Buffer.allocUnsafe(1 << 20), text: Buffer.allocUnsafe(1 << 20) };

/** Whether the file at `full` has exactly the bytes of `text` (its size settles most differences unread). */
export function sameAsDisk(full: string, text: string): boolean {
  let size: number;
  try {
    size = statSync(full).size;
  } catch {
    return false;
  }
  const length = Buffer.byteLength(text, "utf8");
  if (size !== length) return false;
  if (length > scratch.file.length) return readFileSync(full).equals(Buffer.from(text, "utf8"));
  const fd = openSync(full, "r");
  try {
    for (let at = 0; at < length; ) {
      const n = readSync(fd, scratch.file, at, length - at, at);
      if (n === 0) return false;
      at += n;
    }
  } finally {
    closeSync(fd);
  }
  scratch.text.write(text, 0, "utf8");
  return scratch.file.compare(scratch.text, 0, length, 0, length) === 0;
}

/**
 * How many bytes of changed files a build holds in memory; the rest wait in staging files until the
 * commit copies them in (a first build of 50,000 mods x 5 writes about 1 GB).
 */
export const HELD_BYTES = 64 * 1024 * 1024;

/**
 * `svc build`'s render and write in one pass: every file is rendered (renderSiteFiles), compared with
 * the disk once, and only the files that differ are kept, then committed as one transaction with the
 * stale ones removed (writeSite's transaction, without a second comparison). Changed files are held
 * in memory up to `heldBytes`, and beyond it written to `staging` (a folder the caller owns and
 * removes, such as stagingDir(root) under the publish lock) for the commit to copy: memory does not
 * grow with the site. `files`: how many files the site has.
 */
export function renderAndWriteSite(
  inputs: SiteInputs | (() => SiteInputs),
  siteDir: string,
  options: { commit?: CommitOptions; now?: () => Date; staging?: string; heldBytes?: number } = {},
): CommitResult & { files: number; staged: number } {
  const produced = new Set<string>();
  const write = new Map<string, FileContent>();
  const heldBytes = options.heldBytes ?? HELD_BYTES;
  let held = 0;
  let staged = 0;
  let same = 0;
  renderSiteFiles(
    inputs,
    siteDir,
    (path, text, onDisk) => {
      produced.add(path);
      if (onDisk === "same" || (onDisk === undefined && sameAsDisk(join(siteDir, path), text))) {
        same++;
        return;
      }
      held += text.length;
      if (options.staging === undefined || held <= heldBytes) {
        write.set(path, text);
        return;
      }
      if (staged === 0) mkdirSync(options.staging, { recursive: true });
      const source = join(options.staging, `site-${staged++}`);
      writeFileSync(source, text);
      const { size, mtimeMs, ino } = statSync(source);
      write.set(path, {
        splice: { source, expect: { size, mtimeMs, ino }, parts: [{ start: 0, end: size }] },
      });
    },
    options.now,
  );
  const stale = listGeneratedFiles(siteDir).filter((path) => !produced.has(path));
  const result = commitFiles(
    siteDir,
    { write, changed: new Set(write.keys()), delete: stale },
    options.commit,
  );
  return { ...result, unchanged: result.unchanged + same, files: produced.size, staged };
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
