import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Metadata } from "@tufjs/models";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RECORD_PATHS } from "../../src/contracts/records.ts";
import { buildRoot, signerFor } from "../../src/distribution/tuf-keys.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { writeRoot } from "../../src/distribution/tuf-root.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER, screenshot } from "../support/browser.ts";
import type { SignedIn } from "../support/http-harness.ts";
import { runCli } from "../support/run-cli.ts";
import {
  type SubmissionsPortal,
  SKIP_CLAMSCAN,
  startSubmissionsPortal,
} from "../support/submissions-portal.ts";
import { writeZip } from "../support/zip.ts";
import { operatorKeys } from "../distribution/support.ts";

/**
 * Issue 25's walk, in Debian's Chromium against the real local portal on loopback (real routes,
 * worker, clamscan over a test signature database, the publisher signing what it commits): a modder
 * uploads 1.0.0 through the form with a description, tags and a license; a moderator reviews it
 * (the text, the files, the uploader) and approves; an admin publishes; a player installs it with
 * `svc install` and changes its settings; the modder uploads 1.1.0 from a fresh browser with only
 * the release notes changed (the form fills the rest from the published release); the moderator
 * sees the diff with the new DLL flagged and approves; it is published and the mod page keeps the
 * description, tags and license; the player's update and `svc repair` keep their settings; the
 * moderator hides 1.1.0, 1.0.0 is published again, and `svc verify` on the player's install of
 * 1.1.0 says it was withdrawn. With SVC_UPDATE_SCREENSHOTS=1 the review page and the diff are saved
 * to docs/screenshots/ (review-release.png, review-diff.png).
 */

const WAIT = { timeout: 60_000, interval: 200 };
/** The form's license field, found by the start of its label (the rest explains SPDX identifiers). */
const LICENSE = /^License/;
const EXIT_WITHDRAWN = 3;
const MOD = "quick-travel";
const CONFIG = "Config/QuickTravel.json";
const DESCRIPTION = "Adds a travel menu.\nWorks with controllers.";
const NOTES_1 = "First release.";
const NOTES_2 = "Travel menu opens faster.";
/** A Windows library as the file_signature check knows one (a PE header), under Binaries/Win64. */
const HOOK_DLL = `MZ${"\u0000".repeat(62)}PE\u0000\u0000${"hook".repeat(200)}`;
const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
const DEFAULTS = json({ travel: { speed: "normal" }, ui: { showMap: true } });
const PLAYER_SETTINGS = json({ travel: { speed: "fast" }, ui: { showMap: false } });

let browser: Browser;
let portal: SubmissionsPortal;
let work: string;
const contexts: BrowserContext[] = [];
const pageErrors: string[][] = [];
const ids = { first: "", second: "" };
let player: { game: string; flags: string[] };

/** The modder's ZIP as they zip their folder: svc-mod.json, the pak, the settings file, maybe a DLL. */
function modPackage(version: string, withDll: boolean): string {
  const manifest = {
    schema: "svc.mod-manifest.v1",
    id: MOD,
    name: "Quick Travel",
    version,
    targetGameBuild: "17000000",
    dependencies: [],
    entrypoints: [{ path: "Content/Paks/QuickTravel.pak", kind: "pak" }],
    modConfig: {
      file: CONFIG,
      settings: [
        {
          key: "travel.speed",
          label: "Travel speed",
          type: "select",
          default: "normal",
          options: [
            { value: "normal", label: "Normal" },
            { value: "fast", label: "Fast" },
          ],
        },
        { key: "ui.showMap", label: "Show the map", type: "boolean", default: true },
      ],
    },
  };
  const path = join(work, `${MOD}-${version}.zip`);
  writeFileSync(
    path,
    writeZip([
      { name: "svc-mod.json", data: json(manifest) },
      { name: "Content/Paks/QuickTravel.pak", data: `quick travel pak ${version}\n`.repeat(200) },
      { name: CONFIG, data: DEFAULTS },
      ...(withDll ? [{ name: "Binaries/Win64/QuickTravelHook.dll", data: HOOK_DLL }] : []),
    ]),
  );
  return path;
}

