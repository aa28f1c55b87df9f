import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { endpointById } from "../../src/contracts/endpoints.ts";
import { type Harness, startHarness } from "../support/http-harness.ts";
import { tempProject } from "../support/temp-project.ts";
import type { BrowserDocument } from "./dom.ts";
import { type Mailbox, startMailbox } from "./mailbox.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER, screenshot } from "../support/browser.ts";
import { type BrowserPortal, startBrowserPortal } from "../support/browser-portal.ts";

declare const document: BrowserDocument;

const ACCOUNT_ROUTES = [
  "create_account",
  "verify_account",
  "request_magic_link",
  "confirm_magic_link",
  "current_session",
  "delete_session",
  "create_api_key",
  "list_api_keys",
  "revoke_api_key",
];
const routesLive = ACCOUNT_ROUTES.every((id) => endpointById(id).status === "implemented");

let browser: Browser;
let project: ReturnType<typeof tempProject>;
let portal: BrowserPortal;

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  browser = await launchBrowser();
  project = tempProject();
  portal = await startBrowserPortal(project);
});
afterAll(async () => {
  await browser?.close();
  await portal?.close();
  project?.cleanup();
});

/** What the download lane says to a key (the file does not exist: a good key gets not_found). */
async function downloadWith(key: string): Promise<string> {
  const response = await fetch(
    `${portal.origin}/api/v1/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip`,
    {
      headers: { authorization: `Bearer ${key}` },
    },
  );
  return ((await response.json()) as { code: string }).code;
}

