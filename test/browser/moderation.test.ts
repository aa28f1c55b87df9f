import type { Browser, Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaRegistry } from "../../src/contracts/schemas.ts";
import { tempProject } from "../support/temp-project.ts";
import type { BrowserElement } from "./dom.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER, screenshot } from "../support/browser.ts";
import { type BrowserPortal, startBrowserPortal } from "../support/browser-portal.ts";

/**
 * The moderation pages. The submissions routes (moderation_queue, upload_status,
 * moderation_decision) are not in the committed server yet, so the review flow runs against a
 * FAKE network: Playwright answers those three routes and the session with bodies shaped like
 * the handlers' (the submission view is checked against svc.upload-submission.v1 first). The
 * pages, their scripts and every other request are real.
 */

declare const getComputedStyle: (element: unknown) => { display: string };

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

const ID = "sub_0123456789abcdefghij";
const NOW = Date.now();
const ago = (seconds: number) => new Date(NOW - seconds * 1000).toISOString();

function submission(state: string, decisions: unknown[] = []) {
  return {
    schema: "svc.upload-submission.v1",
    submissionId: ID,
    ownerAccountId: "acct_modder",
    modId: "better-hud",
    version: "1.2.0",
    state,
    packageSha256: "a".repeat(64),
    package: { fileName: "better-hud-1.2.0.zip", sizeBytes: 190_112, contentType: "application/zip" },
    validationChecks: [
      { id: "sidecar_schema", required: true, status: "passed", reasonCode: null, log: ["sidecar matches"] },
      {
        id: "archive_content_policy",
        required: true,
        status: "failed",
        reasonCode: "script_not_allowed",
        log: ["Binaries/Win64/<script>alert(1)</script>.ps1: scripts are not allowed", "1 entry refused"],
      },
      { id: "mod_config_contract", required: false, status: "skipped", reasonCode: null, log: [] },
    ],
    review: {
      state: state === "pending_review" ? "pending" : "changes_requested",
      decisions,
      queuePosition: state === "pending_review" ? 1 : null,
      medianWaitSeconds: 5400,
    },
    createdAt: ago(7200),
    updatedAt: ago(3600),
  };
}

const QUEUE = {
  items: [
    {
      submissionId: ID,
      modId: "better-hud",
      version: "1.2.0",
      state: "pending_review",
      ownerAccountId: "acct_modder",
      packageSha256: "a".repeat(64),
      queuePosition: 1,
      ageSeconds: 7200,
      failedChecks: [{ id: "archive_content_policy", reasonCode: "script_not_allowed" }],
      createdAt: ago(7200),
      updatedAt: ago(3600),
      statusUrl: `/api/v1/uploads/${ID}`,
    },
    {
      submissionId: "sub_zyxwvutsrqponmlkjihg",
      modId: "night-sky",
      version: "0.9.3",
      state: "pending_review",
      ownerAccountId: "acct_other",
      packageSha256: "b".repeat(64),
      queuePosition: 2,
      ageSeconds: 180,
      failedChecks: [],
      createdAt: ago(180),
      updatedAt: ago(180),
      statusUrl: "/api/v1/uploads/sub_zyxwvutsrqponmlkjihg",
    },
  ],
  nextCursor: null,
  medianWaitSeconds: 5400,
};

const json = (route: Route, status: number, body: unknown) =>
  route.fulfill({ status, contentType: "application/json; charset=utf-8", body: JSON.stringify(body) });

/** Installs the fake routes; returns the decision requests the page made. */
async function fakeSubmissionsApi(page: Page) {
  const decisions: Array<{ headers: Record<string, string>; body: unknown }> = [];
  let current = submission("pending_review");
  await page.route("**/api/v1/auth/session", (route) =>
    json(route, 200, {
      session: {
        accountId: "acct_mod",
        displayName: "Mo",
        email: "mo@mods.test",
        roles: ["moderator"],
        csrfToken: "csrf-123",
      },
    }),
  );
  await page.route("**/api/v1/moderation/releases?**", (route) => json(route, 200, QUEUE));
  await page.route("**/api/v1/moderation/releases", (route) => json(route, 200, QUEUE));
  await page.route(`**/api/v1/uploads/${ID}`, (route) => json(route, 200, current));
  await page.route(`**/api/v1/moderation/releases/${ID}/decision`, async (route) => {
    const request = route.request();
    const body = request.postDataJSON() as { decision: string; notes: string };
    decisions.push({ headers: request.headers(), body });
    current = submission("changes_requested", [
      {
        decision: body.decision,
        reviewerAccountId: "acct_mod",
        notes: body.notes,
        fromState: "pending_review",
        toState: "changes_requested",
        decidedAt: new Date().toISOString(),
      },
    ]);
    await json(route, 200, current);
  });
  return decisions;
}

