/**
 * Validation reads only the catalog entries a submission's checks need (issue 27, item 7): the
 * bytes of catalog.json (searched, never parsed), and the documents of the submission's own mod and
 * of the mods its dependencies reach. The reports are the same as with the whole catalog.
 */
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { PassThrough } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  catalogWithSubmissionVersions,
  readSubmissionCatalog,
  siteFileReader,
} from "../../src/catalog/validation-catalog.ts";
import type { CliIo } from "../../src/cli/io.ts";
import { main } from "../../src/cli/main.ts";
import {
  buildCatalog,
  buildModDetail,
  buildModVersions,
  type CatalogDocument,
  visibleMods,
} from "../../src/contracts/catalog.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import type { ReleaseRecord } from "../../src/contracts/records.ts";
import { portalUrls, SITE_PATHS } from "../../src/contracts/urls.ts";
import { runValidation } from "../../src/validation/runner.ts";
import type { ValidationReport } from "../../src/validation/types.ts";
import { BUILD, gameBuilds, goodPackage, NOW, type PackageSpec, policy, releaseRecord } from "./fixtures.ts";

const config = loadPortalConfig(fileURLToPath(new URL("../../portal.config.json", import.meta.url)));
const FILLERS = 300;
const filler = (n: number) => `filler-${String(n).padStart(3, "0")}`;
/** A release asset one filler mod is published with, which a submission then names as its own. */
const SHARED_URL = "https://github.com/someone/hud/releases/download/v1.2.0/better-hud-1.2.0.zip";

let siteDir: string;

/** The site documents as the site build writes them (catalog.json, and each mod's index.json and versions.json). */
function writeSite(dir: string, records: ReleaseRecord[]): void {
  const text = (doc: unknown) => `${JSON.stringify(doc, null, 2)}\n`;
  const views = visibleMods(records);
  const write = (path: string, body: string) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), body);
  };
  const versionsText = (view: (typeof views)[number]) => text(buildModVersions(view, NOW));
  for (const view of views) {
    write(SITE_PATHS.modVersions(view.modId), versionsText(view));
    write(SITE_PATHS.modDetail(view.modId), text(buildModDetail(config, view, NOW)));
  }
  const catalog = buildCatalog(config, views, [BUILD], NOW, (view) =>
    createHash("sha256").update(versionsText(view)).digest("hex"),
  );
  write(SITE_PATHS.catalog, text(catalog));
}

beforeAll(() => {
  siteDir = mkdtempSync(join(tmpdir(), "svc-submission-catalog-"));
  const superseded = { ...releaseRecord("core-lib", "1.2.0"), status: "superseded" as const };
  writeSite(siteDir, [
    superseded,
    releaseRecord("core-lib", "1.4.0"),
    releaseRecord("cyc-a", "1.0.0", [{ modId: "cyc-b", versionRange: "^1.0.0" }]),
    releaseRecord("cyc-b", "1.0.0"),
    releaseRecord("chain-top", "1.0.0", [{ modId: "chain-mid", versionRange: "^1.0.0" }]),
    releaseRecord("chain-mid", "1.0.0", [{ modId: "core-lib", versionRange: "^1.0.0" }]),
    ...Array.from({ length: FILLERS }, (_, n) => releaseRecord(filler(n), "1.0.0")),
    { ...releaseRecord("shared-url", "1.0.0"), fileName: "better-hud-1.2.0.zip", packageUrl: SHARED_URL },
  ]);
});

afterAll(() => rmSync(siteDir, { recursive: true, force: true }));

function countingReader(): { read: ReturnType<typeof siteFileReader>; paths: string[] } {
  const paths: string[] = [];
  const inner = siteFileReader(siteDir);
  return {
    paths,
    read: (path) => {
      paths.push(path);
      return inner(path);
    },
  };
}

/** The catalog every check saw before: catalog.json parsed whole, the submission's mods with every version. */
function wholeCatalog(sidecar: unknown): CatalogDocument | null {
  const read = siteFileReader(siteDir);
  const catalog = JSON.parse(read(SITE_PATHS.catalog)!.toString("utf8")) as CatalogDocument;
  return catalogWithSubmissionVersions(catalog, siteDir, sidecar);
}

