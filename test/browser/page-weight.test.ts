import { mkdirSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import { brotliCompressSync, gzipSync } from "node:zlib";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReleaseRecord } from "../../src/contracts/records.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { buildCatalog, buildModDetail, visibleMods } from "../../src/contracts/catalog.ts";
import type { AppContext } from "../../src/http/context.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import { renderCatalogPage } from "../../src/pages/catalog-page.ts";
import { renderModPage } from "../../src/pages/mod-page.ts";
import { ASSET_FILES, PAGE_PATHS, pageContext, renderPages } from "../../src/pages/render-pages.ts";
import { releaseRecord, tempProject } from "../support/temp-project.ts";
import type { BrowserDocument, BrowserPerformance, RequestAnimationFrame } from "./dom.ts";
import { ARTIFACTS_DIR, launchBrowser, SKIP_BROWSER } from "../support/browser.ts";

declare const document: BrowserDocument;
declare const performance: BrowserPerformance;
declare const requestAnimationFrame: RequestAnimationFrame;

/**
 * Page weight of the catalog browser for 10,000 mods (1-3 versions each), as served: raw, gzip
 * (what GitHub Pages and the local server send) and brotli; then load and filter it in Chromium.
 * Figures go to the console and test/artifacts/page-weight.json; docs/pages.md quotes them.
 */
const MOD_COUNT = 10_000;
const WORDS =
  "better quick night sky hud ammo map mini radar sound music light shadow weapon armor craft build farm trade quest story voice camera ui menu font color texture model patch fix tweak balance".split(
    " ",
  );
const TAGS = [
  "ui",
  "hud",
  "graphics",
  "audio",
  "gameplay",
  "library",
  "balance",
  "maps",
  "quality-of-life",
  "tools",
];

function syntheticRecords(): ReleaseRecord[] {
  // mulberry32: a deterministic generator, so every run measures the same catalog.
  let seed = 42;
  const rand = (n: number) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  // Half dictionary words, half random letters: real names and summaries compress less than a
  // small vocabulary would, so this errs on the heavy side.
  const pick = () =>
    rand(2) === 0
      ? WORDS[rand(WORDS.length)]!
      : Array.from({ length: 3 + rand(7) }, () => String.fromCharCode(97 + rand(26))).join("");
  const records: ReleaseRecord[] = [];
  for (let i = 0; i < MOD_COUNT; i++) {
    const modId = `mod-${i.toString(36)}-${pick()}`;
    const name = `${pick()} ${pick()} ${pick()}`.replace(/^\w/, (c) => c.toUpperCase());
    const summary = `A ${pick()} ${pick()} mod that changes the ${pick()} and the ${pick()} ${pick()} for a ${pick()} ${pick()} experience.`;
    const tags = [...new Set([TAGS[rand(TAGS.length)]!, TAGS[rand(TAGS.length)]!])];
    const versions = 1 + rand(3);
    for (let v = 0; v < versions; v++) {
      const version = `1.${v}.0`;
      records.push(
        releaseRecord({
          modId,
          version,
          name,
          summary,
          authors: [{ name: `${pick()}smith`, github: `dev${i}` }],
          tags,
          status: v === versions - 1 ? "published" : "superseded",
          targetGameBuild: rand(10) === 0 ? "16000000" : "17000000",
          publishedAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000 + v * 86_400_000).toISOString(),
          sha256: (i * 7 + v).toString(16).padStart(64, "a").slice(0, 64),
        }),
      );
    }
  }
  return records;
}

interface Figures {
  mods: number;
  catalogPage: { rawBytes: number; gzipBytes: number; brotliBytes: number; bytesPerMod: number };
  detailPage: { rawBytes: number; gzipBytes: number };
  assets: { rawBytes: number; gzipBytes: number; files: Record<string, number> };
  /** Per page: its HTML and every asset it loads (stylesheet, icon, scripts and their imports), gzip. */
  pages: Record<string, { htmlGzipBytes: number; assetsGzipBytes: number; assets: string[] }>;
  chromium?: { domContentLoadedMs: number; loadMs: number; filterMs: number; shownAfterFilter: number };
}

let project: ReturnType<typeof tempProject>;
let browser: Browser | undefined;
let server: Server | undefined;
let catalogHtml = "";
let detailPath = "";
const figures = {} as Figures;

