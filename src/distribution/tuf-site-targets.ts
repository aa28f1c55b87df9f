import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../lib/hash.ts";
import { DistributionError } from "./errors.ts";
import {
  catalogModsOf,
  digestFiles,
  type HashWorker,
  type ListedReleases,
  PARSE_CATALOG,
  PARSE_VERSIONS,
  POOL_FROM,
  RELEASE_STRIDE,
  startHashWorker,
  stopHashWorker,
} from "./tuf-hash-pool.ts";
import {
  artifactTargetPath,
  BIN_BIT_LENGTH,
  type CatalogVersionLike,
  newestChangesPage,
  type SiteTarget,
} from "./tuf-layout.ts";

// Whole and synchronous, unlike lib/hash.ts's streaming hashFile: signing is synchronous end to end
// (it runs under the publish lock right after the commit).
export function hashSiteFile(path: string): { length: number; sha256: string } {
  const bytes = readFileSync(path);
  return { length: bytes.length, sha256: sha256Hex(bytes) };
}

// Not lib/walk.ts's listFilesUnder: dot-names (an atomic writer's temporaries) are never targets.
// Entries come typed from readdir: no stat per file (a full signing walks ~100,000 of them). Each
// file's site path (`/`-separated, relative to the site) is built along the walk.
function listFiles(siteDir: string, under: string, paths: string[], found: () => void): void {
  const top = join(siteDir, ...under.split("/"));
  if (!existsSync(top)) return;
  const walk = (d: string, rel: string) => {
    const entries = readdirSync(d, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      const path = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(`${d}/${entry.name}`, path);
      else if (entry.isFile()) {
        paths.push(path);
        found();
      }
      // A link (or a type readdir cannot name): what it resolves to decides.
      else if (statSync(`${d}/${entry.name}`).isDirectory()) walk(`${d}/${entry.name}`, path);
      else {
        paths.push(path);
        found();
      }
    }
  };
  walk(top, under);
}

const VERSIONS_DOCUMENT = /^api\/v1\/mods\/([^/]+)\/versions\.json$/;
const CATALOG = "api/v1/catalog.json";

/** A target with the index of its bin (binForTarget's bin, as allBins() numbers them). */
export interface PlacedTarget extends SiteTarget {
  bin: number;
}

/**
 * Every target of the site: each contract document under api/v1, each artifact under downloads/,
 * and each externally hosted artifact a per-mod versions document (or the catalog) lists. A served
 * artifact whose bytes disagree with the sha256 its document records is never signed. Each file is
 * read once, on both cores (digestFiles): a versions document and the catalog are hashed and parsed
 * from the same bytes. Sorted by path.
 */
export function collectSiteTargets(siteDir: string): SiteTarget[] {
  return collectPlacedTargets(siteDir)
    .map(({ bin: _bin, ...target }) => target)
    .sort((a, b) => (a.path < b.path ? -1 : 1));
}

/** collectSiteTargets' targets, each with its bin, in no particular order. */
export function collectPlacedTargets(siteDir: string): PlacedTarget[] {
  const placed: PlacedTarget[] = [];
  collectBinnedTargets(siteDir).byBin.forEach((targets, bin) => {
    for (const t of targets.values()) placed.push({ ...t, bin });
  });
  return placed;
}

/** The site's targets as signing places them: by bin index, and the newest changes page's number. */
export interface BinnedTargets {
  byBin: Array<Map<string, SiteTarget>>;
  count: number;
  newestChangesPage: number | null;
}

/**
 * collectSiteTargets' targets, put straight into the map of their bin (allBins() order): a full
 * signing at 50,000 mods places ~350,000 targets, and one map of all of them, then an array, then
 * the bins' maps cost more than placing each target once.
 */
