/**
 * The site's render: every file under site/api/v1 and the pages, made from SiteInputs
 * (site-inputs.ts) and stamped against the site on disk (site-stamp.ts). svc build writes it with
 * site-write.ts.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PortalConfig } from "../config/portal-config.ts";
import { buildBackendContract } from "../contracts/backend-contract.ts";
import {
  buildCatalog,
  buildCatalogMod,
  buildModDetail,
  buildModsIndex,
  buildModsIndexEntry,
  buildModVersions,
  type CatalogMod,
  type ModDetailDocument,
  type ModView,
  visibleMods,
} from "../contracts/catalog.ts";
import { buildChangesHead, serializeChangesPage } from "../contracts/changes.ts";
import {
  buildFrameworkRelease,
  buildGameBuildMatrix,
  buildManagerRelease,
  buildRuntimeProfile,
  supportedBuilds,
} from "../contracts/distribution.ts";
import { buildReadinessDocument, computeReadiness } from "../contracts/readiness.ts";
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
import { SvcError } from "../errors.ts";
import { sha256Hex } from "../lib/hash.ts";
import { listFilesUnder } from "../lib/walk.ts";
import { type CatalogPageItem, catalogPageItem, compareCatalogPageItems } from "../pages/catalog-page.ts";
import type { GameBuildMatrix } from "../pages/compatibility.ts";
import { listPageFiles, PAGE_PATHS, sitePages } from "../pages/render-pages.ts";
import type { ReadinessView } from "../pages/status-page.ts";
import { CHECKS } from "../validation/checks/index.ts";
import { type CommitOptions, type CommitResult, commitFiles } from "./atomic-files.ts";
import type { SiteInputs, StreamedSiteInputs } from "./site-inputs.ts";
import {
  type GeneratedDocument,
  ListDocument,
  PENDING_TIMESTAMP,
  serializeDocument,
  stampMade,
} from "./site-stamp.ts";

export {
  loadSiteInputs,
  type ProjectPaths,
  projectPaths,
  type SiteInputs,
  type StreamedSiteInputs,
  streamSiteInputs,
} from "./site-inputs.ts";
export { serializeDocument, type StampedDocument, stampDocument } from "./site-stamp.ts";

export interface RenderOptions {
  /**
   * Incremental publication: render the per-mod files (detail, versions) of these mods only; every
   * other mod's files are left as they are on disk. The indexes and global documents are always
   * rendered. Omitted: every file.
   */
  onlyMods?: ReadonlySet<string>;
  /**
   * false: the sink ignores the text of a file whose onDisk is "same", and a document that lists
   * every mod is then handed over as "" (never made whole when it is already on disk).
   */
  textOfSame?: boolean;
}

type SiteSources = Omit<SiteInputs, "records">;

/**
 * The site's global documents (everything but catalog.json, mods/index.json and the per-mod
 * documents), in the order they are written, each made when called. `backendVerified`: whether a
 * record (of any status) came from a publication rather than an import, asked when readiness is
 * first made.
 */
