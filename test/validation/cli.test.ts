import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CliIo } from "../../src/cli/io.ts";
import { main } from "../../src/cli/main.ts";
import { SITE_PATHS } from "../../src/contracts/urls.ts";
import type { ValidationReport } from "../../src/validation/types.ts";
import {
  clamdPath,
  clamscanPath,
  eicar,
  makeSignatureDatabase,
  type RunningClamd,
  shouldSkip,
  startClamd,
} from "./clamav.ts";
import { catalog, gameBuilds, goodPackage, packageEntries, policy, sidecarFor } from "./fixtures.ts";
import { buildZip } from "./zip-builder.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function svc(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, tty = false): Promise<Run> {
  const stdout = new PassThrough();
  const stderr = Object.assign(new PassThrough(), { isTTY: tty, columns: 80 });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  stdout.on("data", (d: Buffer) => out.push(d));
  stderr.on("data", (d: Buffer) => err.push(d));
  const io: CliIo = { stdout, stderr, cwd, env };
  const code = await main(["validate", ...args], io);
  return { code, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}

describe("svc validate", () => {
  let dir: string;
  let clamd: RunningClamd | null = null;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "svc-cli-validate-"));
    // A site folder with the three documents the command reads.
    const site = join(dir, "site");
    for (const [path, doc] of [
      [SITE_PATHS.catalog, catalog()],
      [SITE_PATHS.gameBuilds, gameBuilds()],
      [SITE_PATHS.validationContract, policy()],
    ] as const) {
      mkdirSync(join(site, path, ".."), { recursive: true });
      writeFileSync(join(site, path), JSON.stringify(doc));
    }
    const good = goodPackage();
    writeFileSync(join(dir, "good.zip"), good.bytes);
    writeFileSync(join(dir, "good.json"), JSON.stringify(good.sidecar));
    const evil = buildZip(packageEntries({ extra: [{ name: "../evil.txt", data: "x" }] }));
    writeFileSync(join(dir, "evil.zip"), evil);
    writeFileSync(join(dir, "evil.json"), JSON.stringify(sidecarFor(evil)));
    writeFileSync(
      join(dir, "dup.json"),
      '{"schema":"svc.mod-release-submission.v1","modId":"a","modId":"b"}',
    );
    if (!shouldSkip(clamdPath, "clamd")) clamd = await startClamd();
  });
  afterAll(async () => {
    await clamd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("--json prints a parseable report; --no-antivirus fails antivirus_scan and exits 1", async () => {
    const r = await svc(
      ["--package", "good.zip", "--metadata", "good.json", "--json", "--no-antivirus"],
      dir,
    );
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as ValidationReport;
    expect(report.schema).toBe("svc.validation-report.v1");
    expect(report.checks.filter((c) => c.status !== "passed").map((c) => c.reasonCode)).toEqual([
      "antivirus_disabled",
    ]);
  });

  it("--timings prints the time of every step to standard error and leaves the report alone", async () => {
    const r = await svc(
      ["--package", "good.zip", "--metadata", "good.json", "--json", "--no-antivirus", "--timings"],
      dir,
    );
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as ValidationReport;
    const rows = new Map(
      [...r.stderr.matchAll(/^ {2}(\S.*?) +(\d+\.\d) ms +(\d+\.\d)%$/gm)].map((m) => [m[1]!, Number(m[2])]),
    );
    expect(r.stderr).toMatch(/^svc validate: time per step\n/);
    const steps = [
      "start Node and load svc",
      "load the checks",
      "read the sidecar and the site's documents",
      "check the policy and the sidecar",
      "hash the package",
      "read the ZIP structure",
      "check the names",
      "inflate, verify and hash the entries",
      "read the manifest",
      ...report.checks.map((c) => `check ${c.id}`),
      "write the report",
    ];
    expect([...rows.keys()]).toEqual([...steps, "total"]);
    // Start-up is the process's age when the command began: never zero, and part of the total.
    expect(rows.get("start Node and load svc")).toBeGreaterThan(0);
    const sum = steps.reduce((t, step) => t + rows.get(step)!, 0);
    expect(Math.abs(rows.get("total")! - sum)).toBeLessThan(0.05 * steps.length + 0.1);
    // Without the flag, standard error stays quiet.
    const quiet = await svc(
      ["--package", "good.zip", "--metadata", "good.json", "--json", "--no-antivirus"],
      dir,
    );
    expect(quiet.stderr).toBe("");
    expect(JSON.parse(quiet.stdout).checks.map((c: { id: string }) => c.id)).toEqual(
      report.checks.map((c) => c.id),
    );
  });

  it.skipIf(!clamdPath)(
    "passes a good package with clamd and exits 0; a human table names every check",
    async () => {
      const r = await svc(
        ["--package", "good.zip", "--metadata", "good.json", "--clamd", clamd!.socket],
        dir,
      );
      expect(r.stderr).toBe("");
      expect(r.code).toBe(0);
      for (const check of policy().requiredChecks) expect(r.stdout).toContain(check);
      expect(r.stdout).toContain("PASSED");
      // With a scanner, the wait for its verdicts is a step of its own, before the checks.
      const timed = await svc(
        ["--package", "good.zip", "--metadata", "good.json", "--clamd", clamd!.socket, "--timings"],
        dir,
      );
      expect(timed.code).toBe(0);
      expect(timed.stderr).toMatch(
        /inflate, verify and hash the entries .*\n {2}wait for the antivirus scanner .*\n {2}read the manifest/,
      );
    },
  );

  it.skipIf(!clamdPath)("shows the failing check, its reason code and the fix beneath it", async () => {
    const r = await svc(["--package", "evil.zip", "--metadata", "evil.json", "--clamd", clamd!.socket], dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/zip_path_safety\s+│\s+FAIL\s+│\s+path_traversal/);
    expect(r.stdout).toContain("fix (path_traversal)");
    expect(r.stdout).toContain("FAILED: 1 required check(s) failed: zip_path_safety");
  });

  it.skipIf(!clamdPath)("EICAR in the package fails antivirus_scan", async () => {
    const bytes = buildZip(packageEntries({ extra: [{ name: "Content/a.txt", data: eicar() }] }));
    writeFileSync(join(dir, "eicar.zip"), bytes);
    writeFileSync(join(dir, "eicar.json"), JSON.stringify(sidecarFor(bytes)));
    const r = await svc(
      ["--package", "eicar.zip", "--metadata", "eicar.json", "--json", "--clamd", clamd!.socket],
      dir,
    );
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as ValidationReport;
    expect(report.checks.find((c) => c.id === "antivirus_scan")?.reasonCode).toBe("malware_detected");
  });

  it.skipIf(!clamscanPath)("--clamscan with --clamscan-db scans with clamscan", async () => {
    const db = makeSignatureDatabase(join(dir, "clamscan"));
    const r = await svc(
      ["--package", "good.zip", "--metadata", "good.json", "--clamscan", clamscanPath!, "--clamscan-db", db],
      dir,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("PASSED");
  });

  it("draws a progress bar on a terminal for a large package, and the table still follows", async () => {
    const big = goodPackage({ pakBytes: 12 * 1024 * 1024 });
    writeFileSync(join(dir, "big.zip"), big.bytes);
    writeFileSync(join(dir, "big.json"), JSON.stringify(big.sidecar));
    const r = await svc(["--package", "big.zip", "--metadata", "big.json", "--no-antivirus"], dir, {}, true);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/hashing|inspecting/);
    expect(r.stdout).toContain("antivirus_disabled");
    const quiet = await svc(["--package", "big.zip", "--metadata", "big.json", "--no-antivirus"], dir);
    expect(quiet.stderr).toBe("");
  });

  it("a sidecar with duplicate keys fails sidecar_schema as invalid JSON", async () => {
    const r = await svc(["--package", "good.zip", "--metadata", "dup.json", "--json", "--no-antivirus"], dir);
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as ValidationReport;
    expect(report.checks[0]).toMatchObject({ id: "sidecar_schema", reasonCode: "sidecar_invalid_json" });
  });

  it("an unreachable clamd fails closed", async () => {
    const r = await svc(
      ["--package", "good.zip", "--metadata", "good.json", "--json", "--clamd", join(dir, "none.sock")],
      dir,
    );
    expect(r.code).toBe(1);
    const report = JSON.parse(r.stdout) as ValidationReport;
    expect(report.checks.find((c) => c.id === "antivirus_scan")?.reasonCode).toBe("scanner_unavailable");
  });

  it("usage errors exit 2", async () => {
    expect((await svc([], dir)).code).toBe(2);
    expect((await svc(["--package", "good.zip"], dir)).code).toBe(2);
    expect((await svc(["--package", "missing.zip", "--metadata", "good.json"], dir)).code).toBe(2);
    expect((await svc(["--package", "good.zip", "--metadata", "good.json", "--bogus"], dir)).code).toBe(2);
    const noSite = await svc(["--package", "good.zip", "--metadata", "good.json", "--site", "nowhere"], dir);
    expect(noSite.code).toBe(2);
    expect(noSite.stderr).toContain("validation contract");
    const help = await svc(["--help"], dir);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("--no-antivirus");
  });

  it("reads the repository's site by default", async () => {
    const repo = fileURLToPath(new URL("../../", import.meta.url));
    const copy = mkdtempSync(join(tmpdir(), "svc-cli-site-"));
    try {
      cpSync(join(repo, "site/api"), join(copy, "site/api"), { recursive: true });
      const good = goodPackage({ dependencies: [] });
      writeFileSync(join(copy, "p.zip"), good.bytes);
      writeFileSync(join(copy, "p.json"), JSON.stringify(good.sidecar));
      const r = await svc(["--package", "p.zip", "--metadata", "p.json", "--json", "--no-antivirus"], copy);
      const report = JSON.parse(r.stdout) as ValidationReport;
      expect(report.checks.find((c) => c.id === "target_game_build")?.status).toBe("passed");
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it("prints the same report with the package opened early and inflated beside a worker, on one thread, or as auto decides", async () => {
    // More entries than the worker's threshold (4,000), one with a CRC that lies, so the report
    // carries a finding the main thread writes whichever thread inflated the entry.
    const extra = Array.from({ length: 4200 }, (_, i) => ({
      name: `Content/Data/d${Math.floor(i / 300)}/f${String(i).padStart(4, "0")}.txt`,
      data: `line ${i}\n`.repeat(1 + (i % 30)),
      ...(i === 3100 ? { crc: 0xdeadbeef } : {}),
    }));
    const bytes = buildZip(packageEntries({ extra }));
    writeFileSync(join(dir, "many.zip"), bytes);
    writeFileSync(join(dir, "many.json"), JSON.stringify(sidecarFor(bytes, { extra })));
    const run = async (mode: string | undefined) => {
      const r = await svc(
        ["--package", "many.zip", "--metadata", "many.json", "--json", "--no-antivirus"],
        dir,
        mode ? { SVC_VALIDATE_WORKER: mode } : {},
      );
      const { startedAt: _s, finishedAt: _f, ...report } = JSON.parse(r.stdout) as ValidationReport;
      return { code: r.code, report };
    };
    const one = await run("never");
    expect(one.code).toBe(1);
    const signature = one.report.checks.find((c) => c.id === "file_signature")!;
    expect(signature.reasonCode).toBe("crc_mismatch");
    expect(signature.log.join("\n")).toContain("Content/Data/d10/f3100.txt: CRC-32 is");
    expect(await run("always")).toEqual(one);
    expect(await run(undefined)).toEqual(one);
  });
});
