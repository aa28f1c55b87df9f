import type { ModOwnership } from "../contracts/ownership.ts";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PortalConfig } from "../config/portal-config.ts";
import {
  buildCatalogMod,
  buildModDetail,
  buildModsIndexEntry,
  buildModVersions,
  type CatalogDocument,
  type CatalogMod,
  type ModDetailDocument,
  type ModsIndexDocument,
  visibleMods,
} from "../contracts/catalog.ts";
import { schemaRegistry } from "../contracts/schemas.ts";
import { CHANGES_PATHS, SITE_PATHS } from "../contracts/urls.ts";
import {
  catalogPageItem,
  compareCatalogPageItems,
  renderCatalogPageItems,
  catalogPageSplice,
} from "../pages/catalog-page.ts";
import type { GameBuildMatrix } from "../pages/compatibility.ts";
import { renderModPage } from "../pages/mod-page.ts";
import { PAGE_PATHS, pageContext } from "../pages/render-pages.ts";
import { listFilesUnder } from "../lib/walk.ts";
import { changesPageNumbers, loadOpenChangesPage } from "./changes.ts";
import {
  appendChange,
  buildChangesHead,
  type ChangeKind,
  type ChangesPage,
  serializeChangesPage,
} from "../contracts/changes.ts";
import { checkContractRules, type RuleFailure } from "./contract-rules.ts";
import { parseManagerCatalog } from "../contracts/manager-reader.ts";
import type { ReleaseRecord } from "../contracts/records.ts";
import { sha256Hex } from "../lib/hash.ts";
import type { SplicedContent } from "./atomic-files.ts";
import { IndexFile, locateEntry, materialize, patchIndex, readIndexLayout } from "./index-splice.ts";
import { serializeDocument, stampDocument } from "./site.ts";

/** One change of one mod's visible versions, with every record of that mod as it is after the change. */
export interface ModChange {
  config: PortalConfig;
  siteDir: string;
  recordsDir: string;
  modId: string;
  /** Every record of the mod (any status) after the change, at the portal's base URL. */
  records: readonly ReleaseRecord[];
  /** The mod's ownership after the change (null: unclaimed). */
  ownership: ModOwnership | null;
  change: { version: string; kind: ChangeKind; at: string };
  now: () => Date;
}

export interface RenderedModChange {
  /**
   * Site-relative path -> content of every file the change writes: the index documents as splices
   * of the files on disk (SplicedContent: ranges of the old file around the one new entry), left
   * out when their entry did not change.
   */
  files: Map<string, string | Buffer | SplicedContent>;
  /**
   * Paths in files whose content differs from the file read from disk under the publish lock: the
   * commit need not read them again to compare.
   */
  changed: Set<string>;
  /** Site-relative paths the change removes (the mod's files when it leaves the catalog). */
  deleted: string[];
  /** records/changes/{folder}/{page}.json as it must be written with the change. */
  changesPage: ChangesPage;
  failures: RuleFailure[];
}

interface ReadPage {
  path: string;
  bytes: Buffer;
  stat: { size: number; mtimeMs: number; ino: number };
}

/** The home page's bytes and the stat they were read at (what its splice must still find). */
function readPage(path: string): ReadPage | undefined {
  const file = IndexFile.open(path);
  if (!file) return undefined;
  try {
    return { path, bytes: file.readAll(), stat: file.stat };
  } finally {
    file.close();
  }
}

/** Whether the spliced parts spell the page's own bytes (an item that left and came back as it was). */
function samePage(parts: readonly Buffer[], page: Buffer): boolean {
  if (parts.length === 1 && parts[0] === page) return true;
  let at = 0;
  for (const part of parts) {
    if (!part.equals(page.subarray(at, at + part.length))) return false;
    at += part.length;
  }
  return at === page.length;
}

/** Runs of this size or more of the page's own bytes are copied from its file by the commit. */
const PAGE_RANGE_FROM = 65_536;

/** The spliced page as the commit writes it: the page's own runs as byte ranges of its file. */
function pageSplice(page: ReadPage, parts: readonly Buffer[]): SplicedContent {
  const base = page.bytes.byteOffset;
  const inPage = (part: Buffer) =>
    part.buffer === page.bytes.buffer &&
    part.byteOffset >= base &&
    part.byteOffset + part.length <= base + page.bytes.length;
  return {
    splice: {
      source: page.path,
      expect: page.stat,
      parts: parts.map((part) =>
        part.length >= PAGE_RANGE_FROM && inPage(part)
          ? { start: part.byteOffset - base, end: part.byteOffset - base + part.length }
          : part,
      ),
    },
  };
}

