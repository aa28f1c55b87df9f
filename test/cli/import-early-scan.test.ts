import { fstatSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runnerValidator } from "../../src/catalog/validator.ts";
import { SITE_PATHS } from "../../src/contracts/urls.ts";
import type { ValidationContract } from "../../src/contracts/validation-contract.ts";
import type { AntivirusScanner } from "../../src/validation/antivirus/scanner.ts";
import { openEarly } from "../../src/validation/early-package.ts";
import { type CatalogProject, catalogProject, modRelease } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";
import { clamdPath, eicar, type RunningClamd, shouldSkip, startClamd } from "../validation/clamav.ts";

// svc import reads the package and begins its antivirus scan before it loads the publisher
// (src/cli/import.ts); the publisher's validator takes that scan over only for the same bytes and
// the same policy, else validates the bytes as before.

let project: CatalogProject;
afterEach(() => project?.cleanup());

/** A scanner that takes streams and records every request, in order. */
function countingScanner() {
  const calls: string[] = [];
  const scanner: AntivirusScanner = {
    description: "counting",
    async scan(name) {
      calls.push(`scan ${name}`);
      return { status: "clean" };
    },
    async scanStream(name, chunks) {
      let bytes = 0;
      for (const chunk of chunks) bytes += chunk.length;
      calls.push(`stream ${name} ${bytes}`);
      return { status: "clean" };
    },
    async alertsOnLimits() {
      calls.push("limits");
      return true;
    },
  };
  return { scanner, calls };
}

function opened(scanner: AntivirusScanner) {
  project = catalogProject();
  const { packageBytes, sidecar } = modRelease();
  const path = join(project.root, "pkg.zip");
  writeFileSync(path, packageBytes);
  const contractPath = join(project.siteDir, SITE_PATHS.validationContract);
  const policy = JSON.parse(readFileSync(contractPath, "utf8")) as ValidationContract;
  const early = openEarly(path, policy, "auto", scanner);
  if (!early) throw new Error("the package was not opened early");
  const request = {
    packageBytes: early.bytes,
    sidecar,
    config: project.config,
    artifactUrl: `${project.config.baseUrl}/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip`,
  };
  return { path, policy, early, request, contractPath, size: packageBytes.length };
}

const closed = (fd: number) => {
  try {
    fstatSync(fd);
    return false;
  } catch {
    return true;
  }
};

describe("runnerValidator with a package opened early", () => {
  it("takes the begun scan over for the same bytes and policy: the package is scanned once", async () => {
    const { scanner, calls } = countingScanner();
    const { path, policy, early, request, size } = opened(scanner);
    // Begun when the package was opened, before any validation ran.
    expect(calls).toEqual(["limits", `stream package ${size}`]);
    const validate = runnerValidator({
      siteDir: project.siteDir,
      scanner,
      early: { path, package: early, policy },
    });
    const report = await validate(request);
    expect(report.passed).toBe(true);
    expect(report.checks.find((c) => c.id === "antivirus_scan")?.status).toBe("passed");
    expect(calls).toEqual(["limits", `stream package ${size}`]);
    expect(closed(early.fd)).toBe(true);
  });

  it("validates the bytes as without it when the policy changed since (a recovered transaction)", async () => {
    const { scanner, calls } = countingScanner();
    const { path, policy, early, request, contractPath, size } = opened(scanner);
    const changed = { ...policy, package: { ...policy.package, maxEntries: policy.package.maxEntries - 1 } };
    writeFileSync(contractPath, JSON.stringify(changed));
    const validate = runnerValidator({
      siteDir: project.siteDir,
      scanner,
      early: { path, package: early, policy },
    });
    const report = await validate(request);
    expect(report.passed).toBe(true);
    expect(calls.filter((c) => c === `stream package ${size}`)).toHaveLength(2);
    expect(closed(early.fd)).toBe(true);
  });

  it("validates the bytes as without it when they are not the bytes it read", async () => {
    const { scanner, calls } = countingScanner();
    const { path, policy, early, request, size } = opened(scanner);
    const validate = runnerValidator({
      siteDir: project.siteDir,
      scanner,
      early: { path, package: early, policy },
    });
    const report = await validate({ ...request, packageBytes: Buffer.from(early.bytes) });
    expect(report.passed).toBe(true);
    expect(calls.filter((c) => c === `stream package ${size}`)).toHaveLength(2);
    expect(closed(early.fd)).toBe(true);
  });
});

describe.skipIf(shouldSkip(clamdPath, "clamd"))(
  "svc import with clamd (the scan begun before the publisher loads)",
  () => {
    let clamd: RunningClamd;
    beforeAll(async () => {
      clamd = await startClamd();
    }, 60_000);
    afterAll(() => clamd?.stop());

    it("publishes a clean package and refuses an infected one with the check table, nothing published", async () => {
      project = catalogProject();
      const write = (fixture: Parameters<typeof modRelease>[0]) => {
        const { packageBytes, sidecar } = modRelease(fixture);
        writeFileSync(join(project.root, "pkg.zip"), packageBytes);
        writeFileSync(join(project.root, "release.json"), JSON.stringify(sidecar));
        return sidecar;
      };
      const args = ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamd", clamd.socket];
      const sidecar = write({});
      const clean = await runCli(args, project.root);
      expect(clean.stderr).toBe("");
      expect(clean.code).toBe(0);
      expect(clean.stdout).toContain(`sha256    ${sidecar.package.sha256}`);
      const again = await runCli(args, project.root);
      expect(again.code).toBe(0);
      expect(again.stdout).toMatch(/already published with these exact bytes/);

      const before = project.snapshot();
      write({ version: "1.1.0", extraFiles: { "Content/readme.txt": eicar().toString("latin1") } });
      const infected = await runCli(args, project.root);
      expect(infected.code).toBe(1);
      expect(infected.stderr).toMatch(/validation failed/);
      expect(infected.stderr).toMatch(/antivirus_scan\s*│\s*yes\s*│\s*failed/);
      const after = project.snapshot();
      for (const path of ["pkg.zip", "release.json"]) {
        after.delete(path);
        before.delete(path);
      }
      expect(after).toEqual(before);
    }, 60_000);
  },
);
