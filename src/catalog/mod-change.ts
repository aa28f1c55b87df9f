import type { ModOwnership } from "../contracts/ownership.ts";
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from "node:fs";
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

const MODS_ARRAY = '\n  "mods": [';
const ENTRY_PREFIX = Buffer.from('\n    {\n      "id": "');
const ENTRY_END = Buffer.from("\n    }");
const DOCUMENT_END = Buffer.from("\n  ]\n}\n");
const EMPTY_END = Buffer.from("]\n}\n");

interface IndexLayout {
  /** The document without its mods, parsed (what a one-mod schema check needs besides the entry). */
  header: Record<string, unknown>;
  /** The text before the array's first character, as written. */
  head: string;
  /** Byte offset of the first byte inside the mods array. */
  arrayStart: number;
  /** Byte offset of the array's closing "\n  ]" (arrayStart when the array is empty). */
  arrayClose: number;
  empty: boolean;
}

/** Bytes searched per read of an index document (an entry is ~1.5 KB). */
const PROBE = 16_384;

/**
 * An index document on disk, read by ranges: it lists every mod (70 MB at 50,000 mods), and a
 * publication needs its header, the O(log mods) entries a binary search probes, and its length.
 * The rest is copied into the new file by the commit in chunks (SplicedContent), never held here.
 */
class IndexFile {
  private constructor(
    private readonly fd: number,
    readonly path: string,
    readonly stat: { size: number; mtimeMs: number; ino: number },
  ) {}

  static open(path: string): IndexFile | undefined {
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    const { size, mtimeMs, ino } = fstatSync(fd);
    return new IndexFile(fd, path, { size, mtimeMs, ino });
  }

  get size(): number {
    return this.stat.size;
  }

