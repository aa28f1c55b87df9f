import { describe, expect, it } from "vitest";
import type { CatalogDocument, CatalogMod } from "../../src/contracts/catalog.ts";
import { renderCatalogPage, spliceCatalogPage } from "../../src/pages/catalog-page.ts";
import type { GameBuildMatrix } from "../../src/pages/compatibility.ts";
import type { PageContext } from "../../src/pages/layout.ts";

const ctx: PageContext = {
  portalName: "Test Portal",
  gameName: "Test Game",
  baseUrl: "https://mods.example.test",
  apiBaseUrl: null,
};
const matrix: GameBuildMatrix = {
  builds: [
    { buildId: "100", validationStatus: "supported", label: "spring" },
    { buildId: "90", validationStatus: "incompatible" },
  ],
  supportedGameBuilds: ["100"],
};

/** A catalog entry with what the page shows; the rest of CatalogMod does not reach the page. */
function mod(id: string, name: string, tags: string[], build: string, latestVersion = "1.0.0"): CatalogMod {
  return {
    id,
    name,
    summary: `${name} <summary> & "more"`,
    authors: [{ name: `author of ${id}` }],
    tags,
    latestVersion,
    versions: [{ targetGameBuild: build }],
  } as unknown as CatalogMod;
}

function catalogOf(mods: Map<string, CatalogMod>): CatalogDocument {
  return {
    game: { name: "Test Game" },
    supportedGameBuilds: ["100"],
    mods: [...mods.values()],
  } as unknown as CatalogDocument;
}

/** Applies one change to the truth and to the spliced page; the page must be what a full render writes. */
function applyAndCompare(mods: Map<string, CatalogMod>, page: Buffer, id: string, next: CatalogMod | null) {
  if (next) mods.set(id, next);
  else mods.delete(id);
  const catalog = catalogOf(mods);
  const spliced = spliceCatalogPage(ctx, catalog, page, id, next, matrix);
  expect(spliced, `splice of ${id}`).not.toBeNull();
  expect(spliced!.toString("utf8")).toBe(renderCatalogPage(ctx, catalog, matrix));
  return spliced!;
}

