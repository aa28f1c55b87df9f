// The release diff over fixture folders (test/foundation/release-diff/<case>/input.json: a
// submission's files and manifest against the mod's last published version): each case's diff and
// its Markdown for a pull request comment are kept as file snapshots beside the input, and the
// facts a moderator relies on are asserted here as well.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import {
  computeReleaseDiff,
  type ReleaseDiff,
  type ReleaseSide,
  renderReleaseDiffMarkdown,
} from "../../src/contracts/release-diff.ts";
import { buildValidationContract } from "../../src/contracts/validation-contract.ts";
import { REPO_ROOT } from "../support/repo-root.ts";

const FIXTURES = join(import.meta.dirname, "release-diff");
/** The native rules of the validation contract this portal publishes. */
const RULES = buildValidationContract(
  loadPortalConfig(join(REPO_ROOT, "portal.config.json")),
  [],
  null,
  [],
  "2026-01-01T00:00:00.000Z",
).content;

interface Fixture {
  about: string;
  baseline: ReleaseSide | null;
  current: ReleaseSide & { files: ReleaseSide["files"] & object };
}

function diffOf(name: string): { fixture: Fixture; diff: ReleaseDiff } {
  const fixture = JSON.parse(readFileSync(join(FIXTURES, name, "input.json"), "utf8")) as Fixture;
  return { fixture, diff: computeReleaseDiff(fixture.current, fixture.baseline, RULES) };
}

const codes = (diff: ReleaseDiff) => diff.risks.map((r) => r.code);
const paths = (list: Array<{ path: string }> | undefined) => (list ?? []).map((f) => f.path);

describe("release diff fixtures", () => {
  for (const name of readdirSync(FIXTURES).sort()) {
    it(`${name}: the diff and its Markdown match their snapshots`, async () => {
      const { diff } = diffOf(name);
      await expect(`${JSON.stringify(diff, null, 2)}\n`).toMatchFileSnapshot(
        join(FIXTURES, name, "diff.json"),
      );
      await expect(renderReleaseDiffMarkdown(diff)).toMatchFileSnapshot(join(FIXTURES, name, "comment.md"));
    });
  }
});

