// Issue 25 item 11: antivirus_scan's log lines reach the modder (upload status, the PR comment, the
// review page); they named the deployment's clamd socket path, its address and clamscan's database
// folder. They name the scanner's kind only.
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClamdScanner } from "../../src/validation/antivirus/clamd.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";
import { type AntivirusScanner, publicScannerText } from "../../src/validation/antivirus/scanner.ts";
import { runValidation } from "../../src/validation/runner.ts";
import type { ValidationReport } from "../../src/validation/types.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "./clamav.ts";
import { catalog, gameBuilds, goodPackage, policy } from "./fixtures.ts";

let dir = "";
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-av-private-"));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function antivirusLog(scanner: AntivirusScanner): Promise<{ status: string; log: string }> {
  const { bytes, sidecar } = goodPackage();
  const report: ValidationReport = await runValidation({
    package: { bytes },
    sidecar,
    policy: policy(),
    catalog: catalog(),
    gameBuilds: gameBuilds(),
    scanner,
    clock: () => new Date("2026-11-21T10:00:00.000Z"),
  });
  const check = report.checks.find((c) => c.id === "antivirus_scan")!;
  return { status: check.status, log: check.log.join("\n") };
}

/** A loopback port nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

describe("antivirus_scan's log names no socket path, address or database folder", () => {
  it("an unreachable clamd on a unix socket", async () => {
    const socket = join(dir, "private-clamd.ctl");
    const { status, log } = await antivirusLog(createClamdScanner({ kind: "unix", path: socket }));
    expect(status).toBe("failed");
    expect(log).toContain("(clamd)");
    expect(log).not.toContain(dir);
    expect(log).not.toContain("private-clamd.ctl");
  });

  it("an unreachable clamd over TCP", async () => {
    const port = await closedPort();
    const { status, log } = await antivirusLog(
      createClamdScanner({ kind: "tcp", host: "127.0.0.1", port }, { timeoutMs: 5000 }),
    );
    expect(status).toBe("failed");
    expect(log).toContain("(clamd)");
    expect(log).not.toContain("127.0.0.1");
    expect(log).not.toContain(String(port));
  });

  it.skipIf(shouldSkip(clamscanPath, "clamscan"))("clamscan with its own database folder", async () => {
    const database = makeSignatureDatabase(dir);
    const { status, log } = await antivirusLog(createClamscanScanner(clamscanPath!, { database }));
    expect(status).toBe("passed");
    expect(log).toMatch(/^clamscan: the package/);
    expect(log).not.toContain(database);
    expect(log).not.toContain(clamscanPath!);
  });

  it("publicScannerText keeps the words and drops paths and addresses", () => {
    expect(
      publicScannerText(
        "clamd unix:/run/clamav/clamd.ctl: ECONNREFUSED connect ECONNREFUSED /run/clamav/clamd.ctl",
      ),
    ).toBe("clamd: ECONNREFUSED connect ECONNREFUSED <path>");
    expect(publicScannerText("clamd tcp://10.0.0.5:3310 did not answer within 5000 ms")).toBe(
      "clamd did not answer within 5000 ms",
    );
    expect(publicScannerText("clamscan /usr/bin/clamscan -d /srv/clamav/db")).toBe("clamscan");
    expect(publicScannerText("connect ECONNREFUSED 10.0.0.5:3310")).toBe(
      "connect ECONNREFUSED <scanner address>",
    );
    expect(publicScannerText("INSTREAM size limit exceeded.")).toBe("INSTREAM size limit exceeded.");
  });
});
