import { createHash } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  appendChange,
  CHANGES_PAGE_SIZE,
  type ChangesPage,
  serializeChangesPage,
} from "../../src/contracts/changes.ts";
import { checkContractRules } from "../../src/catalog/contract-rules.ts";
import {
  fetchManagerIndex,
  type ManagerFetch,
  type ManagerIndexState,
  refreshManagerIndex,
} from "../../src/contracts/manager-reader.ts";
import { hideRelease, publishRelease, unhideRelease } from "../../src/catalog/publisher.ts";
import { loadSiteInputs, renderSite } from "../../src/catalog/site.ts";
import type { CatalogDocument } from "../../src/contracts/catalog.ts";
import { signedPortal } from "../distribution/support.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { startCatalogPortal } from "../support/catalog-portal.ts";
import { changesPagePath, modRecordsPath } from "../support/records.ts";

let project: CatalogProject;
let portal: Awaited<ReturnType<typeof startCatalogPortal>> | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
  project?.cleanup();
});

function publish(p: CatalogProject, fixture: Parameters<typeof modRelease>[0] = {}) {
  const { packageBytes, sidecar } = modRelease(fixture);
  return publishRelease(publisherOptions(p), { packageBytes, sidecar, source: { kind: "import" } });
}

/** fetch over real HTTP, counting the body bytes and the URLs a manager asked for. */
function countingFetch() {
  const log: Array<{ url: string; bytes: number }> = [];
  const fetcher: ManagerFetch = async (url) => {
    const response = await fetch(url);
    const body = new Uint8Array(await response.arrayBuffer());
    log.push({ url, bytes: body.length });
    return new Response(body, { status: response.status });
  };
  return { fetch: fetcher, log, bytes: () => log.reduce((sum, e) => sum + e.bytes, 0) };
}

/** svc check, in-process: the site on disk is what svc build renders from the records, and the rules hold. */
function expectRebuildIdentical(p: CatalogProject) {
  const expected = renderSite(loadSiteInputs(p.config, p.recordsDir), p.siteDir);
  for (const [path, text] of expected) expect(p.read(`site/${path}`), path).toBe(text);
  expect(checkContractRules(expected)).toEqual([]);
}

