import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { PortalConfig } from "../../src/config/portal-config.ts";
import type { ReleaseRecord } from "../../src/contracts/records.ts";
import { writeRelease } from "./records.ts";
import { REPO_ROOT } from "./repo-root.ts";

export function repoConfig(): PortalConfig {
  return JSON.parse(readFileSync(join(REPO_ROOT, "portal.config.json"), "utf8")) as PortalConfig;
}

/** A throwaway portal: portal.config.json, records/ and site/ in a temp folder. */
export function tempProject(edit: (config: PortalConfig) => void = () => {}) {
  const root = mkdtempSync(join(tmpdir(), "svc-project-"));
  const config = repoConfig();
  edit(config);
  writeFileSync(join(root, "portal.config.json"), JSON.stringify(config, null, 2));
  mkdirSync(join(root, "records"), { recursive: true });
  mkdirSync(join(root, "site"), { recursive: true });
  return {
    root,
    config,
    site: (rel: string) => join(root, "site", rel),
    read: (rel: string) => readFileSync(join(root, rel), "utf8"),
    write: (rel: string, content: string) => {
      mkdirSync(dirname(join(root, rel)), { recursive: true });
      writeFileSync(join(root, rel), content);
    },
    addRecord: (record: ReleaseRecord) => writeRelease(root, record),
    copyFromRepo: (rel: string) => cpSync(join(REPO_ROOT, rel), join(root, rel), { recursive: true }),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

const HASH = (c: string) => c.repeat(64);

export function releaseRecord(overrides: Partial<ReleaseRecord> = {}): ReleaseRecord {
  const modId = overrides.modId ?? "better-hud";
  const version = overrides.version ?? "1.0.0";
  const fileName = overrides.fileName ?? `${modId}-${version}.zip`;
  return {
    schema: "svc.release-record.v1",
    modId,
    version,
    name: "Better HUD",
    summary: "A cleaner heads-up display.",
    description: "Rearranges the HUD.",
    authors: [{ name: "Ada", github: "ada" }],
    tags: ["ui"],
    links: { source: "https://github.com/ada/better-hud" },
    targetGameBuild: "17000000",
    releaseNotes: `Release ${version}.`,
    fileName,
    packageUrl: `http://127.0.0.1:8787/downloads/mods/${modId}/${version}/${fileName}`,
    sha256: HASH("a"),
    packageSizeBytes: 1234,
    dependencies: [],
    entrypoints: [{ path: "Binaries/Win64/BetterHud.dll", kind: "native" }],
    publishedAt: "2026-11-01T10:00:00.000Z",
    status: "published",
    source: { kind: "import" },
    updatedAt: "2026-11-01T10:00:00.000Z",
    ...overrides,
  };
}