function globalDocuments(
  inputs: SiteSources,
  backendVerified: () => boolean,
): Array<{ path: string; make: () => GeneratedDocument }> {
  const { config } = inputs;
  const at = PENDING_TIMESTAMP;
  const supported = supportedBuilds(inputs.gameBuilds);
  let readinessInputs: Parameters<typeof computeReadiness>[0] | undefined;
  let readiness: ReturnType<typeof computeReadiness> | undefined;
  const ready = () => {
    readinessInputs ??= {
      config,
      endpoints: inputs.endpoints,
      postPublishSmoke: inputs.postPublishSmoke,
      backendSmoke: inputs.backendSmoke,
      backendVerifiedRelease: Boolean(inputs.postPublishSmoke?.passed) && backendVerified(),
    };
    readiness ??= computeReadiness(readinessInputs);
    return { readinessInputs, readiness };
  };
  const frameworkVersion = inputs.framework?.version ?? null;
  const changes = inputs.changes ?? [];
  const made = (path: string, schema: SchemaName, document: GeneratedDocument["document"]) => ({
    path,
    schema,
    document,
  });
  const docs: Array<[string, SchemaName, () => GeneratedDocument["document"]]> = [
    [
      SITE_PATHS.readiness,
      "readiness",
      () => buildReadinessDocument(ready().readinessInputs, ready().readiness, at),
    ],
    [SITE_PATHS.runtime, "runtime", () => buildRuntimeProfile(config, at)],
    [SITE_PATHS.framework, "framework", () => buildFrameworkRelease(config, inputs.framework, at)],
    [
      SITE_PATHS.gameBuilds,
      "game-builds",
      () => buildGameBuildMatrix(config, inputs.gameBuilds, frameworkVersion, at),
    ],
    [SITE_PATHS.manager, "manager", () => buildManagerRelease(config, inputs.manager, at)],
    [SITE_PATHS.workflow, "workflow", () => buildWorkflowDocument(config, ready().readiness, CHECKS, at)],
    [
      SITE_PATHS.backendContract,
      "backend-contract",
      () => buildBackendContract(config, inputs.endpoints, ready().readiness, CHECKS, at),
    ],
    [
      SITE_PATHS.validationContract,
      "game-publishing-validation",
      () => ({ ...buildValidationContract(config, supported, frameworkVersion, CHECKS, at) }),
    ],
    [
      CHANGES_PATHS.head,
      "changes-head",
      () => ({ ...buildChangesHead(config.baseUrl, changes[0]?.page ?? 0, changes.at(-1) ?? null, at) }),
    ],
  ];
  return docs.map(([path, schema, document]) => ({ path, make: () => made(path, schema, document()) }));
}

/** Where mods/index.json goes among the global documents (after the game builds). */
const MODS_INDEX_AFTER = SITE_PATHS.gameBuilds;

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

/** Builds every document (unvalidated, timestamps pending). Paths are relative to the site root. */
export function generateDocuments(inputs: SiteInputs, options: RenderOptions = {}): GeneratedDocument[] {
  const { config } = inputs;
  const supported = supportedBuilds(inputs.gameBuilds);
  const mods = visibleMods(inputs.records, inputs.ownerships);
  const backendVerified = () => inputs.records.some((r) => r.source.kind !== "import");
  const docs: GeneratedDocument[] = [
    {
      path: SITE_PATHS.catalog,
      schema: "catalog",
      document: { ...buildCatalog(config, mods, supported, PENDING_TIMESTAMP) },
    },
  ];
  for (const { path, make } of globalDocuments(inputs, backendVerified)) {
    docs.push(make());
    if (path === MODS_INDEX_AFTER)
      docs.push({
        path: SITE_PATHS.modsIndex,
        schema: "mods-index",
        document: { ...buildModsIndex(config, mods, PENDING_TIMESTAMP) },
      });
  }
  for (const view of mods) {
    if (options.onlyMods && !options.onlyMods.has(view.modId)) continue;
    docs.push(...modDocuments(config, view));
  }
  return docs;
}

/**
 * What a render already knows of a file on disk when it hands it over: "same" (the text is the
 * file's bytes), "differs" (the file is missing or has other bytes), or undefined (not compared).
 */
export type OnDisk = "same" | "differs" | undefined;

/**
 * Receives the files of a render one at a time (paths relative to the site root), each exactly once,
 * except that a render from StreamedSiteInputs may hand a mod's page over a second time, replacing
 * the first, when a mod it depends on turned out to list nothing (every version hidden). A receiver
 * that keeps only what it needs (the full build keeps only changed files) keeps the render's memory
 * from growing with the site.
 */
export type SiteFileSink = (path: string, text: string, onDisk: OnDisk) => void;

/**
 * The exact bytes of every file under site/api/v1 and the pages, handed to `sink` one file at a time
 * as they are made: the global documents and mods/index.json, then each mod's detail, versions list
 * and page, then catalog.json (it carries the hash of each versions.json as written) and the home
 * page, the changes pages, schemas, TUF root metadata and the other pages. From StreamedSiteInputs
 * the game builds come first and the other global documents and mods/index.json after the mods (they
 * need what the records hold). A document whose content (all but generatedAt) equals what is already
 * on disk keeps its old bytes, so a rebuild with no input change changes no byte. Every existing
 * document is read once (to keep its timestamp) and its sink call says whether it changed; files of
 * other kinds are not compared (OnDisk undefined). Schema failures are collected and thrown at the
 * end, after every file was handed over: a sink that commits only after this returns writes nothing
 * then.
 *
 * Nothing here holds more than one mod's files at a time beyond what the indexes need (the text of
 * each mod's entries in catalog.json and mods/index.json and its home page item), and no step looks
 * at every mod per mod: the work is linear in the mods (test/catalog/site-render-work.test.ts counts
 * it).
 */
