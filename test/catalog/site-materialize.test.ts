/**
 * What the publish and sync steps do with the site the workflow restored from the Actions cache:
 * an entry saved from exactly the checkout's inputs (site-exact) is kept with no check and no
 * build; anything else is built over, so a drifted site is repaired and a matching one keeps its
 * bytes. The exact pass vouches for the checkout's inputs only: after a rebase the site is built.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { materializeSite, siteMaterializer } from "../../src/catalog/site-build.ts";
import { checkSite } from "../../src/catalog/site-check.ts";
import { projectPaths } from "../../src/catalog/site.ts";
import { type CatalogProject, catalogProject } from "../support/catalog-project.ts";

const CATALOG = "api/v1/catalog.json";

describe("materializeSite over a restored site", () => {
  let project: CatalogProject;
  afterEach(() => project?.cleanup());

  /** A restored site whose catalog.json is not what svc build writes (a stale or edited entry). */
  function drifted() {
    project = catalogProject();
    const file = join(project.siteDir, CATALOG);
    const good = readFileSync(file, "utf8");
    // Content, not generatedAt (a build keeps the stamp of a document whose content is unchanged).
    const stale = `${JSON.stringify({ ...JSON.parse(good), staleField: "from an older deployment" }, null, 2)}\n`;
    expect(stale).not.toBe(good);
    writeFileSync(file, stale);
    return { file, good, stale, paths: projectPaths(project.root) };
  }

  it("site-exact keeps the restored site as it is: no check, no build", async () => {
    const { file, stale, paths } = drifted();
    const lines: string[] = [];
    const result = await materializeSite(paths, project.config, { exact: true, log: (l) => lines.push(l) });
    expect(result).toEqual({ rebuilt: false, built: false, build: null });
    // Nothing examined it: the drift a check would have found is still there.
    expect(readFileSync(file, "utf8")).toBe(stale);
    expect((await checkSite(paths, project.config)).problems).toContain(
      `drift: site/${CATALOG} differs from what svc build writes (hand edit or stale build)`,
    );
    expect(lines.join("\n")).toContain("kept without a check");
  });

  it("without site-exact a drifted site is built over and then matches the records", async () => {
    const { file, good, paths } = drifted();
    const result = await materializeSite(paths, project.config, {});
    expect(result.rebuilt).toBe(true);
    expect(result.built).toBe(true);
    expect(result.build?.written).toContain(CATALOG);
    expect(readFileSync(file, "utf8")).not.toContain("staleField");
    expect(JSON.parse(readFileSync(file, "utf8")).mods).toEqual(JSON.parse(good).mods);
    expect((await checkSite(paths, project.config)).problems).toEqual([]);
  });

  it("without site-exact a matching site is built over with no byte changed (nothing to deploy)", async () => {
    project = catalogProject();
    const before = project.snapshot();
    const result = await materializeSite(projectPaths(project.root), project.config, {});
    expect(result.rebuilt).toBe(false);
    expect(result.built).toBe(true);
    expect(result.build?.written).toEqual([]);
    expect(result.build?.deleted).toEqual([]);
    expect(project.snapshot()).toEqual(before);
  });

  it("the steps' materializer honours site-exact for the checkout only: after a rebase it builds", async () => {
    const { file, stale, paths } = drifted();
    const materialize = siteMaterializer(paths, project.config, { exact: true });
    expect((await materialize()).built).toBe(false);
    expect(readFileSync(file, "utf8")).toBe(stale);
    // The commit path rebased onto a new head: the cache entry says nothing about those records.
    const again = await materialize();
    expect(again).toMatchObject({ built: true, rebuilt: true });
    expect((await checkSite(paths, project.config)).problems).toEqual([]);
  });

  it("the steps' materializer without site-exact builds on the first call", async () => {
    const { paths } = drifted();
    expect(await siteMaterializer(paths, project.config, { exact: false })()).toMatchObject({
      built: true,
      rebuilt: true,
    });
    expect((await checkSite(paths, project.config)).problems).toEqual([]);
  });
});