beforeAll(() => {
  project = tempProject();
  const ctx = pageContext(project.config);
  const mods = visibleMods(syntheticRecords());
  const catalog = buildCatalog(project.config, mods, ["17000000"], "2026-11-01T00:00:00.000Z");
  const matrix = {
    builds: [
      { buildId: "17000000", validationStatus: "validated", label: "Current public build" },
      { buildId: "16000000", validationStatus: "unvalidated" },
    ],
    supportedGameBuilds: ["17000000"],
  };
  catalogHtml = renderCatalogPage(ctx, catalog, matrix);
  const detail = renderModPage(
    ctx,
    buildModDetail(project.config, mods[0]!, "2026-11-01T00:00:00.000Z"),
    catalog,
    matrix,
  );
  const assets = renderPages(new Map(), project.config);
  const assetFiles: Record<string, number> = {};
  let assetGzip = 0;
  for (const name of ASSET_FILES) {
    const text = assets.get(PAGE_PATHS.asset(name))!;
    assetFiles[name] = Buffer.byteLength(text);
    assetGzip += gzipSync(text).length;
    project.write(`site/assets/${name}`, text);
  }
  project.write("site/index.html", catalogHtml);
  const raw = Buffer.byteLength(catalogHtml);
  figures.mods = catalog.mods.length;
  figures.catalogPage = {
    rawBytes: raw,
    gzipBytes: gzipSync(catalogHtml).length,
    brotliBytes: brotliCompressSync(catalogHtml).length,
    bytesPerMod: Math.round(raw / catalog.mods.length),
  };
  figures.detailPage = { rawBytes: Buffer.byteLength(detail), gzipBytes: gzipSync(detail).length };
  figures.assets = {
    rawBytes: Object.values(assetFiles).reduce((a, b) => a + b, 0),
    gzipBytes: assetGzip,
    files: assetFiles,
  };
  const pageHtml = new Map([...assets].filter(([path]) => path.endsWith(".html")));
  pageHtml.set(PAGE_PATHS.catalog, catalogHtml);
  detailPath = PAGE_PATHS.modPage(mods[0]!.modId);
  pageHtml.set(detailPath, detail);
  figures.pages = {};
  for (const [path, text] of pageHtml) {
    const loaded = assetsLoadedBy(text, (name) => assets.get(PAGE_PATHS.asset(name)) ?? "");
    figures.pages[path] = {
      htmlGzipBytes: gzipSync(text).length,
      assetsGzipBytes: loaded.reduce(
        (sum, name) => sum + gzipSync(assets.get(PAGE_PATHS.asset(name))!).length,
        0,
      ),
      assets: loaded,
    };
  }
});

/** The assets a page makes the browser fetch: its stylesheet and icon, its scripts and what they import. */
function assetsLoadedBy(html: string, assetText: (name: string) => string): string[] {
  const found = new Set<string>();
  const queue = [...html.matchAll(/(?:href|src)="[^"]*assets\/([a-z0-9.-]+)"/g)].map((m) => m[1]!);
  while (queue.length > 0) {
    const name = queue.shift()!;
    if (found.has(name)) continue;
    found.add(name);
    if (name.endsWith(".js"))
      for (const m of assetText(name).matchAll(/from "\.\/([a-z0-9.-]+\.js)"/g)) queue.push(m[1]!);
  }
  return [...found].sort();
}

afterAll(async () => {
  await browser?.close();
  if (server) await new Promise((resolve) => server!.close(resolve));
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  writeFileSync(join(ARTIFACTS_DIR, "page-weight.json"), `${JSON.stringify(figures, null, 2)}\n`);
  console.log(`page weight (${MOD_COUNT} mods):\n${JSON.stringify(figures, null, 2)}`);
  project?.cleanup();
});

describe("catalog page weight for 10,000 mods", () => {
  it("stays within budget: under 4 MB raw and 700 KB gzip with pessimistic text, under 20 KB of assets gzip on every page", () => {
    expect(figures.mods).toBe(MOD_COUNT);
    expect(figures.catalogPage.rawBytes).toBeLessThan(4_000_000);
    expect(figures.catalogPage.gzipBytes).toBeLessThan(700_000);
    // Every page the portal serves (the status page needs a readiness document and is script-free).
    const expected = (Object.values(PAGE_PATHS) as unknown[]).filter(
      (p) => typeof p === "string" && p !== PAGE_PATHS.status,
    ) as string[];
    expect(Object.keys(figures.pages).sort()).toEqual([...expected, detailPath].sort());
    for (const [path, page] of Object.entries(figures.pages)) {
      expect(page.assets, path).toContain("site.css");
      expect(page.assetsGzipBytes, path).toBeLessThan(20_000);
    }
  });

  it.skipIf(SKIP_BROWSER)("loads and filters in Chromium over loopback", { timeout: 120_000 }, async () => {
    const app = {
      config: project.config,
      settings: parseSettings({}, { dataDir: `${project.root}/.data` }),
      siteDir: project.site(""),
      startedAt: new Date(),
      now: () => new Date(),
      log: () => {},
    } as AppContext;
    server = createPortalServer(app);
    const bound = await listen(server, 0, "127.0.0.1");
    browser = await launchBrowser();
    const page = await browser.newPage();
    await page.goto(`http://127.0.0.1:${bound.port}/`, { waitUntil: "load" });
    const timing = await page.evaluate(() => {
      const nav = performance.getEntriesByType("navigation")[0]!;
      return { domContentLoadedMs: nav.domContentLoadedEventEnd, loadMs: nav.loadEventEnd };
    });
    await page.locator("#filters").waitFor({ state: "visible" });
    const filter = await page.evaluate(async () => {
      const q = document.getElementById("q")!;
      const started = performance.now();
      q.value = "radar";
      q.dispatchEvent(new Event("input", { bubbles: true }));
      await new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(null))));
      const filterMs = performance.now() - started;
      const shown = [...document.querySelectorAll("#mods > li")].filter((li) => !li.hidden).length;
      return { filterMs, shown };
    });
    figures.chromium = {
      domContentLoadedMs: Math.round(timing.domContentLoadedMs),
      loadMs: Math.round(timing.loadMs),
      filterMs: Math.round(filter.filterMs),
      shownAfterFilter: filter.shown,
    };
    expect(filter.shown).toBeGreaterThan(0);
    expect(filter.shown).toBeLessThan(MOD_COUNT);
    // A loose bound: 2-core CI machines without a GPU; measured about 0.3 s here.
    expect(filter.filterMs).toBeLessThan(2000);
  });
});
