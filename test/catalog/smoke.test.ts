import { closeSync, openSync, readFileSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { extensionlessAlias, runSmoke } from "../../src/catalog/smoke.ts";
import { schemaRegistry } from "../../src/contracts/schemas.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";
import { startCatalogPortal } from "../support/catalog-portal.ts";

let project: CatalogProject;
let portal: Awaited<ReturnType<typeof startCatalogPortal>> | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
  project?.cleanup();
});

async function publishedPortal() {
  project = catalogProject();
  portal = await startCatalogPortal(project);
  for (const version of ["1.0.0", "1.1.0"]) {
    const { packageBytes, sidecar } = modRelease({ version });
    await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });
  }
  return portal;
}

describe("public smoke", () => {
  it("derives the extensionless alias of each contract route", () => {
    expect(extensionlessAlias("api/v1/catalog.json")).toBe("api/v1/catalog");
    expect(extensionlessAlias("api/v1/mods/index.json")).toBe("api/v1/mods");
    expect(extensionlessAlias("api/v1/mods/x-y/index.json")).toBe("api/v1/mods/x-y");
    expect(extensionlessAlias("api/v1/mods/x-y/versions.json")).toBe("api/v1/mods/x-y/versions");
    expect(extensionlessAlias("api/v1/publishing/workflow.json")).toBe("api/v1/publishing/workflow");
    expect(extensionlessAlias("api/v1/runtime/latest.json")).toBe("api/v1/runtime/latest");
    expect(extensionlessAlias("api/v1/schemas/catalog.schema.json")).toBeNull();
  });

  it("passes against the local server after an import", async () => {
    const { origin } = await publishedPortal();
    const report = await runSmoke({ baseUrl: origin, now: () => new Date("2026-11-03T00:00:00.000Z") });
    expect(report.routes.filter((r) => !r.ok)).toEqual([]);
    expect(report.passed).toBe(true);
    const paths = report.routes.map((r) => r.path);
    for (const path of [
      "/api/v1/catalog.json",
      "/api/v1/catalog",
      "/api/v1/readiness",
      "/api/v1/mods",
      "/api/v1/mods/better-hud",
      "/api/v1/mods/better-hud/index.json",
      "/api/v1/mods/better-hud/versions",
      "/api/v1/publishing/workflow",
      "/api/v1/publishing/backend-contract",
      "/api/v1/publishing/mod-release-submission.schema.json",
    ]) {
      expect(paths).toContain(path);
    }
    expect(report.artifacts.map((a) => [a.version, a.ok])).toEqual([
      ["1.0.0", true],
      ["1.1.0", true],
    ]);
    // Every version's artifact (from versions.json); the catalog itself lists the newest only.
    expect(report.managerParse).toMatchObject({ ok: true, mods: 1, versions: 1 });
    expect(schemaRegistry(origin).validate("post-publish-smoke", report).ok).toBe(true);
  });

  it("fails, naming the artifact, when its bytes are altered; the CLI exits 1 with a readable report", async () => {
    const { origin } = await publishedPortal();
    const file = join(project.siteDir, "downloads/mods/better-hud/1.1.0/better-hud-1.1.0.zip");
    const original = readFileSync(file);
    const fd = openSync(file, "r+");
    writeSync(fd, Buffer.from([(original[40] ?? 0) ^ 0xff]), 0, 1, 40);
    closeSync(fd);

    const report = await runSmoke({ baseUrl: origin });
    expect(report.passed).toBe(false);
    expect(report.summary.artifactsFailed).toBe(1);
    const bad = report.artifacts.find((a) => !a.ok)!;
    expect(bad).toMatchObject({ modId: "better-hud", version: "1.1.0", actualSizeBytes: original.length });
    expect(bad.errors?.[0]).toMatch(/sha256 [0-9a-f]{64} differs from the listed/);

    const cli = await runCli(["smoke", "--base-url", origin, "--out", "report.json"], project.root);
    expect(cli.code).toBe(1);
    expect(cli.stdout).toMatch(/better-hud@1\.1\.0/);
    expect(cli.stdout).toMatch(/FAILED/);
    expect(JSON.parse(project.read("report.json")).passed).toBe(false);
  });

  it("after a publication downloads only what the run changed, still checking every route", async () => {
    const { origin } = await publishedPortal();
    // 1.0.0's bytes are broken, but this run published only 1.1.0: its smoke does not pay for 1.0.0.
    const old = join(project.siteDir, "downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip");
    const fd = openSync(old, "r+");
    writeSync(fd, Buffer.from([0xff]), 0, 1, 40);
    closeSync(fd);
    const report = await runSmoke({ baseUrl: origin, onlyArtifacts: new Set(["better-hud@1.1.0"]) });
    expect(report.artifacts.map((a) => [a.version, a.ok])).toEqual([["1.1.0", true]]);
    expect(report.summary).toMatchObject({
      artifactsChecked: 1,
      artifactsFailed: 0,
      artifactsNotDownloaded: 1,
    });
    expect(report.routes.map((r) => r.path)).toContain("/api/v1/mods/better-hud/versions");
    expect(report.passed).toBe(true);
    expect(schemaRegistry(origin).validate("post-publish-smoke", report).ok).toBe(true);
    // The receipts file of a publish run names what it changed; a refused entry downloads nothing.
    writeFileSync(
      join(project.root, "receipts.json"),
      JSON.stringify([
        {
          path: "submissions/better-hud/1.1.0.json",
          receipt: { ok: true, modId: "better-hud", version: "1.1.0" },
        },
        { path: "submissions/other/1.0.0.json", receipt: { ok: false, modId: "other", version: "1.0.0" } },
      ]),
    );
    // Without --base-url the smoke is of the project's own portal (portal.config.json's baseUrl), as
    // the publish workflow runs it.
    expect(project.config.baseUrl).toBe(origin);
    const changed = await runCli(["smoke", "--only-from", "receipts.json"], project.root);
    expect(changed.code).toBe(0);
    expect(changed.stdout).toMatch(/artifacts 1\/1 ok \(1 listed, not downloaded: unchanged by this run\)/);
    expect((await runCli(["smoke", "--retry-for", "-1"], project.root)).code).toBe(2);
    // The full smoke stays the command's default, and finds the broken old artifact.
    const full = await runCli(["smoke", "--base-url", origin], project.root);
    expect(full.code).toBe(1);
    expect(full.stdout).toMatch(/better-hud@1\.0\.0/);
  });

  it("fails on a route that breaks its schema (a hand edit on the server)", async () => {
    const { origin } = await publishedPortal();
    const path = join(project.siteDir, "api/v1/mods/better-hud/versions.json");
    const doc = JSON.parse(readFileSync(path, "utf8"));
    doc.versions[0].sha256 = "not-a-hash";
    writeFileSync(path, JSON.stringify(doc));
    const report = await runSmoke({ baseUrl: origin });
    expect(report.passed).toBe(false);
    const failed = report.routes.filter((r) => !r.ok).map((r) => r.path);
    expect(failed).toContain("/api/v1/mods/better-hud/versions.json");
    expect(report.ruleFailures.map((f) => f.rule)).toContain("rule_5_no_drift");
  });

  it("--record stores the report and rebuilds readiness; svc check still passes", async () => {
    const { origin } = await publishedPortal();
    const cli = await runCli(["smoke", "--base-url", origin, "--record", "--json"], project.root);
    expect(cli.stderr).toBe("");
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({
      schema: "svc.post-publish-smoke.v1",
      passed: true,
      baseUrl: origin,
    });
    expect(JSON.parse(project.read("records/smoke/post-publish.json")).passed).toBe(true);
    const check = await runCli(["check"], project.root);
    expect(check.stderr).toBe("");
    expect(check.code).toBe(0);
  });
});
