// A person can click a form's button before the page's module script has wired the form (a slow
// network, a cold cache): the form must not submit natively then (the page would reload with no
// message, and the verify and confirm pages would lose the token in their address). The pages are
// static files, so a form on screen before its script has its submit button disabled in the HTML
// and a "Loading the form…" note, until the script enables it (account-pages.ts, api.js formReady);
// every other form is hidden until its script shows it.
import { readdirSync } from "node:fs";
import { join, relative, sep } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointById } from "../../src/contracts/endpoints.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER } from "../support/browser.ts";
import { type BrowserPortal, startBrowserPortal } from "../support/browser-portal.ts";
import { tempProject } from "../support/temp-project.ts";
import { showcaseRecords } from "./fixtures.ts";

const routesLive = ["create_account", "verify_account", "request_magic_link", "confirm_magic_link"].every(
  (id) => endpointById(id).status === "implemented",
);

let browser: Browser;
let project: ReturnType<typeof tempProject>;
let portal: BrowserPortal;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  browser = await launchBrowser();
  project = tempProject();
  for (const record of showcaseRecords()) project.addRecord(record);
  portal = await startBrowserPortal(project);
});
afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await portal?.close();
  project?.cleanup();
});

async function newPage(options: { javaScriptEnabled?: boolean } = {}): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 }, ...options });
  contexts.push(context);
  return context.newPage();
}

/** Every page of the built site, as the path a browser opens ("/", "/account/signin/", ...). */
function sitePaths(dir: string): string[] {
  const paths: string[] = [];
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(at, entry.name));
      else if (entry.name === "index.html") {
        const rel = relative(dir, at).split(sep).join("/");
        paths.push(rel ? `/${rel}/` : "/");
      }
    }
  };
  walk(dir);
  return paths.sort();
}

interface FormState {
  id: string;
  /** On screen (neither it nor an ancestor hidden). */
  shown: boolean;
  /** Its submit buttons (button without a type, type=submit, input type=submit or image). */
  submits: number;
  enabledSubmits: number;
}

/** The forms of the page as they stand now. */
function formStates(page: Page): Promise<FormState[]> {
  return page.locator("form").evaluateAll((forms: any[]) =>
    forms.map((form) => {
      const submits = [...form.elements].filter(
        (c: any) =>
          (c.localName === "button" && c.type === "submit") ||
          (c.localName === "input" && (c.type === "submit" || c.type === "image")),
      );
      return {
        id: form.id,
        shown: form.checkVisibility(),
        submits: submits.length,
        enabledSubmits: submits.filter((c: any) => !c.disabled).length,
      };
    }),
  );
}

/**
 * Holds every response of assets/<name> until release(): the page's HTML is there and can be
 * clicked, its module script is not. arm() holds the next page's load again.
 */
async function holdScript(page: Page, name: string) {
  let release = () => {};
  let gate = Promise.resolve();
  const arm = () => {
    gate = new Promise<void>((resolve) => {
      release = resolve;
    });
  };
  arm();
  await page.route(`**/assets/${name}`, async (route) => {
    await gate;
    await route.continue();
  });
  return { arm, release: () => release() };
}

/**
 * What would show a native submission: a request for a document (a form's GET or POST, a reload),
 * and a marker in the page's window that any new document drops. (The verify and confirm pages'
 * history.replaceState, which clears the token from the address, is neither.)
 */
function watchNavigations(page: Page) {
  const seen: string[] = [];
  page.on("request", (request) => {
    if (request.isNavigationRequest()) seen.push(`${request.method()} ${request.url()}`);
  });
  return {
    /** Forgets the document requests so far. */
    reset: () => {
      seen.length = 0;
    },
    /** Marks the page as it is now and forgets the document requests so far. */
    mark: async () => {
      seen.length = 0;
      await page.evaluate(() => {
        (globalThis as any).__samePage = true;
      });
    },
    requests: () => [...seen],
    since: async () => ({
      navigations: [...seen],
      samePage: await page.evaluate(() => (globalThis as any).__samePage === true),
    }),
  };
}

