import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER } from "../support/browser.ts";
import { modRelease } from "../support/catalog-project.ts";
import {
  SKIP_CLAMSCAN,
  type SubmissionsPortal,
  startSubmissionsPortal,
} from "../support/submissions-portal.ts";

/**
 * Issue 25 item 4 in Chromium against the real local portal: choosing the package of a new version
 * fills the upload form from the mod's last published version, and what the form has no field for
 * (a co-author, the homepage and issue links) is kept in what it sends.
 */
const PAGE = {
  summary: "Lights the way.",
  description: "A lantern for the dark levels.",
  links: { homepage: "https://lantern.example/", source: "https://github.com/ada/lantern" },
  tags: ["lighting"],
  license: "MIT",
  authors: [{ name: "Ada", github: "ada" }, { name: "Grace" }],
};

let browser: Browser;
let portal: SubmissionsPortal;
let page: Page;
let errors: string[];

beforeAll(async () => {
  if (SKIP_BROWSER || SKIP_CLAMSCAN) return;
  browser = await launchBrowser();
  portal = await startSubmissionsPortal();
  const { packageBytes, sidecar } = modRelease({ modId: "lantern", version: "1.0.0" });
  await publishRelease(portal.publisher, {
    packageBytes,
    sidecar: { ...sidecar, ...PAGE },
    source: { kind: "import" },
  });
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  page = await context.newPage();
  errors = collectPageErrors(page);
});
afterAll(async () => {
  await browser?.close();
  await portal?.stop();
});

describe.skipIf(SKIP_BROWSER || SKIP_CLAMSCAN)("the upload form of a new version", () => {
  it("starts from the last published version and keeps what it cannot show", async () => {
    await page.goto(`${portal.h.origin}/account/signin/`);
    await page.getByLabel("Email address").fill(portal.modder.email);
    await page.getByRole("button", { name: "Email me a sign-in link" }).click();
    await page.getByRole("link", { name: "sign in now" }).click();
    await page.waitForURL(/\/account\/confirm\/$/);
    await page.getByRole("button", { name: "Continue signing in" }).click();
    await page.waitForURL(`${portal.h.origin}/account/`);

    await page.goto(`${portal.h.origin}/releases/new/`);
    const next = modRelease({ modId: "lantern", version: "1.1.0" });
    await page.getByLabel(/^Package \(ZIP/).setInputFiles({
      name: "lantern-1.1.0.zip",
      mimeType: "application/zip",
      buffer: next.packageBytes,
    });
    await expect.poll(() => page.locator("#carried").isVisible(), { timeout: 20_000 }).toBe(true);
    expect(await page.locator("#carried").innerText()).toContain("1.0.0 is published");
    const value = (id: string) => page.locator(`#${id}`).inputValue();
    expect(await value("summary")).toBe(PAGE.summary);
    expect(await value("description")).toBe(PAGE.description);
    expect(await value("tags")).toBe("lighting");
    expect(await value("license")).toBe("MIT");
    expect(await value("author-name")).toBe("Ada");
    expect(await value("author-github")).toBe("ada");
    expect(await value("source-url")).toBe(PAGE.links.source);

    // The modder changes what changes: the notes and one more tag.
    await page.locator("#release-notes").fill("1.1.0: brighter.");
    await page.locator("#tags").fill("lighting, night");
    await page.getByRole("button", { name: "Upload and validate" }).click();
    await page.waitForURL(/\/releases\/submission\/\?id=sub_/, { timeout: 60_000 });
    const id = new URL(page.url()).searchParams.get("id")!;
    const view = await page.evaluate(
      async (id) => (await (await fetch(`/api/v1/uploads/${id}`)).json()) as any,
      id,
    );
    expect(view.release).toMatchObject({
      ...PAGE,
      tags: ["lighting", "night"],
      releaseNotes: "1.1.0: brighter.",
    });
    expect(errors).toEqual([]);
  }, 120_000);
});
