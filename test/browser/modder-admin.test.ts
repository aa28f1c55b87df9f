import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fixFor } from "../../src/validation/checks/index.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import {
  type SubmissionsPortal,
  SKIP_CLAMSCAN,
  startSubmissionsPortal,
} from "../support/submissions-portal.ts";
import { writeZip } from "../support/zip.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER, screenshot } from "../support/browser.ts";

/**
 * The whole path through the pages, in Debian's Chromium against the REAL local portal on
 * loopback (real routes, real mod-validation worker, real clamscan with a test signature database):
 * a modder signs up through the pages, uploads a hand-zipped package that fails validation and
 * reads the failing check's log and fix, packs the fixed folder with `svc pack` and uploads a new
 * revision; a moderator approves; an admin publishes, reviews roles and reads the audit log; the
 * modder's page then shows the release published and its download carries the packed bytes.
 */

const run = promisify(execFile);
const MODDER = { email: "quinn@modders.test", name: "Quinn" };
const WAIT = { timeout: 60_000, interval: 200 };

let browser: Browser;
let portal: SubmissionsPortal;
let work: string;
const contexts: BrowserContext[] = [];
let modder: Page;
let modderErrors: string[];
/** What the walkthrough carries from step to step. */
const state = { submissionId: "", packedSha256: "", modderAccountId: "" };

/** The mod folder a modder keeps: svc-mod.json at its root, the pak it loads, and (at first) a stray script. */
function writeModFolder(folder: string, withScript: boolean) {
  const files: Record<string, string> = {
    "svc-mod.json": `${JSON.stringify(
      {
        schema: "svc.mod-manifest.v1",
        id: "quick-travel",
        name: "Quick Travel",
        version: "1.0.0",
        targetGameBuild: "17000000",
        dependencies: [],
        entrypoints: [{ path: "Content/Paks/QuickTravel.pak", kind: "pak" }],
      },
      null,
      2,
    )}\n`,
    "Content/Paks/QuickTravel.pak": "quick travel pak\n".repeat(200),
    "README.txt": "Quick Travel: fast travel between discovered waypoints.\n",
  };
  if (withScript) files["tools/install.bat"] = "@echo off\r\ncopy *.pak %GAME%\r\n";
  rmSync(folder, { recursive: true, force: true });
  for (const [name, data] of Object.entries(files)) {
    mkdirSync(dirname(join(folder, name)), { recursive: true });
    writeFileSync(join(folder, name), data);
  }
  return files;
}

async function newPage(): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  contexts.push(context);
  const page = await context.newPage();
  page.on("dialog", (dialog) => dialog.accept());
  return { page, errors: collectPageErrors(page) };
}

/** Sign-in as a person does it: the sign-in page, the emailed link (shown in dev mode), the confirm page. */
async function signInThroughPages(page: Page, email: string) {
  await page.goto(`${portal.h.origin}/account/signin/`);
  await page.getByLabel("Email address").fill(email);
  await page.getByRole("button", { name: "Email me a sign-in link" }).click();
  await page.getByRole("link", { name: "sign in now" }).click();
  await page.waitForURL(/\/account\/confirm\/$/);
  await page.getByRole("button", { name: "Continue signing in" }).click();
  await page.waitForURL(`${portal.h.origin}/account/`);
  await expect.poll(() => page.locator("#signed-in").isVisible()).toBe(true);
}

/** upload_status as the page's own session sees it. */
function statusFromPage(page: Page, id: string) {
  return page.evaluate(async (id) => {
    const response = await fetch(`/api/v1/uploads/${id}`);
    return (await response.json()) as any;
  }, id);
}

const standing = (page: Page) => page.locator("#standing").innerText();