  read(start: number, end: number): Buffer {
    const from = Math.max(0, start);
    const bytes = Buffer.allocUnsafe(Math.max(0, Math.min(end, this.size) - from));
    let got = 0;
    while (got < bytes.length) {
      const n = readSync(this.fd, bytes, got, bytes.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    return bytes.subarray(0, got);
  }

  /** Offset of the first `pattern` starting in [from, limit), or -1. */
  indexOf(pattern: Buffer, from: number, limit = this.size): number {
    for (let at = from; at < limit; at += PROBE) {
      // Overlapping reads, so a match across two probes is found in the first.
      const window = this.read(at, Math.min(at + PROBE + pattern.length - 1, this.size));
      const found = window.indexOf(pattern);
      if (found !== -1) return at + found < limit ? at + found : -1;
    }
    return -1;
  }

  equalsAt(start: number, bytes: Buffer): boolean {
    return start >= 0 && this.read(start, start + bytes.length).equals(bytes);
  }

  /** The whole file (the rare paths that must parse a document). */
  readAll(): Buffer {
    return this.read(0, this.size);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * Reads the layout of an index document (catalog.json, mods/index.json) as serializeDocument writes
 * it: "mods" is the last field and each mod is an object at indent 4 whose first key is "id", in id
 * order. A newline inside a JSON string is always escaped, so "\n    {" can only start a mods entry.
 * Only the header before the array is read and decoded, and the document's last bytes.
 * null when the text has another layout (hand-edited, or written by an older version): the caller
 * re-renders the whole site then.
 */
function readIndexLayout(file: IndexFile): IndexLayout | null {
  const at = file.indexOf(Buffer.from(MODS_ARRAY), 0);
  if (at === -1) return null;
  // The fields before the array must be exactly as serializeDocument writes them.
  const head = file.read(0, at).toString("utf8");
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(`${head.replace(/,$/, "")}\n}`) as Record<string, unknown>;
    if (`${JSON.stringify(header, null, 2).slice(0, -2)},` !== head) return null;
  } catch {
    return null;
  }
  const arrayStart = at + Buffer.byteLength(MODS_ARRAY);
  const headText = file.read(0, arrayStart).toString("utf8");
  if (file.read(arrayStart, arrayStart + 1)[0] === 93 /* ] */)
    return file.size - arrayStart === EMPTY_END.length && file.equalsAt(arrayStart, EMPTY_END)
      ? { header, head: headText, arrayStart, arrayClose: arrayStart, empty: true }
      : null;
  if (
    !file.equalsAt(arrayStart, ENTRY_PREFIX) ||
    !file.equalsAt(file.size - DOCUMENT_END.length, DOCUMENT_END)
  )
    return null;
  return {
    header,
    head: headText,
    arrayStart,
    arrayClose: file.size - DOCUMENT_END.length,
    empty: false,
  };
}

function idAt(file: IndexFile, entryStart: number): string {
  const from = entryStart + ENTRY_PREFIX.length;
  // Mod ids are ASCII ([a-z0-9-]), so latin1 decoding is exact and byte order is string order.
  const end = file.indexOf(Buffer.from('"'), from);
  return file.read(from, end === -1 ? from : end).toString("latin1");
}

/**
 * Where modId's entry is, or where it would go: a binary search over byte offsets (the entries are
 * in id order), O(log mods) probes of one entry each; the document is never scanned or parsed whole.
 */
function locateEntry(
  file: IndexFile,
  layout: IndexLayout,
  modId: string,
): { start: number; end: number; found: boolean } {
  if (layout.empty) return { start: layout.arrayStart, end: layout.arrayStart, found: false };
  const nextEntry = (from: number) => {
    const at = file.indexOf(ENTRY_PREFIX, from, layout.arrayClose);
    return at === -1 ? layout.arrayClose : at;
  };
  let lo = layout.arrayStart;
  let hi = layout.arrayClose;
  // Invariant: every entry starting before lo has an id < modId; the first entry at or after hi, >= modId.
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const at = nextEntry(mid);
    if (at >= hi) hi = mid;
    else if (idAt(file, at) < modId) lo = at + 1;
    else hi = at;
  }
  const start = nextEntry(lo);
  if (start === layout.arrayClose || idAt(file, start) !== modId) return { start, end: start, found: false };
  return { start, end: file.indexOf(ENTRY_END, start) + ENTRY_END.length, found: true };
}

function entryText(entry: unknown): string {
  return `\n    ${JSON.stringify(entry, null, 2).replaceAll("\n", "\n    ")}`;
}

/**
 * The index document with one mod's entry replaced, inserted (in id order) or removed, and
 * generatedAt (and count, when present) updated, as a splice of the file on disk: byte-identical to
 * serializing the patched document. null when the entry is the same (the file stays as it is).
 */
function patchIndex(
  file: IndexFile,
  layout: IndexLayout,
  modId: string,
  entry: unknown | null,
  generatedAt: string,
): SplicedContent | null {
  const place = locateEntry(file, layout, modId);
  const next = entry === null ? null : Buffer.from(entryText(entry));
  if (place.found && next && file.equalsAt(place.start, next) && next.length === place.end - place.start)
    return null;
  if (!place.found && next === null) return null;
  type Part = Buffer | { start: number; end: number };
  const range = (start: number, end: number): Part[] => (end > start ? [{ start, end }] : []);
  let body: Part[];
  let countChange = 0;
  const COMMA = Buffer.from(",");
  if (place.found && next !== null) {
    body = [...range(layout.arrayStart, place.start), next, ...range(place.end, layout.arrayClose)];
  } else if (place.found) {
    countChange = -1;
    let before = { start: layout.arrayStart, end: place.start };
    let after = { start: place.end, end: layout.arrayClose };
    // Drop the entry with one of the commas around it.
    if (after.end > after.start && file.read(after.start, after.start + 1)[0] === 44 /* , */)
      after = { ...after, start: after.start + 1 };
    else if (before.end > before.start && file.read(before.end - 1, before.end)[0] === 44)
      before = { ...before, end: before.end - 1 };
    body = [...range(before.start, before.end), ...range(after.start, after.end)];
  } else {
    countChange = 1;
    const before = range(layout.arrayStart, place.start);
    const after = range(place.start, layout.arrayClose);
    body = layout.empty
      ? [next!]
      : after.length === 0
        ? [...before, COMMA, next!]
        : [...before, next!, COMMA, ...after];
  }
  let head = layout.head.replace(
    /\n {2}"generatedAt": "[^"]*"/,
    `\n  "generatedAt": ${JSON.stringify(generatedAt)}`,
  );
  if (typeof layout.header.count === "number")
    head = head.replace(/\n {2}"count": \d+,/, `\n  "count": ${layout.header.count + countChange},`);
  const empty = body.length === 0;
  return {
    splice: {
      source: file.path,
      expect: file.stat,
      parts: [Buffer.from(head), ...body, empty ? EMPTY_END : DOCUMENT_END],
    },
  };
}

/** A splice made whole (the rare paths that must parse the patched document). */
function materialize(file: IndexFile, content: SplicedContent | null): Buffer {
  if (!content) return file.readAll();
  return Buffer.concat(
    content.splice.parts.map((part) => (part instanceof Uint8Array ? part : file.read(part.start, part.end))),
  );
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