describe("catalog page splice (one publication's home page, as bytes)", () => {
  it("equals the fully rendered page for inserts, updates, renames, hides and unhides", () => {
    const mods = new Map<string, CatalogMod>();
    for (let i = 0; i < 60; i++) {
      const id = `mod-${String(i).padStart(3, "0")}`;
      // Shared and escaped names (ties break by id), a few tag sets and builds.
      const name =
        i % 7 === 0 ? "Same Name" : i % 11 === 0 ? `Tom & "Jerry's" <${i}>` : `Mod ${(i * 37) % 60}`;
      mods.set(
        id,
        mod(id, name, i % 5 === 0 ? [] : ["gameplay", `tag-${i % 4}`], i % 13 === 0 ? "90" : "100"),
      );
    }
    let page: Buffer = Buffer.from(renderCatalogPage(ctx, catalogOf(mods), matrix));
    // Insert at the front, in the middle, at the end, and with a brand-new tag and build.
    page = applyAndCompare(mods, page, "aa-first", mod("aa-first", "!!! first", ["new-tag"], "100"));
    page = applyAndCompare(mods, page, "mid-mod", mod("mid-mod", "Mod 30", ["gameplay"], "100"));
    page = applyAndCompare(mods, page, "zz-last", mod("zz-last", "zzz last", ["gameplay"], "120"));
    page = applyAndCompare(mods, page, "tie-mod", mod("tie-mod", "same name", ["tag-1"], "100"));
    // Update in place (new version), then a rename that moves the item to the other end.
    page = applyAndCompare(mods, page, "mod-010", mod("mod-010", "Mod 10", ["tag-2"], "100", "2.0.0"));
    page = applyAndCompare(mods, page, "mod-003", mod("mod-003", "zzzz renamed", ["gameplay"], "100"));
    page = applyAndCompare(mods, page, "mod-003", mod("mod-003", "  renamed back", ["gameplay"], "100"));
    // The only mod with a tag, and the first with an unsupported build, leave (hide): both vanish
    // from the filters, and the order of the remaining builds is recomputed.
    page = applyAndCompare(mods, page, "aa-first", null);
    page = applyAndCompare(mods, page, "mod-000", null);
    page = applyAndCompare(mods, page, "zz-last", null);
    // ...and come back (unhide).
    page = applyAndCompare(mods, page, "mod-000", mod("mod-000", "Same Name", [], "90"));
    page = applyAndCompare(mods, page, "zz-last", mod("zz-last", "zzz last", ["gameplay"], "120"));
    // Down to an empty list and up again.
    for (const id of [...mods.keys()]) page = applyAndCompare(mods, page, id, null);
    expect(page.toString("utf8")).toContain("No mods have been published yet.");
    page = applyAndCompare(mods, page, "solo", mod("solo", "Solo", ["gameplay"], "100"));
  });

  it("keeps the header's counts from the old header instead of reading every item", () => {
    const mods = new Map<string, CatalogMod>();
    for (let i = 0; i < 40; i++) {
      const id = `mod-${String(i).padStart(3, "0")}`;
      mods.set(id, mod(id, `Mod ${String(i).padStart(3, "0")}`, ["gameplay"], i === 30 ? "95" : "100"));
    }
    const page = renderCatalogPage(ctx, catalogOf(mods), matrix);
    // An item far down the list says a tag no header lists: a splice that recounted every item
    // would list it; one that carries the old header's counts does not read that item at all.
    const planted = Buffer.from(
      page.replace(
        '<li data-tags="gameplay" data-builds="100"><h2><a href="mods/mod-035/">',
        '<li data-tags="ghost" data-builds="100"><h2><a href="mods/mod-035/">',
      ),
    );
    expect(planted.toString("utf8")).toContain('data-tags="ghost"');
    const next = mod("mod-001", "Mod 001", ["gameplay", "extra"], "100", "2.0.0");
    const spliced = spliceCatalogPage(ctx, catalogOf(mods), planted, "mod-001", next, matrix)!.toString(
      "utf8",
    );
    expect(spliced).toContain('<option value="extra">extra (1)</option>');
    expect(spliced).toContain('<option value="gameplay">gameplay (40)</option>');
    expect(spliced).not.toContain('<option value="ghost">');
    // Builds keep their order of first appearance: a new unsupported build before "95" comes first,
    // and the one after it goes after.
    let current: Buffer = Buffer.from(page);
    current = applyAndCompare(mods, current, "mod-002", mod("mod-002", "Mod 002", ["gameplay"], "91"));
    current = applyAndCompare(mods, current, "mod-039", mod("mod-039", "Mod 039", ["gameplay"], "99"));
    expect(current.toString("utf8").indexOf('value="91"')).toBeLessThan(
      current.toString("utf8").indexOf('value="95"'),
    );
    // A build's only item leaves: the build leaves the filter.
    current = applyAndCompare(mods, current, "mod-030", mod("mod-030", "Mod 030", ["gameplay"], "100"));
    expect(current.toString("utf8")).not.toContain('value="95"');
  });

  it("answers null for a page in another shape, so the caller renders it whole", () => {
    const mods = new Map([["mod-a", mod("mod-a", "A", [], "100")]]);
    const page = renderCatalogPage(ctx, catalogOf(mods), matrix);
    const next = mod("mod-b", "B", [], "100");
    for (const other of [
      "<!doctype html><p>hand-written</p>",
      page.replace('<li data-tags="" data-builds="100"><h2>', '<li data-tags="" data-builds="100"><h3>'),
      page.replace("</li>\n</ol>", "</li></ol>"),
    ])
      expect(spliceCatalogPage(ctx, catalogOf(mods), Buffer.from(other), "mod-b", next, matrix)).toBeNull();
  });
});
