import { spawnSync } from "node:child_process";
import { lstatSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AntivirusScanner } from "../../src/validation/antivirus/scanner.ts";
import { runValidation } from "../../src/validation/runner.ts";
import type { ValidationReport } from "../../src/validation/types.ts";
import { catalog, gameBuilds, packageEntries, policy, sidecarFor } from "./fixtures.ts";
import { buildZip, type FixtureEntry } from "./zip-builder.ts";

/**
 * SECURITY.md "refuse what mainstream extractors would read differently": the same package bytes
 * must give every player the same files. Each case is built at test time and shown to the real
 * tools first (Info-ZIP unzip and Python's zipfile, both installed by .ci/run), then to validation.
 */

/** A scanner that answers clean for everything: this suite is about ZIP structure. Named as a fake. */
const fakeCleanScanner: AntivirusScanner = {
  description: "fake scanner (always clean; ZIP structure tests only)",
  scan: async () => ({ status: "clean" }),
};

const DLL = "Binaries/Win64/BetterHud.dll";
const work = mkdtempSync(join(tmpdir(), "svc-zip-version-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The good package of the runner tests, with one entry changed. */
function packageWith(name: string, change: Partial<FixtureEntry>): Buffer {
  return buildZip(packageEntries().map((entry) => (entry.name === name ? { ...entry, ...change } : entry)));
}

let serial = 0;
function fileOf(bytes: Buffer): string {
  const path = join(work, `case-${serial++}.zip`);
  writeFileSync(path, bytes);
  return path;
}

/** `unzip -t` and a real extraction (answering "n" to any question): exit codes, output, files made. */
function unzip(bytes: Buffer) {
  const zip = fileOf(bytes);
  const test = spawnSync("unzip", ["-t", zip], { encoding: "utf8" });
  const into = mkdtempSync(join(work, "out-"));
  const extract = spawnSync("unzip", ["-d", into, zip], { encoding: "utf8", input: "n\n" });
  // unzip that asks nothing exits without reading the answer: writing it then fails with EPIPE.
  const extractError =
    (extract.error as NodeJS.ErrnoException | undefined)?.code === "EPIPE" ? undefined : extract.error;
  if (test.error || extractError) throw test.error ?? extractError;
  const files = (readdirSync(into, { recursive: true }) as string[])
    .map((f) => f.split("\\").join("/"))
    .sort();
  return {
    testStatus: test.status,
    testOutput: test.stdout + test.stderr,
    extractStatus: extract.status,
    extractOutput: extract.stdout + extract.stderr,
    files,
    into,
  };
}

/** Python's zipfile reading every entry: the names it read, or the error it raised. */
function python(bytes: Buffer): { names: string[] } | { error: string } {
  const run = spawnSync(
    "python3",
    [
      "-c",
      "import json, sys, zipfile\ntry:\n  z = zipfile.ZipFile(sys.argv[1])\n  [z.read(n) for n in z.namelist()]\n  print(json.dumps({'names': z.namelist()}))\nexcept Exception as e:\n  print(json.dumps({'error': type(e).__name__ + ': ' + str(e)}))",
      fileOf(bytes),
    ],
    { encoding: "utf8" },
  );
  if (run.error || run.status !== 0) throw run.error ?? new Error(run.stderr);
  return JSON.parse(run.stdout);
}

async function validate(bytes: Buffer): Promise<ValidationReport> {
  return runValidation({
    package: { bytes },
    sidecar: sidecarFor(bytes),
    policy: policy(),
    catalog: catalog(),
    gameBuilds: gameBuilds(),
    scanner: fakeCleanScanner,
    clock: () => new Date("2026-11-21T10:00:00.000Z"),
  });
}

function outcome(report: ValidationReport, id: string) {
  const check = report.checks.find((c) => c.id === id)!;
  return { status: check.status, reasonCode: check.reasonCode, log: check.log.join("\n") };
}

describe("ZIP fields extractors act on", () => {
  it("control: the package as standard tools write it (version needed 2.0) reads the same everywhere and passes", async () => {
    const bytes = packageWith(DLL, {});
    const tools = unzip(bytes);
    expect(tools.testStatus).toBe(0);
    expect(tools.files).toContain(DLL);
    expect(python(bytes)).toMatchObject({ names: expect.arrayContaining([DLL]) });
    const report = await validate(bytes);
    expect(report.checks.filter((c) => c.status !== "passed").map((c) => [c.id, c.reasonCode])).toEqual([]);
  });

  it("version needed 6.4 on the DLL: unzip skips it, Python refuses the archive, validation refuses it", async () => {
    const bytes = packageWith(DLL, { versionNeeded: 64 });
    const tools = unzip(bytes);
    expect(tools.testOutput).toMatch(/skipping: Binaries\/Win64\/BetterHud\.dll\s+need PK compat\. v6\.4/);
    expect(tools.files).not.toContain(DLL);
    expect(tools.files).toContain("svc-mod.json");
    expect(python(bytes)).toEqual({ error: "NotImplementedError: zip file version 6.4" });
    const report = await validate(bytes);
    expect(report.passed).toBe(false);
    expect(outcome(report, "file_signature")).toMatchObject({
      status: "failed",
      reasonCode: "zip_version_unsupported",
      log: expect.stringContaining(`${DLL}: central directory declares version needed to extract 6.4`),
    });
  });

  it("version needed 5.1: unzip leaves the DLL out while Python extracts it, so validation refuses it", async () => {
    const bytes = packageWith(DLL, { versionNeeded: 51 });
    expect(unzip(bytes).files).not.toContain(DLL);
    expect(python(bytes)).toMatchObject({ names: expect.arrayContaining([DLL]) });
    expect(outcome(await validate(bytes), "file_signature").reasonCode).toBe("zip_version_unsupported");
  });

  it("a VMS 'system needed to extract': unzip asks before extracting the DLL (and skips it on 'n'), so validation refuses it", async () => {
    const bytes = packageWith(DLL, { versionNeeded: (2 << 8) | 20 });
    const tools = unzip(bytes);
    expect(tools.extractOutput).toMatch(/stored in VMS format\.\s+Extract anyway\?/);
    expect(tools.files).not.toContain(DLL);
    expect(python(bytes)).toMatchObject({ names: expect.arrayContaining([DLL]) });
    expect(outcome(await validate(bytes), "file_signature")).toMatchObject({
      reasonCode: "zip_version_unsupported",
      log: expect.stringContaining("on system 2"),
    });
  });

  it("a version only the local header declares is refused too (streaming extractors read only that header)", async () => {
    const bytes = packageWith(DLL, { local: { versionNeeded: 63 } });
    expect(outcome(await validate(bytes), "file_signature")).toMatchObject({
      reasonCode: "zip_version_unsupported",
      log: expect.stringContaining(`${DLL}: local header declares version needed to extract 6.3`),
    });
  });

  it("the compressed-patched-data flag: unzip extracts the bytes as the DLL, Python refuses it, validation refuses it", async () => {
    const bytes = packageWith(DLL, { flags: 0x0020 });
    expect(unzip(bytes).files).toContain(DLL);
    expect(python(bytes)).toEqual({ error: "NotImplementedError: compressed patched data (flag bit 5)" });
    expect(outcome(await validate(bytes), "file_signature")).toMatchObject({
      reasonCode: "zip_flags_unsupported",
      log: expect.stringContaining("compressed patched data"),
    });
  });

  it.each<[string, Partial<FixtureEntry>]>([
    ["reserved flag bit 12", { flags: 0x1000 }],
    ["enhanced deflating (bit 4)", { flags: 0x0010 }],
    ["a stored entry with a data descriptor", { method: 0, dataDescriptor: true }],
  ])("%s is refused with zip_flags_unsupported", async (_label, change) => {
    expect(outcome(await validate(packageWith(DLL, change)), "file_signature").reasonCode).toBe(
      "zip_flags_unsupported",
    );
  });

  it("a symbolic link made on BeOS: unzip creates the link like a Unix one, so validation refuses it", async () => {
    const link: FixtureEntry = {
      name: "Content/Paks/link.pak",
      data: "../../../../../etc/passwd",
      method: 0,
      unixMode: 0o120777,
      madeBy: (16 << 8) | 20,
    };
    const bytes = buildZip([...packageEntries(), link]);
    const tools = unzip(bytes);
    expect(lstatSync(join(tools.into, link.name as string)).isSymbolicLink()).toBe(true);
    expect(outcome(await validate(bytes), "zip_path_safety")).toMatchObject({
      status: "failed",
      reasonCode: "symlink_entry",
    });
  });
});
