import { randomBytes } from "node:crypto";
import { appendFileSync, mkdtempSync, rmSync, truncateSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as zlib from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClamdScanner } from "../../src/validation/antivirus/clamd.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";
import type { AntivirusScanner } from "../../src/validation/antivirus/scanner.ts";
import { runValidation } from "../../src/validation/runner.ts";
import type { ValidationInput, ValidationReport } from "../../src/validation/types.ts";
import {
  clamdPath,
  clamscanPath,
  eicar,
  makeSignatureDatabase,
  type RunningClamd,
  shouldSkip,
  startClamd,
} from "./clamav.ts";
import {
  catalog,
  gameBuilds,
  goodPackage,
  MOD_CONFIG,
  manifestFor,
  type PackageSpec,
  packageEntries,
  policy,
  releaseRecord,
  sidecarFor,
} from "./fixtures.ts";
import { buildZip, type FixtureEntry, type FixtureOptions, fakeElf, fakePe, fakePng } from "./zip-builder.ts";

/** A scanner that answers clean for everything: only for checks that are not about scanning. Named as a fake. */
const fakeCleanScanner: AntivirusScanner = {
  description: "fake scanner (always clean; tests of non-antivirus checks only)",
  scan: async () => ({ status: "clean" }),
};

function input(bytes: Buffer, sidecar: unknown, extra: Partial<ValidationInput> = {}): ValidationInput {
  return {
    package: { bytes },
    sidecar,
    policy: policy(),
    catalog: catalog(),
    gameBuilds: gameBuilds(),
    scanner: fakeCleanScanner,
    clock: () => new Date("2026-11-21T10:00:00.000Z"),
    ...extra,
  };
}

async function validateEntries(
  entries: FixtureEntry[],
  options: FixtureOptions = {},
  spec: PackageSpec = {},
  extra: Partial<ValidationInput> = {},
): Promise<ValidationReport> {
  const bytes = buildZip(entries, options);
  return runValidation(input(bytes, sidecarFor(bytes, spec), extra));
}

/** A good package with extra entries (or a hand-made entry list) and layout options. */
async function withExtra(extra: FixtureEntry[], options: FixtureOptions = {}): Promise<ValidationReport> {
  return validateEntries(packageEntries({ extra }), options);
}

function check(report: ValidationReport, id: string) {
  const found = report.checks.find((c) => c.id === id);
  if (!found) throw new Error(`no ${id} in report`);
  return found;
}

function expectFailure(report: ValidationReport, id: string, reason: string) {
  const c = check(report, id);
  expect({ id, status: c.status, reasonCode: c.reasonCode }, c.log.join("\n")).toEqual({
    id,
    status: "failed",
    reasonCode: reason,
  });
  expect(report.passed).toBe(false);
  expect(c.log.length).toBeGreaterThan(0);
}

/** Invariant of every report: a required check is passed or failed, never skipped. */
function expectNoSkippedRequired(report: ValidationReport) {
  for (const c of report.checks)
    if (c.required) expect(c.status === "passed" || c.status === "failed").toBe(true);
}

