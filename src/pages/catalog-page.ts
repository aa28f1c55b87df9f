import type { CatalogDocument, CatalogMod } from "../contracts/catalog.ts";
import { buildLabel, compatibilityOf, type GameBuildMatrix } from "./compatibility.ts";
import { groupDigits, plural } from "./format.ts";
import { type HtmlPart, html, type SafeHtml } from "./html.ts";
import { type PageContext, renderPage } from "./layout.ts";

function byName(a: CatalogMod, b: CatalogMod): number {
  const x = a.name.toLowerCase();
  const y = b.name.toLowerCase();
  return x < y ? -1 : x > y ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

/**
 * One list item per mod, kept small because a 10,000-mod catalog is one page: the name links to
 * the detail page; data-tags and data-builds drive the client-side filter.
 */
function modItem(mod: CatalogMod, matrix: GameBuildMatrix): SafeHtml {
  const latest = mod.versions[0];
  const builds = [...new Set(mod.versions.map((v) => v.targetGameBuild))];
  const compat = latest ? compatibilityOf(matrix, latest.targetGameBuild) : null;
  const authors = mod.authors.map((a) => a.name).join(", ");
  return html`<li data-tags="${mod.tags.join(" ")}" data-builds="${builds.join(" ")}"><h2><a href="mods/${mod.id}/">${mod.name}</a></h2><p>${mod.summary}</p><p class="meta">${mod.latestVersion} · ${authors}${mod.tags.length > 0 ? html` · ${mod.tags.join(", ")}` : ""}${compat ? html` · <span class="compat-${compat.kind}">${compat.label}: build ${latest!.targetGameBuild}</span>` : ""}</p></li>
`;
}

/** One mod of the catalog page: its list item and what the page's filters count. */
export interface CatalogPageItem {
  id: string;
  name: string;
  tags: string[];
  builds: string[];
  markup: SafeHtml;
}

export function catalogPageItem(mod: CatalogMod, matrix: GameBuildMatrix): CatalogPageItem {
  return {
    id: mod.id,
    name: mod.name,
    tags: mod.tags,
    builds: [...new Set(mod.versions.map((v) => v.targetGameBuild))],
    markup: modItem(mod, matrix),
  };
}

/** The catalog page's order: by name (case-insensitive), then id. */
export function compareCatalogPageItems(
  a: Pick<CatalogPageItem, "id" | "name">,
  b: Pick<CatalogPageItem, "id" | "name">,
) {
  return byName(a as CatalogMod, b as CatalogMod);
}

export function renderCatalogPage(
  ctx: PageContext,
  catalog: CatalogDocument,
  matrix: GameBuildMatrix,
): string {
  const items = [...catalog.mods].sort(byName).map((mod) => catalogPageItem(mod, matrix));
  return renderCatalogPageItems(ctx, catalog, items, matrix);
}

/** What the page's header counts over all its items: their number, tags and game builds. */
export interface CatalogPageSummary {
  count: number;
  tagCounts: ReadonlyMap<string, number>;
  /** Every item's game builds, in order of first appearance in the list. */
  builds: readonly string[];
}

/** The page from its items, already in page order. */
export function renderCatalogPageItems(
  ctx: PageContext,
  catalog: Pick<CatalogDocument, "game" | "supportedGameBuilds">,
  items: readonly CatalogPageItem[],
  matrix: GameBuildMatrix,
): string {
  const tagCounts = new Map<string, number>();
  for (const item of items) for (const tag of item.tags) tagCounts.set(tag, (tagCounts.get(tag) ?? 0) + 1);
  const summary = {
    count: items.length,
    tagCounts,
    builds: [...new Set(items.flatMap((item) => item.builds))],
  };
  return renderCatalogPageFrame(
    ctx,
    catalog,
    summary,
    matrix,
    items.map((item) => item.markup),
  );
}

function renderCatalogPageFrame(
  ctx: PageContext,
  catalog: Pick<CatalogDocument, "game" | "supportedGameBuilds">,
  summary: CatalogPageSummary,
  matrix: GameBuildMatrix,
  list: HtmlPart,
): string {
  const tags = [...summary.tagCounts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const builds = [...new Set([...catalog.supportedGameBuilds, ...summary.builds])];
  const supported = catalog.supportedGameBuilds;
  const count = summary.count;
  const main = html`<h1>Mods for ${catalog.game.name}</h1>
<p>${plural(count, "mod")} you can install with the mod manager. ${
    supported.length > 0
      ? html`Supported game ${supported.length === 1 ? "build" : "builds"}: ${supported.map((b, i) => html`${i > 0 ? ", " : ""}<strong>${buildLabel(matrix, b)}</strong>`)}.`
      : "No game build is currently validated."
  }</p>
<search><form id="filters" class="filters" aria-label="Filter mods" hidden>
<div><label for="q">Search by name</label><input id="q" name="q" type="search" autocomplete="off" spellcheck="false"></div>
<div><label for="tag">Tag</label><select id="tag" name="tag"><option value="">Any tag</option>${tags.map(([tag, n]) => html`<option value="${tag}">${tag} (${groupDigits(n)})</option>`)}</select></div>
<div><label for="build">Game build</label><select id="build" name="build"><option value="">Any game build</option>${builds.map((b) => html`<option value="${b}">${buildLabel(matrix, b)}${supported.includes(b) ? " — supported" : ""}</option>`)}</select></div>
<div><button type="reset">Clear filters</button></div>
</form></search>
<p id="count" class="count" role="status">${count === 0 ? "No mods have been published yet." : `Showing all ${plural(count, "mod")}.`}</p>
<ol id="mods" class="mods">
${list}</ol>`;
  return renderPage(ctx, {
    title: "Mods",
    root: "",
    section: "mods",
    description: `Mods for ${catalog.game.name}: search by name, tag and game build.`,
    scripts: ["catalog.js"],
    main,
  });
}

const UNESCAPES: Record<string, string> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&#39;": "'",
};
const unescapeHtml = (text: string) => text.replace(/&(amp|lt|gt|quot|#39);/g, (e) => UNESCAPES[e]!);

const LIST_OPEN = Buffer.from('<ol id="mods" class="mods">\n');
const LIST_CLOSE = Buffer.from("</ol>");
const ITEM_END = Buffer.from("</li>\n");
// An item is one line: user text is escaped, so "<" (and with it these sequences) only ever comes
// from the markup of modItem, and every item starts on a new line.
const ITEM_START = Buffer.from('\n<li data-tags="');
const ITEM =
  /^<li data-tags="([^"]*)" data-builds="([^"]*)"><h2><a href="mods\/([a-z0-9-]+)\/">([^<]*)<\/a><\/h2>/;
/** Where the frame's list goes; a NUL never appears in a rendered page. */
const LIST_PLACEHOLDER = "\u0000svc-catalog-list\u0000";

interface ParsedItem {
  id: string;
  name: string;
  tags: string;
  builds: string;
}

/** The item starting at `start` (its first line, up to the name), or null when it has another shape. */
function parseItemAt(page: Buffer, start: number, limit: number): ParsedItem | null {
  const nameEnd = page.indexOf("</a></h2>", start);
  if (nameEnd === -1 || nameEnd >= limit) return null;
  const match = ITEM.exec(page.toString("utf8", start, nameEnd + 9));
  return match ? { tags: match[1]!, builds: match[2]!, id: match[3]!, name: unescapeHtml(match[4]!) } : null;
}

/**
 * The catalog page with one mod's list item replaced, inserted (in page order) or removed, spliced
 * into the page on disk as bytes: the other 10,000 items are neither parsed nor copied into strings.
 * The header's counts are carried from the old header and moved by the one item (readPageSummary),
 * and recounted from the items' data attributes only when that header cannot be read back exactly.
 * Byte-identical to renderCatalogPage over the same catalog (a test holds it to that); null when the
 * page is not in the shape renderCatalogPage writes, and the caller renders it whole.
 */
export function spliceCatalogPage(
  ctx: PageContext,
  catalog: Pick<CatalogDocument, "game" | "supportedGameBuilds">,
  page: Buffer,
  modId: string,
  mod: CatalogMod | null,
  matrix: GameBuildMatrix,
): Buffer | null {
  const parts = catalogPageSplice(ctx, catalog, page, modId, mod, matrix);
  return parts && (parts.length === 1 && parts[0] === page ? page : Buffer.concat(parts));
}

/**
 * spliceCatalogPage's page as its parts, in order: runs of the page's own bytes (subarrays of
 * `page`, never copied) and the new header, item and footer; `[page]` itself when the item is not
 * there and does not come in. A caller that writes the page copies the runs from the file it read
 * (15.6 MB at 50,000 mods) instead of concatenating a second copy in memory.
 */
export function catalogPageSplice(
  ctx: PageContext,
  catalog: Pick<CatalogDocument, "game" | "supportedGameBuilds">,
  page: Buffer,
  modId: string,
  mod: CatalogMod | null,
  matrix: GameBuildMatrix,
): Buffer[] | null {
  const open = page.indexOf(LIST_OPEN);
  if (open === -1) return null;
  const listStart = open + LIST_OPEN.length;
  const listEnd = page.indexOf(LIST_CLOSE, listStart);
  if (listEnd === -1) return null;
  if (listEnd > listStart && !page.subarray(listEnd - ITEM_END.length, listEnd).equals(ITEM_END)) return null;
  // Item starts: listStart, and every "<li" that follows a newline inside the list.
  const nextItem = (from: number) => {
    if (from <= listStart) return listStart < listEnd ? listStart : listEnd;
    const at = page.indexOf(ITEM_START, from - 1);
    return at === -1 || at + 1 >= listEnd ? listEnd : at + 1;
  };
  const itemEnd = (start: number) => page.indexOf(ITEM_END, start) + ITEM_END.length;

  const old = { start: -1, end: -1 };
  const anchor = page.indexOf(`"><h2><a href="mods/${modId}/">`, listStart);
  if (anchor !== -1 && anchor < listEnd) {
    old.start = page.lastIndexOf("\n", anchor) + 1;
    if (old.start < listStart) return null;
    old.end = itemEnd(old.start);
    if (parseItemAt(page, old.start, listEnd)?.id !== modId) return null;
  }

  const item = mod ? catalogPageItem(mod, matrix) : null;
  let insertAt = -1;
  if (item) {
    // Binary search over byte offsets (the items are in page order): O(log mods) items are read.
    // Invariant: every item starting before lo sorts at or before the new one; the first item at or
    // after hi sorts after it.
    let lo = listStart;
    let hi = listEnd;
    while (lo < hi) {
      const mid = lo + Math.floor((hi - lo) / 2);
      const at = nextItem(mid);
      if (at >= hi) {
        hi = mid;
        continue;
      }
      const other = parseItemAt(page, at, listEnd);
      if (!other) return null;
      if (compareCatalogPageItems(item, other) < 0) hi = at;
      else lo = at + 1;
    }
    insertAt = nextItem(lo);
  }

  const parts: Buffer[] = [];
  const markup = item ? Buffer.from(item.markup.text) : null;
  if (old.start === -1) {
    if (!markup) return [page];
    parts.push(page.subarray(listStart, insertAt), markup, page.subarray(insertAt, listEnd));
  } else if (!markup) {
    parts.push(page.subarray(listStart, old.start), page.subarray(old.end, listEnd));
  } else if (insertAt <= old.start) {
    parts.push(
      page.subarray(listStart, insertAt),
      markup,
      page.subarray(insertAt, old.start),
      page.subarray(old.end, listEnd),
    );
  } else {
    parts.push(
      page.subarray(listStart, old.start),
      page.subarray(old.end, insertAt),
      markup,
      page.subarray(insertAt, listEnd),
    );
  }
  const previous = readPageSummary(ctx, catalog, matrix, page, listStart, listEnd);
  const removed = old.start === -1 ? null : parseItemAt(page, old.start, listEnd);
  const summary =
    (previous && updateSummary(previous, catalog, parts, removed, item)) ?? summarizeList(parts);
  if (!summary) return null;
  const [before, after] = renderCatalogPageFrame(ctx, catalog, summary, matrix, LIST_PLACEHOLDER).split(
    LIST_PLACEHOLDER,
  );
  return [Buffer.from(before!), ...parts.filter((part) => part.length > 0), Buffer.from(after!)];
}

/** The words of a data-tags or data-builds attribute, as summarizeList splits them. */
const words = (attribute: string): string[] => (attribute === "" ? [] : attribute.split(" "));

/**
 * The summary the page's header shows, read back from the header itself (its count, the tag options
 * with their counts, the game builds after the supported ones), and only when rendering the frame
 * from it gives the page's very bytes around the list: a header this cannot read exactly is null, and
 * the caller recounts every item. The builds read are those of the list in order of first
 * appearance, less the supported builds (the frame lists those first whatever their order).
 */
function readPageSummary(
  ctx: PageContext,
  catalog: Pick<CatalogDocument, "game" | "supportedGameBuilds">,
  matrix: GameBuildMatrix,
  page: Buffer,
  listStart: number,
  listEnd: number,
): CatalogPageSummary | null {
  const head = page.toString("utf8", 0, listStart);
  const select = (id: string) => {
    const open = head.indexOf(`<select id="${id}" name="${id}">`);
    const close = open === -1 ? -1 : head.indexOf("</select>", open);
    return close === -1 ? null : head.slice(open, close);
  };
  const tagSelect = select("tag");
  const buildSelect = select("build");
  const status = /<p id="count" class="count" role="status">(?:Showing all ([\d,]+) mods?\.|No mods)/.exec(
    head,
  );
  if (tagSelect === null || buildSelect === null || !status) return null;
  const count = status[1] ? Number(status[1].replaceAll(",", "")) : 0;
  const tagCounts = new Map<string, number>();
  for (const [, value, n] of tagSelect.matchAll(/<option value="([^"]+)">[^<]* \(([\d,]+)\)<\/option>/g))
    tagCounts.set(unescapeHtml(value!), Number(n!.replaceAll(",", "")));
  const supported = new Set(catalog.supportedGameBuilds);
  const builds = [...buildSelect.matchAll(/<option value="([^"]+)">/g)]
    .map(([, value]) => unescapeHtml(value!))
    .filter((b) => !supported.has(b));
  const summary = { count, tagCounts, builds };
  const [before, after] = renderCatalogPageFrame(ctx, catalog, summary, matrix, LIST_PLACEHOLDER).split(
    LIST_PLACEHOLDER,
  );
  const exact =
    Buffer.byteLength(before!) === listStart &&
    page.subarray(0, listStart).equals(Buffer.from(before!)) &&
    page.subarray(listEnd).equals(Buffer.from(after!));
  return exact ? summary : null;
}

/**
 * The summary after one item left the list (`removed`) and one came in (`added`), from the one
 * before: the count and the tag counts move by those two items; the order of first appearance of
 * the builds is read from the new list's first items, until every build that can be in it has been
 * seen (a few items on a real catalog; the whole list only when a build has just left it). null when
 * the previous summary cannot be the list's (a tag count that would fall below zero).
 */
function updateSummary(
  previous: CatalogPageSummary,
  catalog: Pick<CatalogDocument, "supportedGameBuilds">,
  parts: readonly Buffer[],
  removed: ParsedItem | null,
  added: CatalogPageItem | null,
): CatalogPageSummary | null {
  const tagCounts = new Map(previous.tagCounts);
  for (const tag of removed ? words(unescapeHtml(removed.tags)) : []) {
    const n = (tagCounts.get(tag) ?? 0) - 1;
    if (n < 0) return null;
    if (n === 0) tagCounts.delete(tag);
    else tagCounts.set(tag, n);
  }
  for (const tag of added ? words(added.tags.join(" ")) : [])
    tagCounts.set(tag, (tagCounts.get(tag) ?? 0) + 1);
  const count = previous.count - (removed ? 1 : 0) + (added ? 1 : 0);
  const supported = new Set(catalog.supportedGameBuilds);
  const wanted = new Set(previous.builds);
  for (const build of added ? words(added.builds.join(" ")) : [])
    if (!supported.has(build)) wanted.add(build);
  const builds = firstAppearances(parts, wanted, supported);
  return builds && { count, tagCounts, builds };
}

/**
 * The builds of `wanted` in order of first appearance in the list (its parts, each a run of whole
 * items), read item by item until all of them are seen; null on another shape.
 */
function firstAppearances(
  parts: readonly Buffer[],
  wanted: ReadonlySet<string>,
  supported: ReadonlySet<string>,
): string[] | null {
  const seen: string[] = [];
  const found = new Set<string>();
  const attributes = new Set<string>();
  const BUILDS = Buffer.from('" data-builds="');
  for (const list of parts) {
    let at = 0;
    while (at < list.length && found.size < wanted.size) {
      const buildsStart = list.indexOf(BUILDS, at);
      if (buildsStart === -1) return null;
      const from = buildsStart + BUILDS.length;
      const buildsEnd = list.indexOf(34, from);
      const end = buildsEnd === -1 ? -1 : list.indexOf(ITEM_END, buildsEnd);
      if (end === -1) return null;
      const attribute = list.toString("utf8", from, buildsEnd);
      if (!attributes.has(attribute)) {
        attributes.add(attribute);
        for (const build of words(unescapeHtml(attribute))) {
          if (supported.has(build) || found.has(build)) continue;
          // A build the previous header did not list: it was not the list's; recount.
          if (!wanted.has(build)) return null;
          found.add(build);
          seen.push(build);
        }
      }
      at = end + ITEM_END.length;
    }
  }
  return seen;
}

/**
 * Counts the list's items, tags and builds from each item's data attributes; null on another shape.
 * The list comes in parts, each a run of whole items.
 */
function summarizeList(parts: readonly Buffer[]): CatalogPageSummary | null {
  // Many mods share one set of tags: each distinct attribute is decoded once.
  const tagSets = new Map<string, number>();
  const buildSets = new Set<string>();
  const TAGS = '<li data-tags="';
  const BUILDS = '" data-builds="';
  let count = 0;
  for (const list of parts) {
    let at = 0;
    while (at < list.length) {
      if (list.toString("latin1", at, at + TAGS.length) !== TAGS) return null;
      const tagsEnd = list.indexOf(34, at + TAGS.length);
      if (tagsEnd === -1 || list.toString("latin1", tagsEnd, tagsEnd + BUILDS.length) !== BUILDS) return null;
      const buildsEnd = list.indexOf(34, tagsEnd + BUILDS.length);
      if (buildsEnd === -1) return null;
      const tags = list.toString("utf8", at + TAGS.length, tagsEnd);
      tagSets.set(tags, (tagSets.get(tags) ?? 0) + 1);
      buildSets.add(list.toString("utf8", tagsEnd + BUILDS.length, buildsEnd));
      count++;
      const end = list.indexOf(ITEM_END, buildsEnd);
      if (end === -1) return null;
      at = end + ITEM_END.length;
    }
  }
  const tagCounts = new Map<string, number>();
  for (const [tags, n] of tagSets)
    if (tags !== "")
      for (const tag of unescapeHtml(tags).split(" ")) tagCounts.set(tag, (tagCounts.get(tag) ?? 0) + n);
  const builds = [...buildSets].flatMap((b) => (b === "" ? [] : unescapeHtml(b).split(" ")));
  return { count, tagCounts, builds: [...new Set(builds)] };
}

/** /mods/ has no list of its own: it points at the catalog browser. */
export function renderModsRedirectPage(ctx: PageContext): string {
  return renderPage(ctx, {
    title: "Mods",
    root: "../",
    section: "mods",
    main: html`<h1>Mods</h1>
<p>The catalog of mods is on the <a href="../">front page</a>.</p>`,
  });
}
