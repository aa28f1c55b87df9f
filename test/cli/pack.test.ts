import { createHash } from "node:crypto";
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import JSZip from "jszip";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readValidationDocuments } from "../../src/catalog/validator.ts";
import { BUILT_ZIP_CHECKS, FILE_LIST_CHECKS, PACK_TIMESTAMP, packFolder } from "../../src/validation/pack.ts";
import { CHECKS, REASONS } from "../../src/validation/checks/index.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { repositorySite } from "../support/repository-site.ts";
import { runCli } from "../support/run-cli.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";

const EXAMPLE = join(REPO_ROOT, "pulls-template/example-mod");
const PINNED = JSON.parse(
  readFileSync(join(REPO_ROOT, "pulls-template/submissions/example-mod/1.0.0.json"), "utf8"),
) as { package: { sha256: string; sizeBytes: number } };
// svc pack and svc validate read the policy from ./site, the repository's (a build output).
const { policy } = readValidationDocuments(await repositorySite());

let work = "";
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "svc-pack-"));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

let copies = 0;
/** A copy of the example folder, changed by edit. */
function exampleCopy(edit: (dir: string) => void = () => {}): string {
  const dir = join(work, `mod-${copies++}`);
  cpSync(EXAMPLE, dir, { recursive: true });
  edit(dir);
  return dir;
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe("svc pack builds a deterministic package", () => {
  it("gives byte-identical ZIPs for two runs, and for a copy with other times and modes", async () => {
    const first = await runCli(["pack", EXAMPLE, "--out", join(work, "a.zip")], REPO_ROOT);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    expect(first.stdout).toContain("svc pack: wrote");
    const second = await runCli(["pack", EXAMPLE, "--out", join(work, "b.zip")], REPO_ROOT);
    expect(second.code).toBe(0);
    const a = readFileSync(join(work, "a.zip"));
    expect(readFileSync(join(work, "b.zip")).equals(a)).toBe(true);

    const touched = exampleCopy((dir) => {
      utimesSync(join(dir, "README.md"), new Date("2031-05-06T07:08:09Z"), new Date("2031-05-06T07:08:09Z"));
      chmodSync(join(dir, "Scripts/ExampleMod/main.lua"), 0o755);
    });
    const third = await runCli(["pack", touched, "--out", join(work, "c.zip")], REPO_ROOT);
    expect(third.code).toBe(0);
    expect(readFileSync(join(work, "c.zip")).equals(a)).toBe(true);
    // The repository pins these bytes (the dev portal's example and its sidecar rely on them).
    expect({ sha256: sha256(a), sizeBytes: a.length }).toEqual({
      sha256: PINNED.package.sha256,
      sizeBytes: PINNED.package.sizeBytes,
    });
  });

  it("writes the manifest first, then byte order, no folder entries, one fixed time and mode", async () => {
    const result = await packFolder(EXAMPLE, policy);
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    const zip = await JSZip.loadAsync(result.bytes);
    const names = Object.keys(zip.files);
    expect(names).toEqual([
      "svc-mod.json",
      "Config/ExampleMod.json",
      "README.md",
      "Scripts/ExampleMod/main.lua",
    ]);
    for (const name of names) {
      const file = zip.files[name]!;
      expect(file.dir, name).toBe(false);
      expect(file.date.toISOString(), name).toBe(PACK_TIMESTAMP.toISOString());
      expect(file.unixPermissions, name).toBe(0o100644);
      expect(await file.async("nodebuffer")).toEqual(readFileSync(join(EXAMPLE, name)));
    }
  });

  it("stores an entry uncompressed when deflating it would pass the ratio cap, so the package stays valid", async () => {
    const dir = exampleCopy((d) => writeFileSync(join(d, "zeros.txt"), Buffer.alloc(2 * 1024 * 1024)));
    const result = await packFolder(dir, policy);
    if (!result.ok) throw new Error(JSON.stringify(result.problems));
    expect(result.stored).toEqual(["zeros.txt"]);
    const zip = await JSZip.loadAsync(result.bytes);
    expect((await zip.files["zeros.txt"]!.async("nodebuffer")).length).toBe(2 * 1024 * 1024);
  });
});

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))("the packed example passes svc validate", () => {
  it("every check passes with clamscan and the test signature database", async () => {
    const db = makeSignatureDatabase(join(work, "clamav"));
    const zip = join(work, "example-mod-1.0.0.zip");
    expect((await runCli(["pack", EXAMPLE, "--out", zip], REPO_ROOT)).code).toBe(0);
    const validate = await runCli(
      [
        "validate",
        "--package",
        zip,
        "--metadata",
        "pulls-template/submissions/example-mod/1.0.0.json",
        "--clamscan",
        clamscanPath!,
        "--clamscan-db",
        db,
        "--json",
      ],
      REPO_ROOT,
    );
    const report = JSON.parse(validate.stdout) as {
      passed: boolean;
      checks: Array<{ id: string; status: string }>;
    };
    expect(report.checks.filter((c) => c.status !== "passed")).toEqual([]);
    expect(report.passed).toBe(true);
    expect(validate.code).toBe(0);
  });
});

