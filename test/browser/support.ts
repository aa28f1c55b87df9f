import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { loadSiteInputs, renderSite, writeSite } from "../../src/catalog/site.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { createAppContext } from "../../src/http/app.ts";
import type { AppContext } from "../../src/http/context.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import { REPO_ROOT, type tempProject } from "../lib/project.ts";

export const CHROMIUM_PATH = "/usr/bin/chromium";
/** Locally the browser suites may skip when Debian's Chromium is absent; in CI they run (and fail). */
export const SKIP_BROWSER = process.env.CI !== "true" && !existsSync(CHROMIUM_PATH);

export const ARTIFACTS_DIR = join(REPO_ROOT, "test", "artifacts");
export const SCREENSHOTS_DIR = join(REPO_ROOT, "docs", "screenshots");

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-dev-shm-usage",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-quic",
    ],
  });
}

/**
 * Saves a full-page screenshot under test/artifacts/. With SVC_UPDATE_SCREENSHOTS=1 the README
 * screenshots (docs/screenshots/<readmeName>.png) are refreshed from the same capture.
 */
export async function screenshot(page: Page, name: string, readmeName?: string): Promise<string> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const path = join(ARTIFACTS_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  if (readmeName && process.env.SVC_UPDATE_SCREENSHOTS === "1") {
    mkdirSync(SCREENSHOTS_DIR, { recursive: true });
    copyFileSync(path, join(SCREENSHOTS_DIR, `${readmeName}.png`));
  }
  return path;
}

/** Uncaught errors and console errors (CSP violations land here) of a page. */
export function collectPageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(`pageerror: ${error.message}`));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(`console: ${message.text()} (${message.location().url})`);
  });
  return errors;
}

export interface Portal {
  origin: string;
  app: AppContext;
  close(): Promise<void>;
}

/**
 * The real local portal on loopback port 0: svc build's site, the router and the backend routes
 * over PGlite in the project folder, developer email mode return-token (tokens in responses).
 */
export async function startPortal(project: ReturnType<typeof tempProject>): Promise<Portal> {
  const siteDir = project.site("");
  writeSite(siteDir, renderSite(loadSiteInputs(project.config, join(project.root, "records")), siteDir));
  const app = await createAppContext({
    config: project.config,
    settings: parseSettings({ SVC_DEV_EMAIL: "return-token" }, { dataDir: join(project.root, ".data") }),
    siteDir,
    log: () => {},
  });
  const server: Server = createPortalServer(app);
  const bound = await listen(server, 0, "127.0.0.1");
  return {
    origin: `http://127.0.0.1:${bound.port}`,
    app,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await app.store?.close();
    },
  };
}
