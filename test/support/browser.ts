import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { REPO_ROOT } from "./repo-root.ts";

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