describe("a good package", () => {
  it("passes every check except antivirus when no scanner is configured, which fails closed", async () => {
    const { bytes, sidecar } = goodPackage();
    const report = await runValidation(input(bytes, sidecar, { scanner: null }));
    const notPassed = report.checks.filter((c) => c.status !== "passed").map((c) => [c.id, c.reasonCode]);
    expect(notPassed).toEqual([["antivirus_scan", "scanner_unavailable"]]);
    expect(report.passed).toBe(false);
    expect(report.checks.map((c) => c.id)).toEqual(
      policy()
        .checks.filter((c) => c.scope === "package")
        .map((c) => c.id),
    );
    expect(report).toMatchObject({
      schema: "svc.validation-report.v1",
      modId: "better-hud",
      version: "1.2.0",
      packageSizeBytes: bytes.length,
      startedAt: "2026-11-21T10:00:00.000Z",
    });
  });

  it("--no-antivirus makes antivirus_scan fail with antivirus_disabled, never pass", async () => {
    const { bytes, sidecar } = goodPackage();
    const report = await runValidation(input(bytes, sidecar, { antivirusDisabled: true }));
    expectFailure(report, "antivirus_scan", "antivirus_disabled");
  });

  it("reads the package from a path as well as from bytes, with identical results", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-runner-"));
    try {
      const { bytes, sidecar } = goodPackage({ modConfig: MOD_CONFIG });
      writeFileSync(join(dir, "p.zip"), bytes);
      const fromPath = await runValidation({
        ...input(bytes, sidecar),
        package: { path: join(dir, "p.zip") },
      });
      const fromBytes = await runValidation(input(bytes, sidecar));
      expect(fromPath).toEqual(fromBytes);
      expect(fromPath.passed).toBe(true);
      // Past 16 MiB the file is read through a window of positional reads instead of whole.
      const large = goodPackage({ modConfig: MOD_CONFIG, pakBytes: 17 * 1024 * 1024 });
      writeFileSync(join(dir, "large.zip"), large.bytes);
      const largeFromPath = await runValidation({
        ...input(large.bytes, large.sidecar),
        package: { path: join(dir, "large.zip") },
      });
      expect(largeFromPath).toEqual(await runValidation(input(large.bytes, large.sidecar)));
      expect(largeFromPath.passed).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses a package file that changes while it is validated", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-toctou-"));
    try {
      const { bytes, sidecar } = goodPackage();
      const path = join(dir, "p.zip");
      writeFileSync(path, bytes);
      let swapped = false;
      const onProgress = () => {
        if (swapped) return;
        swapped = true;
        appendFileSync(path, "more");
      };
      await expect(
        runValidation({ ...input(bytes, sidecar, { onProgress }), package: { path } }),
      ).rejects.toThrow(/changed/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reports hashing, inspecting and scanning progress", async () => {
    const { bytes, sidecar } = goodPackage();
    const phases = new Set<string>();
    await runValidation(input(bytes, sidecar, { onProgress: (p) => phases.add(p.phase) }));
    expect([...phases].sort()).toEqual(["hashing", "inspecting", "scanning"]);
  });
});

describe("SECURITY.md packages: names", () => {
  it.each([
    ["../evil.txt", "path_traversal"],
    ["Content/../../evil.txt", "path_traversal"],
    ["/etc/evil.txt", "absolute_path"],
    ["C:/Windows/evil.txt", "absolute_path"],
    ["//server/share/evil.txt", "absolute_path"],
    ["Content\\evil.txt", "backslash_in_name"],
    ["evil\u0000.txt", "control_character_in_name"],
    ["evil\u001b[2J.txt", "control_character_in_name"],
    ["Content/readme\u202Etxt.md", "bidi_character_in_name"],
    // A leading byte-order mark is part of the name to extractors; a decoder that strips it read "a".
    ["\uFEFFContent/evil.txt", "bidi_character_in_name"],
    ["Content/evil.txt:hidden", "colon_in_name"],
    ["Content/evil.txt.", "trailing_dot_or_space"],
    ["Content /evil.txt", "trailing_dot_or_space"],
    ["Content/CON.txt", "reserved_device_name"],
    ["lpt1/evil.txt", "reserved_device_name"],
    ["Content//evil.txt", "empty_path_segment"],
    ["Content/./evil.txt", "dot_path_segment"],
    [`Content/${"x".repeat(240)}.txt`, "name_too_long"],
    [`${"d/".repeat(12)}evil.txt`, "path_too_deep"],
  ])("%j fails zip_path_safety with %s", async (name, reason) => {
    const report = await withExtra([{ name, data: "text" }]);
    expectFailure(report, "zip_path_safety", reason);
    expectNoSkippedRequired(report);
  });

  it("non-UTF-8 names without the UTF-8 flag", async () => {
    expectFailure(
      await withExtra([{ name: Buffer.from("Content/caf\xe9.txt", "latin1"), data: "x" }]),
      "zip_path_safety",
      "non_utf8_name",
    );
  });
});

describe("SECURITY.md packages: collisions", () => {
  it.each([
    [["Content/a.txt", "Content/a.txt"], "duplicate_entry_name"],
    [["Content/Readme.txt", "Content/README.TXT"], "case_insensitive_collision"],
    [["Content/caf\u00e9.txt", "Content/cafe\u0301.txt"], "unicode_normalization_collision"],
  ])("%j fails zip_path_safety with %s", async (names, reason) => {
    expectFailure(
      await withExtra(names.map((name, i) => ({ name, data: `v${i}` }))),
      "zip_path_safety",
      reason,
    );
  });
});

