// Issue 25 item 11: the pages fit a 390 px phone (no horizontal scroll, measured in real Chromium),
// and the review page counts its log lines in English ("Log (1 line)").
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { collectPageErrors, launchBrowser, SKIP_BROWSER } from "../support/browser.ts";
import { modRelease } from "../support/catalog-project.ts";
import type { SignedIn } from "../support/http-harness.ts";
import {
  form,
  SKIP_CLAMSCAN,
  type SubmissionsPortal,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";

const PHONE = { width: 390, height: 844 };

let browser: Browser;
let portal: SubmissionsPortal;
const contexts: BrowserContext[] = [];
const ids = { published: "", failed: "" };

async function submit(who: SignedIn, made: { sidecar: unknown; packageBytes: Buffer }, states: string[]) {
  const created = await upload(portal, who, form(made.sidecar, made.packageBytes));
  expect(created.status, JSON.stringify(created.json)).toBeLessThan(300);
  const id = created.json.submissionId as string;
  await waitForState(portal, who, id, states);
  return id;
}

/** A phone-sized page, signed in as `who` when given. */
async function phonePage(who?: SignedIn): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: PHONE, deviceScaleFactor: 1, isMobile: true });
  contexts.push(context);
  if (who) {
    const [name, value] = who.cookie.split("=") as [string, string];
    await context.addCookies([{ name, value, url: portal.h.origin }]);
  }
  const page = await context.newPage();
  return { page, errors: collectPageErrors(page) };
}

/** How wide the document is at 390 px, and the elements that stick out past the viewport. */
async function overflow(page: Page): Promise<{ scrollWidth: number; wide: string[] }> {
  return page.evaluate(() => {
    const doc = (globalThis as any).document;
    const wide: string[] = [];
    const name = (element: any) =>
      `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ""}${element.className ? `.${element.className}` : ""}`;
    for (const element of doc.querySelectorAll("body *")) {
      const rect = element.getBoundingClientRect();
      if (rect.right > 390.5 && rect.width > 0) wide.push(`${name(element)} ${Math.round(rect.right)}`);
    }
    // Text that overflows its element (a long unbroken word) widens the page without widening any box.
    const walker = doc.createTreeWalker(doc.body, 4);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const range = doc.createRange();
      range.selectNodeContents(node);
      const rect = range.getBoundingClientRect();
      if (rect.right > 390.5 && rect.width > 0)
        wide.push(
          `text in ${name(node.parentElement)} ${Math.round(rect.right)}: ${String(node.textContent).slice(0, 40)}`,
        );
    }
    return { scrollWidth: doc.documentElement.scrollWidth as number, wide: wide.slice(0, 8) };
  });
}

beforeAll(async () => {
  if (SKIP_BROWSER || SKIP_CLAMSCAN) return;
  browser = await launchBrowser();
  portal = await startSubmissionsPortal();
  const made = modRelease({ modId: "quick-travel", version: "1.0.0" });
  ids.published = await submit(portal.modder, made, ["pending_review"]);
  const decided = await portal.call("POST", `/api/v1/moderation/releases/${ids.published}/decision`, {
    body: { decision: "approve", notes: "Fine." },
    cookie: portal.moderator.cookie,
    csrf: portal.moderator.csrf,
  });
  expect(decided.status).toBe(200);
  const published = await portal.call("POST", "/api/v1/catalog/publish", {
    cookie: portal.admin.cookie,
    csrf: portal.admin.csrf,
  });
  expect(published.json.published).toBe(1);
  // A release whose sidecar names another build than its svc-mod.json: a failed check with a log.
  const other = modRelease({ modId: "map-pins", version: "2.0.0" });
  ids.failed = await submit(
    portal.modder,
    { ...other, sidecar: { ...other.sidecar, targetGameBuild: "99999999" } },
    ["validation_failed"],
  );
}, 180_000);
afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await portal?.stop();
});

describe.skipIf(SKIP_BROWSER || SKIP_CLAMSCAN)("every page fits a 390 px phone (Chromium)", () => {
  const pages: Array<[string, () => string, "modder" | "moderator" | null, string]> = [
    ["home", () => "/", null, "h1"],
    ["status", () => "/status/", null, "h1"],
    ["mods", () => "/mods/", null, "h1"],
    ["a mod page", () => "/mods/quick-travel/", null, "h1"],
    ["releases/new", () => "/releases/new/", "modder", "form"],
    ["moderation review", () => `/moderation/review/?id=${ids.failed}`, "moderator", "#submission"],
  ];
  for (const [name, path, who, ready] of pages) {
    it(`${name}: document.documentElement.scrollWidth <= 390`, async () => {
      const { page, errors } = await phonePage(who ? portal[who] : undefined);
      const response = await page.goto(`${portal.h.origin}${path()}`);
      expect(response?.status()).toBe(200);
      await expect.poll(() => page.locator(ready).first().isVisible()).toBe(true);
      const measured = await overflow(page);
      expect(measured.wide, `elements past 390 px on ${path()}`).toEqual([]);
      expect(measured.scrollWidth).toBeLessThanOrEqual(390);
      expect(errors).toEqual([]);
    });
  }

  it("the review page counts log lines in English: Log (1 line), Log (2 lines)", async () => {
    const { page } = await phonePage(portal.moderator);
    await page.goto(`${portal.h.origin}/moderation/review/?id=${ids.failed}`);
    await expect.poll(() => page.locator("#submission").isVisible()).toBe(true);
    const summaries = await page.locator("details > summary").allInnerTexts();
    const counted = summaries.filter((s) => s.startsWith("Log ("));
    expect(counted.length).toBeGreaterThan(0);
    for (const summary of counted) {
      const n = Number(/^Log \((\d+) /.exec(summary)?.[1]);
      expect(summary).toBe(`Log (${n} line${n === 1 ? "" : "s"})`);
    }
    expect(counted).toContain("Log (1 line)");
  });
});

describe.skipIf(SKIP_BROWSER || SKIP_CLAMSCAN)(
  "/status/ tells the running portal from the deployment",
  () => {
    it("says this portal takes uploads while the deployment portal.config.json describes does not", async () => {
      expect(portal.h.app.settings.liveUploads).toBe(true);
      expect(portal.h.app.config.deployment.liveUploads).toBe(false);
      const { page, errors } = await phonePage();
      await page.goto(`${portal.h.origin}/status/`);
      await expect.poll(() => page.locator("#running").isVisible()).toBe(true);
      expect(await page.locator("#running-uploads").innerText()).toBe(
        "On: this portal takes uploads (SVC_LIVE_UPLOADS=1).",
      );
      expect(await page.locator("#running-database").innerText()).toMatch(/^PGlite|^PostgreSQL/);
      expect(await page.locator("#running-state").innerText()).toBe(
        `Answered by the portal at ${portal.h.origin}.`,
      );
      // The deployment's own section still says what it lacks, and names where that comes from.
      const deployment = await page.locator('section[aria-labelledby="deployment-h"]').innerText();
      expect(deployment).toContain(
        "It describes the public deployment, not the process answering this page.",
      );
      const gates = await page.locator("#gate-4").innerText();
      expect(gates).toContain("portal.config.json deployment.liveUploads is false");
      expect(gates).not.toContain("live uploads off");
      expect(errors).toEqual([]);
    });
  },
);
