import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClamdScanner } from "../../src/validation/antivirus/clamd.ts";
import { limitsProbe } from "../../src/validation/antivirus/limits-probe.ts";
import type { AntivirusScanner } from "../../src/validation/antivirus/scanner.ts";
import { runValidation } from "../../src/validation/runner.ts";
import type { ValidationReport } from "../../src/validation/types.ts";
import { clamdPath, eicar, type RunningClamd, SIGNATURE_NAME, shouldSkip, startClamd } from "./clamav.ts";
import { catalog, gameBuilds, packageEntries, policy, sidecarFor } from "./fixtures.ts";
import { buildZip, type FixtureEntry } from "./zip-builder.ts";

/**
 * Many small entries and clamd: the package goes to clamd once, and that scan stands for every
 * entry inside it only while the daemon is seen to report what exceeds its limits. Real clamd with
 * the test signature database; the scanner is wrapped only to count the requests it makes.
 */
function counted(scanner: AntivirusScanner) {
  const calls = { scan: 0, scanStream: 0, probe: 0 };
  const wrapped: AntivirusScanner = {
    description: scanner.description,
    scan: (name, bytes) => {
      calls.scan += 1;
      return scanner.scan(name, bytes);
    },
    scanStream: (name, chunks) => {
      calls.scanStream += 1;
      return scanner.scanStream!(name, chunks);
    },
    alertsOnLimits: () => {
      calls.probe += 1;
      return scanner.alertsOnLimits!();
    },
  };
  return { wrapped, calls };
}

function smallEntries(count: number, extra: FixtureEntry[] = []): FixtureEntry[] {
  const entries = packageEntries({ extra });
  for (let i = 0; i < count; i++) {
    entries.push({
      name: `Content/Data/f${String(i).padStart(5, "0")}.txt`,
      data: `value_${i} = ${i * 7}\n`,
    });
  }
  return entries;
}

function validate(entries: FixtureEntry[], scanner: AntivirusScanner): Promise<ValidationReport> {
  const bytes = buildZip(entries);
  return runValidation({
    package: { bytes },
    sidecar: sidecarFor(bytes),
    policy: policy(),
    catalog: catalog(),
    gameBuilds: gameBuilds(),
    scanner,
    clock: () => new Date("2026-11-21T10:00:00.000Z"),
  });
}

const antivirus = (report: ValidationReport) => report.checks.find((c) => c.id === "antivirus_scan")!;

describe.skipIf(shouldSkip(clamdPath, "clamd"))("clamd and packages of many small entries", () => {
  let alerting: RunningClamd;
  let silent: RunningClamd;
  let few: RunningClamd;
  beforeAll(async () => {
    [alerting, silent, few] = await Promise.all([
      startClamd(),
      startClamd({ alertExceedsMax: false }),
      startClamd({ maxFiles: 500 }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([alerting?.stop(), silent?.stop(), few?.stop()]);
  });

  it("the probe tells a daemon that alerts on its limits from one that skips silently", async () => {
    expect(limitsProbe().length).toBeLessThan(16 * 1024);
    expect(await createClamdScanner({ kind: "unix", path: alerting.socket }).alertsOnLimits!()).toBe(true);
    expect(await createClamdScanner({ kind: "unix", path: silent.socket }).alertsOnLimits!()).toBe(false);
  });

  it("scans a clean package of 1,200 entries in one clamd stream when the daemon alerts on its limits", async () => {
    const { wrapped, calls } = counted(createClamdScanner({ kind: "unix", path: alerting.socket }));
    const report = await validate(smallEntries(1200), wrapped);
    expect(report.passed).toBe(true);
    expect(calls).toEqual({ scan: 0, scanStream: 1, probe: 1 });
    expect(antivirus(report).log.join("\n")).toMatch(
      /package scanned clean, its 1206 entries looked at inside it/,
    );
  });

  it("names the infected entry among thousands, found by the single package scan", async () => {
    const { wrapped, calls } = counted(createClamdScanner({ kind: "unix", path: alerting.socket }));
    const report = await validate(
      smallEntries(2000, [{ name: "Content/Data/zz-notes.txt", data: eicar() }]),
      wrapped,
    );
    const check = antivirus(report);
    expect([check.status, check.reasonCode]).toEqual(["failed", "malware_detected"]);
    expect(check.log.join("\n")).toContain(`"Content/Data/zz-notes.txt": ${SIGNATURE_NAME}`);
    expect(check.log.join("\n")).toMatch(/package: .*Svc-Test-Eicar/);
    // The attribution rescan only ran because the package was not clean.
    expect(calls.scanStream).toBeGreaterThan(1);
  });

  it("scans every entry on its own when the daemon would skip silently past a limit", async () => {
    const { wrapped, calls } = counted(createClamdScanner({ kind: "unix", path: silent.socket }));
    const report = await validate(smallEntries(1500), wrapped);
    expect(report.passed).toBe(true);
    // The package, plus the entries in tar batches of at most 1,000.
    expect(calls.scanStream).toBe(3);
    expect(antivirus(report).log.join("\n")).toMatch(
      /the package and its 1506 inflated entries scanned clean/,
    );
  });

  it("fails closed with scanner_error, naming the limit, when the package exceeds the daemon's MaxFiles", async () => {
    const scanner = createClamdScanner({ kind: "unix", path: few.socket });
    const report = await validate(smallEntries(600), scanner);
    const check = antivirus(report);
    expect([check.status, check.reasonCode]).toEqual(["failed", "scanner_error"]);
    expect(check.log.join("\n")).toMatch(
      /Heuristics\.Limits\.Exceeded\.MaxFiles: it goes beyond the scanner's limits/,
    );
    expect(report.passed).toBe(false);
  });
});
