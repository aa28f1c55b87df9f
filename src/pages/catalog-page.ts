import type { CatalogDocument, CatalogMod } from "../contracts/catalog.ts";
import { buildLabel, compatibilityOf, type GameBuildMatrix } from "./compatibility.ts";
import { groupDigits, plural } from "./format.ts";
import { html, type SafeHtml } from "./html.ts";
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

export function renderCatalogPage(
  ctx: PageContext,
  catalog: CatalogDocument,
  matrix: GameBuildMatrix,
): string {
  const mods = [...catalog.mods].sort(byName);
  const tagCounts = new Map<string, number>();
  for (const mod of mods) for (const tag of mod.tags) tagCounts.set(tag, (tagCounts.get(tag) ?? 0) + 1);
  const tags = [...tagCounts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const builds = [
    ...new Set([
      ...catalog.supportedGameBuilds,
      ...mods.flatMap((m) => m.versions.map((v) => v.targetGameBuild)),
    ]),
  ];
  const supported = catalog.supportedGameBuilds;
  const main = html`<h1>Mods for ${catalog.game.name}</h1>
<p>${plural(mods.length, "mod")} you can install with the mod manager. ${
    supported.length > 0
      ? html`Supported game ${supported.length === 1 ? "build" : "builds"}: ${supported.map((b, i) => html`${i > 0 ? ", " : ""}<strong>${buildLabel(matrix, b)}</strong>`)}.`
      : "No game build is currently validated."
  }</p>
<search><form id="filters" class="filters" aria-label="Filter mods" hidden>
<div><label for="q">Search by name</label><input id="q" name="q" type="search" autocomplete="off" spellcheck="false"></div>
<div><label for="tag">Tag</label><select id="tag" name="tag"><option value="">Any tag</option>${tags.map(([tag, count]) => html`<option value="${tag}">${tag} (${groupDigits(count)})</option>`)}</select></div>
<div><label for="build">Game build</label><select id="build" name="build"><option value="">Any game build</option>${builds.map((b) => html`<option value="${b}">${buildLabel(matrix, b)}${supported.includes(b) ? " — supported" : ""}</option>`)}</select></div>
<div><button type="reset">Clear filters</button></div>
</form></search>
<p id="count" class="count" role="status">${mods.length === 0 ? "No mods have been published yet." : `Showing all ${plural(mods.length, "mod")}.`}</p>
<ol id="mods" class="mods">
${mods.map((mod) => modItem(mod, matrix))}</ol>`;
  return renderPage(ctx, {
    title: "Mods",
    root: "",
    section: "mods",
    description: `Mods for ${catalog.game.name}: search by name, tag and game build.`,
    scripts: ["catalog.js"],
    main,
  });
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
