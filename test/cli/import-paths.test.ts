import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type CatalogProject, catalogProject } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";

let project: CatalogProject;
afterEach(() => project?.cleanup());

describe("svc import with a path that is not a file", () => {
  it("names the flag and the path with a stable code, exit 2, no stack trace, nothing published", async () => {
    project = catalogProject();
    writeFileSync(join(project.root, "release.json"), "{}");
    const before = project.snapshot();
    const missing = await runCli(
      ["import", "--package", "nope.zip", "--metadata", "release.json"],
      project.root,
    );
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      `svc import: package_unreadable: --package nope.zip is not a readable file (${join(project.root, "nope.zip")})\nnothing was published\n`,
    );
    const folder = await runCli(["import", "--package", "site", "--metadata", "release.json"], project.root);
    expect(folder.stderr).toMatch(/^svc import: package_unreadable: --package site is not a readable file/);
    expect(folder.code).toBe(2);
    writeFileSync(join(project.root, "pkg.zip"), "PK");
    const metadata = await runCli(
      ["import", "-PackagePath", "pkg.zip", "-MetadataPath", "missing.json", "--json"],
      project.root,
    );
    expect(metadata.code).toBe(2);
    expect(JSON.parse(metadata.stdout)).toEqual({
      ok: false,
      code: "metadata_unreadable",
      message: `--metadata missing.json is not a readable file (${join(project.root, "missing.json")})`,
    });
    expect(`${missing.stderr}${folder.stderr}${metadata.stderr}`).not.toMatch(/\n\s+at /);
    const after = project.snapshot();
    after.delete("pkg.zip");
    expect(after).toEqual(before);
  });
});