export function collectBinnedTargets(siteDir: string): BinnedTargets {
  const paths: string[] = [];
  // The hashing worker starts as soon as the walk has found enough files to use it: its start-up
  // overlaps the rest of the walk.
  let worker: HashWorker | null | undefined;
  const found = () => {
    if (worker === undefined && paths.length >= POOL_FROM) worker = startHashWorker();
  };
  try {
    listFiles(siteDir, "api/v1", paths, found);
    listFiles(siteDir, "downloads", paths, found);
  } catch (error) {
    if (worker) stopHashWorker(worker);
    throw error;
  }
  const kinds = new Uint8Array(paths.length);
  paths.forEach((path, i) => {
    if (VERSIONS_DOCUMENT.test(path)) kinds[i] = PARSE_VERSIONS;
    else if (path === CATALOG) kinds[i] = PARSE_CATALOG;
  });
  const digests = digestFiles(siteDir, paths, kinds, BIN_BIT_LENGTH, worker === undefined ? {} : { worker });
  const byBin = Array.from({ length: 2 ** BIN_BIT_LENGTH }, () => new Map<string, SiteTarget>());
  paths.forEach((path, i) => {
    byBin[digests.bin(i)]!.set(path, { path, length: digests.length(i), sha256: digests.sha256(i) });
  });
  const add = (releases: ListedReleases) => {
    for (let k = 0; k < releases.length; k += RELEASE_STRIDE) {
      const path = releases[k] as string;
      const bin = byBin[releases[k + 1] as number]!;
      const length = releases[k + 2] as number;
      const sha256 = releases[k + 3] as string;
      const url = releases[k + 4] as string;
      if (!path.startsWith("downloads/")) {
        bin.set(path, { path, length, sha256, url });
        continue;
      }
      const served = checkedServedTarget(siteDir, path, { length, sha256 }, (p) => bin.get(p));
      if (served) bin.set(path, served);
    }
  };
  // The catalog's releases first, then the versions documents': where both list a version, theirs is signed.
  const catalogAt = paths.indexOf(CATALOG);
  const inCatalog = digests.listed.get(catalogAt);
  if (inCatalog) add(inCatalog);
  const documents = [...digests.listed.keys()].filter((i) => i !== catalogAt).sort((a, b) => a - b);
  for (const i of documents) add(digests.listed.get(i)!);
  let count = 0;
  for (const bin of byBin) count += bin.size;
  const newest = newestChangesPage(paths);
  return { byBin, count, newestChangesPage: newest };
}

/** The catalog's mods (see catalogModsOf: entry by entry where its layout allows). */
export function catalogMods(bytes: Buffer): Array<{ id: string; versions?: CatalogVersionLike[] }> {
  return catalogModsOf(bytes) as Array<{ id: string; versions?: CatalogVersionLike[] }>;
}

/**
 * The target of one version's package, checked like the full path checks it: a locally served
 * artifact must exist with the recorded sha256 and size (taken from its signed entry or, when it was
 * not signed yet, hashed now and returned to be signed); an external one becomes an `external/` target.
 */
export function checkedArtifactTarget(
  siteDir: string,
  modId: string,
  version: CatalogVersionLike,
  signedTarget: (path: string) => SiteTarget | undefined,
): SiteTarget | null {
  const path = artifactTargetPath("", modId, version);
  if (!path.startsWith("downloads/")) {
    return { path, length: version.packageSizeBytes, sha256: version.sha256, url: version.packageUrl };
  }
  return checkedServedTarget(
    siteDir,
    path,
    { length: version.packageSizeBytes, sha256: version.sha256 },
    signedTarget,
  );
}

/** A served artifact's target (see checkedArtifactTarget): null when it is signed already. */
function checkedServedTarget(
  siteDir: string,
  path: string,
  recorded: { length: number; sha256: string },
  signedTarget: (path: string) => SiteTarget | undefined,
): SiteTarget | null {
  const signed = signedTarget(path);
  let served = signed;
  if (!served) {
    const full = join(siteDir, path);
    if (!existsSync(full)) {
      throw new DistributionError(
        "artifact_mismatch",
        `the catalog lists ${path} but site/${path} is missing`,
      );
    }
    served = { path, ...hashSiteFile(full) };
  }
  if (served.sha256 !== recorded.sha256 || served.length !== recorded.length) {
    throw new DistributionError(
      "artifact_mismatch",
      `site/${path} does not match the sha256/size its catalog entry records; refusing to sign it`,
      { path, served, recorded: { sha256: recorded.sha256, length: recorded.length } },
    );
  }
  // Hashed just now: the commit did not name the artifact (linked in rather than written).
  return signed ? null : served;
}
