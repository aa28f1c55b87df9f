import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isLoopbackBaseUrl, type PortalConfig } from "../config/portal-config.ts";
import type { CatalogDocument, ModDetailDocument } from "../contracts/catalog.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import {
  renderAccountHomePage,
  renderConfirmPage,
  renderSignInPage,
  renderSignUpPage,
  renderVerifyPage,
} from "./account-pages.ts";
import { renderAdminAuditPage, renderAdminPublishPage, renderAdminRolesPage } from "./admin-pages.ts";
import {
  type CatalogPageItem,
  renderCatalogPage,
  renderCatalogPageItems,
  renderModsRedirectPage,
} from "./catalog-page.ts";
import type { GameBuildMatrix } from "./compatibility.ts";
import type { PageContext } from "./layout.ts";
import { type ListedMods, listedModIds, renderModPage } from "./mod-page.ts";
import { renderModerationQueuePage, renderModerationReviewPage } from "./moderation-pages.ts";
import {
  type ReleasePagesOptions,
  renderReleasesPage,
  renderSubmissionPage,
  renderUploadPage,
} from "./release-pages.ts";
import { type ReadinessView, renderStatusPage } from "./status-page.ts";
import { listFilesUnder } from "../lib/walk.ts";

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
  releases: "releases/index.html",
  upload: "releases/new/index.html",
  submission: "releases/submission/index.html",
  adminPublish: "admin/index.html",
  adminRoles: "admin/roles/index.html",
  adminAudit: "admin/audit/index.html",
  asset: (name: string) => `assets/${name}`,
} as const;

/**
 * What the pages own below site/: svc build writes these, removes what it no longer produces, and
 * svc check fails on hand edits. site/api (the JSON) and site/downloads are not pages.
 */
export const PAGE_ROOTS = [
  "index.html",
  "mods",
  "status",
  "account",
  "releases",
  "moderation",
  "admin",
  "assets",
] as const;