async function validate(
  bytes: Buffer,
  sidecar: unknown,
  catalog: CatalogDocument | null,
): Promise<ValidationReport> {
  return runValidation({
    package: { bytes },
    sidecar,
    policy: policy(),
    catalog,
    gameBuilds: gameBuilds(),
    scanner: { description: "fake scanner (always clean)", scan: async () => ({ status: "clean" }) },
    clock: () => new Date(NOW),
  });
}

const failures = (report: ValidationReport) =>
  report.checks.filter((c) => c.status !== "passed").map((c) => `${c.id}:${c.reasonCode}`);

describe("the catalog a submission's validation reads", () => {
  it("reads catalog.json's bytes and the documents of the submission's mods only, among 300 others", () => {
    const { sidecar } = goodPackage({ dependencies: [{ modId: "chain-top", versionRange: "^1.0.0" }] });
    const { read, paths } = countingReader();
    const catalog = readSubmissionCatalog(siteDir, sidecar, read)!;
    // better-hud is not in the catalog: nothing of it is read; chain-top reaches chain-mid, then core-lib.
    expect([...paths].sort()).toEqual(
      [
        SITE_PATHS.catalog,
        ...["chain-mid", "chain-top", "core-lib"].flatMap((id) => [
          SITE_PATHS.modDetail(id),
          SITE_PATHS.modVersions(id),
        ]),
      ].sort(),
    );
    expect(catalog.mods.map((m) => m.id)).toEqual(["chain-mid", "chain-top", "core-lib"]);
    expect(catalog.mods.find((m) => m.id === "core-lib")!.versions.map((v) => v.version)).toEqual([
      "1.4.0",
      "1.2.0",
    ]);
    const full = wholeCatalog(sidecar)!;
    const { mods: _, ...header } = full;
    expect({ ...catalog, mods: [] }).toEqual({ ...header, mods: [] });
    // Each entry is the whole catalog's, with every version of its versions.json.
    for (const mod of catalog.mods) {
      const listed = full.mods.find((m) => m.id === mod.id)!;
      expect({ ...mod, versions: mod.versions.slice(0, 1) }).toEqual({
        ...listed,
        versions: listed.versions.length === 1 ? mod.versions.slice(0, 1) : listed.versions,
      });
    }
  });

  const cases: Array<[string, PackageSpec, Record<string, unknown>, string[]]> = [
    ["a new mod depending on a mod with two versions", {}, {}, []],
    [
      "an older version that exists only in versions.json",
      { modId: "core-lib", version: "1.2.0", dependencies: [] },
      {},
      ["semantic_version:version_exists"],
    ],
    [
      "a dependency the catalog does not list",
      { dependencies: [{ modId: "not-published", versionRange: "^1.0.0" }] },
      {},
      ["dependency_contract:dependency_unknown_mod", "manager_catalog_parse:manager_parse_failed"],
    ],
    [
      "a range only a version older than the catalog's met",
      { dependencies: [{ modId: "core-lib", versionRange: "~1.2.0" }] },
      {},
      [],
    ],
    [
      "a cycle through a published mod",
      { modId: "cyc-b", version: "2.0.0", dependencies: [{ modId: "cyc-a", versionRange: "^1.0.0" }] },
      {},
      ["dependency_contract:dependency_cycle"],
    ],
    [
      "an artifact URL another mod already serves",
      {},
      { package: { url: SHARED_URL } },
      ["semantic_version:artifact_url_exists"],
    ],
  ];
  for (const [title, spec, overrides, expected] of cases) {
    it(`gives the whole catalog's report: ${title}`, async () => {
      const pkg = goodPackage(spec);
      const sidecar = {
        ...pkg.sidecar,
        ...overrides,
        ...(overrides.package
          ? { package: { ...pkg.sidecar.package, ...(overrides.package as object) } }
          : {}),
      };
      const narrow = await validate(pkg.bytes, sidecar, readSubmissionCatalog(siteDir, sidecar));
      expect(failures(narrow).filter((f) => !f.startsWith("artifact_hash"))).toEqual(expected);
      expect(narrow).toEqual(await validate(pkg.bytes, sidecar, wholeCatalog(sidecar)));
    });
  }

  it("searches catalog.json from the file a window at a time with the bytes' answers, a URL cut by a window's edge included", () => {
    const copy = mkdtempSync(join(tmpdir(), "svc-submission-window-"));
    try {
      cpSync(siteDir, copy, { recursive: true });
      const path = join(copy, SITE_PATHS.catalog);
      // chain-top's detailUrl goes (the narrow path reads it from the mod's own index.json), so its
      // versionsUrl holds the first "/mods/chain-top/" of the file (nothing before it names the mod).
      // Spaces after the mods array's "[" then move that versionsUrl over the first 1 MiB window's
      // edge (catalog-file windows are 1 MiB), cut inside "/mods/chain-top/".
      const text = readFileSync(path, "utf8").replace(
        /\n\s*"detailUrl": "[^"]*\/mods\/chain-top\/index\.json",/,
        "",
      );
      const needle = JSON.stringify(portalUrls(config.baseUrl).modVersions("chain-top"));
      const open = text.indexOf('"mods": [') + '"mods": ['.length;
      const cut = needle.indexOf("/mods/chain-top/") + "/mods/ch".length;
      const pad = 1024 * 1024 - text.indexOf(needle) - cut;
      expect(pad).toBeGreaterThan(0);
      writeFileSync(path, `${text.slice(0, open)}${" ".repeat(pad)}${text.slice(open)}`);
      expect(readFileSync(path).indexOf(needle)).toBe(1024 * 1024 - cut);
      expect(readFileSync(path).indexOf("/mods/chain-top/")).toBe(
        1024 * 1024 - cut + needle.indexOf("/mods/"),
      );
      for (const spec of [
        { dependencies: [{ modId: "chain-top", versionRange: "^1.0.0" }] },
        { modId: "chain-top", version: "9.0.0", dependencies: [] },
        {},
      ]) {
        const { sidecar } = goodPackage(spec);
        const fromFile = readSubmissionCatalog(copy, sidecar);
        expect(fromFile).toEqual(readSubmissionCatalog(copy, sidecar, siteFileReader(copy)));
        if (spec.dependencies || spec.modId) expect(fromFile!.mods.map((m) => m.id)).toContain("chain-top");
      }
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it("svc validate passes with an unrelated mod's documents deleted and its catalog.json entry unparseable", async () => {
    const copy = mkdtempSync(join(tmpdir(), "svc-submission-catalog-copy-"));
    try {
      writeSite(copy, [
        releaseRecord("core-lib", "1.4.0"),
        ...Array.from({ length: 20 }, (_, n) => releaseRecord(filler(n), "1.0.0")),
      ]);
      for (const [path, doc] of [
        [SITE_PATHS.validationContract, policy()],
        [SITE_PATHS.gameBuilds, gameBuilds()],
      ] as const) {
        mkdirSync(dirname(join(copy, path)), { recursive: true });
        writeFileSync(join(copy, path), JSON.stringify(doc));
      }
      rmSync(join(copy, dirname(SITE_PATHS.modDetail(filler(3)))), { recursive: true });
      // catalog.json is never parsed on this path: breaking another mod's entry changes nothing.
      const catalogPath = join(copy, SITE_PATHS.catalog);
      const text = readFileSync(catalogPath, "utf8");
      const broken = text.replace(`"id": "${filler(5)}",`, `"id": "${filler(5)}",,,`);
      expect(broken).not.toBe(text);
      writeFileSync(catalogPath, broken);
      expect(() => JSON.parse(broken)).toThrow();

      const { bytes, sidecar } = goodPackage();
      writeFileSync(join(copy, "good.zip"), bytes);
      writeFileSync(join(copy, "good.json"), JSON.stringify(sidecar));
      const out: Buffer[] = [];
      const stdout = new PassThrough().on("data", (d: Buffer) => out.push(d));
      const io: CliIo = { stdout, stderr: new PassThrough(), cwd: copy, env: {} };
      const args = ["validate", "--package", "good.zip", "--metadata", "good.json", "--site", "."];
      expect(await main([...args, "--no-antivirus", "--json"], io)).toBe(1);
      const report = JSON.parse(Buffer.concat(out).toString()) as ValidationReport;
      expect(failures(report)).toEqual(["antivirus_scan:antivirus_disabled"]);
      expect(report.checks.find((c) => c.id === "manager_catalog_parse")!.log[0]).toContain(
        "better-hud's catalog entry",
      );
      expect(report.checks.find((c) => c.id === "dependency_contract")!.log[0]).toContain("core-lib ^1.2.0");
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