describe.skipIf(SKIP_BROWSER || !routesLive)("account pages against the real accounts API", () => {
  it("sign up -> verify -> magic link -> API key create, list, revoke -> sign out", async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const page = await context.newPage();
    const errors = collectPageErrors(page);
    page.on("dialog", (dialog) => dialog.accept());

    await page.goto(`${portal.origin}/account/`);
    await expect.poll(() => page.locator("#signed-out").isVisible()).toBe(true);

    await page.getByRole("link", { name: "create a free account" }).click();
    await page.waitForURL(`${portal.origin}/account/signup/`);
    await page.getByLabel("Email address").fill("ada@players.test");
    await page.getByLabel("Display name").fill("Ada <b>Lovelace</b>");
    await page.getByLabel("Publish mods too (modder)").check();
    await screenshot(page, "account-signup");
    await page.getByRole("button", { name: "Create account" }).click();
    await expect.poll(() => page.locator("#message").innerText()).toMatch(/^Check your email/);

    // Developer email mode: the page offers the link the email would carry.
    await page.getByRole("link", { name: "verify this address now" }).click();
    await page.waitForURL(/\/account\/verify\/$/);
    expect(new URL(page.url()).search).toBe("");
    await page.getByRole("button", { name: "Verify my email address" }).click();
    await expect
      .poll(() => page.locator("#message").innerText())
      .toBe("Thank you: your email address is verified.");

    await page.getByRole("link", { name: "Sign in now" }).click();
    await page.waitForURL(`${portal.origin}/account/signin/`);
    await page.getByLabel("Email address").fill("ada@players.test");
    await page.getByRole("button", { name: "Email me a sign-in link" }).click();
    await page.getByRole("link", { name: "sign in now" }).click();
    await page.waitForURL(/\/account\/confirm\/$/);
    await page.getByRole("button", { name: "Continue signing in" }).click();
    await page.waitForURL(`${portal.origin}/account/`);
    await expect.poll(() => page.locator("#signed-in").isVisible()).toBe(true);
    expect(await page.locator("#who-name").innerText()).toBe("Ada <b>Lovelace</b>");
    expect(await page.locator("#who-email").innerText()).toBe("ada@players.test");
    expect(await page.locator("#who-roles").innerText()).toContain("modder");

    // Create: the secret is shown once, in a labelled read-only field.
    await page.getByLabel("Name of the new key").fill("Desktop manager");
    await page.getByRole("button", { name: "Create API key" }).click();
    const secretField = page.getByLabel("API key", { exact: true });
    await expect.poll(() => secretField.isVisible()).toBe(true);
    const secret = await secretField.inputValue();
    expect(secret.length).toBeGreaterThan(20);
    expect(await page.locator("#new-key").evaluate((el) => el === document.activeElement)).toBe(true);

    // List: metadata only, never the secret.
    const rows = page.locator("#key-rows tr");
    await expect.poll(() => rows.count()).toBe(1);
    const row = await rows.first().innerText();
    expect(row).toContain("Desktop manager");
    expect(row).toContain("active");
    expect(await page.locator("#key-table").innerText()).not.toContain(secret);
    expect(await downloadWith(secret)).toBe("not_found");
    await screenshot(page, "account-keys");

    // Revoke: the row says so and the download lane refuses the key.
    await page.getByRole("button", { name: "Revoke key Desktop manager" }).click();
    await expect.poll(() => rows.first().innerText()).toContain("revoked");
    expect(await page.getByRole("button", { name: /^Revoke key/ }).count()).toBe(0);
    expect(await downloadWith(secret)).toBe("invalid_api_key");

    // A new page load: the session survives, the key list is read again, the secret is gone.
    await page.reload();
    await expect.poll(() => rows.count()).toBe(1);
    expect(await page.locator("#new-key").isVisible()).toBe(false);

    await page.getByRole("button", { name: "Sign out" }).click();
    await expect.poll(() => page.locator("#signed-out").isVisible()).toBe(true);
    expect(errors.filter((e) => !e.includes("401"))).toEqual([]);
    await context.close();
  });

  it("a used or forged magic link says so in plain words", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${portal.origin}/account/confirm/?token=${"x".repeat(43)}`);
    expect(new URL(page.url()).search).toBe("");
    await page.getByRole("button", { name: "Continue signing in" }).click();
    await expect.poll(() => page.locator("#message").innerText()).toMatch(/^This link is not valid any more/);
    expect(await page.locator("#message").getAttribute("class")).toContain("error");
    await page.goto(`${portal.origin}/account/confirm/`);
    await expect
      .poll(() => page.locator("#message").innerText())
      .toMatch(/needs the link from your sign-in email/);
    await context.close();
  });
});

describe.skipIf(SKIP_BROWSER || !routesLive)("account pages opened from the links in the emails", () => {
  // Real mail delivery: the portal POSTs signed webhooks to a loopback mail system, no dev tokens.
  let mailbox: Mailbox;
  let h: Harness;
  beforeAll(async () => {
    mailbox = await startMailbox();
    h = await startHarness({
      env: { SVC_EMAIL_WEBHOOK_URL: mailbox.url, SVC_EMAIL_WEBHOOK_SECRET: mailbox.secret },
    });
  });
  afterAll(async () => {
    await h?.close();
    await mailbox?.close();
  });

  it("verification mail -> verify page -> magic-link mail -> confirm page -> signed in, once", async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    try {
      const page = await context.newPage();
      const errors = collectPageErrors(page);
      const email = "lin@players.test";

      await page.goto(`${h.origin}/account/signup/`);
      await page.getByLabel("Email address").fill(email);
      await page.getByLabel("Display name").fill("Lin");
      await page.getByRole("button", { name: "Create account" }).click();
      await expect.poll(() => page.locator("#message").innerText()).toMatch(/^Check your email/);
      expect(await page.locator("#dev-link").isVisible()).toBe(false);

      const verifyMail = await mailbox.waitFor("verify_email", email);
      expect(verifyMail.linkPath).toBe(
        `/account/verify/?account=${encodeURIComponent(verifyMail.accountId!)}&token=${encodeURIComponent(verifyMail.token!)}`,
      );
      await page.goto(`${h.origin}${verifyMail.linkPath}`);
      // The page takes the values and clears them from the address bar (and so from history).
      await page.waitForURL(`${h.origin}/account/verify/`);
      await page.getByRole("button", { name: "Verify my email address" }).click();
      await expect
        .poll(() => page.locator("#message").innerText())
        .toBe("Thank you: your email address is verified.");
      await screenshot(page, "account-verify-from-email");

      await page.getByRole("link", { name: "Sign in now" }).click();
      // The sign-in button stays disabled until account.js has wired the form (a click before
      // that once submitted it natively and reloaded the page with no message);
      // forms-before-script.test.ts clicks early on purpose.
      await page.waitForURL(`${h.origin}/account/signin/`);
      await page.getByLabel("Email address").fill(email);
      await page.getByRole("button", { name: "Email me a sign-in link" }).click();
      await expect.poll(() => page.locator("#message").innerText()).toMatch(/^If an account exists/);
      const signInMail = await mailbox.waitFor("magic_link", email);
      expect(signInMail.linkPath).toBe(`/account/confirm/?token=${encodeURIComponent(signInMail.token!)}`);
      await page.goto(`${h.origin}${signInMail.linkPath}`);
      await page.waitForURL(`${h.origin}/account/confirm/`);
      await page.getByRole("button", { name: "Continue signing in" }).click();
      await page.waitForURL(`${h.origin}/account/`);
      await expect.poll(() => page.locator("#signed-in").isVisible()).toBe(true);
      expect(await page.locator("#who-email").innerText()).toBe(email);

      // The magic link is single use: opened again, the page says so.
      await page.goto(`${h.origin}${signInMail.linkPath}`);
      await page.getByRole("button", { name: "Continue signing in" }).click();
      await expect
        .poll(() => page.locator("#message").innerText())
        .toMatch(/^This link is not valid any more/);
      expect(errors.filter((e) => !/status of 40[01]/.test(e))).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
