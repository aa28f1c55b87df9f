import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { loadSiteInputs, renderSite } from "../../src/catalog/site.ts";
import type { PortalConfig } from "../../src/config/portal-config.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { modRecordsText, ownersShardText } from "../../src/catalog/records.ts";
import { appendChange, type ChangesPage, serializeChangesPage } from "../../src/contracts/changes.ts";
import { claimOwnership, type ModOwnership } from "../../src/contracts/ownership.ts";
import { RECORD_PATHS, type ReleaseRecord, recordShard } from "../../src/contracts/records.ts";

const REPO_ROOT = new URL("../../", import.meta.url).pathname;

export interface GeneratedPortal {
  root: string;
  config: PortalConfig;
  recordsDir: string;
  siteDir: string;
  /** Milliseconds spent writing the records, and rendering + writing the site (0 when not asked). */
  recordsMs: number;
  siteMs: number;
}

export const benchModId = (m: number) => `mod-${String(m).padStart(5, "0")}`;

/**
 * A portal of `mods` x `versions` releases in `root`: the repository's portal.config.json, one
 * release record per version in the mod's records file (records/mods/{shard}/{modId}.json) as the
 * publisher writes it (the newest published, the older superseded; every tenth mod depends on
 * mod-00000); with `history` also every mod's ownership record (records/owners/{shard}.json) and the
 * changes feed of every publication (records/changes/{folder}/{page}.json), as a portal that published
 * all of them holds; and with `site` the site rendered from them by
 * the project's own renderSite. Generation is setup, not a measured path, so the site's files are
 * written straight to disk, without the commit's fsync per file (`svc build` is what benches time).
 *
 * `artifacts`: "portal" lists every package under the portal's /downloads/ (files that do not
 * exist: nothing reads them); "external" lists them on GitHub Releases, so a TUF signing signs them
 * as external/ targets and no 250,000 package files have to be written.
 */
export function generatePortal(options: {
  root: string;
  mods: number;
  versions: number;
  artifacts: "portal" | "external";
  site: boolean;
  /** The portal's baseUrl instead of the repository's (a loopback server that serves the site). */
  baseUrl?: string;
  /** Also the ownership records and the changes feed a portal that published every release holds. */
  history?: boolean;
}): GeneratedPortal {
  const { root, mods, versions } = options;
  const recordsDir = join(root, "records");
  const siteDir = join(root, "site");
  const configured = JSON.parse(readFileSync(join(REPO_ROOT, "portal.config.json"), "utf8")) as PortalConfig;
  if (options.baseUrl) configured.baseUrl = options.baseUrl;
  writeFileSync(join(root, "portal.config.json"), `${JSON.stringify(configured, null, 2)}\n`);
  const config = loadPortalConfig(join(root, "portal.config.json"));
  const started = performance.now();
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(recordsDir, path)), { recursive: true });
    writeFileSync(join(recordsDir, path), text);
  };
  const owners = new Map<string, ModOwnership[]>();
  for (let m = 0; m < mods; m++) {
    const modId = benchModId(m);
    const releases = Array.from({ length: versions }, (_, v) =>
      releaseRecord(config, m, v, versions, options.artifacts),
    );
    write(RECORD_PATHS.modRecords(modId), modRecordsText(modId, releases));
    if (options.history) {
      const shard = recordShard(modId);
      const owner = { github: `author${m % 500}` };
      const at = releases[0]!.publishedAt;
      owners.set(shard, [...(owners.get(shard) ?? []), claimOwnership({ modId, owner, at })]);
    }
  }
  if (options.history) {
    for (const [shard, list] of owners)
      write(`${RECORD_PATHS.ownersDir}/${shard}.json`, ownersShardText(shard, list));
    // One change per publication, oldest first: version by version, mod by mod.
    let page: ChangesPage | null = null;
    for (let v = 0; v < versions; v++)
      for (let m = 0; m < mods; m++) {
        const modId = benchModId(m);
        const next = appendChange(page, {
          modId,
          version: `1.${v}.0`,
          kind: "publish",
          latestVersion: `1.${v}.0`,
          at: new Date(Date.UTC(2026, 0, 1 + v, 0, m % 60)).toISOString(),
        });
        if (page && next.page !== page.page)
          write(RECORD_PATHS.changesPage(page.page), serializeChangesPage(page));
        page = next;
      }
    if (page) write(RECORD_PATHS.changesPage(page.page), serializeChangesPage(page));
  }
  const recordsMs = performance.now() - started;
  let siteMs = 0;
  if (options.site) {
    const siteStarted = performance.now();
    const files = renderSite(loadSiteInputs(config, recordsDir), siteDir);
    for (const [path, text] of files) {
      mkdirSync(dirname(join(siteDir, path)), { recursive: true });
      writeFileSync(join(siteDir, path), text);
    }
    siteMs = performance.now() - siteStarted;
  }
  return { root, config, recordsDir, siteDir, recordsMs, siteMs };
}

function releaseRecord(
  config: PortalConfig,
  m: number,
  v: number,
  versions: number,
  artifacts: "portal" | "external",
): ReleaseRecord {
  const modId = benchModId(m);
  const version = `1.${v}.0`;
  const fileName = `${modId}-${version}.zip`;
  const at = new Date(Date.UTC(2026, 0, 1 + v, 0, m % 60)).toISOString();
  return {
    schema: "svc.release-record.v1",
    modId,
    version,
    name: `Mod ${m}`,
    summary: `Summary of mod ${m}, a mod that changes the game in one specific way.`,
    description: `Mod ${m} description.`,
    authors: [{ name: `Author ${m % 500}`, github: `author${m % 500}` }],
    tags: ["gameplay", `tag-${m % 40}`],
    links: { source: `https://github.com/author${m % 500}/${modId}` },
    targetGameBuild: "17000000",
    releaseNotes: `Changes in ${version}: fixes and improvements.`,
    fileName,
    packageUrl:
      artifacts === "portal"
        ? `${config.baseUrl}/downloads/mods/${modId}/${version}/${fileName}`
        : `https://github.com/author${m % 500}/${modId}/releases/download/v${version}/${fileName}`,
    sha256: createHash("sha256").update(`${modId}@${version}`).digest("hex"),
    packageSizeBytes: 100_000 + ((m * 7919 + v) % 900_000),
    dependencies: m > 0 && m % 10 === 0 ? [{ modId: "mod-00000", versionRange: "^1.0.0" }] : [],
    entrypoints: [{ path: `Content/Paks/${modId}.pak`, kind: "pak" }],
    publishedAt: at,
    status: v === versions - 1 ? "published" : "superseded",
    source: { kind: "import" },
    updatedAt: at,
  };
}
