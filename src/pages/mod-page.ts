import type { CatalogDocument, ModDetailDocument, VersionRecord } from "../contracts/catalog.ts";
import { buildLabel, compatibilityOf, type GameBuildMatrix } from "./compatibility.ts";
import { formatBytes, formatDate, groupDigits } from "./format.ts";
import { type HtmlPart, html, link, pageHref, type SafeHtml } from "./html.ts";
import { type PageContext, renderPage } from "./layout.ts";

const ROOT = "../../";

/** Plain text with its line breaks kept (CSS white-space: pre-line); never parsed as markup. */
function plainText(text: string): SafeHtml {
  return html`<div class="text">${text}</div>`;
}

/** Which mod ids the catalog lists (a Set, or a render's own lookup). */
export type ListedMods = Pick<ReadonlySet<string>, "has">;

function dependencyList(version: VersionRecord, listed: ListedMods): SafeHtml {
  if (version.dependencies.length === 0) return html`None`;
  return html`<ul class="deps">${version.dependencies.map(
    (dep) =>
      html`<li>${listed.has(dep.modId) ? html`<a href="../${dep.modId}/">${dep.modId}</a>` : html`${dep.modId} <span class="note">(not in this catalog)</span>`} <code>${dep.versionRange}</code>${dep.optional ? " (optional)" : ""}</li>`,
  )}</ul>`;
}

function downloadLink(ctx: PageContext, version: VersionRecord, label: HtmlPart): SafeHtml {
  if (!version.downloadEnabled) return html`<span>Download not enabled</span>`;
  const href = pageHref(version.packageUrl, ctx.baseUrl, ROOT);
  if (href === null) return html`<span>Download link refused (not an https: URL)</span>`;
  return html`<a class="button" href="${href}">${label}</a>`;
}

function versionSection(
  ctx: PageContext,
  mod: ModDetailDocument,
  version: VersionRecord,
  matrix: GameBuildMatrix,
  listed: ListedMods,
): SafeHtml {
  const compat = compatibilityOf(matrix, version.targetGameBuild);
  const id = `v${version.version}`;
  const latest = version.version === mod.latestVersion;
  return html`<article class="version" id="${id}" aria-labelledby="${id}-h">
<h3 id="${id}-h">${version.version}${latest ? html` <span class="badge">Latest</span>` : ""}${version.status === "superseded" ? html` <span class="badge muted">Superseded</span>` : ""}</h3>
<dl class="facts">
<dt>Published</dt><dd><time datetime="${version.publishedAt}">${formatDate(version.publishedAt)}</time></dd>
<dt>Game build</dt><dd><span class="compat-${compat.kind}">${compat.label}</span> — ${compat.sentence}</dd>
<dt>Size</dt><dd>${formatBytes(version.packageSizeBytes)} (${groupDigits(version.packageSizeBytes)} bytes)</dd>
<dt>File</dt><dd><code>${version.fileName}</code></dd>
<dt>SHA-256</dt><dd><code class="hash">${version.sha256}</code></dd>
<dt>Dependencies</dt><dd>${dependencyList(version, listed)}</dd>
<dt>Download</dt><dd>${downloadLink(ctx, version, html`Download ${version.fileName}`)}</dd>
</dl>
<h4>Release notes</h4>
${plainText(version.releaseNotes)}
</article>
`;
}

/** The ids of every mod the catalog lists: which dependencies a mod page can link to. */
export function listedModIds(catalog: Pick<CatalogDocument, "mods">): ReadonlySet<string> {
  return new Set(catalog.mods.map((m) => m.id));
}

/**
 * One mod's page. `listed` is listedModIds(catalog): a caller rendering many pages from one catalog
 * (the full build) makes it once, since building it per page made a build quadratic in the mods.
 */
export function renderModPage(
  ctx: PageContext,
  mod: ModDetailDocument,
  catalog: Pick<CatalogDocument, "supportedGameBuilds" | "mods">,
  matrix: GameBuildMatrix,
  listed: ListedMods = listedModIds(catalog),
): string {
  const latest = mod.versions[0];
  const authors = mod.authors.map(
    (a, i) =>
      html`${i > 0 ? ", " : ""}${a.url ? link(a.url, a.name, ctx.baseUrl, ROOT) : a.name}${a.github ? html` (${link(`https://github.com/${a.github}`, `@${a.github}`, ctx.baseUrl, ROOT)})` : ""}`,
  );
  const links = (
    [
      ["Homepage", mod.links.homepage],
      ["Source code", mod.links.source],
      ["Issue tracker", mod.links.issues],
    ] as const
  ).filter(([, url]) => url !== undefined);
  const supported = catalog.supportedGameBuilds;
  const main = html`<nav class="crumbs" aria-label="Breadcrumb"><a href="${ROOT}">Mods</a> › <span aria-current="page">${mod.name}</span></nav>
<h1>${mod.name}</h1>
<p class="summary">${mod.summary}</p>
${latest ? html`<p class="download">${downloadLink(ctx, latest, html`Download ${latest.version} (${formatBytes(latest.packageSizeBytes)})`)}</p>\n` : ""}<dl class="facts">
<dt>Latest version</dt><dd>${mod.latestVersion}</dd>
<dt>${mod.authors.length === 1 ? "Author" : "Authors"}</dt><dd>${authors}</dd>
${mod.tags.length > 0 ? html`<dt>Tags</dt><dd>${mod.tags.map((t, i) => html`${i > 0 ? ", " : ""}<a href="${ROOT}?tag=${encodeURIComponent(t)}">${t}</a>`)}</dd>\n` : ""}<dt>Updated</dt><dd><time datetime="${mod.updatedAt}">${formatDate(mod.updatedAt)}</time></dd>
${mod.license ? html`<dt>License</dt><dd>${mod.license}</dd>\n` : ""}${links.length > 0 ? html`<dt>Links</dt><dd>${links.map(([label, url], i) => html`${i > 0 ? " · " : ""}${link(url, label, ctx.baseUrl, ROOT)}`)}</dd>\n` : ""}<dt>Mod id</dt><dd><code>${mod.id}</code></dd>
<dt>Data</dt><dd><a href="${ROOT}api/v1/mods/${mod.id}/index.json">detail JSON</a> · <a href="${ROOT}api/v1/mods/${mod.id}/versions.json">versions JSON</a></dd>
</dl>
<section aria-labelledby="about-h">
<h2 id="about-h">Description</h2>
${mod.description.trim() === "" ? html`<p>${mod.summary}</p>` : plainText(mod.description)}
</section>
<section aria-labelledby="versions-h">
<h2 id="versions-h">Versions</h2>
<p>${mod.versions.length === 1 ? "One version" : `${groupDigits(mod.versions.length)} versions`}, newest first. ${
    supported.length > 0
      ? html`Current supported game ${supported.length === 1 ? "build" : "builds"}: ${supported.map((b, i) => html`${i > 0 ? ", " : ""}${buildLabel(matrix, b)}`)}.`
      : "No game build is currently validated."
  } Check a download against its SHA-256 before installing it by hand; the mod manager does this for you.</p>
${mod.versions.map((v) => versionSection(ctx, mod, v, matrix, listed))}</section>`;
  return renderPage(ctx, {
    title: mod.name,
    root: ROOT,
    section: "mods",
    description: mod.summary,
    main,
  });
}