/** The page's HTML is parsed (its script held): the form and its button are on screen. */
async function parsed(page: Page, url: string, formId: string) {
  await page.goto(url, { waitUntil: "commit" });
  await page.locator(`#${formId} button[type=submit]`).waitFor({ state: "visible" });
}

/** A click and an Enter on a form before its script ran: nothing is sent, nothing reloads, nothing typed is lost. */
async function pressTooEarly(page: Page, formId: string, watch: ReturnType<typeof watchNavigations>) {
  const button = page.locator(`#${formId} button[type=submit]`);
  expect(await button.isDisabled(), formId).toBe(true);
  expect(await page.locator(`#${formId} .loading`).isVisible(), formId).toBe(true);
  expect(await page.locator(`#${formId} .loading`).innerText()).toBe("Loading the form…");
  await watch.mark();
  await button.click({ force: true });
  // Enter in a text field submits a form implicitly, unless its default button is disabled.
  const field = page.locator(`#${formId} input:not([type=radio])`).first();
  if ((await field.count()) > 0) await field.press("Enter");
  // A native submission starts its navigation at once; give it time to show.
  await page.waitForTimeout(500);
  expect(await watch.since(), formId).toEqual({ navigations: [], samePage: true });
}

/** After the script came: the button works, the note is gone, and nothing reloaded meanwhile. */
async function wired(page: Page, formId: string, watch: ReturnType<typeof watchNavigations>) {
  const button = page.locator(`#${formId} button[type=submit]`);
  await expect.poll(() => button.isEnabled()).toBe(true);
  expect(await page.locator(`#${formId} .loading`).count()).toBe(0);
  expect(await watch.since(), formId).toEqual({ navigations: [], samePage: true });
}