/** A fresh browser (no storage of an earlier visit) signed in as `who`. */
async function browserOf(who: SignedIn): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
  contexts.push(context);
  const [name, value] = who.cookie.split("=") as [string, string];
  await context.addCookies([{ name, value, url: portal.h.origin }]);
  const page = await context.newPage();
  pageErrors.push(collectPageErrors(page));
  return page;
}

const standing = (page: Page) => page.locator("#standing").innerText();

/** The upload form: choose the package, let the page read its manifest, fill `fields`, submit. */
async function uploadThroughForm(
  page: Page,
  zip: string,
  fields: Array<[label: string | RegExp, value: string]>,
): Promise<string> {
  await page.goto(`${portal.h.origin}/releases/new/`);
  await page.getByLabel("Package (ZIP, at most 100 MiB)").setInputFiles(zip);
  await expect.poll(() => page.locator("#manifest").isVisible()).toBe(true);
  for (const [label, value] of fields) await page.getByLabel(label).fill(value);
  await page.getByRole("button", { name: "Upload and validate" }).click();
  await page.waitForURL(/\/releases\/submission\/\?id=sub_[0-9a-z]+$/);
  const id = new URL(page.url()).searchParams.get("id")!;
  await expect.poll(() => standing(page), WAIT).toMatch(/^Waiting for review/);
  return id;
}

async function decideOnPage(page: Page, id: string, decision: string, notes: string, expected: string) {
  await page.goto(`${portal.h.origin}/moderation/review/?id=${id}`);
  await expect.poll(() => page.locator("#submission").isVisible()).toBe(true);
  await page.getByLabel(decision).check();
  await page.getByLabel("Notes for the modder (kept with the decision)").fill(notes);
  await page.getByRole("button", { name: "Record decision" }).click();
  await expect.poll(() => page.locator("#message").innerText()).toBe(expected);
}

async function publishOnAdminPage(page: Page) {
  await page.goto(`${portal.h.origin}/admin/`);
  const publish = page.getByRole("button", { name: "Publish 1 approved release" });
  await expect.poll(() => publish.isVisible()).toBe(true);
  await publish.click();
  await expect.poll(() => page.locator("#result-summary").innerText()).toBe("Published 1, failed 0.");
}

const svc = (args: string[]) => runCli([...args, ...player.flags], work);
const installedConfig = () => readFileSync(join(player.game, MOD, CONFIG), "utf8");

function recordStatuses(): Record<string, string> {
  const file = join(portal.h.root, "records", RECORD_PATHS.modRecords(MOD));
  const records = JSON.parse(readFileSync(file, "utf8")) as {
    releases: Array<{ version: string; status: string }>;
  };
  return Object.fromEntries(records.releases.map((r) => [r.version, r.status]));
}