describe("svc pack refuses what validation would refuse, and writes nothing", () => {
  const cases: Array<[string, (dir: string) => void, string]> = [
    // A folder cannot hold a '..' entry, but a backslash is a separator to Windows extractors.
    [
      "a name that climbs out on Windows",
      (d) => writeFileSync(join(d, "..\\evil.txt"), "x"),
      "path_traversal",
    ],
    ["a Windows device name", (d) => writeFileSync(join(d, "CON.txt"), "x"), "reserved_device_name"],
    ["case twins", (d) => writeFileSync(join(d, "readme.md"), "x"), "case_insensitive_collision"],
    ["a name ending in a dot", (d) => writeFileSync(join(d, "notes."), "x"), "trailing_dot_or_space"],
    ["a script", (d) => writeFileSync(join(d, "install.bat"), "echo"), "script_file"],
    ["a file without an extension", (d) => writeFileSync(join(d, "LICENSE"), "MIT"), "extension_not_allowed"],
    [
      "a native binary outside Binaries/Win64",
      (d) => writeFileSync(join(d, "ExampleMod.dll"), "MZ"),
      "native_binary_outside_allowed_directory",
    ],
    ["a symbolic link", (d) => symlinkSync("/etc/hostname", join(d, "hostname.txt")), "symlink_entry"],
    ["a nested archive", (d) => writeFileSync(join(d, "extra.zip"), "PK"), "nested_archive"],
    ["no manifest", (d) => rmSync(join(d, "svc-mod.json")), "manifest_missing"],
    [
      "a manifest without the schema value",
      (d) => {
        const manifest = JSON.parse(readFileSync(join(d, "svc-mod.json"), "utf8"));
        delete manifest.schema;
        writeFileSync(join(d, "svc-mod.json"), JSON.stringify(manifest));
      },
      "manifest_schema_mismatch",
    ],
    ["a missing entrypoint", (d) => rmSync(join(d, "Scripts"), { recursive: true }), "entrypoint_missing"],
    [
      "a config value the manifest does not allow",
      (d) =>
        writeFileSync(
          join(d, "Config/ExampleMod.json"),
          '{"difficulty":{"preset":"insane"},"ui":{"showHints":true}}',
        ),
      "config_setting_invalid",
    ],
    // Judged on the built ZIP: the content says text, the name says PNG.
    [
      "content that is not what its name says",
      (d) => writeFileSync(join(d, "icon.png"), "not a png"),
      "signature_mismatch",
    ],
  ];
  it("runs the checks each check's own descriptor marks for pack, in the registry's order", () => {
    const marked = (stage: "file_list" | "built_zip") =>
      CHECKS.flatMap((c) => (c.scope === "package" && c.pack === stage ? [c.id] : []));
    expect(FILE_LIST_CHECKS.map((c) => c.id)).toEqual(marked("file_list"));
    expect(BUILT_ZIP_CHECKS.map((c) => c.id)).toEqual([...marked("built_zip"), ...marked("file_list")]);
    // Each check pack runs refuses one of the folders above with its own reason code.
    const refusedBy = new Set(cases.map(([, , code]) => REASONS[code as keyof typeof REASONS].check));
    expect([...refusedBy].sort()).toEqual(BUILT_ZIP_CHECKS.map((c) => c.id).sort());
  });

  for (const [what, edit, code] of cases) {
    it(`${what}: ${code}`, async () => {
      const dir = exampleCopy(edit);
      const out = join(work, `refused-${copies}.zip`);
      const result = await runCli(["pack", dir, "--out", out], REPO_ROOT);
      // The first line names the first problem; every problem is listed below it.
      expect(result.stderr).toMatch(/^svc pack: [a-z_]+: /);
      expect(result.stderr).toContain(`${code}: `);
      expect(result.stderr).toContain("nothing was written");
      expect(result.code).toBe(1);
      expect(existsSync(out)).toBe(false);
    });
  }

  it("the policy's size caps: per file, total and entry count", async () => {
    const dir = exampleCopy((d) => mkdirSync(join(d, "Extra")));
    const small = { ...policy, package: { ...policy.package, maxEntryUncompressedBytes: 500 } };
    const tooLarge = await packFolder(dir, small);
    expect(tooLarge.ok ? [] : tooLarge.problems.map((p) => p.code)).toEqual(["entry_too_large"]);
    const few = { ...policy, package: { ...policy.package, maxEntries: 3 } };
    const tooMany = await packFolder(dir, few);
    expect(tooMany.ok ? [] : tooMany.problems.map((p) => p.code)).toEqual(["too_many_entries"]);
    const total = { ...policy, package: { ...policy.package, maxTotalUncompressedBytes: 1000 } };
    const tooMuch = await packFolder(dir, total);
    expect(tooMuch.ok ? [] : tooMuch.problems.map((p) => p.code)).toEqual(["total_uncompressed_too_large"]);
  });

  it("--json reports every problem with its check", async () => {
    const dir = exampleCopy((d) => {
      writeFileSync(join(d, "CON.txt"), "x");
      writeFileSync(join(d, "run.ps1"), "x");
    });
    const result = await runCli(["pack", dir, "--json"], REPO_ROOT);
    expect(result.code).toBe(1);
    const body = JSON.parse(result.stdout) as {
      ok: boolean;
      problems: Array<{ code: string; check: string }>;
    };
    expect(body.ok).toBe(false);
    expect(body.problems.map((p) => [p.check, p.code])).toEqual([
      ["zip_path_safety", "reserved_device_name"],
      ["archive_content_policy", "script_file"],
    ]);
  });

  it("usage errors: a missing folder, --out inside the folder, --out that is not a .zip", async () => {
    const missing = await runCli(["pack", join(work, "nowhere")], REPO_ROOT);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^svc pack: pack_folder_unreadable: /);
    const dir = exampleCopy();
    const inside = await runCli(["pack", dir, "--out", join(dir, "mod.zip")], REPO_ROOT);
    expect(inside.code).toBe(2);
    expect(inside.stderr).toMatch(/^svc pack: pack_out_invalid: .*inside/);
    const notZip = await runCli(["pack", dir, "--out", join(work, "mod.tar")], REPO_ROOT);
    expect(notZip.code).toBe(2);
    expect(notZip.stderr).toMatch(/^svc pack: pack_out_invalid: /);
  });

  it("is registered in svc --help", async () => {
    const help = await runCli(["--help"], REPO_ROOT);
    expect(help.stdout).toMatch(/\n {2}pack {2,}build a mod's deterministic package ZIP/);
  });
});