export function renderSiteFiles(
  inputs: SiteInputs | StreamedSiteInputs,
  siteDir: string,
  sink: SiteFileSink,
  now: () => Date = () => new Date(),
  options: RenderOptions = {},
): void {
  const { config } = inputs;
  const changes = inputs.changes ?? [];
  const tufRoots = inputs.tufRoots ?? new Map<string, string>();
  const supported = supportedBuilds(inputs.gameBuilds);
  const registry = schemaRegistry(config.baseUrl);
  const stamp = now().toISOString();
  const textOfSame = options.textOfSame !== false;
  const failures: string[] = [];
  const pages = sitePages(config);
  const at = PENDING_TIMESTAMP;
  const catalogHead = { ...buildCatalog(config, [], supported, at) };
  const catalog = new ListDocument(registry, SITE_PATHS.catalog, "catalog", catalogHead);
  const modsIndex = new ListDocument(registry, SITE_PATHS.modsIndex, "mods-index", {
    ...buildModsIndex(config, [], at),
  });
  /** Stamps, checks and hands over one document; its parsed value, or undefined when it fails its schema. */
  const emit = (make: () => GeneratedDocument): unknown => {
    const rendered = stampMade(registry, siteDir, make, stamp);
    if (!rendered.ok) failures.push(rendered.failure);
    sink(rendered.path, rendered.text, rendered.onDisk);
    return rendered.ok ? rendered.value : undefined;
  };
  /** The same for a document that lists every mod; whether it passed its schema. */
  const emitList = (list: ListDocument, head: Record<string, unknown>): boolean => {
    const stamped = list.stamp(join(siteDir, list.path), head, stamp, textOfSame);
    if (stamped.failure !== undefined) failures.push(stamped.failure);
    sink(list.path, stamped.text ?? "", stamped.onDisk);
    return stamped.failure === undefined;
  };

  // The mods, in id order: held as views (from SiteInputs), or read one at a time (streamed).
  const streamed = !("records" in inputs);
  let views: Array<ModView | undefined> = [];
  let ids: readonly string[] = [];
  let anyPublished = false;
  /** Streamed: each mod id's place, the mods that list nothing, and the mod being rendered. */
  const place = new Map<string, number>();
  const hiddenOnly = new Set<string>();
  let current = -1;
  /** Mods not reached yet that the page being rendered assumed listed. */
  let assumed: string[] = [];
  let listed: { has(modId: string): boolean };
  if ("records" in inputs) {
    views = visibleMods(inputs.records, inputs.ownerships);
    anyPublished = inputs.records.some((r) => r.source.kind !== "import");
    listed = new Set(views.map((view) => view!.modId));
  } else {
    ids = inputs.modIds;
    for (const [i, id] of ids.entries()) place.set(id, i);
    listed = {
      has(modId) {
        const at = place.get(modId);
        if (at === undefined) return false;
        if (at <= current) return !hiddenOnly.has(modId);
        // Not read yet: listed unless all its versions are hidden, which is rare; the page is made
        // again at the end if it was.
        assumed.push(modId);
        return true;
      },
    };
  }
  const globals = globalDocuments(inputs, () => anyPublished);
  let matrix: GameBuildMatrix | undefined;
  let readiness: ReadinessView | undefined;
  const emitGlobal = ({ path, make }: { path: string; make: () => GeneratedDocument }) => {
    const value = emit(make);
    if (path === SITE_PATHS.gameBuilds) matrix = value as GameBuildMatrix | undefined;
    if (path === SITE_PATHS.readiness) readiness = value as ReadinessView | undefined;
    if (path === MODS_INDEX_AFTER)
      emitList(modsIndex, { ...buildModsIndex(config, [], at), count: modsIndex.length });
  };
  // In their order before the mods; streamed, only the game builds (the mod pages need them), the
  // others once every mod's records were read.
  if (!streamed) {
    for (const view of views) modsIndex.add(buildModsIndexEntry(config.baseUrl, view!));
    for (const global of globals) emitGlobal(global);
  } else {
    matrix = emit(globals.find((g) => g.path === SITE_PATHS.gameBuilds)!.make) as GameBuildMatrix | undefined;
  }
  const modPage = pages.modPageRenderer(supported, matrix ?? { builds: [], supportedGameBuilds: [] }, listed);
  const pageItems: CatalogPageItem[] = [];
  let pageError: { error: unknown } | undefined;
  /** Streamed: the pages made assuming a mod not read yet was listed, with those mods. */
  const assumptions: Array<{ modId: string; assumed: string[] }> = [];

  /** One mod's files and entries; its records are let go once they are made. */
  const renderMod = (view: ModView) => {
    let versionsSha256: string;
    if (options.onlyMods && !options.onlyMods.has(view.modId)) {
      const onDisk = readIfExists(join(siteDir, SITE_PATHS.modVersions(view.modId)));
      versionsSha256 = sha256Hex(onDisk ?? serializeDocument(buildModVersions(view, at)));
    } else {
      const [detail, versions] = modDocuments(config, view);
      const detailValue = emit(() => detail);
      const stamped = stampMade(registry, siteDir, () => versions, stamp);
      if (!stamped.ok) failures.push(stamped.failure);
      sink(versions.path, stamped.text, stamped.onDisk);
      versionsSha256 = sha256Hex(stamped.text);
      if (detailValue !== undefined && matrix !== undefined) {
        assumed = [];
        sink(PAGE_PATHS.modPage(view.modId), modPage(detailValue as ModDetailDocument), undefined);
        if (assumed.length > 0) assumptions.push({ modId: view.modId, assumed });
      }
    }
    if (streamed) modsIndex.add(buildModsIndexEntry(config.baseUrl, view));
    const entry = catalog.add(buildCatalogMod(config.baseUrl, view, versionsSha256)) as CatalogMod;
    // An entry that fails its schema (known at the end) may not make an item: no page is made then.
    if (matrix !== undefined && pageError === undefined)
      try {
        pageItems.push(catalogPageItem(entry, matrix));
      } catch (error) {
        pageError = { error };
      }
  };
  if (!streamed) {
    for (let i = 0; i < views.length; i++) {
      const view = views[i]!;
      views[i] = undefined;
      renderMod(view);
    }
    views = [];
  } else {
    const source = inputs as StreamedSiteInputs;
    for (current = 0; current < ids.length; current++) {
      const modId = ids[current]!;
      const records = source.modRecords(modId);
      if (!anyPublished) anyPublished = records.some((r) => r.source.kind !== "import");
      const [view] = visibleMods(records, inputs.ownerships);
      if (view) renderMod(view);
      else hiddenOnly.add(modId);
    }
    // A page that linked a mod read later which lists nothing is made again, now that all are known.
    for (const { modId } of assumptions.filter((a) => a.assumed.some((id) => hiddenOnly.has(id)))) {
      const [view] = visibleMods(source.modRecords(modId), inputs.ownerships);
      const detailValue = stampMade(registry, siteDir, () => modDocuments(config, view!)[0], stamp);
      if (detailValue.ok && matrix !== undefined)
        sink(PAGE_PATHS.modPage(modId), modPage(detailValue.value as ModDetailDocument), undefined);
    }
    for (const global of globals) if (global.path !== SITE_PATHS.gameBuilds) emitGlobal(global);
    // mods/index.json follows the game builds, emitted before the mods.
    emitList(modsIndex, { ...buildModsIndex(config, [], at), count: modsIndex.length });
  }
  const catalogOk = emitList(catalog, catalogHead);
  if (catalogOk && pageError !== undefined) throw pageError.error;
  if (catalogOk && matrix !== undefined) {
    pageItems.sort(compareCatalogPageItems);
    sink(PAGE_PATHS.catalog, pages.catalogPageItems(catalogHead, pageItems, matrix), undefined);
  }
  pageItems.length = 0;
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
