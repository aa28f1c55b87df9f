import { createHash } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SignedIn } from "../support/http-harness.ts";
import {
  form,
  type SubmissionsPortal,
  SKIP_CLAMSCAN,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";
import { modRelease } from "../support/catalog-project.ts";
import { writeZip } from "../support/zip.ts";
import { eicar } from "../validation/clamav.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER, screenshot } from "../support/browser.ts";

/**
 * The moderation pages against the REAL routes: the local portal over loopback HTTP with the
 * submissions runtime (real worker, real clamscan with a test signature database), accounts made
 * through the accounts API, the moderator signed in through the sign-in pages and the magic link.
 * Nothing on the network is faked.
 */

let browser: Browser;
let portal: SubmissionsPortal;
let context: BrowserContext;
let page: Page;
let errors: string[];
/** Two valid releases waiting for review (A gets changes requested, B is approved) and one that failed. */
const ids = { a: "", b: "", failed: "" };

function badPackage() {
  const { sidecar } = modRelease({ modId: "bad-mod" });
  const bytes = writeZip([
    {
      name: "svc-mod.json",
      data: JSON.stringify({
        schema: "svc.mod-manifest.v1",
        id: "bad-mod",
        name: "Better HUD",
        version: "1.0.0",
        targetGameBuild: "17000000",
        dependencies: [],
        entrypoints: [{ path: "Content/Paks/BetterHud.pak", kind: "pak" }],
      }),
    },
    { name: "Content/Paks/BetterHud.pak", data: "pak" },
    { name: "../../evil.dll", data: eicar().toString("latin1") },
  ]);
  const package_ = {
    ...sidecar.package,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    sizeBytes: bytes.length,
  };
  return { sidecar: { ...sidecar, package: package_ }, packageBytes: bytes };
}

async function submit(who: SignedIn, release: { sidecar: unknown; packageBytes: Buffer }): Promise<string> {
  const created = await upload(portal, who, form(release.sidecar, release.packageBytes));
  expect(created.status).toBe(201);
  return created.json.submissionId as string;
}

/** The moderator signs in the way a person does: sign-in page, the emailed link, the confirm page. */
async function signInThroughPages(target: Page, email: string) {
  await target.goto(`${portal.h.origin}/account/signin/`);
  await target.getByLabel("Email address").fill(email);
  await target.getByRole("button", { name: "Email me a sign-in link" }).click();
  await target.getByRole("link", { name: "sign in now" }).click();
  await target.waitForURL(/\/account\/confirm\/$/);
  await target.getByRole("button", { name: "Continue signing in" }).click();
  await target.waitForURL(`${portal.h.origin}/account/`);
  await expect.poll(() => target.locator("#moderation-link").isVisible()).toBe(true);
}

const reviewUrl = (id: string) => `${portal.h.origin}/moderation/review/?id=${id}`;

/** Opens a submission's review page and waits until the page has read it from upload_status. */
async function openReview(target: Page, id: string) {
  await target.goto(reviewUrl(id));
  await expect.poll(() => target.locator("#submission").isVisible()).toBe(true);
}

async function status(id: string) {
  return portal.call("GET", `/api/v1/uploads/${id}`, { cookie: portal.modder.cookie });
}

/** A decision POSTed from inside the page with the page's own cookie, with or without a CSRF header. */
function decideFromPage(target: Page, id: string, csrf: string | null) {
  return target.evaluate(
    async ({ id, csrf }) => {
      const headers: Record<string, string> = { "content-type": "application/json" };
      if (csrf !== null) headers["x-svc-csrf"] = csrf;
      const response = await fetch(`/api/v1/moderation/releases/${id}/decision`, {
        method: "POST",
        headers,
        body: JSON.stringify({ decision: "approve", notes: "sent without the page's token" }),
      });
      return { status: response.status, body: (await response.json()) as { code: string } };
    },
    { id, csrf },
  );
}

beforeAll(async () => {
  if (SKIP_BROWSER || SKIP_CLAMSCAN) return;
  browser = await launchBrowser();
  portal = await startSubmissionsPortal();
  ids.a = await submit(portal.modder, modRelease({ modId: "quick-travel", version: "1.0.0" }));
  ids.b = await submit(portal.modder, modRelease({ modId: "map-pins", version: "2.1.0" }));
  ids.failed = await submit(portal.modder, badPackage());
  await waitForState(portal, portal.modder, ids.a, ["pending_review"]);
  await waitForState(portal, portal.modder, ids.b, ["pending_review"]);
  await waitForState(portal, portal.modder, ids.failed, ["validation_failed"]);
  context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  page = await context.newPage();
  errors = collectPageErrors(page);
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await portal?.stop();
});

describe.skipIf(SKIP_BROWSER || SKIP_CLAMSCAN)("moderation pages against the real submissions routes", () => {
  it("the moderator signs in through the sign-in page and the magic link", async () => {
    await signInThroughPages(page, portal.moderator.email);
    expect(await page.locator("#who-roles").innerText()).toContain("moderator");
  });

  it("the queue shows the waiting releases with positions and ages, and the failed one with its checks", async () => {
    await page.getByRole("link", { name: "Open the moderation queue" }).click();
    await page.waitForURL(`${portal.h.origin}/moderation/`);
    const rows = page.locator("#queue-rows tr");
    await expect.poll(() => rows.count()).toBe(2);
    expect(await rows.nth(0).innerText()).toMatch(
      /^1\tquick-travel\t1\.0\.0\tWaiting for review\t\d+ min\tnone failed$/,
    );
    expect(await rows.nth(1).innerText()).toMatch(
      /^2\tmap-pins\t2\.1\.0\tWaiting for review\t\d+ min\tnone failed$/,
    );
    expect(await rows.nth(0).locator("td").nth(4).getAttribute("title")).toMatch(
      /^submitted \d{4}-\d\d-\d\d \d\d:\d\d$/,
    );
    expect(await page.locator("#queue-median").innerText()).toBe("No decisions in the last 30 days.");
    expect(await page.locator("#message").innerText()).toBe("2 submissions shown.");
    await screenshot(page, "moderation-real-queue");

    await page.getByLabel("Show").selectOption("validation_failed");
    await expect.poll(() => rows.count()).toBe(1);
    const failedRow = await rows.first().innerText();
    expect(failedRow).toMatch(/^—\tbad-mod\t1\.0\.0\tFailed validation\t\d+ min\tfailed: /);
    expect(failedRow).toContain("zip_path_safety");
    expect(failedRow).toContain("antivirus_scan");
    await screenshot(page, "moderation-real-queue-failed");
  });

  it("the failed release's review page shows the real validation logs and offers no decision", async () => {
    await page.getByRole("link", { name: "bad-mod" }).click();
    await page.waitForURL(reviewUrl(ids.failed));
    await expect.poll(() => page.locator("h1").innerText()).toBe("Review bad-mod 1.0.0");
    expect(await page.locator("#checks-summary").innerText()).toMatch(
      /^\d+ passed, [1-9]\d* failed, \d+ other, of \d+ checks\.$/,
    );
    // Failed checks come first, their logs open; the log is the worker's, word for word.
    const api = (await status(ids.failed)).json;
    const antivirus = api.validationChecks.find((c: any) => c.id === "antivirus_scan");
    expect(antivirus).toMatchObject({ status: "failed", reasonCode: "malware_detected" });
    const item = page.locator("#check-list > li").filter({ hasText: "antivirus_scan — failed" });
    expect(await item.locator("p").innerText()).toBe("Reason: malware_detected");
    expect(await item.locator("details").getAttribute("open")).toBe("");
    expect(await item.locator("pre").innerText()).toBe(antivirus.log.join("\n"));
    expect(antivirus.log.join("\n")).toContain("Svc-Test-Eicar");
    const pathCheck = page.locator("#check-list > li").filter({ hasText: "zip_path_safety — failed" });
    expect(await pathCheck.locator("pre").innerText()).toMatch(/\.\./);
    expect(await page.locator("#decide").isVisible()).toBe(false);
    await screenshot(page, "moderation-real-review-failed");
  });

  it("a decision without the page's CSRF token is refused; the page's own one carries it and is stored", async () => {
    await openReview(page, ids.a);
    // The page's session cookie alone is not enough: no header, or a forged one, is refused.
    expect(await decideFromPage(page, ids.a, null)).toEqual({
      status: 403,
      body: expect.objectContaining({ code: "csrf_failed" }),
    });
    expect(await decideFromPage(page, ids.a, "forged-token")).toEqual({
      status: 403,
      body: expect.objectContaining({ code: "csrf_failed" }),
    });
    expect((await status(ids.a)).json.state).toBe("pending_review");

    const offered = await page
      .locator('input[name="decision"]:visible')
      .evaluateAll((els) => els.map((el) => (el as unknown as { value: string }).value));
    expect(offered).toEqual(["approve", "request_changes", "reject"]);
    const session = await page.evaluate(async () => {
      const response = await fetch("/api/v1/auth/session");
      return ((await response.json()) as { session: { csrfToken: string } }).session;
    });
    await page.getByLabel("Request changes").check();
    await page
      .getByLabel("Notes for the modder (kept with the decision)")
      .fill("Please add a description.\nAnd a changelog.");
    await screenshot(page, "moderation-real-review");
    const sent = page.waitForRequest((r) =>
      r.url().endsWith(`/api/v1/moderation/releases/${ids.a}/decision`),
    );
    await page.getByRole("button", { name: "Record decision" }).click();
    expect((await sent).headers()["x-svc-csrf"]).toBe(session.csrfToken);
    await expect
      .poll(() => page.locator("#message").innerText())
      .toBe("Recorded: request_changes. The release is now Changes requested.");
    expect(await page.locator("#decision-list").innerText()).toContain(
      "Please add a description.\nAnd a changelog.",
    );
    expect(await page.locator("#decide").isVisible()).toBe(false);
    await screenshot(page, "moderation-real-review-decided");
  });

  it("approves through the page; a second, stale decision shows the server's error message", async () => {
    const stale = await context.newPage();
    const staleErrors = collectPageErrors(stale);
    await openReview(stale, ids.b);
    await openReview(page, ids.b);
    await page.getByLabel("Approve for publication").check();
    await page.getByLabel("Notes for the modder (kept with the decision)").fill("Looks good, thanks.");
    await page.getByRole("button", { name: "Record decision" }).click();
    await expect
      .poll(() => page.locator("#message").innerText())
      .toBe("Recorded: approve. The release is now Approved.");

    // The other tab still offers the decisions of pending_review; the server has the final word.
    await stale.getByLabel("Reject").check();
    await stale.getByLabel("Notes for the modder (kept with the decision)").fill("Too late.");
    const answer = stale.waitForResponse((r) =>
      r.url().endsWith(`/api/v1/moderation/releases/${ids.b}/decision`),
    );
    await stale.getByRole("button", { name: "Record decision" }).click();
    const refused = await answer;
    expect(refused.status()).toBe(409);
    const body = (await refused.json()) as { code: string; message: string };
    expect(body.code).toBe("illegal_transition");
    expect(body.message.length).toBeGreaterThan(0);
    await expect
      .poll(() => stale.locator("#message").innerText())
      .toBe(`That is not possible in the release's current state. ${body.message}`);
    expect(await stale.locator("#message").getAttribute("class")).toContain("error");
    // The form stays usable after a refusal.
    expect(await stale.getByRole("button", { name: "Record decision" }).isEnabled()).toBe(true);
    await screenshot(stale, "moderation-real-review-illegal");
    expect(staleErrors.filter((e) => !e.includes("409"))).toEqual([]);
    await stale.close();
  });

  it("the real API and the audit log hold both decisions with their notes", async () => {
    const a = (await status(ids.a)).json;
    expect(a.state).toBe("changes_requested");
    expect(a.review.decisions).toEqual([
      expect.objectContaining({
        decision: "request_changes",
        reviewerAccountId: portal.moderator.accountId,
        notes: "Please add a description.\nAnd a changelog.",
        fromState: "pending_review",
        toState: "changes_requested",
      }),
    ]);
    const b = (await status(ids.b)).json;
    expect(b.state).toBe("approved");
    expect(b.review.decisions).toEqual([
      expect.objectContaining({ decision: "approve", notes: "Looks good, thanks.", toState: "approved" }),
    ]);

    const decided = async (id: string) =>
      (
        await portal.call("GET", `/api/v1/audit/events?targetId=${id}&limit=50`, {
          cookie: portal.admin.cookie,
        })
      ).json.events.filter((e: any) => e.action === "moderation.decided");
    // One event per recorded decision: the refused CSRF and stale attempts left none.
    expect(await decided(ids.a)).toEqual([
      expect.objectContaining({
        actorAccountId: portal.moderator.accountId,
        targetType: "submission",
        metadata: {
          from: "pending_review",
          to: "changes_requested",
          action: "request_changes",
          notes: "Please add a description.\nAnd a changelog.",
        },
      }),
    ]);
    expect(await decided(ids.b)).toEqual([
      expect.objectContaining({
        actorAccountId: portal.moderator.accountId,
        metadata: { from: "pending_review", to: "approved", action: "approve", notes: "Looks good, thanks." },
      }),
    ]);

    // The queue page now reads the median wait from the recorded decisions.
    await page.goto(`${portal.h.origin}/moderation/`);
    await expect.poll(() => page.locator("#queue-empty").isVisible()).toBe(true);
    expect(await page.locator("#queue-median").innerText()).toMatch(
      /^Median wait for a decision over the last 30 days: \d+ min\.$/,
    );
    await page.getByLabel("Show").selectOption("approved");
    await expect.poll(() => page.locator("#queue-rows tr").count()).toBe(1);
    expect(await page.locator("#queue-rows tr").innerText()).toMatch(/^—\tmap-pins\t2\.1\.0\tApproved\t/);
    expect(errors.filter((e) => !/status of 40[39]/.test(e))).toEqual([]);
  });
});
