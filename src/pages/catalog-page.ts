import type { CatalogDocument, CatalogMod } from "../contracts/catalog.ts";
import { buildLabel, compatibilityOf, type GameBuildMatrix } from "./compatibility.ts";
import { groupDigits, plural } from "./format.ts";
import { html, SafeHtml } from "./html.ts";
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

/** The page from its items, already in page order (a publication reuses the other mods' markup). */
export function renderCatalogPageItems(
  ctx: PageContext,
  catalog: Pick<CatalogDocument, "game" | "supportedGameBuilds">,
  items: readonly CatalogPageItem[],
  matrix: GameBuildMatrix,
): string {
  const tagCounts = new Map<string, number>();
  for (const item of items) for (const tag of item.tags) tagCounts.set(tag, (tagCounts.get(tag) ?? 0) + 1);
  const tags = [...tagCounts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const builds = [...new Set([...catalog.supportedGameBuilds, ...items.flatMap((item) => item.builds)])];
  const supported = catalog.supportedGameBuilds;
  const count = items.length;
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
${items.map((item) => item.markup)}</ol>`;
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
const ITEM =
  /^<li data-tags="([^"]*)" data-builds="([^"]*)"><h2><a href="mods\/([a-z0-9-]+)\/">([^<]*)<\/a><\/h2>/;

/**
 * The items of a catalog page as renderCatalogPage wrote it (markup kept byte for byte), or null
 * when the page has another shape: the caller renders it from the catalog then.
 */
export function readCatalogPageItems(page: string): CatalogPageItem[] | null {
  const open = '<ol id="mods" class="mods">\n';
  const start = page.indexOf(open);
  const end = page.indexOf("</ol>", start);
  if (start === -1 || end === -1) return null;
  const list = page.slice(start + open.length, end);
  if (list === "") return [];
  if (!list.endsWith("</li>\n")) return null;
  const items: CatalogPageItem[] = [];
  // A list item ends at "</li>\n": user text is escaped, so it cannot contain that sequence.
  const parts = list.split("</li>\n");
  parts.pop();
  for (const part of parts) {
    const markup = `${part}</li>\n`;
    const match = ITEM.exec(markup);
    if (!match) return null;
    items.push({
      id: match[3]!,
      name: unescapeHtml(match[4]!),
      tags: match[1] === "" ? [] : unescapeHtml(match[1]!).split(" "),
      builds: match[2] === "" ? [] : unescapeHtml(match[2]!).split(" "),
      markup: new SafeHtml(markup),
    });
  }
  return items;
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