describe("catalog split: sparse catalog, per-mod versions, changes feed", () => {
  it("lists each mod's newest version (no release notes) and the sha256 of its versions.json", async () => {
    project = catalogProject();
    await publish(project, { version: "1.0.0" });
    await publish(project, { version: "1.1.0" });
    const catalog = JSON.parse(project.read("site/api/v1/catalog.json")) as CatalogDocument;
    const versionsText = project.read("site/api/v1/mods/better-hud/versions.json");
    expect(catalog.mods[0]!.versionsSha256).toBe(createHash("sha256").update(versionsText).digest("hex"));
    expect(catalog.mods[0]!.versions.map((v) => v.version)).toEqual(["1.1.0"]);
    expect(catalog.mods[0]!.versions[0]).not.toHaveProperty("releaseNotes");
    const versions = JSON.parse(versionsText) as { versions: Array<{ version: string }> };
    expect(versions.versions.map((v) => v.version)).toEqual(["1.1.0", "1.0.0"]);
    // Per-file lists, like release notes, live in versions.json only.
    const { releaseNotes, files: _files, ...withoutNotes } = versions.versions[0]! as Record<string, unknown>;
    expect(releaseNotes).toBe("Release 1.1.0.");
    expect(catalog.mods[0]!.versions[0]).toEqual(withoutNotes);
    expectRebuildIdentical(project);
  });

  it("the drift rule catches a catalog record or versionsSha256 that differs from versions.json", async () => {
    project = catalogProject();
    await publish(project);
    const files = renderSite(loadSiteInputs(project.config, project.recordsDir), project.siteDir);
    expect(checkContractRules(files)).toEqual([]);
    const catalog = JSON.parse(files.get("api/v1/catalog.json")!) as CatalogDocument;
    catalog.mods[0]!.versions[0]!.packageSizeBytes += 1;
    const drifted = new Map(files).set("api/v1/catalog.json", JSON.stringify(catalog));
    expect(checkContractRules(drifted).map((f) => f.message)).toContain(
      "mods/better-hud/versions.json differs from catalog.json",
    );
    const versions = `${files.get("api/v1/mods/better-hud/versions.json")!} `;
    const rehashed = new Map(files).set("api/v1/mods/better-hud/versions.json", versions);
    expect(checkContractRules(rehashed).map((f) => f.message)).toContain(
      "catalog.json versionsSha256 of better-hud is not the hash of its versions.json",
    );
  });

  it("publishes in O(one mod): another mod's records are never read, and the result equals a full build", async () => {
    project = catalogProject();
    await publish(project, { modId: "alpha-mod", name: "Alpha" });
    await publish(project, { modId: "beta-mod", name: "Beta" });
    // Corrupt another mod's record: a publication that read every record (as before) fails on it.
    const alpha = join(project.root, modRecordsPath("alpha-mod"));
    const alphaText = project.read(modRecordsPath("alpha-mod"));
    writeFileSync(alpha, "not json");
    const result = await publish(project, { modId: "beta-mod", name: "Beta", version: "1.1.0" });
    expect(result.written.filter((p) => p.includes("alpha-mod"))).toEqual([]);
    await hideRelease(publisherOptions(project), "beta-mod", "1.0.0");
    // An entry patched in at the front of the indexes and removed from it again.
    await publish(project, { modId: "aa-mod", name: `Aa & "Zed's" <mod>` });
    writeFileSync(alpha, alphaText);
    expectRebuildIdentical(project);
    writeFileSync(alpha, "not json");
    await hideRelease(publisherOptions(project), "aa-mod", "1.0.0");
    writeFileSync(alpha, alphaText);
    expect(JSON.parse(project.read(changesPagePath(0))).entries).toEqual([
      expect.objectContaining({ sequence: 1, modId: "alpha-mod", kind: "publish", latestVersion: "1.0.0" }),
      expect.objectContaining({ sequence: 2, modId: "beta-mod", kind: "publish", latestVersion: "1.0.0" }),
      expect.objectContaining({ sequence: 3, modId: "beta-mod", kind: "publish", latestVersion: "1.1.0" }),
      expect.objectContaining({
        sequence: 4,
        modId: "beta-mod",
        version: "1.0.0",
        kind: "hide",
        latestVersion: "1.1.0",
      }),
      expect.objectContaining({ sequence: 5, modId: "aa-mod", kind: "publish", latestVersion: "1.0.0" }),
      expect.objectContaining({ sequence: 6, modId: "aa-mod", kind: "hide", latestVersion: null }),
    ]);
    expectRebuildIdentical(project);
    // svc build from the records alone (no site at all) renders the same feed and indexes.
    rmSync(project.siteDir, { recursive: true });
    const rebuilt = renderSite(loadSiteInputs(project.config, project.recordsDir), project.siteDir);
    expect(rebuilt.get("api/v1/changes/0.json")).toBe(project.read(changesPagePath(0)));
    expect(JSON.parse(rebuilt.get("api/v1/changes/head.json")!)).toMatchObject({ sequence: 6, lastPage: 0 });
  });

  it("the incremental publication writes exactly what a full render writes; a site from before the feed is rendered whole once", async () => {
    project = catalogProject();
    const other = catalogProject();
    try {
      for (const p of [project, other]) {
        const full = p === other ? { render: "full" as const } : {};
        for (const fixture of [
          { modId: "beta-mod", name: "Beta" },
          {
            modId: "alpha-mod",
            name: "Alpha",
            dependencies: [{ modId: "beta-mod", versionRange: "^1.0.0" }],
          },
          { modId: "beta-mod", name: "Beta", version: "1.1.0" },
        ]) {
          const { packageBytes, sidecar } = modRelease(fixture);
          await publishRelease(publisherOptions(p, full), {
            packageBytes,
            sidecar,
            source: { kind: "import" },
          });
        }
        // Hiding beta-mod's older version is fine; hiding its last one would strand alpha-mod's
        // dependency, which both paths refuse.
        await hideRelease(publisherOptions(p, full), "beta-mod", "1.0.0");
        await expect(hideRelease(publisherOptions(p, full), "beta-mod", "1.1.0")).rejects.toMatchObject({
          code: "invalid_payload",
        });
      }
      const a = project.snapshot();
      const b = other.snapshot();
      for (const [path, hash] of a)
        if (path.startsWith("site/") || path.startsWith("records/")) expect(b.get(path), path).toBe(hash);
      // A site built before the changes feed existed has no head: the next publication renders it whole.
      rmSync(join(project.siteDir, "api/v1/changes/head.json"));
      await publish(project, { modId: "gamma-mod", name: "Gamma" });
      expect(JSON.parse(project.read("site/api/v1/changes/head.json"))).toMatchObject({ sequence: 5 });
      expectRebuildIdentical(project);
    } finally {
      other.cleanup();
    }
  });

  it("a manager's cheap refresh after publications and hides equals a full fetch; one change costs <= 10 KB", async () => {
    project = catalogProject();
    await publish(project, { modId: "alpha-mod", name: "Alpha" });
    await publish(project, { modId: "beta-mod", name: "Beta" });
    portal = await startCatalogPortal(project);
    const catalogUrl = `${portal.origin}/api/v1/catalog.json`;
    let state: ManagerIndexState = await fetchManagerIndex(catalogUrl, fetch);
    expect(state.sequence).toBe(2);

    // Nothing changed: the head alone.
    const idle = countingFetch();
    expect((await refreshManagerIndex(state, idle.fetch)).mode).toBe("current");
    expect(idle.log.map((e) => e.url)).toEqual([`${portal.origin}/api/v1/changes/head.json`]);

    // A series of changes: new versions, a new mod, a hidden version, a mod leaving, one coming back.
    await publish(project, { modId: "alpha-mod", name: "Alpha", version: "1.1.0" });
    await publish(project, { modId: "gamma-mod", name: "Gamma" });
    await hideRelease(publisherOptions(project), "alpha-mod", "1.0.0");
    await hideRelease(publisherOptions(project), "beta-mod", "1.0.0");
    await unhideRelease(publisherOptions(project), "alpha-mod", "1.0.0");
    const series = countingFetch();
    const refreshed = await refreshManagerIndex(state, series.fetch);
    expect(refreshed.mode).toBe("changes");
    expect(refreshed.changedMods.sort()).toEqual(["alpha-mod", "beta-mod", "gamma-mod"]);
    expect(series.log.some((e) => e.url.endsWith("/catalog.json"))).toBe(false);
    state = refreshed.state;
    expect(state).toEqual(await fetchManagerIndex(catalogUrl, fetch));
    expect(Object.keys(state.mods).sort()).toEqual(["alpha-mod", "gamma-mod"]);

    // One publication: head, the open page, that mod's versions.json.
    await publish(project, { modId: "gamma-mod", name: "Gamma", version: "1.1.0" });
    const one = countingFetch();
    const single = await refreshManagerIndex(state, one.fetch);
    expect(single.mode).toBe("changes");
    const origin = portal.origin;
    expect(one.log.map((e) => e.url.replace(origin, ""))).toEqual([
      "/api/v1/changes/head.json",
      "/api/v1/changes/0.json",
      "/api/v1/mods/gamma-mod/versions.json",
    ]);
    expect(one.bytes()).toBeLessThanOrEqual(10_000);
    expect(single.state).toEqual(await fetchManagerIndex(catalogUrl, fetch));
    expect(single.state.mods["gamma-mod"]!.versions.map((v) => v.version)).toEqual(["1.1.0", "1.0.0"]);
    expectRebuildIdentical(project);
  });

  it("falls back to a full fetch when the feed is missing or no longer reaches back to the manager's sequence", async () => {
    project = catalogProject();
    await publish(project, { modId: "alpha-mod", name: "Alpha" });
    portal = await startCatalogPortal(project);
    const catalogUrl = `${portal.origin}/api/v1/catalog.json`;
    const state = await fetchManagerIndex(catalogUrl, fetch);
    await publish(project, { modId: "beta-mod", name: "Beta" });
    rmSync(join(project.siteDir, "api/v1/changes/head.json"));
    const missing = await refreshManagerIndex(state, fetch);
    expect(missing.mode).toBe("full");
    expect(Object.keys(missing.state.mods).sort()).toEqual(["alpha-mod", "beta-mod"]);
    // A state from a feed that has since been reset (sequence ahead of the head).
    const reset = await refreshManagerIndex({ ...state, sequence: 99 }, fetch);
    expect(reset.mode).toBe("full");
  });

  it("svc install resolves a range against the signed versions.json, not only the catalog's newest version", async () => {
    const signed = await signedPortal();
    try {
      await signed.publish({ version: "1.0.0" });
      await signed.publish({ version: "1.1.0" });
      const catalog = JSON.parse(signed.project.read("site/api/v1/catalog.json")) as CatalogDocument;
      expect(catalog.mods[0]!.versions.map((v) => v.version)).toEqual(["1.1.0"]);
      const resolved = await signed.client().resolve([{ modId: "better-hud", range: "~1.0.0" }]);
      expect(resolved.map((r) => `${r.modId}@${r.version.version}`)).toEqual(["better-hud@1.0.0"]);
      // An id that is not a slug names no mod (and no other document): not listed, never fetched.
      await expect(
        signed.client("other").resolve([{ modId: "../catalog", range: "*" }]),
      ).rejects.toMatchObject({
        code: "mod_not_listed",
      });
    } finally {
      await signed.close();
    }
  });

  it("pages hold at most CHANGES_PAGE_SIZE entries, a full page never changes, and a full page stays small", () => {
    let page: ChangesPage | null = null;
    const pages: ChangesPage[] = [];
    for (let i = 0; i < CHANGES_PAGE_SIZE + 1; i++) {
      page = appendChange(page, {
        modId: `a-mod-with-a-rather-long-id-${String(i).padStart(4, "0")}`,
        version: "12.345.6789-beta.10",
        kind: "publish",
        latestVersion: "12.345.6789-beta.10",
        at: "2026-11-02T10:00:00.000Z",
      });
      if (pages.at(-1)?.page === page.page) pages[pages.length - 1] = page;
      else pages.push(page);
    }
    expect(pages.map((p) => p.entries.length)).toEqual([CHANGES_PAGE_SIZE, 1]);
    expect(pages[1]!.entries[0]!.sequence).toBe(CHANGES_PAGE_SIZE + 1);
    // The worst case of a one-change refresh downloads a full page: it must leave room under 10 KB
    // for the head and one versions.json.
    expect(Buffer.byteLength(serializeChangesPage(pages[0]!))).toBeLessThan(4_500);
  });
});
