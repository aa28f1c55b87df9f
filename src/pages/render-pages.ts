import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { PortalConfig } from "../config/portal-config.ts";
import type { CatalogDocument, ModDetailDocument } from "../contracts/catalog.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import {
  renderAccountHomePage,
  renderConfirmPage,
  renderSignInPage,
  renderSignUpPage,
  renderVerifyPage,
} from "./account-pages.ts";
import { renderCatalogPage, renderModsRedirectPage } from "./catalog-page.ts";
import type { GameBuildMatrix } from "./compatibility.ts";
import type { PageContext } from "./layout.ts";
import { renderModPage } from "./mod-page.ts";
import { renderModerationQueuePage, renderModerationReviewPage } from "./moderation-pages.ts";
import { type ReadinessView, renderStatusPage } from "./status-page.ts";
import { listFilesUnder } from "../catalog/atomic-files.ts";

/** Site-relative paths of the generated pages and assets. */
export const PAGE_PATHS = {
  catalog: "index.html",
  modsIndex: "mods/index.html",
  modPage: (modId: string) => `mods/${modId}/index.html`,
  status: "status/index.html",
  account: "account/index.html",
  signUp: "account/signup/index.html",
  verify: "account/verify/index.html",
  signIn: "account/signin/index.html",
  confirm: "account/confirm/index.html",
  moderationQueue: "moderation/index.html",
  moderationReview: "moderation/review/index.html",
  asset: (name: string) => `assets/${name}`,
} as const;

/**
 * What the pages own below site/: svc build writes these, removes what it no longer produces, and
 * svc check fails on hand edits. site/api (the JSON) and site/downloads are not pages.
 */
export const PAGE_ROOTS = ["index.html", "mods", "status", "account", "moderation", "assets"] as const;

/** Client files, copied byte for byte from src/pages/assets (formatted and linted there). */
export const ASSET_FILES = [
  "site.css",
  "icon.svg",
  "api.js",
  "catalog.js",
  "account.js",
  "moderation.js",
] as const;

const ASSET_DIR = join(import.meta.dirname, "assets");

export function pageContext(config: PortalConfig): PageContext {
  return {
    portalName: config.portal.name,
    gameName: config.game.name,
    baseUrl: config.baseUrl,
    apiBaseUrl: config.deployment.apiBaseUrl,
  };
}

function parse<T>(files: ReadonlyMap<string, string>, path: string): T | undefined {
  const text = files.get(path);
  return text === undefined ? undefined : (JSON.parse(text) as T);
}

/**
 * Every page, from the very documents the build is about to write (path -> text of site/api/v1),
 * so a page can never disagree with the JSON. Detail pages are rendered for the detail documents
 * present: all of them in a full build, the affected mods' in an incremental publication.
 */
export function renderPages(files: ReadonlyMap<string, string>, config: PortalConfig): Map<string, string> {
  const ctx = pageContext(config);
  const pages = new Map<string, string>();
  const catalog = parse<CatalogDocument>(files, SITE_PATHS.catalog);
  const matrix = parse<GameBuildMatrix>(files, SITE_PATHS.gameBuilds) ?? {
    builds: [],
    supportedGameBuilds: [],
  };
  const readiness = parse<ReadinessView>(files, SITE_PATHS.readiness);
  if (catalog) {
    pages.set(PAGE_PATHS.catalog, renderCatalogPage(ctx, catalog, matrix));
    for (const mod of catalog.mods) {
      const detail = parse<ModDetailDocument>(files, SITE_PATHS.modDetail(mod.id));
      if (detail) pages.set(PAGE_PATHS.modPage(mod.id), renderModPage(ctx, detail, catalog, matrix));
    }
  }
  pages.set(PAGE_PATHS.modsIndex, renderModsRedirectPage(ctx));
  if (readiness) pages.set(PAGE_PATHS.status, renderStatusPage(ctx, readiness));
  pages.set(PAGE_PATHS.account, renderAccountHomePage(ctx));
  pages.set(PAGE_PATHS.signUp, renderSignUpPage(ctx));
  pages.set(PAGE_PATHS.verify, renderVerifyPage(ctx));
  pages.set(PAGE_PATHS.signIn, renderSignInPage(ctx));
  pages.set(PAGE_PATHS.confirm, renderConfirmPage(ctx));
  pages.set(PAGE_PATHS.moderationQueue, renderModerationQueuePage(ctx));
  pages.set(PAGE_PATHS.moderationReview, renderModerationReviewPage(ctx));
  for (const name of ASSET_FILES)
    pages.set(PAGE_PATHS.asset(name), readFileSync(join(ASSET_DIR, name), "utf8"));
  return pages;
}

/** Every page file currently on disk (relative to the site root), for stale removal and svc check. */
export function listPageFiles(siteDir: string): string[] {
  return listFilesUnder(siteDir, PAGE_ROOTS);
}
