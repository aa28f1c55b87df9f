import { createHash } from "node:crypto";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modRelease } from "../support/catalog-project.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER, screenshot } from "../support/browser.ts";
import { signUpAndSignIn, type SignedIn } from "../support/http-harness.ts";
import {
  form,
  type SubmissionsPortal,
  SKIP_CLAMSCAN,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";
import { writeZip } from "../support/zip.ts";
import { eicar } from "../validation/clamav.ts";

/**
 * The review page a moderator approves from, against the REAL routes, worker and clamscan: the
 * release text exactly as the published mod page renders it, the file list with detected types,
 * the diff against the published version with its native DLL called out, the uploader by name
 * with their history, an earlier rejected submission's notes on a re-upload, the queue filtered to
 * rejected releases, the staged-package download, and the suspension of a malware uploader's
 * account from the page (an admin lifts it there too). Nothing on the network is faked.
 */

let browser: Browser;
let portal: SubmissionsPortal;
let stranger: SignedIn;
let context: BrowserContext;
let page: Page;
let errors: string[];
const ids = { first: "", update: "", rejected: "", again: "", malware: "" };

const NOTES = "Line one.\n  Indented <b>not bold</b> & kept.\n\nLast line.";
const DESCRIPTION = "Travel faster.\nSecond line with <script>alert(1)</script>.";
const HOOK_DLL = `MZ${"\u0000".repeat(62)}PE\u0000\u0000${"hook".repeat(200)}`;

function release(modId: string, version: string, extraFiles: Record<string, string> = {}) {
  const made = modRelease({ modId, version, extraFiles });
  return { ...made, sidecar: { ...made.sidecar, releaseNotes: NOTES, description: DESCRIPTION } };
}

/** A package whose files are named safely but hold the EICAR test string (made at test time). */
function malwarePackage() {
  const { sidecar, manifest } = modRelease({ modId: "night-sky", version: "1.0.0" });
  const bytes = writeZip([
    { name: "svc-mod.json", data: `${JSON.stringify(manifest, null, 2)}\n` },
    { name: "Content/Paks/BetterHud.pak", data: "pak night-sky\n".repeat(20) },
    { name: "Content/readme.txt", data: eicar().toString("latin1") },
  ]);
  const pkg = {
    ...sidecar.package,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    sizeBytes: bytes.length,
  };
  return { sidecar: { ...sidecar, package: pkg }, packageBytes: bytes };
}

async function submit(who: SignedIn, made: { sidecar: unknown; packageBytes: Buffer }, states: string[]) {
  const created = await upload(portal, who, form(made.sidecar, made.packageBytes));
  expect(created.status, JSON.stringify(created.json)).toBeLessThan(300);
  const id = created.json.submissionId as string;
  await waitForState(portal, who, id, states);
  return id;
}

function decide(id: string, decision: string, notes: string) {
  return portal.call("POST", `/api/v1/moderation/releases/${id}/decision`, {
    body: { decision, notes },
    cookie: portal.moderator.cookie,
    csrf: portal.moderator.csrf,
  });
}

async function openReview(id: string) {
  await page.goto(`${portal.h.origin}/moderation/review/?id=${id}`);
  await expect.poll(() => page.locator("#submission").isVisible()).toBe(true);
}

/** A browser signed in as `who` (the session cookie the API handed out). */
async function signedInContext(who: SignedIn) {
  const made = await browser.newContext({ viewport: { width: 1200, height: 900 }, acceptDownloads: true });
  const [name, value] = who.cookie.split("=") as [string, string];
  await made.addCookies([{ name, value, url: portal.h.origin }]);
  return made;
}

beforeAll(async () => {
  if (SKIP_BROWSER || SKIP_CLAMSCAN) return;
  browser = await launchBrowser();
  portal = await startSubmissionsPortal();
  stranger = await signUpAndSignIn(portal.call, "stranger@example.com", "Night Owl", "modder");
  ids.first = await submit(portal.modder, release("quick-travel", "1.0.0"), ["pending_review"]);
  expect((await decide(ids.first, "approve", "Fine.")).status).toBe(200);
  const published = await portal.call("POST", "/api/v1/catalog/publish", {
    cookie: portal.admin.cookie,
    csrf: portal.admin.csrf,
  });
  expect(published.json.published).toBe(1);
  ids.update = await submit(
    portal.modder,
    release("quick-travel", "1.1.0", { "Binaries/Win64/Hook.dll": HOOK_DLL }),
    ["pending_review"],
  );
  ids.rejected = await submit(stranger, release("map-pins", "2.0.0"), ["pending_review"]);
  expect(
    (await decide(ids.rejected, "reject", "Copies another mod's pak.\nSend your own work.")).status,
  ).toBe(200);
  ids.again = await submit(stranger, release("map-pins", "2.0.0"), ["pending_review"]);
  ids.malware = await submit(stranger, malwarePackage(), ["validation_failed"]);
  context = await signedInContext(portal.moderator);
  page = await context.newPage();
  errors = collectPageErrors(page);
});
afterAll(async () => {
  await context?.close();
  await browser?.close();
  await portal?.stop();
});

describe.skipIf(SKIP_BROWSER || SKIP_CLAMSCAN)("the review page against the real routes", () => {
  it("shows the release text exactly as the published mod page renders it", async () => {
    await page.goto(`${portal.h.origin}/mods/quick-travel/`);
    const published = {
      description: await page.locator('section[aria-labelledby="about-h"] .text').innerText(),
      notes: await page.locator('[id="v1.0.0"] .text').innerText(),
    };
    expect(published.notes).toBe(NOTES.replace(/\n {2}/, "\n"));
    await openReview(ids.first);
    expect(await page.locator("#release-notes").innerText()).toBe(published.notes);
    expect(await page.locator("#release-description").innerText()).toBe(published.description);
    expect(await page.locator("#release-summary").innerText()).toBe("Better HUD makes the game better.");
  });

  it("shows an update's release, files, diff with the new DLL called out, and the uploader by name", async () => {
    await openReview(ids.update);
    expect(await page.locator("h1").innerText()).toBe("Review quick-travel 1.1.0");
    expect(await page.locator("#release-name").innerText()).toBe("Better HUD 1.1.0");
    const facts = await page.locator("#release-facts").innerText();
    expect(facts).toContain("Author\nAda (@ada)");
    expect(facts).toContain("Tags\nui");
    expect(facts).toContain("Links\nSource code");
    expect(facts).toContain("Entry points\nContent/Paks/BetterHud.pak (pak)");
    expect(await page.getByRole("link", { name: "Source code" }).getAttribute("rel")).toBe(
      "noopener noreferrer nofollow",
    );
    expect(await page.locator("#risk-list").innerText()).toBe(
      "Look closely: adds a native DLL: Binaries/Win64/Hook.dll",
    );
    expect(await page.locator("#diff-h").innerText()).toBe("Changes since 1.0.0");
    expect(await page.locator("#diff-summary").innerText()).toMatch(
      /^1 added, 2 changed, 0 removed, 0 unchanged\. Package .+ → .+ \(\+.+\)\.$/,
    );
    const diffRows = await page.locator("#diff-rows tr").allInnerTexts();
    expect(diffRows.map((r) => r.split("\t").slice(0, 2).join(" | "))).toEqual([
      "added | Binaries/Win64/Hook.dll native",
      "changed | Content/Paks/BetterHud.pak",
      "changed | svc-mod.json",
    ]);
    const fileRows = await page.locator("#file-rows tr").allInnerTexts();
    expect(fileRows.map((r) => r.split("\t")).map(([file, , type]) => [file, type])).toEqual([
      ["svc-mod.json", "text"],
      ["Content/Paks/BetterHud.pak", "text"],
      ["Binaries/Win64/Hook.dll native", "pe"],
    ]);
    expect(await page.locator("#files-summary").innerText()).toMatch(
      /^3 files, .+ installed, 1 native binary\.$/,
    );
    const uploader = await page.locator("#uploader-facts").innerText();
    expect(uploader).toContain(`Name\nModder (${portal.modder.accountId})`);
    expect(uploader).toContain("Account age\n0 days (since ");
    expect(uploader).toContain(
      "Other submissions\n1: 1 published, 0 rejected, 0 failed validation, 0 cancelled",
    );
    await page.getByText("Their recent submissions").click();
    expect(await page.locator("#uploader-recent-list").innerText()).toMatch(
      /^quick-travel 1\.0\.0 — Published, /,
    );
    expect(await page.locator("#package-download").isVisible()).toBe(true);
    await screenshot(page, "moderation-review-update", "moderation-review");
  });

  it("downloads the staged package from the page as an attachment", async () => {
    const downloading = page.waitForEvent("download");
    await page.getByRole("link", { name: "Download the staged package" }).click();
    const file = await downloading;
    expect(file.suggestedFilename()).toBe("quick-travel-1.1.0.zip");
    const audit = await portal.call(
      "GET",
      `/api/v1/audit/events?action=submission.package_downloaded&targetId=${ids.update}`,
      { cookie: portal.admin.cookie },
    );
    expect(audit.json.events.map((e: any) => e.actorAccountId)).toEqual([portal.moderator.accountId]);
  });

  it("a re-upload of a rejected version shows the earlier submission's decision and notes, by name", async () => {
    await openReview(ids.again);
    const earlier = await page.locator("#earlier-list").innerText();
    expect(earlier).toContain(`${ids.rejected} by Night Owl (${stranger.accountId}): Rejected, revision 1`);
    expect(earlier).toContain("reject by Mo on ");
    expect(earlier).toContain("Copies another mod's pak.\nSend your own work.");
    expect(await page.locator("#uploader-facts").innerText()).toContain(
      "Decisions against them\nrejected 1 time, hidden 0 times (0 hidden now), changes requested 0 times",
    );
  });

  it("the queue filters to rejected releases", async () => {
    await page.goto(`${portal.h.origin}/moderation/`);
    await expect.poll(() => page.locator("#queue-rows tr").count()).toBeGreaterThan(0);
    await page.getByLabel("Show").selectOption("rejected");
    await expect
      .poll(() => page.locator("#queue-rows tr").allInnerTexts())
      .toEqual([expect.stringMatching(/^—\tmap-pins\t2\.0\.0\tRejected\t/)]);
    await page.getByLabel("Show").selectOption("all");
    await expect.poll(() => page.locator("#queue-rows tr").count()).toBe(5);
  });

  it("suspends a malware uploader's account from the review page; the account's next upload is refused", async () => {
    await openReview(ids.malware);
    expect(await page.locator("#checks-summary").innerText()).toMatch(/[1-9]\d* failed/);
    expect(await page.locator("#file-rows").innerText()).toContain("Content/readme.txt");
    expect((await page.locator("#risk-list").innerText()).split("\n")).toEqual([
      "Look closely: check antivirus_scan failed: malware_detected",
      "first release of this mod: 3 files, 608 bytes installed",
    ]);
    expect(await page.locator("#manifest-changes li").count()).toBe(0);
    expect(await page.locator("#decide").isVisible()).toBe(false);
    await page
      .getByLabel(
        "Suspend this account's uploads: reason (one line, kept in the audit log and shown to the uploader)",
      )
      .fill("Uploaded the EICAR test virus as a readme.");
    await page.getByRole("button", { name: "Suspend uploads" }).click();
    await expect
      .poll(() => page.locator("#message").innerText())
      .toBe("Uploads from Night Owl are suspended until an admin lifts it.");
    expect(await page.locator("#uploader-suspension").innerText()).toMatch(
      /^Uploads suspended since \d{4}-\d\d-\d\d \d\d:\d\d by Mo \(acct_[^)]+\): Uploaded the EICAR test virus as a readme\.$/,
    );
    expect(await page.locator("#suspend").isVisible()).toBe(false);
    // A moderator cannot lift it; the form is an admin's.
    expect(await page.locator("#lift").isVisible()).toBe(false);
    await screenshot(page, "moderation-review-suspended");
    const next = release("map-pins", "2.1.0");
    const refused = await upload(portal, stranger, form(next.sidecar, next.packageBytes));
    expect(refused.status).toBe(403);
    expect(refused.json.code).toBe("account_suspended");
  });

  it("an admin lifts the suspension from the same page", async () => {
    const admin = await signedInContext(portal.admin);
    const adminPage = await admin.newPage();
    const adminErrors = collectPageErrors(adminPage);
    await adminPage.goto(`${portal.h.origin}/moderation/review/?id=${ids.malware}`);
    await expect.poll(() => adminPage.locator("#lift").isVisible()).toBe(true);
    await adminPage.getByLabel("Lift the suspension: reason (one line)").fill("Confirmed a test upload.");
    await adminPage.getByRole("button", { name: "Lift the suspension" }).click();
    await expect.poll(() => adminPage.locator("#message").innerText()).toBe("Night Owl may upload again.");
    expect(await adminPage.locator("#uploader-suspension").isVisible()).toBe(false);
    expect(await adminPage.locator("#uploader-facts").innerText()).toContain(
      "Upload suspensions\n1 suspension",
    );
    expect(adminErrors).toEqual([]);
    await admin.close();
    expect(errors).toEqual([]);
  });
});
