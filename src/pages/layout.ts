import { type HtmlPart, html, type SafeHtml } from "./html.ts";

/** What every page needs to know about the portal (from portal.config.json). */
export interface PageContext {
  portalName: string;
  gameName: string;
  baseUrl: string;
  /** Origin (and path) of the API layer when it is deployed apart from the pages; null: same origin. */
  apiBaseUrl: string | null;
}

export type NavSection = "mods" | "status" | "account" | "releases" | "moderation" | "admin" | null;

export interface PageOptions {
  title: string;
  /** Relative path from the page to the site root: "" at the root, "../" one level down. */
  root: string;
  section: NavSection;
  description?: string;
  /** Module scripts under assets/, by file name. */
  scripts?: string[];
  /** Pages that carry one-time tokens in their URL never send a Referer. */
  noReferrer?: boolean;
  main: SafeHtml;
}

function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return "";
  }
}

/**
 * The Content-Security-Policy of every page: scripts and styles only from the site's own files (no
 * inline script or style anywhere), API calls only to the site and the configured API origin. It is
 * a second line behind escaping: even markup that slipped through could not run.
 */
export function contentSecurityPolicy(ctx: PageContext): string {
  const api = ctx.apiBaseUrl ? origin(ctx.apiBaseUrl) : "";
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self'",
    `connect-src 'self'${api ? ` ${api}` : ""}`,
    "form-action 'self'",
    "base-uri 'none'",
  ].join("; ");
}

const NAV: Array<{ section: Exclude<NavSection, null>; label: string; path: string }> = [
  { section: "mods", label: "Mods", path: "" },
  { section: "status", label: "Status", path: "status/" },
  { section: "account", label: "Account", path: "account/" },
  { section: "releases", label: "Your releases", path: "releases/" },
  { section: "moderation", label: "Moderation", path: "moderation/" },
  { section: "admin", label: "Admin", path: "admin/" },
];

export function renderPage(ctx: PageContext, options: PageOptions): string {
  const home = options.root || "./";
  const nav = NAV.map(
    (item) =>
      html`<li><a href="${item.path ? options.root + item.path : home}"${
        item.section === options.section ? html` aria-current="page"` : ""
      }>${item.label}</a></li>`,
  );
  const scripts: HtmlPart[] = (options.scripts ?? []).map(
    (name) => html`<script type="module" src="${options.root}assets/${name}"></script>\n`,
  );
  const page = html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="${contentSecurityPolicy(ctx)}">
<meta name="referrer" content="${options.noReferrer ? "no-referrer" : "strict-origin-when-cross-origin"}">
<meta name="svc-api-base" content="${ctx.apiBaseUrl ?? ""}">
<title>${options.title} · ${ctx.portalName}</title>
${options.description ? html`<meta name="description" content="${options.description}">\n` : ""}<link rel="icon" href="${options.root}assets/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${options.root}assets/site.css">
${scripts}</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site">
<a class="brand" href="${home}">${ctx.portalName}</a>
<nav aria-label="Site"><ul>${nav}</ul></nav>
</header>
<main id="main" tabindex="-1">
${options.main}
</main>
<footer class="site"><p>${ctx.portalName} · mods for ${ctx.gameName} · machine-readable catalog: <a href="${options.root}api/v1/catalog.json">api/v1/catalog.json</a> · <a href="${options.root}status/">readiness</a></p></footer>
</body>
</html>
`;
  return page.text;
}