beforeAll(async () => {
  if (SKIP_BROWSER || SKIP_CLAMSCAN) return;
  work = mkdtempSync(join(tmpdir(), "svc-modder-admin-"));
  browser = await launchBrowser();
  portal = await startSubmissionsPortal();
  ({ page: modder, errors: modderErrors } = await newPage());
});
afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await portal?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(SKIP_BROWSER || SKIP_CLAMSCAN)(
  "a modder and an admin, through the pages",
  { timeout: 90_000 },
  () => {
    it("the modder signs up as a modder through the pages and the emailed links", async () => {
      await modder.goto(`${portal.h.origin}/account/signup/`);
      await modder.getByLabel("Email address").fill(MODDER.email);
      await modder.getByLabel("Display name").fill(MODDER.name);
      await modder.getByLabel("Publish mods too (modder)").check();
      await modder.getByRole("button", { name: "Create account" }).click();
      await modder.getByRole("link", { name: "verify this address now" }).click();
      await modder.getByRole("button", { name: "Verify my email address" }).click();
      await modder.getByRole("link", { name: "Sign in now" }).click();
      await signInThroughPages(modder, MODDER.email);
      expect(await modder.locator("#who-roles").innerText()).toContain("modder");
      state.modderAccountId = await modder.evaluate(
        async () => ((await (await fetch("/api/v1/auth/session")).json()) as any).session.accountId,
      );

      await modder.getByRole("link", { name: "Your releases" }).click();
      await modder.waitForURL(`${portal.h.origin}/releases/`);
      await expect.poll(() => modder.locator("#mine-empty").isVisible()).toBe(true);
    });

    it("uploads a hand-zipped package; the submission page follows validation to the failing check, its log and its fix", async () => {
      const folder = join(work, "quick-travel");
      const files = writeModFolder(folder, true);
      const handZipped = join(work, "quick-travel-by-hand.zip");
      writeFileSync(handZipped, writeZip(Object.entries(files).map(([name, data]) => ({ name, data }))));

      await modder.getByRole("link", { name: "Upload a release" }).click();
      await modder.waitForURL(`${portal.h.origin}/releases/new/`);
      await modder.getByLabel("Package (ZIP, at most 100 MiB)").setInputFiles(handZipped);
      // The page reads svc-mod.json from the ZIP and measures the file before anything is sent.
      await expect.poll(() => modder.locator("#manifest").isVisible()).toBe(true);
      expect(await modder.locator("#manifest-facts").innerText()).toContain("quick-travel");
      const bytes = readFileSync(handZipped);
      await expect
        .poll(() => modder.locator("#package-facts").innerText())
        .toContain(createHash("sha256").update(bytes).digest("hex"));
      await modder
        .getByLabel("Summary (one line, shown in the catalog)")
        .fill("Fast travel between waypoints.");
      await modder.getByLabel("Description (optional)").fill("Adds a travel menu.\nWorks with controllers.");
      await modder.getByLabel("Release notes for this version").fill("First release.");
      await modder.getByLabel("Author name").fill("Quinn");
      await modder.getByLabel("Tags (optional, comma-separated, e.g. ui, maps)").fill("travel, ui");
      await screenshot(modder, "releases-upload", "upload");
      await modder.getByRole("button", { name: "Upload and validate" }).click();
      await modder.waitForURL(/\/releases\/submission\/\?id=sub_[0-9a-z]+$/);
      state.submissionId = new URL(modder.url()).searchParams.get("id")!;

      // No reload: the page polls upload_status while the worker validates.
      await expect
        .poll(() => standing(modder), WAIT)
        .toMatch(/^Failed validation: 1 required check failed\./);
      expect(await modder.locator("#polling").isVisible()).toBe(false);
      expect(await modder.locator("h1").innerText()).toBe("quick-travel 1.0.0");

      const api = await statusFromPage(modder, state.submissionId);
      // The portal names what it stores {modId}-{version}.zip, never the file's name on this disk.
      expect(api.package.fileName).toBe("quick-travel-1.0.0.zip");
      expect(await modder.locator("#message").innerText()).toBe(
        "Uploaded quick-travel 1.0.0 as quick-travel-1.0.0.zip.",
      );
      expect(api.state).toBe("validation_failed");
      const failing = api.validationChecks.filter((c: any) => c.status === "failed");
      expect(failing.map((c: any) => [c.id, c.reasonCode])).toEqual([
        ["archive_content_policy", "script_file"],
      ]);
      const item = modder.locator("#check-list > li").first();
      expect(await item.locator("h3").innerText()).toBe("archive_content_policy — failed");
      expect(await item.locator("p").first().innerText()).toBe("Reason: script_file");
      expect(await item.getByRole("link", { name: /script_file/ }).getAttribute("href")).toBe(
        // A loopback portal links the guide its own server sends (portal.config.json's repository
        // may be the template's placeholder).
        `${portal.h.app.config.baseUrl}/docs/validation.md#archive_content_policy`,
      );
      expect(await item.locator(".fix li").allInnerTexts()).toEqual([fixFor("script_file")]);
      // The log is the worker's, word for word, and open.
      expect(await item.locator("details").getAttribute("open")).toBe("");
      expect(await item.locator("pre").innerText()).toBe(failing[0].log.join("\n"));
      expect(failing[0].log.join("\n")).toContain("tools/install.bat");
      expect(await modder.locator("#resubmit").isVisible()).toBe(true);
      expect(await modder.locator("#cancel-box").isVisible()).toBe(true);
      await screenshot(modder, "releases-submission-failed", "submission-failed");
    });

    it("the modder removes the script, packs the folder with svc pack and uploads a new revision of the same submission", async () => {
      const folder = join(work, "quick-travel");
      writeModFolder(folder, false);
      const packed = join(work, "quick-travel-1.0.0.zip");
      await run(
        process.execPath,
        ["bin/svc.js", "pack", folder, "--out", packed, "--site", join(portal.h.root, "site")],
        { cwd: REPO_ROOT },
      );
      state.packedSha256 = createHash("sha256").update(readFileSync(packed)).digest("hex");

      await modder.getByRole("link", { name: "upload a new revision" }).click();
      await modder.waitForURL(`${portal.h.origin}/releases/new/?id=${state.submissionId}`);
      await expect
        .poll(() => modder.locator("#message").innerText())
        .toBe(
          "New revision of quick-travel 1.0.0: choose the fixed package (same mod id and version) and upload it.",
        );
      // What the modder typed for the first revision is filled in again.
      expect(await modder.getByLabel("Summary (one line, shown in the catalog)").inputValue()).toBe(
        "Fast travel between waypoints.",
      );
      expect(await modder.getByLabel("Release notes for this version").inputValue()).toBe("First release.");
      await modder
        .getByLabel("Release notes for this version")
        .fill("First release, without the install script.");
      await modder.getByLabel("Package (ZIP, at most 100 MiB)").setInputFiles(packed);
      await expect.poll(() => modder.locator("#package-facts").innerText()).toContain(state.packedSha256);
      const sent = modder.waitForRequest((r) => r.url().endsWith("/api/v1/uploads") && r.method() === "POST");
      await modder.getByRole("button", { name: "Upload and validate" }).click();
      const request = await sent;
      expect(request.headers()["x-svc-csrf"]).toBeTruthy();
      expect(request.headers()["content-type"]).toMatch(/^multipart\/form-data; boundary=/);
      // Same mod and version: the same submission, a new revision.
      await modder.waitForURL(`${portal.h.origin}/releases/submission/?id=${state.submissionId}`);
      await expect
        .poll(() => standing(modder), WAIT)
        .toBe(
          "Waiting for review: position 1 in the queue. No release was decided in the last 30 days, so there is no typical wait yet.",
        );
      const api = await statusFromPage(modder, state.submissionId);
      expect(api.packageSha256).toBe(state.packedSha256);
      expect(api.validationChecks.filter((c: any) => c.status === "failed")).toEqual([]);
      expect(await modder.locator("#facts").innerText()).toContain(`Package SHA-256\n${state.packedSha256}`);
      expect(await modder.locator("#cancel-box").isVisible()).toBe(false);
      await screenshot(modder, "releases-submission-pending");

      await modder.goto(`${portal.h.origin}/releases/`);
      const rows = modder.locator("#mine-rows tr");
      await expect.poll(() => rows.count()).toBe(1);
      expect(await rows.first().innerText()).toMatch(
        /^quick-travel\t1\.0\.0\tWaiting for review\tposition 1\t\d{4}-\d\d-\d\d \d\d:\d\d$/,
      );
      await screenshot(modder, "releases-list", "releases");
    });

    it("a moderator approves it from the queue (no 'Show more' when everything is shown)", async () => {
      const { page, errors } = await newPage();
      await signInThroughPages(page, portal.moderator.email);
      await page.goto(`${portal.h.origin}/moderation/`);
      await expect.poll(() => page.locator("#queue-rows tr").count()).toBe(1);
      expect(await page.locator("#queue-more").isVisible()).toBe(false);
      await page.getByRole("link", { name: "quick-travel" }).click();
      await page.getByLabel("Approve for publication").check();
      await page.getByLabel("Notes for the modder (kept with the decision)").fill("Clean package, thanks.");
      await page.getByRole("button", { name: "Record decision" }).click();
      await expect
        .poll(() => page.locator("#message").innerText())
        .toBe("Recorded: approve. The release is now Approved.");
      expect(errors).toEqual([]);

      await modder.goto(`${portal.h.origin}/releases/submission/?id=${state.submissionId}`);
      await expect.poll(() => standing(modder)).toBe("Approved: an admin publishes it next.");
      expect(await modder.locator("#decision-list").innerText()).toMatch(
        /^Approved on \d{4}-\d\d-\d\d \d\d:\d\d\n+Clean package, thanks\.$/,
      );
    });

    it("the admin publishes through the admin page and sees what was published", async () => {
      const { page, errors } = await newPage();
      await signInThroughPages(page, portal.admin.email);
      await page.getByRole("link", { name: "Admin", exact: true }).click();
      await page.waitForURL(`${portal.h.origin}/admin/`);
      const approved = page.locator("#approved-rows tr");
      await expect.poll(() => approved.count()).toBe(1);
      expect(await approved.first().innerText()).toContain(`quick-travel\t1.0.0\t`);
      const publish = page.getByRole("button", { name: "Publish 1 approved release" });
      const sent = page.waitForRequest((r) => r.url().endsWith("/api/v1/catalog/publish"));
      await publish.click();
      expect((await sent).headers()["x-svc-csrf"]).toBeTruthy();
      await expect.poll(() => page.locator("#result-summary").innerText()).toBe("Published 1, failed 0.");
      const row = page.locator("#result-rows tr");
      expect(await row.count()).toBe(1);
      expect(await row.first().getAttribute("data-outcome")).toBe("published");
      const text = await row.first().innerText();
      expect(text).toMatch(/^quick-travel\t1\.0\.0\tPublished\t/);
      expect(text).toContain(`SHA-256 ${state.packedSha256}`);
      // The package link points into this portal, whatever port serves it.
      const href = await row.first().getByRole("link").getAttribute("href");
      expect(href).toBe(`${portal.h.origin}/downloads/mods/quick-travel/1.0.0/quick-travel-1.0.0.zip`);
      await expect
        .poll(() => page.getByRole("button", { name: "Nothing to publish" }).isDisabled())
        .toBe(true);
      await screenshot(page, "admin-publish", "admin-publish");
      expect(errors).toEqual([]);
    });

    it("the admin reviews roles: the last admin cannot lose the role, a modder becomes a moderator", async () => {
      const { page, errors } = await newPage();
      await signInThroughPages(page, portal.admin.email);
      await page.goto(`${portal.h.origin}/admin/`);
      await page.getByRole("link", { name: "Accounts and roles" }).click();
      await page.waitForURL(`${portal.h.origin}/admin/roles/`);
      await expect.poll(() => page.locator("#account-rows tr").count()).toBe(4);

      const adminRow = page.locator(`tr[data-account-id="${portal.admin.accountId}"]`);
      const boxes = () =>
        adminRow
          .locator('input[type="checkbox"]')
          .evaluateAll((els) =>
            els
              .filter((el) => (el as unknown as { checked: boolean }).checked)
              .map((el) => (el as unknown as { value: string }).value),
          );
      // The boxes show the roles the route holds.
      expect(await boxes()).toEqual(["player", "admin"]);
      // Taking admin away would leave no verified admin.
      await adminRow.getByLabel("admin", { exact: true }).uncheck();
      const answer = page.waitForResponse((r) =>
        r.url().endsWith(`/accounts/${portal.admin.accountId}/roles`),
      );
      await adminRow.getByRole("button", { name: /^Save roles of / }).click();
      expect((await answer).status()).toBe(409);
      await expect
        .poll(() => page.locator("#message").innerText())
        .toBe(
          "Not changed: this is the last verified admin, and the portal always keeps one. Give another verified account the admin role first.",
        );
      expect(await page.locator("#message").getAttribute("class")).toContain("error");
      // The boxes show what the server holds again.
      expect(await boxes()).toEqual(["player", "admin"]);
      await screenshot(page, "admin-roles-last-admin");

      const modderRow = page.locator(`tr[data-account-id="${state.modderAccountId}"]`);
      expect(await modderRow.innerText()).toContain(MODDER.email);
      await modderRow.getByLabel("moderator", { exact: true }).check();
      await modderRow.getByRole("button", { name: `Save roles of ${MODDER.name}` }).click();
      await expect
        .poll(() => page.locator("#message").innerText())
        .toMatch(/^Saved: Quinn now has the roles /);
      const roles = await page.evaluate(async (id) => {
        const response = await fetch("/api/v1/accounts?limit=100");
        const body = (await response.json()) as { accounts: Array<{ id: string; roles: string[] }> };
        return body.accounts.find((a) => a.id === id)?.roles;
      }, state.modderAccountId);
      expect([...(roles ?? [])].sort()).toEqual(["modder", "moderator"]);
      await screenshot(page, "admin-roles", "admin-roles");
      expect(errors.filter((e) => !e.includes("409"))).toEqual([]);
    });

    it("the admin reads the audit log: one submission's whole story, then every event page by page", async () => {
      const { page, errors } = await newPage();
      await signInThroughPages(page, portal.admin.email);
      await page.goto(`${portal.h.origin}/admin/audit/`);
      await expect.poll(() => page.locator("#event-rows tr").count()).toBeGreaterThan(0);

      await page.getByLabel("Target id").fill(state.submissionId);
      await page.getByRole("button", { name: "Show events" }).click();
      await page.waitForURL(`${portal.h.origin}/admin/audit/?targetId=${state.submissionId}&limit=50`);
      await expect
        .poll(async () => (await page.locator("#event-rows tr td:nth-child(2)").allInnerTexts()).at(-1))
        .toBe("upload.created");
      const actions = await page.locator("#event-rows tr td:nth-child(2)").allInnerTexts();
      for (const action of [
        "upload.created",
        "upload.resubmitted",
        "moderation.decided",
        "catalog.published",
      ])
        expect(actions, action).toContain(action);
      expect(actions[0]).toBe("catalog.published");
      const targets = await page.locator("#event-rows tr td:nth-child(4)").allInnerTexts();
      expect(new Set(targets)).toEqual(new Set([`submission ${state.submissionId}`]));
      await screenshot(page, "admin-audit", "admin-audit");

      // Every event, 20 to a page: "Show older events" continues from the cursor until there are no more.
      await page.getByRole("button", { name: "Clear" }).click();
      await page.getByLabel("Per page").selectOption("20");
      await page.getByRole("button", { name: "Show events" }).click();
      await expect.poll(() => page.locator("#event-rows tr").count()).toBe(20);
      const total = await page.evaluate(async () => {
        let count = 0;
        let cursor: string | null = null;
        do {
          const response: Response = await fetch(
            `/api/v1/audit/events?limit=200${cursor ? `&cursor=${cursor}` : ""}`,
          );
          const body = (await response.json()) as { events: unknown[]; nextCursor: string | null };
          count += body.events.length;
          cursor = body.nextCursor;
        } while (cursor);
        return count;
      });
      expect(total).toBeGreaterThan(20);
      const more = page.getByRole("button", { name: "Show older events" });
      while (await more.isVisible()) {
        const before = await page.locator("#event-rows tr").count();
        await more.click();
        await expect.poll(() => page.locator("#event-rows tr").count()).toBeGreaterThan(before);
      }
      // Viewing the log writes no events, so the pages add up to exactly what the route holds.
      const ids = await page
        .locator("#event-rows tr")
        .evaluateAll((rows) =>
          rows.map((r) => (r as unknown as { dataset: { eventId: string } }).dataset.eventId),
        );
      expect(ids.length).toBe(total);
      expect(new Set(ids).size).toBe(total);
      expect(errors).toEqual([]);
    });

    it("the modder's page shows the release published, and its download is the packed file", async () => {
      await modder.goto(`${portal.h.origin}/releases/submission/?id=${state.submissionId}`);
      await expect
        .poll(() => standing(modder))
        .toBe("Published: it is in the catalog and can be downloaded.");
      const download = modder.locator("#download");
      expect(await download.innerText()).toBe("Download quick-travel-1.0.0.zip");
      const href = (await download.getAttribute("href"))!;
      expect(new URL(href).origin).toBe(portal.h.origin);
      const response = await fetch(href);
      expect(response.status).toBe(200);
      const served = createHash("sha256")
        .update(Buffer.from(await response.arrayBuffer()))
        .digest("hex");
      expect(served).toBe(state.packedSha256);
      // The catalog a manager reads names the same bytes.
      const catalog = (await (await fetch(`${portal.h.origin}/api/v1/catalog.json`)).json()) as any;
      const mod = catalog.mods.find((m: any) => m.id === "quick-travel");
      expect(mod.versions[0].sha256).toBe(state.packedSha256);
      const modPage = await fetch(
        (await modder
          .getByRole("link", { name: "The quick-travel page in the catalog" })
          .getAttribute("href"))!,
      );
      expect(modPage.status).toBe(200);
      expect(await modPage.text()).toContain("Fast travel between waypoints.");
      await screenshot(modder, "releases-submission-published", "submission-published");
    });

    it("a release sent with a JSON metadata file: the server's error is shown in plain words; then it is cancelled", async () => {
      const bad = writeZip([
        {
          name: "svc-mod.json",
          data: JSON.stringify({
            schema: "svc.mod-manifest.v1",
            id: "map-pins",
            name: "Map Pins",
            version: "0.1.0",
            targetGameBuild: "17000000",
            dependencies: [],
            entrypoints: [{ path: "Content/Paks/MapPins.pak", kind: "pak" }],
          }),
        },
        { name: "Content/Paks/MapPins.pak", data: "pins" },
        { name: "setup.ps1", data: "Remove-Item -Recurse ~" },
      ]);
      const sidecar: Record<string, unknown> = {
        schema: "svc.mod-release-submission.v1",
        modId: "map-pins",
        name: "Map Pins",
        version: "0.1.0",
        targetGameBuild: "17000000",
        summary: "Pins on the map.",
        package: { fileName: "map-pins-0.1.0.zip", sha256: "0".repeat(64), sizeBytes: bad.length },
        dependencies: [],
        entrypoints: [{ path: "Content/Paks/MapPins.pak", kind: "pak" }],
        authors: [{ name: "Quinn" }],
      };
      await modder.goto(`${portal.h.origin}/releases/new/`);
      await modder.getByLabel(/^Use a release JSON file/).check();
      expect(await modder.locator("#metadata-fields").isVisible()).toBe(false);
      await modder.getByLabel("Package (ZIP, at most 100 MiB)").setInputFiles({
        name: "map-pins-0.1.0.zip",
        mimeType: "application/zip",
        buffer: bad,
      });
      const file = (body: unknown) => ({
        name: "release.json",
        mimeType: "application/json",
        buffer: Buffer.from(JSON.stringify(body)),
      });
      // releaseNotes is missing: the route refuses with invalid_payload and names the field.
      await modder.getByLabel("Release JSON file", { exact: true }).setInputFiles(file(sidecar));
      await modder.getByRole("button", { name: "Upload and validate" }).click();
      await expect
        .poll(() => modder.locator("#message").innerText())
        .toMatch(
          /^metadata does not match svc\.mod-release-submission\.v1 \(invalid_payload\): .*releaseNotes/,
        );
      expect(await modder.locator("#message").getAttribute("class")).toContain("error");
      expect(await modder.getByRole("button", { name: "Upload and validate" }).isEnabled()).toBe(true);
      await screenshot(modder, "releases-upload-refused");

      await modder
        .getByLabel("Release JSON file", { exact: true })
        .setInputFiles(file({ ...sidecar, releaseNotes: "First." }));
      await modder.getByRole("button", { name: "Upload and validate" }).click();
      await modder.waitForURL(/\/releases\/submission\/\?id=sub_/);
      const id = new URL(modder.url()).searchParams.get("id")!;
      await expect.poll(() => standing(modder), WAIT).toMatch(/^Failed validation/);
      // The stale sha256 of the JSON file was replaced by the measured one, and the page said so.
      const measured = createHash("sha256").update(bad).digest("hex");
      expect((await statusFromPage(modder, id)).packageSha256).toBe(measured);
      expect(await modder.locator("#message").innerText()).toBe(
        `Uploaded map-pins 0.1.0 as map-pins-0.1.0.zip. The JSON file named another SHA-256 (${"0".repeat(64)}); the chosen package's was sent.`,
      );

      await modder.getByRole("button", { name: "Cancel this submission" }).click();
      await expect.poll(() => standing(modder)).toBe("Cancelled: you withdrew this submission.");
      expect(await modder.locator("#actions").isVisible()).toBe(false);
      expect((await statusFromPage(modder, id)).state).toBe("cancelled");

      await modder.goto(`${portal.h.origin}/releases/`);
      await expect.poll(() => modder.locator("#mine-rows tr").count()).toBe(2);
      expect(await modder.locator("#mine-rows tr").first().innerText()).toMatch(
        /^map-pins\t0\.1\.0\tCancelled\t—\t/,
      );
      expect(modderErrors.filter((e) => !e.includes("400"))).toEqual([]);
    });

    it("every new page has one h1, a main landmark, labelled controls and a lang", async () => {
      const { page } = await newPage();
      await signInThroughPages(page, portal.admin.email);
      for (const path of [
        "/releases/",
        "/releases/new/",
        `/releases/submission/?id=${state.submissionId}`,
        "/admin/",
        "/admin/roles/",
        "/admin/audit/",
      ]) {
        await page.goto(portal.h.origin + path);
        await page.waitForLoadState("networkidle");
        expect(await page.locator("h1").count(), path).toBe(1);
        expect(await page.locator("main").count(), path).toBe(1);
        expect(await page.locator("html").getAttribute("lang"), path).toBe("en");
        const unlabelled = await page
          .locator("input:not([type=hidden]), select, textarea")
          .evaluateAll((els) =>
            els
              .filter((el) => (el as unknown as { labels: { length: number } | null }).labels?.length === 0)
              .map((el) => (el as unknown as { id: string }).id),
          );
        expect(unlabelled, path).toEqual([]);
      }
    });
  },
);