describe("what the diff says", () => {
  it("finds added, removed and changed files by path and sha256, and counts the unchanged ones", () => {
    const { diff } = diffOf("update-files");
    expect(paths(diff.files?.added)).toEqual(["Content/Paks/BetterHud_P.pak"]);
    expect(paths(diff.files?.removed)).toEqual(["readme.txt"]);
    expect(paths(diff.files?.changed)).toEqual(["Scripts/main.lua", "svc-mod.json"]);
    expect(diff.files?.changed[0]?.before).toEqual({ sizeBytes: 500, sha256: "4".repeat(64) });
    expect(diff.files?.unchangedCount).toBe(1);
    expect(diff.size.packageBytes).toEqual({ before: 4096, after: 5000, delta: 904 });
    expect(diff.manifest.dependencies.added.map((d) => d.modId)).toEqual(["map-pins"]);
    expect(diff.manifest.dependencies.changed).toEqual([
      {
        modId: "core-lib",
        before: { modId: "core-lib", versionRange: "^1.0.0" },
        after: { modId: "core-lib", versionRange: "^1.2.0" },
      },
    ]);
    expect(diff.manifest.configOptions).toEqual({
      added: ["theme"],
      removed: ["legacy"],
      changed: ["scale"],
    });
    expect(codes(diff)).toEqual(["changes_script", "adds_dependency", "changes_config_options"]);
  });

  it("calls out a new native DLL, a changed one, a native entry point and a PE outside Binaries/Win64", () => {
    const { diff } = diffOf("new-dll");
    expect(diff.nativeBinaries).toEqual({
      added: ["Binaries/Win64/Hook.dll", "Content/UI/icon.png"],
      changed: ["Binaries/Win64/Loader.dll"],
      removed: [],
    });
    expect(codes(diff)).toEqual([
      "adds_native_binary",
      "changes_native_binary",
      "native_binary_outside_directory",
      "adds_native_entrypoint",
    ]);
    expect(diff.risks[0]!.message).toBe(
      "adds 2 native binaries: Binaries/Win64/Hook.dll, Content/UI/icon.png",
    );
    expect(diff.risks[1]!.message).toBe("changes a native DLL: Binaries/Win64/Loader.dll");
    expect(diff.risks[2]!.paths).toEqual(["Content/UI/icon.png"]);
    expect(diff.risks.every((r) => r.severity === "high")).toBe(true);
  });

  it("says when every previous file is removed and when the package jumps in size", () => {
    const { diff } = diffOf("every-file-removed");
    expect(diff.files?.unchangedCount).toBe(0);
    expect(paths(diff.files?.removed)).toEqual(["Content/Paks/Old.pak", "svc-mod.json"]);
    expect(codes(diff)).toEqual(["removes_every_previous_file", "package_size_jump"]);
    expect(diff.risks[0]!.message).toBe(
      "removes every previous file (2 files of 0.9.0): the package is replaced, not updated",
    );
    expect(diff.risks[1]!.message).toBe("the package grows from 100 KiB to 5.0 MiB");
  });

  it("shows a first release's full file list, its native binaries included", () => {
    const { diff } = diffOf("first-release");
    expect(diff.firstRelease).toBe(true);
    expect(diff.baseline).toBeNull();
    expect(paths(diff.files?.added)).toEqual([
      "Binaries/Win64/Hook.dll",
      "Content/Paks/BetterHud.pak",
      "svc-mod.json",
    ]);
    expect(diff.files?.removed).toEqual([]);
    expect(diff.size.packageBytes).toEqual({ before: null, after: 3000, delta: null });
    expect(codes(diff)).toEqual(["adds_native_binary", "first_release"]);
    expect(renderReleaseDiffMarkdown(diff)).toContain(
      "| file | `Binaries/Win64/Hook.dll` (native) | 16 KiB |",
    );
  });

  it("compares only size and manifest when the published record has no file list", () => {
    const { diff } = diffOf("baseline-without-files");
    expect(diff.files).toBeNull();
    expect(diff.baseline).toEqual({ version: "1.0.0", packageSizeBytes: 4096, fileCount: null });
    expect(codes(diff)).toEqual(["adds_dependency", "baseline_files_unknown"]);
  });

  it("says so when no file changed", () => {
    expect(codes(diffOf("no-file-changes").diff)).toEqual(["no_file_changes"]);
  });

  it("keeps hostile names as code in the Markdown: no table split, mention, link or HTML", () => {
    const markdown = renderReleaseDiffMarkdown(diffOf("hostile-names").diff);
    expect(markdown).toContain(
      "| added | ``Content/a\\|b `x` @admin [link](https://evil.example).txt`` | 10 bytes |",
    );
    expect(markdown).toContain("| added | `Content/**bold** <img src=x>.lua` | 10 bytes |");
    expect(markdown).toContain("- **Notice:** adds 1 script: `Content/**bold** <img src=x>.lua`");
    for (const line of markdown.split("\n").filter((l) => l.startsWith("| added")))
      expect(line.replace(/\\\|/g, "").split("|")).toHaveLength(5);
  });

  it("caps the comment's table and counts the rest", () => {
    const { fixture } = diffOf("first-release");
    const files = Array.from({ length: 60 }, (_, i) => ({
      path: `Content/file-${String(i).padStart(2, "0")}.txt`,
      sizeBytes: 1,
      sha256: "a".repeat(64),
    }));
    const diff = computeReleaseDiff({ ...fixture.current, files }, null, RULES);
    const markdown = renderReleaseDiffMarkdown(diff, { maxFiles: 10 });
    expect(markdown.split("\n").filter((l) => l.startsWith("| file |"))).toHaveLength(10);
    expect(markdown).toContain("| … | 50 more | |");
  });
});