describe.skipIf(SKIP_BROWSER)("forms before their page's script has wired them", () => {
  it("every form of every page is hidden or has its submit buttons disabled until its script runs", async () => {
    const page = await newPage();
    // The scripts never come: this is what a person can reach before they do.
    await page.route("**/assets/*.js", (route) => route.abort());
    const shown: string[] = [];
    let forms = 0;
    const paths = sitePaths(project.site(""));
    expect(paths).toEqual(
      expect.arrayContaining([
        "/",
        "/account/signup/",
        "/releases/new/",
        "/moderation/review/",
        "/admin/audit/",
      ]),
    );
    for (const path of paths) {
      await page.goto(portal.origin + path);
      for (const form of await formStates(page)) {
        forms++;
        if (!form.shown) continue;
        shown.push(`${path}#${form.id}`);
        // No submit button would let Enter in its only field submit it; every one must wait.
        expect(form.submits, `${path}#${form.id}`).toBeGreaterThan(0);
        expect(form.enabledSubmits, `${path}#${form.id}`).toBe(0);
      }
    }
    expect(forms).toBeGreaterThanOrEqual(13);
    expect(shown.sort()).toEqual([
      "/account/confirm/#confirm",
      "/account/signin/#signin",
      "/account/signup/#signup",
      "/account/verify/#verify",
    ]);
  });

  it("with the scripts loaded, every shown form's submit buttons are enabled and no loading note is left", async () => {
    const page = await newPage();
    const errors = collectPageErrors(page);
    for (const path of ["/account/signup/", "/account/signin/"]) {
      await page.goto(portal.origin + path);
      await expect
        .poll(async () => (await formStates(page)).filter((f) => f.shown).map((f) => f.enabledSubmits))
        .toEqual([1]);
      expect(await page.locator(".loading").count(), path).toBe(0);
    }
    expect(errors).toEqual([]);
  });

  it.skipIf(!routesLive)(
    "sign up, verify, sign in and confirm, each clicked before the script came: no reload, then the real result",
    async () => {
      const page = await newPage();
      const errors = collectPageErrors(page);
      const held = await holdScript(page, "account.js");
      const watch = watchNavigations(page);
      const email = "early@players.test";

      // Sign-up: typed, clicked and Enter before account.js; the typing survives, the click waits.
      await parsed(page, `${portal.origin}/account/signup/`, "signup");
      await page.getByLabel("Email address").fill(email);
      await page.getByLabel("Display name").fill("Early Bird");
      await pressTooEarly(page, "signup", watch);
      held.release();
      await wired(page, "signup", watch);
      expect(await page.getByLabel("Email address").inputValue()).toBe(email);
      expect(await page.getByLabel("Display name").inputValue()).toBe("Early Bird");
      await page.getByRole("button", { name: "Create account" }).click();
      await expect.poll(() => page.locator("#message").innerText()).toMatch(/^Check your email/);
      const verifyHref = await page
        .getByRole("link", { name: "verify this address now" })
        .getAttribute("href");

      // Verify: a native submission would have dropped ?account=&token= from the address.
      held.arm();
      const verifyUrl = new URL(verifyHref!, page.url()).href;
      await parsed(page, verifyUrl, "verify");
      await pressTooEarly(page, "verify", watch);
      expect(page.url()).toBe(verifyUrl);
      held.release();
      await wired(page, "verify", watch);
      await page.getByRole("button", { name: "Verify my email address" }).click();
      await expect
        .poll(() => page.locator("#message").innerText())
        .toBe("Thank you: your email address is verified.");

      // Sign-in: Enter in the email field before the script, then Enter again after it.
      held.arm();
      await parsed(page, `${portal.origin}/account/signin/`, "signin");
      await page.getByLabel("Email address").fill(email);
      await pressTooEarly(page, "signin", watch);
      held.release();
      await wired(page, "signin", watch);
      await page.getByLabel("Email address").press("Enter");
      await expect.poll(() => page.locator("#message").innerText()).toMatch(/^If an account exists/);
      const confirmHref = await page.getByRole("link", { name: "sign in now" }).getAttribute("href");

      // Confirm: the one-time token stays until the script takes it; then the session starts.
      held.arm();
      const confirmUrl = new URL(confirmHref!, page.url()).href;
      await parsed(page, confirmUrl, "confirm");
      await pressTooEarly(page, "confirm", watch);
      expect(page.url()).toBe(confirmUrl);
      held.release();
      await wired(page, "confirm", watch);
      await page.getByRole("button", { name: "Continue signing in" }).click();
      await page.waitForURL(`${portal.origin}/account/`);
      await expect.poll(() => page.locator("#signed-in").isVisible()).toBe(true);
      expect(await page.locator("#who-email").innerText()).toBe(email);
      expect(errors.filter((e) => !/status of 401/.test(e))).toEqual([]);
    },
  );

  it("a script that never comes: the button stays disabled and the note, later, says to reload", async () => {
    const page = await newPage();
    await page.route("**/assets/account.js", (route) => route.abort());
    const watch = watchNavigations(page);
    await page.goto(`${portal.origin}/account/signin/`);
    await page.getByLabel("Email address").fill("late@players.test");
    await pressTooEarly(page, "signin", watch);
    const stalled = page.locator("#signin .loading .stalled");
    const visibility = () => stalled.evaluate((el) => (globalThis as any).getComputedStyle(el).visibility);
    expect(await visibility()).toBe("hidden");
    // The hint waits 10 s (site.css); move its animation there instead of waiting.
    await page.evaluate(() => {
      for (const animation of (globalThis as any).document.getAnimations())
        if (animation.animationName === "stalled") animation.currentTime = 10_001;
    });
    await expect.poll(visibility).toBe("visible");
    expect(await page.locator("#signin .loading").innerText()).toBe(
      "Loading the form… If this stays, reload the page.",
    );
  });

  it("JavaScript off: no loading note, the notice says what the page needs, the button cannot submit", async () => {
    const page = await newPage({ javaScriptEnabled: false });
    const watch = watchNavigations(page);
    await page.goto(`${portal.origin}/account/signup/`);
    watch.reset();
    expect(await page.locator(".notice").innerText()).toMatch(/need JavaScript/);
    expect(await page.locator("#signup .loading").isVisible()).toBe(false);
    expect(await page.getByRole("button", { name: "Create account" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "Create account" }).click({ force: true });
    await page.getByLabel("Email address").fill("off@players.test");
    await page.getByLabel("Email address").press("Enter");
    await page.waitForTimeout(500);
    expect(watch.requests()).toEqual([]);
    expect(await page.getByLabel("Email address").inputValue()).toBe("off@players.test");
  });
});
