import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { sha256Hex } from "../lib/hash.ts";
import { DistributionError } from "./errors.ts";
import { artifactTargetPath, type CatalogVersionLike, type SiteTarget } from "./tuf-layout.ts";

interface CatalogLike {
  baseUrl: string;
  mods: Array<{ id: string; versions: CatalogVersionLike[] }>;
}

// Whole and synchronous, unlike lib/hash.ts's streaming hashFile: signing is synchronous end to end
// (it runs under the publish lock right after the commit).
export function hashSiteFile(path: string): { length: number; sha256: string } {
  const bytes = readFileSync(path);
  return { length: bytes.length, sha256: sha256Hex(bytes) };
}

// Not lib/walk.ts's listFilesUnder: dot-names (an atomic writer's temporaries) are never targets.
// Entries come typed from readdir: no stat per file (a full signing walks ~100,000 of them).
function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    const entries = readdirSync(d, { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const entry of entries) {
      if (entry.name.startsWith(".")) continue;
      const full = join(d, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile()) out.push(full);
      // A link (or a type readdir cannot name): what it resolves to decides.
      else if (statSync(full).isDirectory()) walk(full);
      else out.push(full);
    }
  };
  walk(dir);
  return out;
}

function sitePath(siteDir: string, full: string): string {
  return relative(siteDir, full).split(sep).join("/");
}

const VERSIONS_DOCUMENT = /^api\/v1\/mods\/([^/]+)\/versions\.json$/;

/**
 * Every target of the site: each contract document under api/v1, each artifact under downloads/,
 * and each externally hosted artifact a per-mod versions document (or the catalog) lists. A served
 * artifact whose bytes disagree with the sha256 its document records is never signed. Each file is
 * read once: a versions document is hashed and parsed from the same bytes.
 */
export function collectSiteTargets(siteDir: string): SiteTarget[] {
  const targets = new Map<string, SiteTarget>();
  const listed: Array<{ modId: string; version: CatalogVersionLike }> = [];
  const inVersionsDocuments: typeof listed = [];
  for (const full of [...listFiles(join(siteDir, "api", "v1")), ...listFiles(join(siteDir, "downloads"))]) {
    const path = sitePath(siteDir, full);
    const bytes = readFileSync(full);
    targets.set(path, { path, length: bytes.length, sha256: sha256Hex(bytes) });
    const modId = VERSIONS_DOCUMENT.exec(path)?.[1];
    if (!modId) continue;
    const document = JSON.parse(bytes.toString("utf8")) as { versions?: CatalogVersionLike[] };
    for (const version of document.versions ?? []) inVersionsDocuments.push({ modId, version });
  }
  const catalogFile = join(siteDir, "api", "v1", "catalog.json");
  if (existsSync(catalogFile)) {
    for (const mod of catalogMods(readFileSync(catalogFile)))
      for (const version of mod.versions ?? []) listed.push({ modId: mod.id, version });
  }
  // The versions documents after the catalog: where both list a version, theirs is signed.
  for (const { modId, version } of [...listed, ...inVersionsDocuments]) {
    const target = checkedArtifactTarget(siteDir, modId, version, (path) => targets.get(path));
    if (target) targets.set(target.path, target);
  }
  return [...targets.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
}

const MODS_ARRAY = Buffer.from('\n  "mods": [');
const ENTRY_START = Buffer.from('\n    {\n      "id": ');
const ENTRY_END = Buffer.from("\n    }");
const ARRAY_END = Buffer.from("\n  ]\n}\n");

/**
 * The catalog's mods, each parsed on its own where the document has the layout serializeDocument
 * writes ("mods" its last field, each entry an object at indent 4 whose first key is "id"; a raw
 * newline is never inside a string, so "\n    }" closes the entry): at 50,000 mods one JSON.parse of
 * the 73 MB document built an object graph of ~0.5 GB for the few fields read here. Entries must
 * follow one another exactly to the array's end; any other layout is parsed whole.
 */
export function catalogMods(bytes: Buffer): Array<{ id: string; versions?: CatalogVersionLike[] }> {
  const whole = () => (JSON.parse(bytes.toString("utf8")) as Partial<CatalogLike>).mods ?? [];
  const at = bytes.indexOf(MODS_ARRAY);
  if (at === -1) return whole();
  const mods: Array<{ id: string; versions?: CatalogVersionLike[] }> = [];
  let next = at + MODS_ARRAY.length;
  if (bytes[next] === 93 /* ] */) return whole();
  for (;;) {
    if (!bytes.subarray(next, next + ENTRY_START.length).equals(ENTRY_START)) return whole();
    const end = bytes.indexOf(ENTRY_END, next + ENTRY_START.length);
    if (end === -1) return whole();
    try {
      mods.push(JSON.parse(bytes.toString("utf8", next, end + ENTRY_END.length)));
    } catch {
      return whole();
    }
    next = end + ENTRY_END.length;
    if (bytes[next] === 44 /* , */) {
      next++;
      continue;
    }
    return next + ARRAY_END.length === bytes.length && bytes.subarray(next).equals(ARRAY_END)
      ? mods
      : whole();
  }
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
  if (served.sha256 !== version.sha256 || served.length !== version.packageSizeBytes) {
    throw new DistributionError(
      "artifact_mismatch",
      `site/${path} does not match the sha256/size its catalog entry records; refusing to sign it`,
      { path, served, recorded: { sha256: version.sha256, length: version.packageSizeBytes } },
    );
  }
  // Hashed just now: the commit did not name the artifact (linked in rather than written).
  return signed ? null : served;
}