beforeAll(async () => {
  if (SKIP_BROWSER || SKIP_CLAMSCAN) return;
  work = mkdtempSync(join(tmpdir(), "svc-release-walk-"));
  const keys = operatorKeys();
  portal = await startSubmissionsPortal({ SVC_LIVE_UPLOADS: "1" }, { signing: { keys: keys.online } });
  const siteDir = join(portal.h.root, "site");
  const root = new Metadata(buildRoot(1, { root: keys.root, ...keys.online.keys }, new Date()));
  root.sign(signerFor(keys.root));
  writeRoot(siteDir, root);
  signSite(siteDir, keys.online);
  writeFileSync(join(work, "root.json"), readFileSync(join(siteDir, "tuf", "1.root.json")));
  // The harness's site is built for the default port while it serves another: the player downloads
  // through the API-key lane of the portal that is actually running.
  const key = await portal.call("POST", "/api/v1/auth/api-keys", {
    body: { name: "player's manager" },
    cookie: portal.admin.cookie,
    csrf: portal.admin.csrf,
  });
  expect(key.status).toBe(201);
  player = {
    game: join(work, "game"),
    flags: [
      "--mirror",
      portal.h.origin,
      "--trusted-root",
      join(work, "root.json"),
      "--cache",
      join(work, "cache"),
      "--api-key",
      key.json.secret,
    ],
  };
  browser = await launchBrowser();
});
afterAll(async () => {
  for (const context of contexts) await context.close();
  await browser?.close();
  await portal?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe.skipIf(SKIP_BROWSER || SKIP_CLAMSCAN)(
  "a release's life through the pages (issue 25)",
  { timeout: 120_000 },
  () => {
    it("the modder uploads 1.0.0 with a description, tags and a license", async () => {
      const modder = await browserOf(portal.modder);
      ids.first = await uploadThroughForm(modder, modPackage("1.0.0", false), [
        ["Summary (one line, shown in the catalog)", "Fast travel between waypoints."],
        ["Description (optional)", DESCRIPTION],
        ["Release notes for this version", NOTES_1],
        ["Author name", "Quinn"],
        ["Tags (optional, comma-separated, e.g. ui, maps)", "travel, ui"],
        [LICENSE, "MIT"],
      ]);
    });

    it("the moderator reviews it (text, files, uploader) and approves; the admin publishes", async () => {
      const moderator = await browserOf(portal.moderator);
      await moderator.goto(`${portal.h.origin}/moderation/review/?id=${ids.first}`);
      await expect.poll(() => moderator.locator("#submission").isVisible()).toBe(true);
      expect(await moderator.locator("#release-description").innerText()).toBe(DESCRIPTION);
      expect(await moderator.locator("#release-notes").innerText()).toBe(NOTES_1);
      expect(await moderator.locator("#release-facts").innerText()).toContain("Tags\ntravel, ui");
      expect(await moderator.locator("#release-facts").innerText()).toContain("License\nMIT");
      const files = await moderator.locator("#file-rows tr").allInnerTexts();
      expect(files.map((r) => r.split("\t")[0])).toEqual([
        "svc-mod.json",
        "Content/Paks/QuickTravel.pak",
        CONFIG,
      ]);
      expect(await moderator.locator("#uploader-facts").innerText()).toContain(
        `Name\nModder (${portal.modder.accountId})`,
      );
      await screenshot(moderator, "release-walk-review", "review-release");
      await decideOnPage(
        moderator,
        ids.first,
        "Approve for publication",
        "Fine.",
        "Recorded: approve. The release is now Approved.",
      );
      await publishOnAdminPage(await browserOf(portal.admin));
      expect(recordStatuses()).toEqual({ "1.0.0": "published" });
    });

    it("a player installs 1.0.0 with svc install and changes its settings", async () => {
      const install = await svc(["install", MOD, "--dir", player.game]);
      expect(install.code, install.stderr).toBe(0);
      expect(installedConfig()).toBe(DEFAULTS);
      writeFileSync(join(player.game, MOD, CONFIG), PLAYER_SETTINGS);
    });

    it("the modder uploads 1.1.0 from a fresh browser: the form brings the published text back, only the notes change", async () => {
      const modder = await browserOf(portal.modder);
      await modder.goto(`${portal.h.origin}/releases/new/`);
      await modder.getByLabel("Package (ZIP, at most 100 MiB)").setInputFiles(modPackage("1.1.0", true));
      await expect.poll(() => modder.locator("#manifest").isVisible()).toBe(true);
      await expect
        .poll(() => modder.getByLabel("Description (optional)").inputValue(), WAIT)
        .toBe(DESCRIPTION);
      expect(await modder.getByLabel("Summary (one line, shown in the catalog)").inputValue()).toBe(
        "Fast travel between waypoints.",
      );
      expect(await modder.getByLabel("Tags (optional, comma-separated, e.g. ui, maps)").inputValue()).toBe(
        "travel, ui",
      );
      expect(await modder.getByLabel(LICENSE).inputValue()).toBe("MIT");
      expect(await modder.getByLabel("Author name").inputValue()).toBe("Quinn");
      await modder.getByLabel("Release notes for this version").fill(NOTES_2);
      await modder.getByRole("button", { name: "Upload and validate" }).click();
      await modder.waitForURL(/\/releases\/submission\/\?id=sub_[0-9a-z]+$/);
      ids.second = new URL(modder.url()).searchParams.get("id")!;
      await expect.poll(() => standing(modder), WAIT).toMatch(/^Waiting for review/);
    });

    it("the moderator sees the diff with the new DLL flagged, approves, and 1.1.0 is published with the page's text kept", async () => {
      const moderator = await browserOf(portal.moderator);
      await moderator.goto(`${portal.h.origin}/moderation/review/?id=${ids.second}`);
      await expect.poll(() => moderator.locator("#submission").isVisible()).toBe(true);
      expect(await moderator.locator("#release-notes").innerText()).toBe(NOTES_2);
      expect(await moderator.locator("#risk-list").innerText()).toBe(
        "Look closely: adds a native DLL: Binaries/Win64/QuickTravelHook.dll",
      );
      expect(await moderator.locator("#diff-h").innerText()).toBe("Changes since 1.0.0");
      const rows = await moderator.locator("#diff-rows tr").allInnerTexts();
      expect(rows.map((r) => r.split("\t").slice(0, 2).join(" | "))).toEqual([
        "added | Binaries/Win64/QuickTravelHook.dll native",
        "changed | Content/Paks/QuickTravel.pak",
        "changed | svc-mod.json",
      ]);
      await moderator.locator("#diff-h").scrollIntoViewIfNeeded();
      await screenshot(moderator, "release-walk-diff", "review-diff");
      await decideOnPage(
        moderator,
        ids.second,
        "Approve for publication",
        "DLL checked.",
        "Recorded: approve. The release is now Approved.",
      );
      await publishOnAdminPage(await browserOf(portal.admin));
      expect(recordStatuses()).toEqual({ "1.0.0": "superseded", "1.1.0": "published" });

      const visitor = await browser.newContext();
      contexts.push(visitor);
      const page = await visitor.newPage();
      pageErrors.push(collectPageErrors(page));
      await page.goto(`${portal.h.origin}/mods/${MOD}/`);
      const facts = await page.locator("dl.facts").first().innerText();
      expect(facts).toContain("Latest version\n1.1.0");
      expect(facts).toContain("Tags\ntravel, ui");
      expect(facts).toContain("License\nMIT");
      expect(await page.locator('section[aria-labelledby="about-h"]').innerText()).toBe(
        `Description\n${DESCRIPTION}`,
      );
    });

    it("the player's update to 1.1.0 and svc repair keep their settings", async () => {
      const update = await svc(["install", MOD, "--dir", player.game]);
      expect(update.code, update.stderr).toBe(0);
      expect(update.stdout).toContain(`${MOD}@1.1.0`);
      expect(installedConfig()).toBe(PLAYER_SETTINGS);
      // Damage the pak: repair rewrites it and leaves the player's settings alone.
      writeFileSync(join(player.game, MOD, "Content/Paks/QuickTravel.pak"), "broken\n");
      const repair = await svc(["repair", "--dir", player.game]);
      expect(repair.code, repair.stdout + repair.stderr).toBe(0);
      expect(readFileSync(join(player.game, MOD, "Content/Paks/QuickTravel.pak"), "utf8")).toBe(
        "quick travel pak 1.1.0\n".repeat(200),
      );
      expect(installedConfig()).toBe(PLAYER_SETTINGS);
      const verify = await svc(["verify", "--dir", player.game]);
      expect(verify.code, verify.stdout).toBe(0);
    });

    it("the moderator hides 1.1.0: 1.0.0 is published again and svc verify says the installed 1.1.0 was withdrawn", async () => {
      const moderator = await browserOf(portal.moderator);
      await decideOnPage(
        moderator,
        ids.second,
        "Hide from the catalog",
        "Hook misbehaves.",
        "Recorded: hide. The release is now Hidden.",
      );
      expect(recordStatuses()).toEqual({ "1.0.0": "published", "1.1.0": "hidden" });
      const modder = await browserOf(portal.modder);
      await modder.goto(`${portal.h.origin}/releases/`);
      const rows = modder.locator("#mine-rows tr");
      await expect.poll(() => rows.count()).toBe(2);
      const states = (await rows.allInnerTexts()).map((r) => r.split("\t").slice(0, 3).join(" "));
      expect(states).toContain(`${MOD} 1.0.0 Published`);
      expect(states).toContain(`${MOD} 1.1.0 Hidden`);

      const verify = await svc(["verify", "--dir", player.game]);
      expect(verify.stdout).toContain(
        `version_withdrawn ${MOD}@1.1.0: the portal withdrew this version; the newest visible is 1.0.0`,
      );
      expect(verify.code, verify.stdout).toBe(EXIT_WITHDRAWN);
      expect(installedConfig()).toBe(PLAYER_SETTINGS);
      for (const errors of pageErrors) expect(errors).toEqual([]);
    });
  },
);