describe.skipIf(SKIP_BROWSER)("moderation pages", () => {
  it("the fake submission bodies match svc.upload-submission.v1", () => {
    const registry = schemaRegistry(project.config.baseUrl);
    for (const body of [
      submission("pending_review"),
      submission("changes_requested", [
        {
          decision: "request_changes",
          reviewerAccountId: "acct_mod",
          notes: "n",
          fromState: "pending_review",
          toState: "changes_requested",
          decidedAt: ago(1),
        },
      ]),
    ]) {
      const result = registry.validate("upload-submission", body);
      expect(result.ok ? [] : result.issues).toEqual([]);
    }
  });

  it("signed out, the queue asks for a moderator sign-in (real API)", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${portal.origin}/moderation/`);
    await expect.poll(() => page.locator("#message").innerText()).toMatch(/sign in with a moderator account/);
    expect(await page.getByRole("link", { name: "Sign in" }).last().getAttribute("href")).toBe(
      `${portal.origin}/account/signin/`,
    );
    await context.close();
  });

  it("'Show more' is shown only while the queue has more, and appends each page once (fake network)", async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const page = await context.newPage();
    const errors = collectPageErrors(page);
    await fakeSubmissionsApi(page);
    const third = {
      ...QUEUE.items[1]!,
      submissionId: "sub_thirdthirdthirdthird",
      modId: "loot-filter",
      queuePosition: 3,
    };
    const asked: Array<string | null> = [];
    // The route's keyset paging: the first page says where to continue, the second is the last.
    await page.route("**/api/v1/moderation/releases?**", async (route) => {
      const url = new URL(route.request().url());
      const cursor = url.searchParams.get("cursor");
      asked.push(cursor);
      if (url.searchParams.get("state") === "approved")
        return json(route, 200, { items: [], nextCursor: null, medianWaitSeconds: null });
      if (cursor === null) return json(route, 200, { ...QUEUE, nextCursor: "page-2" });
      if (cursor !== "page-2") return json(route, 400, { code: "invalid_request", message: "bad cursor" });
      // Slow enough that a second click lands while this page is on its way.
      await new Promise((resolve) => setTimeout(resolve, 300));
      return json(route, 200, { items: [third], nextCursor: null, medianWaitSeconds: 5400 });
    });

    await page.goto(`${portal.origin}/moderation/`);
    const rows = page.locator("#queue-rows tr");
    const more = page.locator("#queue-more");
    await expect.poll(() => rows.count()).toBe(2);
    expect(await more.isVisible()).toBe(true);
    expect(await page.locator("#message").innerText()).toBe("2 submissions shown; more are available.");

    // Two clicks before the answer: one request, one page appended.
    await more.evaluate((button) => {
      (button as unknown as { click(): void }).click();
      (button as unknown as { click(): void }).click();
    });
    await expect.poll(() => rows.count()).toBe(3);
    expect(await page.locator("#queue-rows tr td:nth-child(2)").allInnerTexts()).toEqual([
      "better-hud",
      "night-sky",
      "loot-filter",
    ]);
    expect(asked).toEqual([null, "page-2"]);
    // The last page gave no cursor: the button is gone (the hidden attribute wins over the button style).
    expect(await more.isVisible()).toBe(false);
    expect(await more.evaluate((button) => getComputedStyle(button).display)).toBe("none");
    expect(await page.locator("#message").innerText()).toBe("3 submissions shown.");

    // Even a click on the hidden button (a script, an old tab) starts nothing and duplicates nothing.
    await more.evaluate((button) => (button as unknown as { click(): void }).click());
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await rows.count()).toBe(3);
    expect(asked).toEqual([null, "page-2"]);

    // A filter with a single page never shows the button.
    await page.getByLabel("Show").selectOption("approved");
    await expect.poll(() => page.locator("#queue-empty").isVisible()).toBe(true);
    expect(await more.isVisible()).toBe(false);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("queue with positions and ages -> validation logs -> decision with notes and the CSRF header (fake network)", async () => {
    const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
    const page = await context.newPage();
    const errors = collectPageErrors(page);
    const decisions = await fakeSubmissionsApi(page);

    await page.goto(`${portal.origin}/moderation/`);
    const rows = page.locator("#queue-rows tr");
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(0).innerText()).toMatch(
      /^1\tbetter-hud\t1\.2\.0\tWaiting for review\t2 h\tfailed: archive_content_policy$/,
    );
    expect(await rows.nth(1).innerText()).toMatch(
      /^2\tnight-sky\t0\.9\.3\tWaiting for review\t3 min\tnone failed$/,
    );
    expect(await page.locator("#queue-median").innerText()).toBe(
      "Median wait for a decision over the last 30 days: 1 h.",
    );
    await screenshot(page, "moderation-queue");

    await page.getByRole("link", { name: "better-hud" }).click();
    await page.waitForURL(`${portal.origin}/moderation/review/?id=${ID}`);
    await expect.poll(() => page.locator("h1").innerText()).toBe("Review better-hud 1.2.0");
    expect(await page.locator("#checks-summary").innerText()).toBe(
      "1 passed, 1 failed, 1 other, of 3 checks.",
    );
    const failed = page.locator("#check-list > li").first();
    expect(await failed.locator("h3").innerText()).toBe("archive_content_policy — failed");
    // The failed check's log is open and shown as text.
    expect(await failed.locator("pre").innerText()).toBe(
      "Binaries/Win64/<script>alert(1)</script>.ps1: scripts are not allowed\n1 entry refused",
    );
    const offered = await page
      .locator('input[name="decision"]:visible')
      .evaluateAll((els) => els.map((el) => (el as unknown as BrowserElement).value));
    expect(offered).toEqual(["approve", "request_changes", "reject"]);

    await page.getByLabel("Request changes").check();
    await page
      .getByLabel("Notes for the modder (kept with the decision)")
      .fill("Move the script out.\nThanks!");
    await screenshot(page, "moderation-review");
    await page.getByRole("button", { name: "Record decision" }).click();
    await expect
      .poll(() => page.locator("#message").innerText())
      .toBe("Recorded: request_changes. The release is now Changes requested.");
    expect(decisions).toHaveLength(1);
    expect(decisions[0]!.headers["x-svc-csrf"]).toBe("csrf-123");
    expect(decisions[0]!.body).toEqual({
      decision: "request_changes",
      notes: "Move the script out.\nThanks!",
    });
    expect(await page.locator("#decision-list").innerText()).toContain("Move the script out.\nThanks!");
    expect(await page.locator("#decide").isVisible()).toBe(false);
    expect(errors).toEqual([]);
    await context.close();
  });
});