function readSite(siteDir: string, path: string): string | undefined {
  const full = join(siteDir, path);
  return existsSync(full) ? readFileSync(full, "utf8") : undefined;
}

/**
 * Renders one change of one mod in O(that mod): its detail and versions documents and page, the
 * catalog and mods index patched in place (one entry), the changes feed's open page and head, and
 * the catalog page. Nothing else is read: no other mod's records or documents. The result is
 * byte-identical to what a full build renders from the same records (a test holds it to that).
 * Returns null when the site is not in a state that can be patched (not built yet, or an index in
 * another layout): the caller renders the whole site instead.
 */
export function renderModChange(input: ModChange): RenderedModChange | null {
  const catalogFile = IndexFile.open(join(input.siteDir, SITE_PATHS.catalog));
  const indexFile = IndexFile.open(join(input.siteDir, SITE_PATHS.modsIndex));
  try {
    // A site built before the changes feed existed gets its head from a full render once.
    if (!catalogFile || !indexFile || !existsSync(join(input.siteDir, CHANGES_PATHS.head))) return null;
    return renderWithIndexes(input, catalogFile, indexFile);
  } finally {
    catalogFile?.close();
    indexFile?.close();
  }
}

function renderWithIndexes(
  input: ModChange,
  catalogFile: IndexFile,
  indexFile: IndexFile,
): RenderedModChange | null {
  const { config, siteDir, modId } = input;
  const registry = schemaRegistry(config.baseUrl);
  const stamp = input.now().toISOString();
  const catalogLayout = readIndexLayout(catalogFile);
  const indexLayout = readIndexLayout(indexFile);
  if (!catalogLayout || !indexLayout) return null;

  const files = new Map<string, string | Buffer | SplicedContent>();
  const changed = new Set<string>();
  const schemaFailures: string[] = [];
  const stampInto = (path: string, schema: Parameters<typeof stampDocument>[3], doc: object) => {
    const result = stampDocument(registry, siteDir, path, schema, { ...doc }, stamp);
    if (!result.ok) schemaFailures.push(result.failure);
    files.set(path, result.text);
    return result.text;
  };

  const ownerships = new Map(input.ownership ? [[modId, input.ownership]] : []);
  const view =
    visibleMods(
      input.records.filter((r) => r.modId === modId),
      ownerships,
    )[0] ?? null;
  let catalogEntry: ReturnType<typeof buildCatalogMod> | null = null;
  let detail: ModDetailDocument | null = null;
  if (view) {
    detail = buildModDetail(config, view, stamp);
    stampInto(SITE_PATHS.modDetail(modId), "mod-detail", detail);
    const versionsText = stampInto(
      SITE_PATHS.modVersions(modId),
      "mod-versions",
      buildModVersions(view, stamp),
    );
    catalogEntry = buildCatalogMod(config.baseUrl, view, sha256Hex(versionsText));
  }

  const open = loadOpenChangesPage(input.recordsDir, registry);
  const changesPage = appendChange(open, {
    modId,
    version: input.change.version,
    kind: input.change.kind,
    latestVersion: view?.newest.version ?? null,
    at: input.change.at,
  });
  files.set(CHANGES_PATHS.page(changesPage.page), serializeChangesPage(changesPage));
  const firstPage = changesPageNumbers(input.recordsDir)[0] ?? changesPage.page;
  stampInto(
    CHANGES_PATHS.head,
    "changes-head",
    buildChangesHead(config.baseUrl, firstPage, changesPage, stamp),
  );

  const indexEntry = view ? buildModsIndexEntry(config.baseUrl, view) : null;
  // Spliced by the commit from the files on disk (an unchanged entry leaves its document alone).
  const catalogPatched = patchIndex(catalogFile, catalogLayout, modId, catalogEntry, stamp);
  const indexPatched = patchIndex(indexFile, indexLayout, modId, indexEntry, stamp);
  for (const [path, patched] of [
    [SITE_PATHS.catalog, catalogPatched],
    [SITE_PATHS.modsIndex, indexPatched],
  ] as const) {
    if (!patched) continue;
    files.set(path, patched);
    changed.add(path);
  }
  // In the patched catalog: this mod when it has an entry now, any other as the file on disk says.
  const listed = (id: string) =>
    id === modId ? catalogEntry !== null : locateEntry(catalogFile, catalogLayout, id).found;

  // Schema checks of the patched indexes: their untouched entries were checked when written, so the
  // header plus the one new entry is all that can have become invalid.
  const miniCatalog = {
    ...catalogLayout.header,
    generatedAt: stamp,
    mods: catalogEntry ? [catalogEntry] : [],
  };
  const miniIndex = {
    ...indexLayout.header,
    generatedAt: stamp,
    count: indexEntry ? 1 : 0,
    mods: indexEntry ? [indexEntry] : [],
  };
  for (const [name, doc] of [
    ["catalog", miniCatalog],
    ["mods-index", miniIndex],
  ] as const) {
    const result = registry.validate(name, doc);
    if (!result.ok)
      schemaFailures.push(`${name}: ${result.issues.map((i) => `${i.path} ${i.message}`).join("; ")}`);
  }

  // Contract rules over the one mod: a small site of the global documents, the mod's documents and
  // catalog/index holding only its entry; a dependency is judged against every id in the catalog.
  const mini = new Map<string, string>();
  for (const path of [
    SITE_PATHS.readiness,
    SITE_PATHS.workflow,
    SITE_PATHS.backendContract,
    SITE_PATHS.gameBuilds,
  ]) {
    const text = readSite(siteDir, path);
    if (text !== undefined) mini.set(path, text);
  }
  mini.set(SITE_PATHS.catalog, serializeDocument(miniCatalog));
  mini.set(SITE_PATHS.modsIndex, serializeDocument(miniIndex));
  for (const [path, text] of files)
    if (
      typeof text === "string" &&
      (path.startsWith(`api/v1/mods/${modId}/`) || path.startsWith(CHANGES_PATHS.dir))
    )
      mini.set(path, text);
  const failures = checkContractRules(mini).filter((failure) => {
    const dangling = /: dependency (\S+) is not in the catalog$/.exec(failure.message);
    return !(dangling && listed(dangling[1]!));
  });
  // A mod leaving the catalog may strand another mod's dependency: then the whole catalog is checked.
  if (!view && catalogFile.indexOf(Buffer.from(`"modId": ${JSON.stringify(modId)}`), 0) !== -1) {
    const whole = materialize(catalogFile, catalogPatched).toString("utf8");
    for (const error of parseManagerCatalog(whole).errors)
      failures.push({ rule: "rule_3_installable", message: `catalog: ${error}` });
  }
  for (const failure of schemaFailures) failures.push({ rule: "schema", message: failure });

  // Pages: the mod's page and the home page. The home page lists every mod: this mod's list item
  // is spliced into the page on disk as bytes, the other mods' items kept as they are (a page in
  // another shape is rendered whole, from the patched mods index).
  const ctx = pageContext(config);
  const matrix = JSON.parse(
    readSite(siteDir, SITE_PATHS.gameBuilds) ?? '{"builds":[],"supportedGameBuilds":[]}',
  ) as GameBuildMatrix;
  const header = catalogLayout.header as unknown as CatalogDocument;
  const page = readPage(join(siteDir, PAGE_PATHS.catalog));
  const spliced = page && catalogPageSplice(ctx, header, page.bytes, modId, catalogEntry, matrix);
  if (page && spliced) {
    // Hiding an older version leaves the item as it was: then the page keeps its bytes.
    if (samePage(spliced, page.bytes)) files.set(PAGE_PATHS.catalog, page.bytes);
    else {
      files.set(PAGE_PATHS.catalog, pageSplice(page, spliced));
      changed.add(PAGE_PATHS.catalog);
    }
  } else {
    const modsIndex = JSON.parse(materialize(indexFile, indexPatched).toString("utf8")) as ModsIndexDocument;
    const items = modsIndex.mods
      .map((m) => ({ ...m, versionsSha256: "", versions: [{ targetGameBuild: m.targetGameBuild }] }))
      .sort(compareCatalogPageItems)
      .map((m) => catalogPageItem(m as unknown as CatalogMod, matrix));
    files.set(PAGE_PATHS.catalog, renderCatalogPageItems(ctx, header, items, matrix));
  }
  if (detail) {
    // The mod page links the dependencies that are in the catalog: only those ids are looked up.
    const dependencies = new Set(detail.versions.flatMap((v) => v.dependencies.map((d) => d.modId)));
    const pageCatalog = {
      ...header,
      mods: [...dependencies].filter(listed).map((id) => ({ id })),
    } as CatalogDocument;
    files.set(
      PAGE_PATHS.modPage(modId),
      renderModPage(ctx, JSON.parse(files.get(SITE_PATHS.modDetail(modId)) as string), pageCatalog, matrix),
    );
  }

  const deleted = listFilesUnder(siteDir, [`api/v1/mods/${modId}`, `mods/${modId}`]).filter(
    (p) => !files.has(p),
  );
  return { files, changed, deleted, changesPage, failures };
}