/** Client files, copied byte for byte from src/pages/assets (formatted and linted there). */
export const ASSET_FILES = [
  "site.css",
  "icon.svg",
  "api.js",
  "catalog.js",
  "account.js",
  "moderation.js",
  "review.js",
  "package.js",
  "releases.js",
  "admin.js",
  "status.js",
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

/**
 * The portal's documentation: as GitHub shows it (docs/ of the portal repository), or on a portal
 * on this machine (a loopback baseUrl) the guides its own server sends (src/http/guides.ts), since a
 * checkout's portal.config.json may still name the template's placeholder repository.
 */
export function docsUrl(config: PortalConfig, file: string): string {
  if (isLoopbackBaseUrl(config.baseUrl)) return `${config.baseUrl}/docs/${file}`;
  return `https://github.com/${config.portal.repository}/blob/${config.portal.defaultBranch ?? "main"}/docs/${file}`;
}

function releasePagesOptions(config: PortalConfig): ReleasePagesOptions {
  return {
    maxPackageBytes: config.limits.maxPackageBytes,
    validationGuideUrl: docsUrl(config, "validation.md"),
    moddersGuideUrl: docsUrl(config, "modders.md"),
  };
}

function parse<T>(files: ReadonlyMap<string, string>, path: string): T | undefined {
  const text = files.get(path);
  return text === undefined ? undefined : (JSON.parse(text) as T);
}

/**
 * The pages made one at a time, as the full build streams them: a mod's page beside its documents,
 * the home page from the catalog, then the others. Each is rendered from the very document the build
 * is about to write (as parsed from its text), so a page can never disagree with the JSON.
 */
export interface SitePages {
  /**
   * `listed`: whether the catalog lists a mod id, asked per dependency (made once: a set per page
   * was quadratic).
   */
  modPageRenderer(
    supportedGameBuilds: string[],
    matrix: GameBuildMatrix,
    listed: ListedMods,
  ): (detail: ModDetailDocument) => string;
  catalogPage(catalog: CatalogDocument, matrix: GameBuildMatrix): string;
  /** The home page from its items in page order (renderCatalogPage without the whole catalog). */
  catalogPageItems(
    catalog: Pick<CatalogDocument, "game" | "supportedGameBuilds">,
    items: readonly CatalogPageItem[],
    matrix: GameBuildMatrix,
  ): string;
  /** Every page that is neither the home page nor a mod's, and the assets. */
  otherPages(readiness: ReadinessView | undefined): Map<string, string>;
}

export function sitePages(config: PortalConfig): SitePages {
  const ctx = pageContext(config);
  return {
    modPageRenderer(supportedGameBuilds, matrix, listed) {
      const catalog = { supportedGameBuilds, mods: [] };
      return (detail) => renderModPage(ctx, detail, catalog, matrix, listed);
    },
    catalogPage: (catalog, matrix) => renderCatalogPage(ctx, catalog, matrix),
    catalogPageItems: (catalog, items, matrix) => renderCatalogPageItems(ctx, catalog, items, matrix),
    otherPages(readiness) {
      const pages = new Map<string, string>();
      pages.set(PAGE_PATHS.modsIndex, renderModsRedirectPage(ctx));
      if (readiness) pages.set(PAGE_PATHS.status, renderStatusPage(ctx, readiness));
      pages.set(PAGE_PATHS.account, renderAccountHomePage(ctx));
      pages.set(PAGE_PATHS.signUp, renderSignUpPage(ctx));
      pages.set(PAGE_PATHS.verify, renderVerifyPage(ctx));
      pages.set(PAGE_PATHS.signIn, renderSignInPage(ctx));
      pages.set(PAGE_PATHS.confirm, renderConfirmPage(ctx));
      pages.set(PAGE_PATHS.moderationQueue, renderModerationQueuePage(ctx));
      pages.set(PAGE_PATHS.moderationReview, renderModerationReviewPage(ctx));
      const releaseOptions = releasePagesOptions(config);
      pages.set(PAGE_PATHS.releases, renderReleasesPage(ctx));
      pages.set(PAGE_PATHS.upload, renderUploadPage(ctx, releaseOptions));
      pages.set(PAGE_PATHS.submission, renderSubmissionPage(ctx, releaseOptions));
      pages.set(PAGE_PATHS.adminPublish, renderAdminPublishPage(ctx));
      pages.set(PAGE_PATHS.adminRoles, renderAdminRolesPage(ctx));
      pages.set(PAGE_PATHS.adminAudit, renderAdminAuditPage(ctx));
      for (const name of ASSET_FILES)
        pages.set(PAGE_PATHS.asset(name), readFileSync(join(ASSET_DIR, name), "utf8"));
      return pages;
    },
  };
}

/**
 * Every page, from the very documents the build is about to write (path -> text of site/api/v1),
 * so a page can never disagree with the JSON. Detail pages are rendered for the detail documents
 * present: all of them in a full build, the affected mods' in an incremental publication.
 */
export function renderPages(files: ReadonlyMap<string, string>, config: PortalConfig): Map<string, string> {
  const pages = new Map<string, string>();
  const site = sitePages(config);
  const catalog = parse<CatalogDocument>(files, SITE_PATHS.catalog);
  const matrix = parse<GameBuildMatrix>(files, SITE_PATHS.gameBuilds) ?? {
    builds: [],
    supportedGameBuilds: [],
  };
  if (catalog) {
    pages.set(PAGE_PATHS.catalog, site.catalogPage(catalog, matrix));
    const modPage = site.modPageRenderer(catalog.supportedGameBuilds, matrix, listedModIds(catalog));
    for (const mod of catalog.mods) {
      const detail = parse<ModDetailDocument>(files, SITE_PATHS.modDetail(mod.id));
      if (detail) pages.set(PAGE_PATHS.modPage(mod.id), modPage(detail));
    }
  }
  for (const [path, text] of site.otherPages(parse<ReadinessView>(files, SITE_PATHS.readiness)))
    pages.set(path, text);
  return pages;
}

/** Every page file currently on disk (relative to the site root), for stale removal and svc check. */
export function listPageFiles(siteDir: string): string[] {
  return listFilesUnder(siteDir, PAGE_ROOTS);
}
