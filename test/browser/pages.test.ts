import { readFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSiteInputs, renderSite, writeSite } from "../../src/catalog/site.ts";
import type { CatalogDocument, ModDetailDocument } from "../../src/contracts/catalog.ts";
import { renderModPage } from "../../src/pages/mod-page.ts";
import { pageContext } from "../../src/pages/render-pages.ts";
import { tempProject } from "../support/temp-project.ts";
import type { BrowserDocument, BrowserElement, BrowserWindow, GetComputedStyle } from "./dom.ts";
import { hostileRecord, showcaseRecords } from "./fixtures.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER, screenshot } from "../support/browser.ts";
import { type BrowserPortal, startBrowserPortal } from "../support/browser-portal.ts";

declare const document: BrowserDocument;
declare const window: BrowserWindow;
declare const getComputedStyle: GetComputedStyle;

let browser: Browser;
let project: ReturnType<typeof tempProject>;
let portal: BrowserPortal;

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  browser = await launchBrowser();
  project = tempProject();
  for (const record of showcaseRecords()) project.addRecord(record);
  portal = await startBrowserPortal(project);
});
afterAll(async () => {
  await browser?.close();
  await portal?.close();
  project?.cleanup();
});

async function open(path: string, options: { javaScriptEnabled?: boolean } = {}) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 }, ...options });
  const page = await context.newPage();
  const errors = collectPageErrors(page);
  let dialogs = 0;
  page.on("dialog", async (dialog) => {
    dialogs++;
    await dialog.dismiss();
  });
  await page.goto(portal.origin + path);
  return { page, errors, dialogs: () => dialogs, close: () => context.close() };
}

const visibleMods = (page: Page) => page.locator("#mods > li:visible h2").allInnerTexts();