describe("SECURITY.md packages: structure", () => {
  const tiny = (over: Partial<FixtureEntry> = {}): FixtureEntry => ({
    name: "Content/x.txt",
    data: "hello hello",
    ...over,
  });
  it.each<[string, FixtureEntry[], FixtureOptions, string, string]>([
    [
      "symlink entry",
      [tiny({ unixMode: 0o120777, data: "../../etc/passwd" })],
      {},
      "zip_path_safety",
      "symlink_entry",
    ],
    ["encrypted entry", [tiny({ flags: 1 })], {}, "archive_content_policy", "encrypted_entry"],
    [
      "method 12 (bzip2)",
      [tiny({ method: 12 })],
      {},
      "archive_content_policy",
      "unsupported_compression_method",
    ],
    [
      "method 99 (AES)",
      [tiny({ method: 99 })],
      {},
      "archive_content_policy",
      "unsupported_compression_method",
    ],
    ["ZIP64 end records", [], { zip64Locator: true }, "file_signature", "zip64_unsupported"],
    [
      "local/central mismatch",
      [tiny({ local: { name: "Content/y.txt" } })],
      {},
      "file_signature",
      "local_header_mismatch",
    ],
    ["data before the first entry", [], { prefix: fakePe(300) }, "file_signature", "data_before_first_entry"],
    [
      "data between entries",
      [tiny({ gapAfter: Buffer.from("smuggled") })],
      {},
      "file_signature",
      "data_between_entries",
    ],
    [
      "data after the end",
      [],
      { trailing: Buffer.from("appended") },
      "file_signature",
      "data_after_central_directory",
    ],
    ["truncated end record", [], { truncate: 7 }, "file_signature", "eocd_missing"],
    ["lying end record", [], { eocd: { totalEntries: 3 } }, "file_signature", "eocd_invalid"],
    ["bad CRC", [tiny({ crc: 0xdeadbeef })], {}, "file_signature", "crc_mismatch"],
  ])("%s", async (_label, extra, options, id, reason) => {
    const report = await withExtra(extra, options);
    expectFailure(report, id, reason);
    expectNoSkippedRequired(report);
  });

  it("a non-ZIP file fails file_signature, and package-dependent checks are blocked (failed), never passed", async () => {
    const bytes = Buffer.concat([Buffer.from([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0, 4]), randomBytes(2000)]);
    const report = await runValidation(input(bytes, sidecarFor(bytes)));
    expectFailure(report, "file_signature", "not_a_zip");
    for (const id of ["zip_path_safety", "manifest_schema", "archive_content_policy", "antivirus_scan"]) {
      expectFailure(report, id, "blocked_by_file_signature");
    }
    expectFailure(report, "manifest_identity", "blocked_by_manifest_schema");
    expectFailure(report, "entrypoint_presence", "blocked_by_manifest_schema");
    expect(check(report, "artifact_hash").status).toBe("passed");
    expectNoSkippedRequired(report);
  });
});

describe("SECURITY.md packages: bombs", () => {
  it("high compression ratio", async () => {
    const report = await withExtra([{ name: "Content/zeros.pak", data: Buffer.alloc(64 * 1024 * 1024) }]);
    expectFailure(report, "archive_content_policy", "compression_ratio_exceeded");
    // Nothing was inflated, so content checks are blocked rather than passed.
    expectFailure(report, "file_signature", "blocked_by_archive_content_policy");
  });

  it("overlapping entries (one local file shared by many central records)", async () => {
    const entries = packageEntries();
    const shared = entries.findIndex((e) => e.name === "Content/Paks/BetterHud_P.pak");
    const bombs = Array.from({ length: 20 }, () => ({
      name: "Content/Paks/BetterHud_P.pak",
      shareLocalOf: shared,
    }));
    expectFailure(await validateEntries([...entries, ...bombs]), "file_signature", "overlapping_entries");
  });

  it("declared sizes that lie (more data than declared)", async () => {
    const data = Buffer.alloc(200_000, 0x61);
    const lie = { name: "Content/lie.txt", data, uncompressedSize: 100, local: { uncompressedSize: 100 } };
    expectFailure(await withExtra([lie]), "file_signature", "declared_size_mismatch");
  });

  it("tens of thousands of entries", async () => {
    const many = Array.from({ length: 25_001 }, (_, i) => ({
      name: `Content/f${i}.txt`,
      data: "x",
      method: 0,
    }));
    expectFailure(await validateEntries(many), "archive_content_policy", "too_many_entries");
  });

  it("nested archives, by extension and by content", async () => {
    const inner = buildZip([{ name: "a.txt", data: "a" }]);
    expectFailure(
      await withExtra([{ name: "Content/inner.zip", data: inner }]),
      "archive_content_policy",
      "nested_archive",
    );
    expectFailure(
      await withExtra([{ name: "Content/Paks/x.pak", data: inner }]),
      "archive_content_policy",
      "nested_archive",
    );
    expectFailure(
      await withExtra([{ name: "Content/x.pak", data: zlib.gzipSync("x") }]),
      "archive_content_policy",
      "nested_archive",
    );
  });
});

