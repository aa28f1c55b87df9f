import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { withTreeLock } from "../../src/catalog/atomic-files.ts";
import { checkContractRules } from "../../src/catalog/contract-rules.ts";
import { parseManagerCatalog } from "../../src/contracts/manager-reader.ts";
import { listGeneratedFiles, loadSiteInputs, renderSite } from "../../src/catalog/site.ts";
import type { CatalogDocument, ModDetailDocument, ModsIndexDocument } from "../../src/contracts/catalog.ts";
import { releaseRecord, tempProject } from "../support/temp-project.ts";
import { runCli } from "../support/run-cli.ts";
import { modRecordsPath } from "../support/records.ts";
import { modRecordsText } from "../../src/catalog/records.ts";

let project: ReturnType<typeof tempProject>;
afterEach(() => project?.cleanup());

const json = <T>(rel: string): T => JSON.parse(project.read(rel)) as T;

describe("svc build", () => {
  it("writes every contract document, schema-valid, with an empty catalog on a fresh portal", async () => {
    project = tempProject();
    const result = await runCli(["build"], project.root);
    expect(result.code).toBe(0);
    const files = listGeneratedFiles(project.site(""));
    for (const path of [
      "api/v1/catalog.json",
      "api/v1/readiness.json",
      "api/v1/runtime/latest.json",
      "api/v1/framework/latest.json",
      "api/v1/game-builds/latest.json",
      "api/v1/mods/index.json",
      "api/v1/manager/latest.json",
      "api/v1/publishing/workflow.json",
      "api/v1/publishing/backend-contract.json",
      "api/v1/publishing/backend-contract.schema.json",
      "api/v1/publishing/game-publishing-validation.v1.json",
      "api/v1/publishing/game-publishing-validation.schema.json",
      "api/v1/publishing/upload-submission.schema.json",
      "api/v1/publishing/mod-release-submission.schema.json",
    ]) {
      expect(files).toContain(path);
    }
    expect(json<CatalogDocument>("site/api/v1/catalog.json").mods).toEqual([]);
    const readiness = json<{ overallStatus: string; releaseBlockers: unknown[]; liveBackend: boolean }>(
      "site/api/v1/readiness.json",
    );
    expect(readiness.overallStatus).toBe("not_release_ready");
    expect(readiness.liveBackend).toBe(false);
    expect(readiness.releaseBlockers.length).toBeGreaterThan(0);
    const schema = json<{ $id: string }>("site/api/v1/publishing/backend-contract.schema.json");
    expect(schema.$id).toBe(`${project.config.baseUrl}/api/v1/publishing/backend-contract.schema.json`);
  });

  it("waits for the publish lock: a build never writes while a publication holds it", async () => {
    project = tempProject();
    const order: string[] = [];
    let release!: () => void;
    const held = withTreeLock(project.root, async () => {
      order.push("publication starts");
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      order.push("publication ends");
    });
    const build = runCli(["build"], project.root).then((r) => {
      order.push("build done");
      return r;
    });
    await new Promise((r) => setTimeout(r, 400));
    expect(order).toEqual(["publication starts"]);
    release();
    await held;
    expect((await build).code).toBe(0);
    expect(order).toEqual(["publication starts", "publication ends", "build done"]);
  });

  it("is idempotent: a second run changes no byte", async () => {
    project = tempProject();
    project.addRecord(releaseRecord());
    await runCli(["build"], project.root);
    const before = new Map(
      listGeneratedFiles(project.site("")).map((p) => [p, readFileSync(project.site(p))]),
    );
    const second = await runCli(["build"], project.root);
    expect(second.stdout).toMatch(/0 written, 0 removed/);
    for (const [path, bytes] of before)
      expect(readFileSync(project.site(path)).equals(bytes), path).toBe(true);
  });

  it("derives catalog, index, detail and versions from release records; hidden versions leave, superseded stay", async () => {
    project = tempProject();
    project.addRecord(releaseRecord({ version: "1.0.0", status: "superseded" }));
    project.addRecord(releaseRecord({ version: "1.1.0" }));
    project.addRecord(
      releaseRecord({ version: "1.2.0-beta.1", status: "hidden", statusBeforeHidden: "published" }),
    );
    project.addRecord(
      releaseRecord({
        modId: "ghost-mod",
        version: "2.0.0",
        status: "hidden",
        statusBeforeHidden: "published",
      }),
    );
    expect((await runCli(["build"], project.root)).code).toBe(0);
    const catalog = json<CatalogDocument>("site/api/v1/catalog.json");
    expect(catalog.mods.map((m) => m.id)).toEqual(["better-hud"]);
    const mod = catalog.mods[0]!;
    expect(mod.latestVersion).toBe("1.1.0");
    // The catalog lists the newest version; detail and versions.json list every visible one.
    expect(mod.versions.map((v) => [v.version, v.status, v.downloadEnabled])).toEqual([
      ["1.1.0", "published", true],
    ]);
    expect(catalog.supportedGameBuilds).toEqual(["17000000"]);
    const detail = json<ModDetailDocument>("site/api/v1/mods/better-hud/index.json");
    expect(detail.versions.map((v) => [v.version, v.status, v.downloadEnabled])).toEqual([
      ["1.1.0", "published", true],
      ["1.0.0", "superseded", true],
    ]);
    const { releaseNotes: _, ...newest } = detail.versions[0]!;
    expect(mod.versions[0]).toEqual(newest);
    expect(detail.description).toBe("Rearranges the HUD.");
    expect(
      json<ModsIndexDocument>("site/api/v1/mods/index.json").mods.map((m) => [m.id, m.versionCount]),
    ).toEqual([["better-hud", 2]]);
    expect(listGeneratedFiles(project.site("")).some((p) => p.includes("ghost-mod"))).toBe(false);
  });

  it("removes a mod's files in the same transaction once all of its versions are hidden", async () => {
    project = tempProject();
    project.addRecord(releaseRecord());
    await runCli(["build"], project.root);
    expect(listGeneratedFiles(project.site(""))).toContain("api/v1/mods/better-hud/index.json");
    project.addRecord(releaseRecord({ status: "hidden", statusBeforeHidden: "published" }));
    const result = await runCli(["build"], project.root);
    expect(result.stdout).toMatch(/[1-9]\d* removed/);
    expect(listGeneratedFiles(project.site(""))).not.toContain("api/v1/mods/better-hud/index.json");
  });

  it("refuses a broken record and writes nothing", async () => {
    project = tempProject();
    await runCli(["build"], project.root);
    const before = project.read("site/api/v1/catalog.json");
    project.write(
      modRecordsPath("better-hud"),
      modRecordsText("better-hud", [{ ...releaseRecord(), sha256: "0".repeat(64) }]),
    );
    const result = await runCli(["build"], project.root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${modRecordsPath("better-hud")} is not a valid mod records file`);
    expect(result.stderr).toContain("/releases/0/sha256");
    expect(project.read("site/api/v1/catalog.json")).toBe(before);
  });

  it("fails at start with a message naming an invalid configuration field", async () => {
    project = tempProject((c) => {
      (c.limits.rateLimits.accountCreation as { limit: number }).limit = 0;
    });
    const result = await runCli(["build"], project.root);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/field limits\.rateLimits\.accountCreation\.limit must be >= 1/);
  });
});

describe("svc check", () => {
  it("passes on a fresh build and fails on a hand-edited catalog.json", async () => {
    project = tempProject();
    project.addRecord(releaseRecord());
    // svc check also wants the artifact the record names, at its recorded size (1234 bytes).
    project.write("site/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip", "x".repeat(1234));
    await runCli(["build"], project.root);
    expect((await runCli(["check"], project.root)).code).toBe(0);
    const path = project.site("api/v1/catalog.json");
    const catalog = JSON.parse(readFileSync(path, "utf8")) as CatalogDocument;
    catalog.mods[0]!.versions[0]!.sha256 = "e".repeat(64);
    writeFileSync(path, `${JSON.stringify(catalog, null, 2)}\n`);
    const result = await runCli(["check"], project.root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("drift: site/api/v1/catalog.json differs from what svc build writes");
  });

  it("fails on a missing and on a stale generated file", async () => {
    project = tempProject();
    await runCli(["build"], project.root);
    project.write("site/api/v1/mods/old-mod/index.json", "{}\n");
    writeFileSync(project.site("api/v1/readiness.json"), "");
    const { rmSync } = await import("node:fs");
    rmSync(project.site("api/v1/manager/latest.json"));
    const result = await runCli(["check"], project.root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("stale: site/api/v1/mods/old-mod/index.json");
    expect(result.stderr).toContain("missing: site/api/v1/manager/latest.json");
    expect(result.stderr).toContain("drift: site/api/v1/readiness.json");
  });

  it("compares the pages as it makes them: a hand-edited and a missing page fail the check", async () => {
    project = tempProject();
    await runCli(["build"], project.root);
    const { appendFileSync, rmSync } = await import("node:fs");
    appendFileSync(project.site("index.html"), "<!-- edited by hand -->\n");
    rmSync(project.site("status/index.html"));
    const result = await runCli(["check"], project.root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("drift: site/index.html differs from what svc build writes");
    expect(result.stderr).toContain("missing: site/status/index.html (run svc build)");
  });
});

describe("contract rules", () => {
  function files() {
    project = tempProject();
    project.addRecord(releaseRecord());
    return renderSite(loadSiteInputs(project.config, `${project.root}/records`), project.site(""));
  }
  const edit = (map: Map<string, string>, path: string, change: (doc: any) => void) => {
    const doc = JSON.parse(map.get(path)!);
    change(doc);
    map.set(path, JSON.stringify(doc));
  };

  it("hold for a generated site", () => {
    expect(checkContractRules(files())).toEqual([]);
  });

  it("rule 1: readiness may not claim release_ready while the backend is not live", () => {
    const map = files();
    edit(map, "api/v1/readiness.json", (d) => {
      d.overallStatus = "release_ready";
      d.releaseBlockers = [];
    });
    expect(checkContractRules(map).map((f) => f.rule)).toEqual(["rule_1_readiness", "rule_1_readiness"]);
  });

  it("rule 2: liveBackend cannot be true while a required service is not live", () => {
    const map = files();
    edit(map, "api/v1/publishing/workflow.json", (d) => (d.liveBackend = true));
    expect(checkContractRules(map).map((f) => f.rule)).toContain("rule_2_live_backend");
  });

  it("rule 4: a zero hash or a placeholder URL anywhere fails", () => {
    const map = files();
    edit(map, "api/v1/manager/latest.json", (d) => (d.releaseUrl = "https://example.com/placeholder"));
    edit(map, "api/v1/mods/better-hud/versions.json", (d) => (d.versions[0].sha256 = "0".repeat(64)));
    const rules = checkContractRules(map).map((f) => f.rule);
    expect(rules.filter((r) => r === "rule_4_no_placeholders")).toHaveLength(2);
  });

  it("rule 5: detail and versions may not drift from the catalog", () => {
    const map = files();
    edit(map, "api/v1/mods/better-hud/index.json", (d) => (d.name = "Other"));
    edit(map, "api/v1/mods/better-hud/versions.json", (d) => (d.versions[0].packageSizeBytes = 1));
    expect(checkContractRules(map).map((f) => f.message)).toEqual([
      "mods/better-hud/index.json field name differs from catalog.json",
      "mods/better-hud/index.json versions differ from versions.json",
      "mods/better-hud/versions.json differs from catalog.json",
      "catalog.json versionsSha256 of better-hud is not the hash of its versions.json",
    ]);
  });

  it("rule 3: the index must list exactly the catalog's installable mods", () => {
    const map = files();
    edit(map, "api/v1/mods/index.json", (d) => {
      d.mods = [];
      d.count = 0;
    });
    expect(checkContractRules(map).map((f) => f.rule)).toContain("rule_3_installable");
  });
});

describe("reference manager reader", () => {
  it("parses a generated catalog and counts what it would install", () => {
    project = tempProject();
    project.addRecord(releaseRecord({ version: "1.0.0", status: "superseded" }));
    project.addRecord(releaseRecord({ version: "1.1.0" }));
    const map = renderSite(loadSiteInputs(project.config, `${project.root}/records`), project.site(""));
    const parse = parseManagerCatalog(map.get("api/v1/catalog.json")!);
    // The catalog lists each mod's newest version only (versions.json has both).
    expect(parse).toMatchObject({ ok: true, errors: [], mods: 1, versions: 1 });
  });

  it("refuses what a manager could not act on", () => {
    project = tempProject();
    project.addRecord(releaseRecord({ dependencies: [{ modId: "missing-lib", versionRange: "^1.0.0" }] }));
    const map = renderSite(loadSiteInputs(project.config, `${project.root}/records`), project.site(""));
    const catalog = JSON.parse(map.get("api/v1/catalog.json")!) as CatalogDocument;
    catalog.mods[0]!.latestVersion = "9.9.9";
    const parse = parseManagerCatalog(JSON.stringify(catalog));
    expect(parse.ok).toBe(false);
    expect(parse.errors).toEqual([
      "better-hud@1.0.0: dependency missing-lib is not in the catalog",
      "better-hud: latestVersion 9.9.9 is not the newest version 1.0.0",
    ]);
    expect(parseManagerCatalog("{").errors[0]).toMatch(/^not JSON/);
  });
});
