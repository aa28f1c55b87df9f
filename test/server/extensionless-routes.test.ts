import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SITE_PATHS } from "../../src/contracts/urls.ts";
import { type CatalogProject, catalogProject } from "../support/catalog-project.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { startCatalogPortal } from "../support/catalog-portal.ts";

let project: CatalogProject;
let portal: Awaited<ReturnType<typeof startCatalogPortal>> | null = null;
afterEach(async () => {
  await portal?.close();
  portal = null;
  project?.cleanup();
});

/** Every generated JSON document path, with "better-hud" for the mod id. */
function documentPaths(): string[] {
  return Object.values(SITE_PATHS)
    .map((p) => (typeof p === "string" ? p : p("better-hud", "1.0.0", "better-hud-1.0.0.zip")))
    .filter((p) => p.endsWith(".json"));
}

describe("every document route also answers without .json", () => {
  it("on the local server: the same bytes as the .json file, for every document svc build writes", async () => {
    project = catalogProject();
    portal = await startCatalogPortal(project);
    const paths = documentPaths().filter((p) => !p.includes("better-hud"));
    expect(paths).toEqual(
      expect.arrayContaining(["api/v1/runtime/latest.json", "api/v1/manager/latest.json"]),
    );
    for (const path of paths) {
      const alias = path.replace(/(\/index)?\.json$/, "");
      const withExt = await fetch(`${portal.origin}/${path}`);
      const without = await fetch(`${portal.origin}/${alias}`);
      expect(without.status, alias).toBe(200);
      expect(await without.text(), alias).toBe(await withExt.text());
    }
  });

  it("in vercel.json: one rewrite per document, to the same file", () => {
    const vercel = JSON.parse(readFileSync(join(REPO_ROOT, "vercel.json"), "utf8")) as {
      rewrites: Array<{ source: string; destination: string }>;
    };
    const rewrites = new Map(
      vercel.rewrites.map((r) => [
        r.source.replace(/:modId\([^)]*\)/, "better-hud"),
        r.destination.replace(":modId", "better-hud"),
      ]),
    );
    for (const path of documentPaths()) {
      const alias = `/${path.replace(/(\/index)?\.json$/, "")}`;
      expect(rewrites.get(alias), alias).toBe(`/${path}`);
    }
  });
});
