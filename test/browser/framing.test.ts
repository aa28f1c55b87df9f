// Pages cannot be framed (clickjacking): the local server sends frame-ancestors 'none' and
// X-Frame-Options as response headers on every response (a <meta> CSP cannot carry
// frame-ancestors), vercel.json sends the same, and Debian's Chromium refuses to render a portal
// page inside another origin's frame.
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SECURITY_HEADERS } from "../../src/http/server.ts";
import { launchBrowser, SKIP_BROWSER } from "../support/browser.ts";
import { type BrowserPortal, startBrowserPortal } from "../support/browser-portal.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { tempProject } from "../support/temp-project.ts";

describe.skipIf(SKIP_BROWSER)("framing and browser-enforced headers", () => {
  let portal: BrowserPortal;
  let browser: Browser;
  let attacker: Server;
  let attackerOrigin: string;
  beforeAll(async () => {
    portal = await startBrowserPortal(tempProject());
    browser = await launchBrowser();
    // Another origin (another port) that frames the portal's home page.
    attacker = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end(`<!doctype html><iframe id="victim" src="${portal.origin}/"></iframe>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, "127.0.0.1", resolve));
    const address = attacker.address();
    attackerOrigin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  });
  afterAll(async () => {
    await browser?.close();
    attacker?.close();
    await portal?.close();
  });

  it("sends the headers on pages, documents, API answers and errors", async () => {
    for (const path of ["/", "/api/v1/catalog.json", "/api/v1/backend/health", "/no-such-page"]) {
      const response = await fetch(`${portal.origin}${path}`);
      for (const [name, value] of Object.entries(SECURITY_HEADERS))
        expect(response.headers.get(name), `${path} ${name}`).toBe(value);
    }
  });

  it("vercel.json sends the same headers on every path", () => {
    const vercel = JSON.parse(readFileSync(join(REPO_ROOT, "vercel.json"), "utf8")) as {
      headers: Array<{ source: string; headers: Array<{ key: string; value: string }> }>;
    };
    const all = vercel.headers.find((h) => h.source === "/(.*)");
    expect(Object.fromEntries(all!.headers.map((h) => [h.key.toLowerCase(), h.value]))).toEqual(
      SECURITY_HEADERS,
    );
  });

  it("Chromium does not render a portal page inside another origin's frame", async () => {
    const page = await browser.newPage();
    const blocked: string[] = [];
    page.on("console", (m) => {
      if (/frame-ancestors|X-Frame-Options|refused to (display|frame)/i.test(m.text()))
        blocked.push(m.text());
    });
    await page.goto(attackerOrigin);
    await page.waitForTimeout(500);
    const frame = page.frames().find((f) => f !== page.mainFrame());
    // The frame holds Chromium's blocked-frame page, never the portal's document.
    expect(frame?.url()).not.toContain(portal.origin);
    expect(await frame?.content()).not.toContain('<nav aria-label="Site">');
    expect(blocked.length).toBeGreaterThan(0);
    await page.close();
  });
});
