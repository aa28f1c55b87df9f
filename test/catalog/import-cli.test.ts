import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { normalizeImportArgs } from "../../src/cli/import.ts";
import { clamscanPath, eicar, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { type CatalogProject, catalogProject, modRelease, runCli } from "../support/catalog-project.ts";

let project: CatalogProject;
afterEach(() => project?.cleanup());

let dbDir = "";
let db = "";
beforeAll(() => {
  dbDir = mkdtempSync(join(tmpdir(), "svc-import-db-"));
  db = makeSignatureDatabase(dbDir);
});
afterAll(() => rmSync(dbDir, { recursive: true, force: true }));

function writeRelease(p: CatalogProject, fixture: Parameters<typeof modRelease>[0] = {}) {
  const { packageBytes, sidecar } = modRelease(fixture);
  writeFileSync(join(p.root, "pkg.zip"), packageBytes);
  writeFileSync(join(p.root, "release.json"), JSON.stringify(sidecar, null, 2));
  return { packageBytes, sidecar };
}

describe("normalizeImportArgs", () => {
  it("accepts the contract's -PackagePath/-MetadataPath spelling", () => {
    expect(normalizeImportArgs(["-PackagePath", "a.zip", "-metadatapath=b.json", "--json"])).toEqual([
      "--package",
      "a.zip",
      "--metadata=b.json",
      "--json",
    ]);
  });
});

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))(
  "svc import with the real validation runner and clamscan",
  () => {
    it("publishes, prints what it did, and refuses a re-import", async () => {
      project = catalogProject();
      const { sidecar } = writeRelease(project);
      const first = await runCli(
        ["import", "-PackagePath", "pkg.zip", "-MetadataPath", "release.json", "--clamscan-db", db],
        project.root,
      );
      expect(first.stderr).toBe("");
      expect(first.code).toBe(0);
      expect(first.stdout).toContain("published better-hud@1.0.0 (published)");
      expect(first.stdout).toContain(`sha256    ${sidecar.package.sha256}`);
      expect(first.stdout).toContain("site/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip");
      expect((await runCli(["check"], project.root)).code).toBe(0);

      const before = project.snapshot();
      const again = await runCli(
        ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamscan-db", db],
        project.root,
      );
      expect(again.code).toBe(1);
      expect(again.stderr).toMatch(/version_exists: better-hud@1\.0\.0 already exists/);
      expect(project.snapshot()).toEqual(before);
    });

    it("shows the check table and publishes nothing when a check fails (malware, then no scanner)", async () => {
      project = catalogProject();
      const before = project.snapshot();
      writeRelease(project, { extraFiles: { "Content/readme.txt": eicar().toString("latin1") } });
      const infected = await runCli(
        ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamscan-db", db],
        project.root,
      );
      expect(infected.code).toBe(1);
      expect(infected.stderr).toMatch(/validation failed/);
      expect(infected.stderr).toMatch(/antivirus_scan\s*│\s*yes\s*│\s*failed/);
      writeRelease(project);
      const unscanned = await runCli(
        ["import", "--package", "pkg.zip", "--metadata", "release.json"],
        project.root,
      );
      expect(unscanned.code).toBe(1);
      expect(unscanned.stderr).toMatch(/no antivirus scanner/);
      expect(unscanned.stderr).toMatch(/antivirus_scan/);
      const after = project.snapshot();
      after.delete("pkg.zip");
      after.delete("release.json");
      expect(after).toEqual(before);
    });
  },
);