describe("SECURITY.md packages: placement and type", () => {
  it.each<[string, FixtureEntry, string, string]>([
    [
      "a DLL outside Binaries/Win64",
      { name: "Content/evil.dll", data: fakePe() },
      "zip_path_safety",
      "native_binary_outside_allowed_directory",
    ],
    [
      "an EXE at the root",
      { name: "setup.exe", data: fakePe() },
      "zip_path_safety",
      "native_binary_outside_allowed_directory",
    ],
    [
      "a PE file named .png",
      { name: "Content/icon.png", data: fakePe() },
      "file_signature",
      "disguised_executable",
    ],
    [
      "a PE file named .pak",
      { name: "Content/Paks/x.pak", data: fakePe() },
      "file_signature",
      "disguised_executable",
    ],
    [
      "an ELF binary",
      { name: "Content/Paks/x.pak", data: fakeElf() },
      "file_signature",
      "non_windows_binary",
    ],
    [
      "a .dll that is not a PE file",
      { name: "Binaries/Win64/fake.dll", data: "not a dll" },
      "file_signature",
      "signature_mismatch",
    ],
    [
      "a .png that is not a PNG",
      { name: "Content/icon.png", data: "GIF89a......" },
      "file_signature",
      "signature_mismatch",
    ],
    ["a .bat script", { name: "install.bat", data: "del C:\\" }, "archive_content_policy", "script_file"],
    ["a .ps1 script", { name: "Content/x.ps1", data: "rm -r /" }, "archive_content_policy", "script_file"],
    ["a .vbs script", { name: "Content/x.vbs", data: "x" }, "archive_content_policy", "script_file"],
    [
      "a .lnk shortcut",
      { name: "Content/x.lnk", data: Buffer.from([0x4c, 0, 0, 0, 1, 0x14, 2, 0]) },
      "archive_content_policy",
      "script_file",
    ],
    [
      "a double extension",
      { name: "Binaries/Win64/readme.txt.exe", data: fakePe() },
      "archive_content_policy",
      "double_extension",
    ],
    [
      "an unknown extension",
      { name: "Content/x.xyz", data: "x" },
      "archive_content_policy",
      "extension_not_allowed",
    ],
    [
      "a binary config file",
      { name: "config/x.json", data: fakePng() },
      "archive_content_policy",
      "config_not_text",
    ],
  ])("%s", async (_label, entry, id, reason) => {
    const report = await withExtra([entry]);
    expectFailure(report, id, reason);
    expectNoSkippedRequired(report);
  });
});

