import { createHash } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { filesystemArtifactStore } from "../../src/catalog/artifact-store.ts";
import type {
  PackageValidator,
  PublisherOptions,
  ReleaseSubmission,
  ValidationReport,
} from "../../src/catalog/publisher.ts";
import { loadSiteInputs, renderSite, writeSite } from "../../src/catalog/site.ts";
import type { PortalConfig } from "../../src/config/portal-config.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { inflateEntry, readZipStructure } from "../../src/validation/zip/reader.ts";
import { REPO_ROOT } from "./repo-root.ts";
import { writeZip } from "./zip.ts";

/** A throwaway portal (portal.config.json, records/, a built site/) in a temp folder. */
export function catalogProject(edit: (config: PortalConfig) => void = () => {}) {
  const root = mkdtempSync(join(tmpdir(), "svc-catalog-"));
  const config = JSON.parse(readFileSync(join(REPO_ROOT, "portal.config.json"), "utf8")) as PortalConfig;
  edit(config);
  writeFileSync(join(root, "portal.config.json"), `${JSON.stringify(config, null, 2)}\n`);
  mkdirSync(join(root, "records"), { recursive: true });
  mkdirSync(join(root, "site"), { recursive: true });
  const loaded = loadPortalConfig(join(root, "portal.config.json"));
  const siteDir = join(root, "site");
  const recordsDir = join(root, "records");
  writeSite(
    siteDir,
    renderSite(loadSiteInputs(loaded, recordsDir), siteDir, () => new Date("2026-11-01T00:00:00.000Z")),
  );
  const project = {
    root,
    config: loaded,
    siteDir,
    recordsDir,
    read: (path: string) => readFileSync(join(root, path), "utf8"),
    exists: (path: string) => existsSync(join(root, path)),
    snapshot: () => snapshotTree(root),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
    /** Points the portal at another origin (a loopback server's) and rebuilds the site. */
    setBaseUrl: (baseUrl: string) => {
      const next = { ...config, baseUrl };
      writeFileSync(join(root, "portal.config.json"), `${JSON.stringify(next, null, 2)}\n`);
      project.config = loadPortalConfig(join(root, "portal.config.json"));
      writeSite(siteDir, renderSite(loadSiteInputs(project.config, recordsDir), siteDir));
    },
  };
  return project;
}

export type CatalogProject = ReturnType<typeof catalogProject>;

/** Every file under root (path -> sha256 of bytes), transaction folders excluded. */
export function snapshotTree(root: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      if (name === ".svc-tmp") continue;
      if (statSync(full).isDirectory()) walk(full);
      else out.set(relative(root, full), createHash("sha256").update(readFileSync(full)).digest("hex"));
    }
  };
  walk(root);
  return out;
}

export interface ModFixture {
  modId?: string;
  version?: string;
  name?: string;
  dependencies?: ReleaseSubmission["dependencies"];
  extraFiles?: Record<string, string>;
}

/** A package (real ZIP with svc-mod.json at the root) and its matching sidecar. */
export function modRelease(fixture: ModFixture = {}) {
  const modId = fixture.modId ?? "better-hud";
  const version = fixture.version ?? "1.0.0";
  const name = fixture.name ?? "Better HUD";
  const dependencies = fixture.dependencies ?? [];
  const entrypoints: ReleaseSubmission["entrypoints"] = [{ path: "Content/Paks/BetterHud.pak", kind: "pak" }];
  const manifest = {
    schema: "svc.mod-manifest.v1",
    id: modId,
    name,
    version,
    targetGameBuild: "17000000",
    dependencies,
    entrypoints,
  };
  const packageBytes = writeZip([
    { name: "svc-mod.json", data: `${JSON.stringify(manifest, null, 2)}\n` },
    { name: "Content/Paks/BetterHud.pak", data: `pak ${modId} ${version}\n`.repeat(50) },
    ...Object.entries(fixture.extraFiles ?? {}).map(([n, data]) => ({ name: n, data })),
  ]);
  const sidecar: ReleaseSubmission = {
    schema: "svc.mod-release-submission.v1",
    modId,
    name,
    version,
    targetGameBuild: "17000000",
    summary: `${name} makes the game better.`,
    description: `${name}: a longer description.`,
    releaseNotes: `Release ${version}.`,
    package: {
      fileName: `${modId}-${version}.zip`,
      sha256: createHash("sha256").update(packageBytes).digest("hex"),
      sizeBytes: packageBytes.length,
    },
    dependencies,
    entrypoints,
    authors: [{ name: "Ada", github: "ada" }],
    tags: ["ui"],
    links: { source: `https://github.com/ada/${modId}` },
  };
  return { packageBytes, sidecar, manifest };
}

/**
 * A stand-in for the validation runner, named as one: it reports the checks passed (or failed).
 * The real runner's own tests cover the checks; these tests cover what the publisher does with a report.
 * Like the runner, it lists every file entry with its size and sha256 (read with the ZIP reader).
 */
export function stubValidator(passed = true): PackageValidator & { calls: number } {
  const fn = (async (request: Parameters<PackageValidator>[0]) => {
    fn.calls++;
    const bytes = Buffer.from(request.packageBytes);
    const caps = {
      maxEntries: 10_000,
      maxNameBytes: 512,
      maxPathDepth: 32,
      maxEntryUncompressedBytes: 1 << 30,
      maxTotalUncompressedBytes: 2 ** 32,
      maxCompressionRatio: 1000,
      compressionRatioMinBytes: 1 << 20,
    };
    const files = readZipStructure(bytes, caps)
      .entries.filter((e) => !e.isDirectory)
      .map((entry) => {
        const inflated = inflateEntry(bytes, entry);
        if (!inflated.ok) throw new Error(inflated.message);
        return {
          path: entry.name,
          sizeBytes: inflated.data.length,
          sha256: createHash("sha256").update(inflated.data).digest("hex"),
        };
      });
    const report: ValidationReport = {
      passed,
      checks: [
        { id: "sidecar_schema", required: true, status: "passed", reasonCode: null, log: ["stub"] },
        {
          id: "antivirus_scan",
          required: true,
          status: passed ? "passed" : "failed",
          reasonCode: passed ? null : "malware_found",
          log: ["stub"],
        },
      ],
      files,
    };
    return report;
  }) as unknown as PackageValidator & { calls: number };
  fn.calls = 0;
  return fn;
}

export function publisherOptions(
  project: CatalogProject,
  overrides: Partial<PublisherOptions> = {},
): PublisherOptions {
  let tick = 0;
  return {
    root: project.root,
    recordsDir: project.recordsDir,
    siteDir: project.siteDir,
    config: project.config,
    store: filesystemArtifactStore({
      root: project.root,
      siteDir: project.siteDir,
      baseUrl: project.config.baseUrl,
    }),
    validate: stubValidator(),
    // A clock that moves one minute per call, so timestamps are deterministic and ordered.
    now: () => new Date(Date.UTC(2026, 10, 2, 10, tick++)),
    ...overrides,
  };
}