describe.skipIf(SKIP_BROWSER)("pages in Chromium", () => {
  it("catalog: every mod readable without JavaScript", async () => {
    const { page, close } = await open("/", { javaScriptEnabled: false });
    expect(await page.locator("#filters").isVisible()).toBe(false);
    expect(await visibleMods(page)).toEqual(["Better HUD", "Core Library", "Night Sky"]);
    await screenshot(page, "catalog-no-js");
    await close();
  });

  it("catalog: search by name, filter by tag and by game build, filters kept in the URL", async () => {
    const { page, errors, close } = await open("/");
    await expect.poll(() => page.locator("#filters").isVisible()).toBe(true);
    expect(await page.locator("#count").innerText()).toBe("Showing all 3 mods.");

    await page.getByLabel("Search by name").fill("hud");
    await expect.poll(() => visibleMods(page)).toEqual(["Better HUD"]);
    expect(await page.locator("#count").innerText()).toBe("Showing 1 mod of 3.");
    expect(new URL(page.url()).search).toBe("?q=hud");

    await page.getByLabel("Search by name").fill("");
    await page.getByLabel("Tag").selectOption("library");
    await expect.poll(() => visibleMods(page)).toEqual(["Core Library"]);

    await page.getByLabel("Tag").selectOption("");
    await page.getByLabel("Game build").selectOption("16000000");
    await expect.poll(() => visibleMods(page)).toEqual(["Night Sky"]);
    expect(await page.locator("#mods > li:visible .meta").innerText()).toContain(
      "Unknown build: build 16000000",
    );

    await page.getByLabel("Search by name").fill("zzz-nothing");
    await expect.poll(() => page.locator("#count").innerText()).toBe("No mod matches these filters.");

    // A filtered URL (as the tag links on detail pages make) opens already filtered.
    await page.goto(`${portal.origin}/?tag=ui&q=better`);
    await expect.poll(() => visibleMods(page)).toEqual(["Better HUD"]);
    await page.getByRole("button", { name: "Clear filters" }).click();
    await expect.poll(() => visibleMods(page)).toHaveLength(3);
    await page.goto(`${portal.origin}/`);
    await screenshot(page, "catalog", "catalog");
    expect(errors).toEqual([]);
    await close();
  });

  it("detail page: description, versions newest first with notes, dependencies, sizes, sha256, compatibility, downloads", async () => {
    const { page, errors, close } = await open("/mods/better-hud/");
    expect(await page.locator("h1").innerText()).toBe("Better HUD");
    expect(await page.locator("section[aria-labelledby=about-h] .text").innerText()).toBe(
      "Better HUD rearranges the heads-up display.\n\nPanels can be moved in the config file; the ammo counter shrinks to one line.",
    );
    const versions = page.locator("article.version");
    expect(await versions.locator("h3").allInnerTexts()).toEqual(["1.1.0 Latest", "1.0.0 Superseded"]);
    const latest = versions.first();
    expect(await latest.locator(".text").innerText()).toBe(
      "Movable panels.\nCompact ammo counter.\nFixes the minimap overlap.",
    );
    const facts = await latest.locator("dl").innerText();
    expect(facts).toContain("186 KiB (190,112 bytes)");
    expect(facts).toContain("c".repeat(64));
    expect(facts).toContain("Compatible");
    expect(facts).toContain(
      "Built for game build 17000000 (Current public build), a currently supported build.",
    );
    expect(
      await latest.getByRole("link", { name: "Download better-hud-1.1.0.zip" }).getAttribute("href"),
    ).toBe("../../downloads/mods/better-hud/1.1.0/better-hud-1.1.0.zip");
    expect(await page.getByRole("link", { name: "Source code" }).getAttribute("href")).toBe(
      "https://github.com/ada/better-hud",
    );
    await screenshot(page, "detail", "detail");
    await latest.getByRole("link", { name: "core-lib" }).click();
    await page.waitForURL(`${portal.origin}/mods/core-lib/`);
    expect(await page.locator("h1").innerText()).toBe("Core Library");
    expect(errors).toEqual([]);
    await close();
  });

  it("detail page: a record carrying markup shows it as text and runs nothing", async () => {
    // Published into the running portal: the rebuild is served at once.
    project.addRecord(hostileRecord());
    writeSite(
      project.site(""),
      renderSite(loadSiteInputs(project.config, `${project.root}/records`), project.site("")),
    );
    const { page, errors, dialogs, close } = await open("/mods/evil-mod/");
    expect(await page.locator("h1").innerText()).toBe("<script>window.__pwned='name'</script>Evil");
    expect(await page.locator("article.version .text").innerText()).toBe(
      "line one\n<script>window.__pwned='notes'</script>\nline three",
    );
    expect(await page.locator("p.summary").innerText()).toBe(
      `<img src=x onerror="window.__pwned='summary'"> "quoted" & 'single'`,
    );
    expect(await page.evaluate(() => window.__pwned)).toBeUndefined();
    // Only the page's own module scripts exist; the record's markup made no elements.
    expect(await page.locator("main script, main img, main iframe, main b").count()).toBe(0);
    await page.locator("main").hover();
    expect(dialogs()).toBe(0);
    await screenshot(page, "detail-hostile");
    expect(errors).toEqual([]);
    await close();
  });

  it("detail page: javascript:, data: and foreign http: links are never links", async () => {
    // Schemas keep such URLs out of records; the renderer refuses them on its own as well.
    const catalog = JSON.parse(readFileSync(project.site("api/v1/catalog.json"), "utf8")) as CatalogDocument;
    const detail = JSON.parse(
      readFileSync(project.site("api/v1/mods/better-hud/index.json"), "utf8"),
    ) as ModDetailDocument;
    const hostile: ModDetailDocument = {
      ...detail,
      authors: [{ name: "Eve", url: "javascript:window.__pwned='author'" }],
      links: {
        homepage: "javascript:window.__pwned='homepage'",
        source: "data:text/html,<script>alert(1)</script>",
        issues: "http://tracker.invalid/issues",
      },
      versions: detail.versions.map((v) => ({ ...v, packageUrl: " javascript:window.__pwned='download'" })),
    };
    const games = JSON.parse(readFileSync(project.site("api/v1/game-builds/latest.json"), "utf8"));
    project.write(
      "site/mods/evil-links/index.html",
      renderModPage(pageContext(project.config), hostile, catalog, games),
    );
    const { page, errors, close } = await open("/mods/evil-links/");
    const hrefs = await page.locator("a").evaluateAll((as) => as.map((a) => a.getAttribute("href") ?? ""));
    expect(
      hrefs.filter((h) => /^\s*(javascript|data|http):/i.test(h) && !h.startsWith(portal.origin)),
    ).toEqual([]);
    for (const label of ["Homepage", "Source code", "Issue tracker", "Eve"]) {
      expect(await page.getByRole("link", { name: label }).count(), label).toBe(0);
      expect(await page.locator("main").innerText()).toContain(label);
    }
    expect(await page.getByRole("link", { name: /^Download/ }).count()).toBe(0);
    expect(await page.locator("main").innerText()).toContain("Download link refused (not an https: URL)");
    expect(errors).toEqual([]);
    await close();
  });

  it("status page: gates and blockers in plain words", async () => {
    const readiness = JSON.parse(readFileSync(project.site("api/v1/readiness.json"), "utf8")) as {
      releaseBlockers: Array<{ summary: string }>;
      gates: Array<{ title: string; status: string }>;
    };
    const { page, errors, close } = await open("/status/");
    expect(await page.locator("h1").innerText()).toBe("Portal status");
    expect(await page.locator(".overall").innerText()).toMatch(
      /^Not ready for release: \d+ of \d+ go-live gates are ready\.$/,
    );
    const blockers = await page.locator(".blockers > li").allInnerTexts();
    expect(blockers).toHaveLength(readiness.releaseBlockers.length);
    expect(blockers[0]).toContain(readiness.releaseBlockers[0]!.summary);
    const gates = await page.locator(".gate h3").allInnerTexts();
    const words: Record<string, string> = { ready: "Ready", partial: "Partly ready", blocked: "Blocked" };
    expect(gates).toEqual(readiness.gates.map((g) => `${g.title} ${words[g.status]}`));
    await screenshot(page, "status");
    expect(errors).toEqual([]);
    await close();
  });

  it("keyboard: skip link, filter controls and mod links in order, focus visible", async () => {
    const { page, close } = await open("/");
    await page.keyboard.press("Tab");
    const skip = page.getByRole("link", { name: "Skip to content" });
    await expect.poll(() => skip.evaluate((el) => el === document.activeElement)).toBe(true);
    expect(await skip.isVisible()).toBe(true);
    expect(await skip.evaluate((el) => getComputedStyle(el).outlineWidth)).toBe("3px");
    await page.keyboard.press("Enter");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("main");
    await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("q");
    await page.keyboard.type("night");
    await expect.poll(() => visibleMods(page)).toEqual(["Night Sky"]);
    // Tag, build, clear, then the first visible mod link (hidden items are skipped).
    for (let i = 0; i < 4; i++) await page.keyboard.press("Tab");
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe("Night Sky");
    await page.keyboard.press("Enter");
    await page.waitForURL(`${portal.origin}/mods/night-sky/`);
    expect(await page.locator("h1").innerText()).toBe("Night Sky");
    await close();
  });

  it("every page has one h1, a main landmark, labelled controls and a lang", async () => {
    const paths = [
      "/",
      "/mods/better-hud/",
      "/status/",
      "/account/",
      "/account/signup/",
      "/account/signin/",
      "/moderation/",
    ];
    for (const path of paths) {
      const { page, close } = await open(path);
      expect(await page.locator("h1").count(), path).toBe(1);
      expect(await page.locator("main").count(), path).toBe(1);
      expect(await page.locator("html").getAttribute("lang"), path).toBe("en");
      const unlabelled = await page
        .locator("input:not([type=hidden]), select, textarea")
        .evaluateAll((els) =>
          els.filter((el) => (el as unknown as BrowserElement).labels?.length === 0).map((el) => el.id),
        );
      expect(unlabelled, path).toEqual([]);
      await close();
    }
  });
});