describe("SECURITY.md packages: size", () => {
  const max = policy().package.maxPackageBytes;
  it("one byte over maxPackageBytes is refused without being read, from bytes and from a path", async () => {
    const { sidecar } = goodPackage();
    const report = await runValidation(input(Buffer.alloc(max + 1), sidecar));
    expectFailure(report, "archive_content_policy", "package_too_large");
    expectFailure(report, "file_signature", "blocked_by_archive_content_policy");
    expectFailure(report, "artifact_hash", "blocked_by_archive_content_policy");
    expect(report.packageSha256).toBeNull();
    const dir = mkdtempSync(join(tmpdir(), "svc-size-"));
    try {
      const path = join(dir, "big.zip");
      writeFileSync(path, "");
      truncateSync(path, max + 1); // sparse: proves the size is refused before reading
      const fromPath = await runValidation({ ...input(Buffer.alloc(0), sidecar), package: { path } });
      expectFailure(fromPath, "archive_content_policy", "package_too_large");
      expect(fromPath.packageSizeBytes).toBe(max + 1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("SECURITY.md metadata", () => {
  const pkg = goodPackage();
  const run = (sidecar: unknown, extra: Partial<ValidationInput> = {}) =>
    runValidation(input(pkg.bytes, sidecar, extra));

  it.each<[string, Record<string, unknown>]>([
    ["mass assignment of a server-owned field", { state: "published" }],
    ["wrong types", { version: 1.2 }],
    ["path characters in modId", { modId: "../evil" }],
    ["path characters in version", { version: "1.2.0/../../x" }],
    ["path characters in fileName", { package: { ...pkg.sidecar.package, fileName: "../../x.zip" } }],
    ["non-semver version", { version: "1.2" }],
    ["javascript: link", { links: { homepage: "javascript:alert(1)" } }],
    ["http link", { links: { homepage: "http://example.com" } }],
    ["empty release notes", { releaseNotes: " " }],
  ])("%s fails sidecar_schema and blocks the checks built on it", async (_label, override) => {
    const report = await run({ ...pkg.sidecar, ...override });
    expectFailure(report, "sidecar_schema", "sidecar_schema_mismatch");
    for (const id of [
      "manifest_identity",
      "semantic_version",
      "artifact_hash",
      "detail_page",
      "manager_catalog_parse",
    ]) {
      expectFailure(report, id, "blocked_by_sidecar_schema");
    }
    expectNoSkippedRequired(report);
  });

  it("an unparseable sidecar (duplicate keys, __proto__, deep nesting, invalid UTF-8) fails sidecar_schema", async () => {
    const report = await run(undefined, { sidecarParseError: 'duplicate key "modId"' });
    expectFailure(report, "sidecar_schema", "sidecar_invalid_json");
    expectFailure(await run(undefined), "sidecar_schema", "sidecar_missing");
  });

  it("reused version and reused artifact URL", async () => {
    const published = catalog([releaseRecord("core-lib", "1.4.0"), releaseRecord("better-hud", "1.2.0")]);
    expectFailure(await run(pkg.sidecar, { catalog: published }), "semantic_version", "version_exists");
    const url = "https://example.com/core-lib-1.4.0.zip";
    const reuse = { ...pkg.sidecar, package: { ...pkg.sidecar.package, url } };
    const withHttps = catalog();
    withHttps.mods[0]!.versions[0]!.packageUrl = reuse.package.url;
    expectFailure(await run(reuse, { catalog: withHttps }), "semantic_version", "artifact_url_exists");
  });

  it("identity that differs between sidecar and manifest", async () => {
    const bytes = buildZip(packageEntries({ manifest: { ...manifestFor(), name: "Other Name" } }));
    const report = await runValidation(input(bytes, sidecarFor(bytes)));
    expectFailure(report, "manifest_identity", "identity_mismatch");
  });

  it("entrypoints and config paths that escape are refused by the manifest schema", async () => {
    for (const manifest of [
      manifestFor({ entrypoints: [{ path: "../evil.dll", kind: "native" }] }),
      manifestFor({ modConfig: { ...MOD_CONFIG, file: "../../settings.json" } }),
      { ...manifestFor(), unknown: 1 },
    ]) {
      const bytes = buildZip(packageEntries({ manifest }));
      expectFailure(
        await runValidation(input(bytes, sidecarFor(bytes))),
        "manifest_schema",
        "manifest_schema_mismatch",
      );
    }
  });

  it("a manifest with duplicate keys or deep nesting fails as invalid JSON; a missing one as missing", async () => {
    const dup = '{"schema":"svc.mod-manifest.v1","id":"better-hud","id":"evil"}';
    const deep = `${"[".repeat(5000)}${"]".repeat(5000)}`;
    for (const text of [dup, deep, '{"__proto__": {"x": 1}}']) {
      const entries = packageEntries({ manifest: null });
      const bytes = buildZip([{ name: "svc-mod.json", data: text }, ...entries]);
      expectFailure(
        await runValidation(input(bytes, sidecarFor(bytes))),
        "manifest_schema",
        "manifest_invalid_json",
      );
    }
    const bytes = buildZip(packageEntries({ manifest: null }));
    expectFailure(
      await runValidation(input(bytes, sidecarFor(bytes))),
      "manifest_schema",
      "manifest_missing",
    );
  });

  it("dependency problems: mismatch, unknown mod, bad range, unsatisfiable, self, cycle", async () => {
    const cases: Array<[PackageSpec, Record<string, unknown>, string, ReturnType<typeof catalog>?]> = [
      [{}, { dependencies: [] }, "dependency_mismatch"],
      [{ dependencies: [{ modId: "nope", versionRange: "^1.0.0" }] }, {}, "dependency_unknown_mod"],
      [{ dependencies: [{ modId: "core-lib", versionRange: "^^1" }] }, {}, "dependency_invalid_range"],
      [{ dependencies: [{ modId: "core-lib", versionRange: "^2.0.0" }] }, {}, "dependency_unsatisfiable"],
      [{ dependencies: [{ modId: "better-hud", versionRange: "^1.0.0" }] }, {}, "dependency_self"],
      [
        {},
        {},
        "dependency_cycle",
        catalog([
          releaseRecord("core-lib", "1.4.0", [{ modId: "better-hud", versionRange: "*" }]),
          releaseRecord("better-hud", "1.0.0"),
        ]),
      ],
    ];
    for (const [spec, override, reason, cat] of cases) {
      const bytes = buildZip(packageEntries(spec));
      const sidecar = { ...sidecarFor(bytes, spec), ...override };
      const report = await runValidation(input(bytes, sidecar, cat ? { catalog: cat } : {}));
      expectFailure(report, "dependency_contract", reason);
    }
  });

  it("HTML in the name reaches no page: detail_page fails with markup_in_text", async () => {
    const report = await run({ ...pkg.sidecar, name: "<script>alert(1)</script>" });
    expectFailure(report, "manifest_identity", "identity_mismatch");
    expectFailure(report, "detail_page", "markup_in_text");
  });
});

describe("catalog-aware and package checks", () => {
  it("target_game_build against the matrix, and fail-closed without it", async () => {
    const spec = {};
    const bytes = buildZip(packageEntries(spec));
    const old = { ...sidecarFor(bytes), targetGameBuild: "16000000" };
    const report = await runValidation(input(bytes, old));
    expectFailure(report, "target_game_build", "game_build_unsupported");
    expect(check(report, "target_game_build").log.join("\n")).toContain("17000000");
    expectFailure(
      await runValidation(input(bytes, sidecarFor(bytes), { gameBuilds: null })),
      "target_game_build",
      "game_builds_unavailable",
    );
    expectFailure(
      await runValidation(input(bytes, sidecarFor(bytes), { catalog: null })),
      "semantic_version",
      "catalog_unavailable",
    );
  });

  it("entrypoint_presence: missing file, folder, native outside Binaries/Win64, sidecar mismatch", async () => {
    const cases: Array<[PackageSpec, string]> = [
      [{ entrypoints: [{ path: "Content/Paks/Missing.pak", kind: "pak" }] }, "entrypoint_missing"],
      [{ entrypoints: [{ path: "Binaries/Win64", kind: "asset" }] }, "entrypoint_unsafe"],
      [{ entrypoints: [{ path: "README.md", kind: "native" }] }, "entrypoint_unsafe"],
    ];
    for (const [spec, reason] of cases) {
      const bytes = buildZip(packageEntries(spec));
      expectFailure(
        await runValidation(input(bytes, sidecarFor(bytes, spec))),
        "entrypoint_presence",
        reason,
      );
    }
    const bytes = buildZip(packageEntries());
    const other = { ...sidecarFor(bytes), entrypoints: [{ path: "README.md", kind: "asset" }] };
    expectFailure(await runValidation(input(bytes, other)), "entrypoint_presence", "entrypoint_mismatch");
  });

  it("mod_config_contract: passes a good config, refuses a missing file, bad defaults and values", async () => {
    const good = goodPackage({ modConfig: MOD_CONFIG });
    expect(check(await runValidation(input(good.bytes, good.sidecar)), "mod_config_contract").status).toBe(
      "passed",
    );
    const cases: Array<[unknown, string]> = [
      [{ ...MOD_CONFIG, file: "config/missing.json" }, "config_file_missing"],
      [
        { ...MOD_CONFIG, settings: [{ ...MOD_CONFIG.settings[0], default: "huge" }] },
        "config_setting_invalid",
      ],
      [
        { ...MOD_CONFIG, settings: [{ ...MOD_CONFIG.settings[0], key: "hud.missing" }] },
        "config_setting_invalid",
      ],
    ];
    for (const [modConfig, reason] of cases) {
      const p = goodPackage({ modConfig });
      expectFailure(await runValidation(input(p.bytes, p.sidecar)), "mod_config_contract", reason);
    }
    const p = goodPackage({ modConfig: MOD_CONFIG });
    const { modConfig: _dropped, ...noConfig } = p.sidecar as Record<string, unknown>;
    expectFailure(await runValidation(input(p.bytes, noConfig)), "mod_config_contract", "config_mismatch");
  });

  it("artifact_hash compares the exact bytes with the declared sha256 and size", async () => {
    const { bytes, sidecar } = goodPackage();
    const wrongHash = { ...sidecar, package: { ...sidecar.package, sha256: "a".repeat(64) } };
    expectFailure(await runValidation(input(bytes, wrongHash)), "artifact_hash", "sha256_mismatch");
    const wrongSize = { ...sidecar, package: { ...sidecar.package, sizeBytes: bytes.length + 1 } };
    expectFailure(await runValidation(input(bytes, wrongSize)), "artifact_hash", "size_mismatch");
  });

  it("manager_catalog_parse fails when the prospective catalog is not manager-readable", async () => {
    const { bytes, sidecar } = goodPackage();
    const report = await runValidation(
      input(bytes, {
        ...sidecar,
        package: { ...sidecar.package, url: "https://example.com/other-name.zip" },
      }),
    );
    expectFailure(report, "manager_catalog_parse", "manager_parse_failed");
  });

  it("a scanner that throws or answers an error fails antivirus_scan closed", async () => {
    const { bytes, sidecar } = goodPackage();
    const throwing: AntivirusScanner = {
      description: "fake throwing scanner",
      scan: async () => {
        throw new Error("boom");
      },
    };
    expectFailure(
      await runValidation(input(bytes, sidecar, { scanner: throwing })),
      "antivirus_scan",
      "scanner_error",
    );
    const timeout: AntivirusScanner = {
      description: "fake timing-out scanner",
      scan: async () => ({ status: "error", errorKind: "timeout", message: "no answer" }),
    };
    expectFailure(
      await runValidation(input(bytes, sidecar, { scanner: timeout })),
      "antivirus_scan",
      "scanner_timeout",
    );
  });

  it("a batch answer that no single entry reproduces still fails (a fake scanner stands in for clamd)", async () => {
    const { bytes, sidecar } = goodPackage();
    const contradictory: AntivirusScanner = {
      description: "fake scanner (tar batches infected, single entries clean)",
      scan: async () => ({ status: "clean" }),
      scanStream: async (name) =>
        name === "package" ? { status: "clean" } : { status: "infected", signature: "Batch.Only" },
    };
    const report = await runValidation(input(bytes, sidecar, { scanner: contradictory }));
    expectFailure(report, "antivirus_scan", "malware_detected");
    expect(check(report, "antivirus_scan").log.join("\n")).toMatch(/entries scanned together: Batch.Only/);
  });

  it("a required check the validator does not implement fails with check_error; a non-required one does not block", async () => {
    const { bytes, sidecar } = goodPackage();
    const p = policy();
    p.checks = [
      ...p.checks,
      { id: "future_check", required: true, scope: "package", description: "not implemented here" },
    ];
    const report = await runValidation(input(bytes, sidecar, { policy: p, antivirusDisabled: false }));
    expectFailure(report, "future_check", "check_error");
    const optional = policy();
    optional.checks = optional.checks.map((c) => (c.id === "antivirus_scan" ? { ...c, required: false } : c));
    const relaxed = await runValidation(input(bytes, sidecar, { policy: optional, scanner: null }));
    expect(check(relaxed, "antivirus_scan")).toMatchObject({ required: false, status: "failed" });
    expect(relaxed.passed).toBe(true);
  });

  it("an invalid policy fails every check with policy_invalid", async () => {
    const { bytes, sidecar } = goodPackage();
    const broken = {
      ...policy(),
      package: { ...policy().package, maxEntries: "many" },
    } as unknown as ReturnType<typeof policy>;
    const report = await runValidation(input(bytes, sidecar, { policy: broken }));
    expect(report.passed).toBe(false);
    expect(new Set(report.checks.map((c) => c.reasonCode))).toEqual(new Set(["policy_invalid"]));
  });
});

describe.skipIf(shouldSkip(clamdPath, "clamd"))("with a real clamd", () => {
  let clamd: RunningClamd;
  let scanner: AntivirusScanner;
  beforeAll(async () => {
    clamd = await startClamd();
    scanner = createClamdScanner({ kind: "unix", path: clamd.socket });
  });
  afterAll(async () => {
    await clamd?.stop();
  });

  it("a good package with DLLs under Binaries/Win64 passes every required check", async () => {
    const { bytes, sidecar } = goodPackage({ modConfig: MOD_CONFIG });
    const report = await runValidation(input(bytes, sidecar, { scanner }));
    expect(report.checks.filter((c) => c.status !== "passed")).toEqual([]);
    expect(report.passed).toBe(true);
    expect(check(report, "antivirus_scan").log.join()).toContain("clamd");
  });

  it("a package just under maxPackageBytes passes", { timeout: 180_000 }, async () => {
    const max = policy().package.maxPackageBytes;
    const probe = buildZip(packageEntries({ pakBytes: 0 }));
    const { bytes, sidecar } = goodPackage({ pakBytes: max - probe.length - 1024 });
    expect(bytes.length).toBeLessThan(max);
    expect(bytes.length).toBeGreaterThan(max - 4096);
    // From a path: hashed, parsed and scanned (one clamd stream) without holding the package in memory.
    const dir = mkdtempSync(join(tmpdir(), "svc-near-cap-"));
    try {
      writeFileSync(join(dir, "p.zip"), bytes);
      const report = await runValidation({
        ...input(bytes, sidecar, { scanner }),
        package: { path: join(dir, "p.zip") },
      });
      expect(report.checks.filter((c) => c.status !== "passed").map((c) => c.log)).toEqual([]);
      expect(report.packageSizeBytes).toBe(bytes.length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("EICAR found through the streamed whole-package scan of a path", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-stream-"));
    try {
      const bytes = buildZip(packageEntries({ extra: [{ name: "Content/a.txt", data: eicar() }] }));
      writeFileSync(join(dir, "p.zip"), bytes);
      const report = await runValidation({
        ...input(bytes, sidecarFor(bytes), { scanner }),
        package: { path: join(dir, "p.zip") },
      });
      expectFailure(report, "antivirus_scan", "malware_detected");
      expect(check(report, "antivirus_scan").log.join("\n")).toMatch(/package: .*Svc-Test-Eicar/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ["plain", (e: Buffer) => [{ name: "Content/readme.txt", data: e, method: 0 }]],
    [
      "deflated",
      (e: Buffer) => [
        { name: "Content/readme.txt", data: Buffer.concat([e, Buffer.alloc(100, 0x20)]), method: 8 },
      ],
    ],
  ])("EICAR %s in the package fails antivirus_scan with malware_detected", async (_label, make) => {
    const report = await withExtra(make(eicar()), {});
    // withExtra uses the fake scanner; run again with the real one.
    expect(check(report, "antivirus_scan").status).toBe("passed");
    const bytes = buildZip(packageEntries({ extra: make(eicar()) as FixtureEntry[] }));
    const real = await runValidation(input(bytes, sidecarFor(bytes), { scanner }));
    expectFailure(real, "antivirus_scan", "malware_detected");
    expect(check(real, "antivirus_scan").log.join("\n")).toContain("Content/readme.txt");
  });

  it("EICAR nested in a ZIP inside the package is found (and the nested archive is refused too)", async () => {
    const inner = buildZip([{ name: "deep/x.txt", data: eicar() }]);
    const bytes = buildZip(packageEntries({ extra: [{ name: "Content/inner.zip", data: inner }] }));
    const report = await runValidation(input(bytes, sidecarFor(bytes), { scanner }));
    expectFailure(report, "antivirus_scan", "malware_detected");
    expectFailure(report, "archive_content_policy", "nested_archive");
  });

  it("a stopped scanner fails closed", async () => {
    const other = await startClamd();
    const stopped = createClamdScanner({ kind: "unix", path: other.socket });
    await other.stop();
    const { bytes, sidecar } = goodPackage();
    expectFailure(
      await runValidation(input(bytes, sidecar, { scanner: stopped })),
      "antivirus_scan",
      "scanner_unavailable",
    );
  });
});

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))("with real clamscan (batched entry scans)", () => {
  let dir: string;
  let scanner: AntivirusScanner;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "svc-runner-clamscan-"));
    scanner = createClamscanScanner(clamscanPath!, { database: makeSignatureDatabase(dir) });
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("passes a clean package and names the infected entry of a dirty one", async () => {
    const { bytes, sidecar } = goodPackage();
    expect(check(await runValidation(input(bytes, sidecar, { scanner })), "antivirus_scan").status).toBe(
      "passed",
    );
    const dirty = buildZip(packageEntries({ extra: [{ name: "Content/notes.txt", data: eicar() }] }));
    const report = await runValidation(input(dirty, sidecarFor(dirty), { scanner }));
    expectFailure(report, "antivirus_scan", "malware_detected");
    expect(check(report, "antivirus_scan").log.join("\n")).toContain('"Content/notes.txt"');
  });
});
