import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { normalizeImportArgs } from "../../src/cli/import.ts";
import { clamscanPath, eicar, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { publishRelease } from "../../src/catalog/publisher.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";

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
    it("publishes, prints what it did, answers a re-import of the same release as done, and refuses other bytes", async () => {
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
      expect(again.stderr).toBe("");
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(
        /better-hud@1\.0\.0 is already published with these exact bytes and metadata/,
      );
      expect(project.snapshot()).toEqual(before);
      writeRelease(project, { extraFiles: { "Content/readme.txt": "other bytes" } });
      const other = await runCli(
        ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamscan-db", db],
        project.root,
      );
      expect(other.code).toBe(1);
      expect(other.stderr).toMatch(/version_exists: better-hud@1\.0\.0 already exists/);
      const after = project.snapshot();
      after.delete("pkg.zip");
      after.delete("release.json");
      before.delete("pkg.zip");
      before.delete("release.json");
      expect(after).toEqual(before);
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

describe("svc check on the artifacts the records name", () => {
  it("fails on a missing, resized or (with --hashes) altered artifact and on one no record names", async () => {
    project = catalogProject();
    const { packageBytes, sidecar } = modRelease();
    await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });
    const artifact = join(project.root, "site/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip");
    const ok = await runCli(["check", "--hashes"], project.root);
    expect(ok.stderr).toBe("");
    expect(ok.stdout).toMatch(/1 portal-hosted artifact\(s\) present at their recorded size and sha256/);

    // What a crash before the artifact was placed used to leave: a catalog listing a missing file.
    rmSync(artifact);
    const missing = await runCli(["check"], project.root);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /artifact missing: site\/downloads\/mods\/better-hud\/1\.0\.0\/better-hud-1\.0\.0\.zip \(better-hud@1\.0\.0 \(published\)\)/,
    );
    writeFileSync(artifact, packageBytes.subarray(1));
    expect((await runCli(["check"], project.root)).stderr).toMatch(
      /artifact size: .* is \d+ bytes; the record says \d+/,
    );
    const altered = Buffer.from(packageBytes);
    altered[10] = (altered[10] ?? 0) ^ 1;
    writeFileSync(artifact, altered);
    expect((await runCli(["check"], project.root)).code).toBe(0); // sizes only: one stat per artifact
    expect((await runCli(["check", "--hashes"], project.root)).stderr).toMatch(
      /artifact sha256: .* hashes to [0-9a-f]{64}; the record says/,
    );
    writeFileSync(artifact, packageBytes);
    mkdirSync(join(project.root, "site/downloads/mods/better-hud/9.9.9"), { recursive: true });
    writeFileSync(join(project.root, "site/downloads/mods/better-hud/9.9.9/x.zip"), "stray");
    expect((await runCli(["check"], project.root)).stderr).toMatch(
      /stray artifact: site\/downloads\/mods\/better-hud\/9\.9\.9\/x\.zip is named by no release record/,
    );
  });
});
