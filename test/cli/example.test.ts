import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DevExampleOptions, exampleSkipReason, publishDevExample } from "../../src/cli/example.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";
import { type CatalogProject, catalogProject } from "../support/catalog-project.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { runCli } from "../support/run-cli.ts";
import { startCatalogPortal } from "../support/catalog-portal.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { modRecordsPath, readRelease } from "../support/records.ts";

const PINNED = JSON.parse(
  readFileSync(join(REPO_ROOT, "pulls-template/submissions/example-mod/1.0.0.json"), "utf8"),
) as { package: { sha256: string; sizeBytes: number } };
const ARTIFACT = "site/downloads/mods/example-mod/1.0.0/example-mod-1.0.0.zip";

let project: CatalogProject;
let portal: Awaited<ReturnType<typeof startCatalogPortal>> | null = null;
afterEach(async () => {
  await portal?.close();
  portal = null;
  project?.cleanup();
});

let dbDir = "";
let db = "";
beforeAll(() => {
  dbDir = mkdtempSync(join(tmpdir(), "svc-example-db-"));
  db = makeSignatureDatabase(dbDir);
});
afterAll(() => rmSync(dbDir, { recursive: true, force: true }));

/** An empty portal (as a fresh clone is) with the repository's pulls-template/. */
function emptyPortal(): CatalogProject {
  const p = catalogProject();
  cpSync(join(REPO_ROOT, "pulls-template"), join(p.root, "pulls-template"), { recursive: true });
  return p;
}

function options(p: CatalogProject, overrides: Partial<DevExampleOptions> = {}): DevExampleOptions {
  return {
    dev: true,
    optedOut: false,
    root: p.root,
    recordsDir: p.recordsDir,
    siteDir: p.siteDir,
    config: p.config,
    scanner: null,
    ...overrides,
  };
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))("the example on a fresh development portal", () => {
  it("is packed, validated with the portal's scanner and published by the importer: real bytes, real sha256, downloadable", async () => {
    project = emptyPortal();
    const scanner = createClamscanScanner(clamscanPath!, { database: db });
    const result = await publishDevExample(options(project, { scanner }));
    expect(result).toMatchObject({
      status: "published",
      modId: "example-mod",
      version: "1.0.0",
      packageUrl: "http://127.0.0.1:8787/downloads/mods/example-mod/1.0.0/example-mod-1.0.0.zip",
      sha256: PINNED.package.sha256,
      sizeBytes: PINNED.package.sizeBytes,
      waiver: null,
    });
    const stored = readFileSync(join(project.root, ARTIFACT));
    expect(sha256(stored)).toBe(PINNED.package.sha256);
    const record = readRelease(project.root, "example-mod", "1.0.0");
    expect(record).toMatchObject({
      status: "published",
      sha256: PINNED.package.sha256,
      source: { kind: "import" },
    });
    expect((await runCli(["check"], project.root)).code).toBe(0);

    // Served on another port (the catalog follows the portal's loopback origin), the catalog's link
    // downloads the very bytes whose sha256 it lists.
    portal = await startCatalogPortal(project);
    const catalog = (await (await fetch(`${portal.origin}/api/v1/catalog`)).json()) as {
      mods: Array<{ id: string; versions: Array<{ packageUrl: string; sha256: string }> }>;
    };
    const version = catalog.mods.find((m) => m.id === "example-mod")!.versions[0]!;
    expect(version.packageUrl).toBe(
      `${portal.origin}/downloads/mods/example-mod/1.0.0/example-mod-1.0.0.zip`,
    );
    const download = Buffer.from(await (await fetch(version.packageUrl)).arrayBuffer());
    expect(sha256(download)).toBe(version.sha256);
    const page = await fetch(`${portal.origin}/mods/example-mod/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("Example Mod");
  });
});

describe("the example without a scanner", () => {
  it("is published with antivirus_scan waived, and the waiver is stated", async () => {
    project = emptyPortal();
    const result = await publishDevExample(options(project));
    expect(result.status).toBe("published");
    expect(result.status === "published" && result.waiver).toMatch(
      /^waived: no antivirus scanner is configured/,
    );
    expect(sha256(readFileSync(join(project.root, ARTIFACT)))).toBe(PINNED.package.sha256);
  });

  it("an edited example is not the pinned package: refused like any unscanned upload, nothing written", async () => {
    project = emptyPortal();
    writeFileSync(join(project.root, "pulls-template/example-mod/README.md"), "# Example Mod, edited\n");
    const before = project.snapshot();
    const result = await publishDevExample(options(project));
    expect(result).toMatchObject({ status: "failed", code: "invalid_payload" });
    expect(result.status === "failed" && result.failedChecks).toEqual([
      "antivirus_scan: scanner_unavailable",
    ]);
    expect(project.snapshot()).toEqual(before);
  });
});

describe("where the example is never published", () => {
  it("a portal started without --dev, opted out, with a public baseUrl, or with releases", async () => {
    project = emptyPortal();
    expect(exampleSkipReason(options(project))).toBeNull();
    expect(exampleSkipReason(options(project, { dev: false }))).toMatch(/not a development portal/);
    expect(exampleSkipReason(options(project, { optedOut: true }))).toMatch(/--no-example or SVC_EXAMPLE=0/);
    const publicConfig = { ...project.config, baseUrl: "https://mods.example.org" };
    expect(exampleSkipReason(options(project, { config: publicConfig }))).toMatch(/public/);
    expect(await publishDevExample(options(project, { dev: false }))).toMatchObject({ status: "skipped" });
    expect(existsSync(join(project.root, "records/mods"))).toBe(false);
    expect(await publishDevExample(options(project))).toMatchObject({ status: "published" });
    expect(exampleSkipReason(options(project))).toBe("the portal already has releases");
  });
});

describe("changing baseUrl after a publish", () => {
  it("from a local portal to a public one: a clear instruction, not 'packageUrl must be https'", async () => {
    project = emptyPortal();
    expect(await publishDevExample(options(project))).toMatchObject({ status: "published" });
    const config = JSON.parse(project.read("portal.config.json"));
    writeFileSync(
      join(project.root, "portal.config.json"),
      JSON.stringify({ ...config, baseUrl: "https://mods.example.org" }),
    );
    const build = await runCli(["build"], project.root);
    // config_invalid is a domain error: exit 1 (2 is for usage errors).
    expect(build.code).toBe(1);
    expect(build.stderr).not.toContain("must be https");
    expect(build.stderr).toContain(
      "svc build: config_invalid: portal.config.json baseUrl is https://mods.example.org, but 1 release(s) were published on the local portal at http://127.0.0.1:8787",
    );
    expect(build.stderr).toContain("Either set baseUrl back to http://127.0.0.1:8787");
    expect(build.stderr).toContain(
      `rm ${modRecordsPath("example-mod")} && rm -r site/downloads/mods/example-mod`,
    );
  });
});
