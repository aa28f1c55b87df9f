import { type Metadata, type Root, type Snapshot, Targets, type Timestamp } from "@tufjs/models";
import { sha256Bytes } from "../lib/hash.ts";
import { TUF_SPEC_VERSION } from "./tuf-keys.ts";

/**
 * Layout (served by Pages and the local server as plain static files):
 *   site/tuf/{N}.root.json        every root version, so a client can walk rotations one by one
 *   site/tuf/root.json            a copy of the newest root, for bootstrapping (pin it, never trust it blindly)
 *   site/tuf/{N}.targets.json     consistent snapshots: a reader mid-publication still finds the
 *   site/tuf/{N}.bins-{xyz}.json    exact versions its timestamp names. targets.json lists the index
 *   site/tuf/{N}.snapshot.json      documents and delegates the rest to 1,024 hash bins (see below)
 *   site/tuf/timestamp.json       written last; the only file whose name does not change
 * It sits outside site/api/v1 because `svc build` owns (and prunes) everything there.
 *
 * Targets are named by their path under the site root (`api/v1/catalog.json`,
 * `downloads/mods/{modId}/{version}/{fileName}`) and are served at that plain path, not hash-prefixed:
 * the contract fixes those URLs. A generic TUF client must set `prefixTargetsWithHash: false`.
 * An artifact hosted elsewhere (a GitHub release asset) is the target
 * `external/mods/{modId}/{version}/{fileName}` with `custom.url` naming where it lives.
 */
export const TUF_DIR = "tuf";

export interface SiteTarget {
  path: string;
  length: number;
  sha256: string;
  url?: string;
}

export interface CatalogVersionLike {
  version: string;
  fileName: string;
  packageUrl: string;
  packageSizeBytes: number;
  sha256: string;
}

/**
 * The target path of a package: its site path when the portal serves it, else the `external/` mapping.
 * A served package's URL ends with its site path (SITE_PATHS.artifact), whatever the base URL (a Pages
 * base has a path prefix); deciding by that suffix lets incremental signing decide without reading
 * the catalog for its baseUrl. The baseUrl parameter stays for callers that have it.
 */
export function artifactTargetPath(_baseUrl: string, modId: string, version: CatalogVersionLike): string {
  const sitePath = `downloads/mods/${modId}/${version.version}/${version.fileName}`;
  if (version.packageUrl.endsWith(`/${sitePath}`)) return sitePath;
  return `external/mods/${modId}/${version.version}/${version.fileName}`;
}

/**
 * A committed path as a target path. Writers report paths relative to their own root: the site
 * builder relative to the site (`api/v1/...`), the publisher relative to the project
 * (`site/api/v1/...`); records and pages are no targets.
 */
export function targetPathOfCommitted(path: string): string | null {
  const parts = path.split("/");
  for (let i = 0; i < parts.length; i++) {
    const rest = parts.slice(i).join("/");
    if (rest.startsWith("api/v1/") || rest.startsWith("downloads/")) return rest;
    if (i === 0 && parts[0] === "records") return null;
  }
  return null;
}

export function serializeMetadata(metadata: Metadata<Root | Targets | Snapshot | Timestamp>): string {
  return `${JSON.stringify(metadata.toJSON(), null, 2)}\n`;
}

/** Compact: bins and snapshot are read by machines only, and their size is what a refresh costs. */
export function serializeCompact(metadata: Metadata<Targets | Snapshot>): string {
  return `${JSON.stringify(metadata.toJSON())}\n`;
}

/**
 * Hashed-bin delegation (TUF 1.0.31 `succinct_roles`, TAP 15; the design of PEP 458 for PyPI): the
 * top-level targets role lists the few index documents that change on every publication and
 * delegates every per-mod document and every artifact to 2^BIN_BIT_LENGTH bins by the sha256 of the
 * target path. A publication then re-signs the bins its files fall in (a handful of ~70-target
 * files) instead of one document listing every target, and a manager that is current downloads only
 * the bins of the targets it looks up. 1,024 bins: at 10,000 mods x 5 versions (~70,000 targets) a
 * bin holds ~68 targets (~9 KB raw, ~4 KB gzip) while snapshot lists 1,024 bin versions (~25 KB raw,
 * a few KB gzip) — the two halves of a current manager's refresh stay about equal
 * (docs/distribution.md, "Hashed bins").
 */
export const BIN_BIT_LENGTH = 10;
export const BIN_NAME_PREFIX = "bins";

/**
 * The documents a manager reads on every refresh and every publication rewrites: the top-level
 * targets role lists them itself (with the newest changes page), so a current manager's refresh
 * costs timestamp + snapshot + this small targets file + the bins of what it then looks up.
 * Everything else (per-mod documents, artifacts, closed changes pages, the rarely changing
 * contract documents and schemas) is delegated to the bins.
 */
const TOP_LEVEL_DOCUMENTS: ReadonlySet<string> = new Set([
  "api/v1/catalog.json",
  "api/v1/mods/index.json",
  "api/v1/changes/head.json",
]);

function changesPageNumber(path: string): number | null {
  const page = /^api\/v1\/changes\/(\d+)\.json$/.exec(path)?.[1];
  return page === undefined ? null : Number(page);
}

/** Where a target is signed: top-level for the index documents and the newest changes page, else its bin. */
export function isTopLevelTarget(path: string, newestChangesPage: number | null): boolean {
  return (
    TOP_LEVEL_DOCUMENTS.has(path) ||
    (newestChangesPage !== null && changesPageNumber(path) === newestChangesPage)
  );
}

/** The paths isTopLevelTarget names (those of them the site has are signed top-level). */
export function topLevelPaths(newestChangesPage: number | null): string[] {
  return [
    ...TOP_LEVEL_DOCUMENTS,
    ...(newestChangesPage === null ? [] : [`api/v1/changes/${newestChangesPage}.json`]),
  ];
}

export function newestChangesPage(paths: Iterable<string>): number | null {
  let newest: number | null = null;
  for (const path of paths) {
    const page = changesPageNumber(path);
    if (page !== null && (newest === null || page > newest)) newest = page;
  }
  return newest;
}

/** Every bin's name as the library's succinct roles name them (SuccinctRoles is not re-exported by @tufjs/models). */
const BIN_NAMES: readonly string[] = (() => {
  const targets = Targets.fromJSON({
    _type: "targets",
    spec_version: TUF_SPEC_VERSION,
    version: 1,
    expires: "2000-01-01T00:00:00Z",
    targets: {},
    delegations: {
      keys: {},
      succinct_roles: { keyids: [], threshold: 1, bit_length: BIN_BIT_LENGTH, name_prefix: BIN_NAME_PREFIX },
    },
  });
  return [...targets.delegations!.succinctRoles!.getRoles()];
})();

const BIN_SHIFT = 32 - BIN_BIT_LENGTH;

/**
 * The bin (delegated role name) that signs a target path: the leftmost BIN_BIT_LENGTH bits of the
 * path's sha256, as SuccinctRoles.getRoleForTarget computes it (a test compares the two), with a
 * one-shot hash instead of a Hash object per call: a full signing asks for every target's bin.
 */
export function binForTarget(path: string): string {
  return BIN_NAMES[sha256Bytes(path).readUInt32BE(0) >>> BIN_SHIFT]!;
}

/** Every bin name, bins-000 ... bins-3ff. */
export function allBins(): readonly string[] {
  return BIN_NAMES;
}
