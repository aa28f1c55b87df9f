import { writeFileAtomic } from "../lib/atomic-write.ts";
import { sha256Hex } from "../lib/hash.ts";
import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join, relative, sep } from "node:path";
import {
  MetadataKind,
  MetaFile,
  Metadata,
  type Root,
  Snapshot,
  TargetFile,
  Targets,
  Timestamp,
} from "@tufjs/models";
import { SvcError } from "../errors.ts";
import { DistributionError } from "./errors.ts";
import {
  addDays,
  EXPIRY_DAYS,
  ONLINE_ROLES,
  type OnlineKeys,
  signerFor,
  TUF_SPEC_VERSION,
  tufKey,
  tufTime,
} from "./tuf-keys.ts";

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
/** Versioned targets/snapshot files kept behind the newest, for clients mid-refresh. */
const KEEP_OLD_VERSIONS = 3;

export interface SiteTarget {
  path: string;
  length: number;
  sha256: string;
  url?: string;
}

export interface SignResult {
  rootVersion: number;
  targetsVersion: number;
  snapshotVersion: number;
  timestampVersion: number;
  /** Targets hashed by this run: every target of the site (full signing) or the committed ones (incremental). */
  targetCount: number;
  /** The bins re-signed by this run (bins-000 ... bins-3ff). */
  binsSigned: string[];
  written: string[];
}

interface CatalogVersionLike {
  version: string;
  fileName: string;
  packageUrl: string;
  packageSizeBytes: number;
  sha256: string;
}
interface CatalogLike {
  baseUrl: string;
  mods: Array<{ id: string; versions: CatalogVersionLike[] }>;
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

function hashFile(path: string): { length: number; sha256: string } {
  const bytes = readFileSync(path);
  return { length: bytes.length, sha256: sha256Hex(bytes) };
}

function listFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      if (name.startsWith(".")) continue;
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else out.push(full);
    }
  };
  walk(dir);
  return out;
}

function sitePath(siteDir: string, full: string): string {
  return relative(siteDir, full).split(sep).join("/");
}

/**
 * Every target of the site: each contract document under api/v1, each artifact under downloads/,
 * and each externally hosted artifact a per-mod versions document (or the catalog) lists. A served
 * artifact whose bytes disagree with the sha256 its document records is never signed.
 */
export function collectSiteTargets(siteDir: string): SiteTarget[] {
  const targets = new Map<string, SiteTarget>();
  for (const full of [...listFiles(join(siteDir, "api", "v1")), ...listFiles(join(siteDir, "downloads"))]) {
    const path = sitePath(siteDir, full);
    targets.set(path, { path, ...hashFile(full) });
  }
  const listed: Array<{ modId: string; version: CatalogVersionLike }> = [];
  const catalogFile = join(siteDir, "api", "v1", "catalog.json");
  if (existsSync(catalogFile)) {
    const catalog = JSON.parse(readFileSync(catalogFile, "utf8")) as Partial<CatalogLike>;
    for (const mod of catalog.mods ?? [])
      for (const version of mod.versions ?? []) listed.push({ modId: mod.id, version });
  }
  for (const path of targets.keys()) {
    const modId = /^api\/v1\/mods\/([^/]+)\/versions\.json$/.exec(path)?.[1];
    if (!modId) continue;
    const document = JSON.parse(readFileSync(join(siteDir, path), "utf8")) as {
      versions?: CatalogVersionLike[];
    };
    for (const version of document.versions ?? []) listed.push({ modId, version });
  }
  for (const { modId, version } of listed) {
    const target = checkedArtifactTarget(siteDir, modId, version, (path) => targets.get(path));
    if (target) targets.set(target.path, target);
  }
  return [...targets.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
}

function readMetadata<T>(file: string): T | null {
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, "utf8")) as T;
}

/** The newest root version present under site/tuf, with its parsed metadata. */
export function loadLatestRoot(siteDir: string): { version: number; metadata: Metadata<Root> } | null {
  const dir = join(siteDir, TUF_DIR);
  if (!existsSync(dir)) return null;
  const versions = readdirSync(dir)
    .map((name) => /^(\d+)\.root\.json$/.exec(name)?.[1])
    .filter((v): v is string => v !== undefined)
    .map(Number)
    .sort((a, b) => b - a);
  const newest = versions[0];
  if (newest === undefined) return null;
  const json = JSON.parse(readFileSync(join(dir, `${newest}.root.json`), "utf8"));
  return { version: newest, metadata: Metadata.fromJSON(MetadataKind.Root, json) as Metadata<Root> };
}

export function serializeMetadata(metadata: Metadata<Root | Targets | Snapshot | Timestamp>): string {
  return `${JSON.stringify(metadata.toJSON(), null, 2)}\n`;
}

/**
 * The new versioned files of one signing run (bins, targets, snapshot). They never replace a file a
 * reader uses — nothing names them until timestamp.json does — so they need no rename, only to be
 * on disk before the timestamp is: all are written, then each is fsynced, then the directory once
 * (one journal flush instead of one per file: ~3 s for 1,024 bins on this VM's disk otherwise).
 * Files with identical bytes — the empty bins of a full signing, same version and expiry — are
 * hard links to one file.
 */
class VersionedFiles {
  private readonly bySha256 = new Map<string, string>();
  private readonly toSync: string[] = [];
  constructor(private readonly dir: string) {}

  write(name: string, text: string): void {
    const file = join(this.dir, name);
    // A leftover of a run that stopped before its timestamp: never served, safe to replace.
    rmSync(file, { force: true });
    const digest = sha256Hex(Buffer.from(text));
    const same = this.bySha256.get(digest);
    if (same) {
      linkSync(same, file);
      return;
    }
    writeFileSync(file, text);
    this.bySha256.set(digest, file);
    this.toSync.push(file);
  }

  sync(): void {
    for (const file of [...this.toSync, this.dir]) {
      const fd = openSync(file, "r");
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
  }
}

/** Publishes a root version (the first one from `svc keys init`, later ones from `svc keys rotate`). */
export function writeRoot(siteDir: string, root: Metadata<Root>): string[] {
  const dir = join(siteDir, TUF_DIR);
  mkdirSync(dir, { recursive: true });
  const text = serializeMetadata(root);
  const versioned = `${root.signed.version}.root.json`;
  writeFileAtomic(join(dir, versioned), text);
  writeFileAtomic(join(dir, "root.json"), text);
  return [`${TUF_DIR}/${versioned}`, `${TUF_DIR}/root.json`];
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

function newestChangesPage(paths: Iterable<string>): number | null {
  let newest: number | null = null;
  for (const path of paths) {
    const page = changesPageNumber(path);
    if (page !== null && (newest === null || page > newest)) newest = page;
  }
  return newest;
}

function succinctDelegationJson(keys: OnlineKeys) {
  const key = keys.keys.targets;
  return {
    keys: { [key.keyid]: tufKey(key).toJSON() },
    succinct_roles: {
      keyids: [key.keyid],
      threshold: 1,
      bit_length: BIN_BIT_LENGTH,
      name_prefix: BIN_NAME_PREFIX,
    },
  };
}

/** The succinct roles as the library computes them (SuccinctRoles is not re-exported by @tufjs/models). */
const binRoles = (() => {
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
  const roles = targets.delegations!.succinctRoles!;
  return { roleFor: (path: string) => roles.getRoleForTarget(path), all: [...roles.getRoles()] };
})();

/** The bin (delegated role name) that signs a target path. */
export function binForTarget(path: string): string {
  return binRoles.roleFor(path);
}

/** Every bin name, bins-000 ... bins-3ff. */
export function allBins(): readonly string[] {
  return binRoles.all;
}

function toSiteTarget(file: TargetFile): SiteTarget {
  const url = file.custom.url;
  return {
    path: file.path,
    length: file.length,
    sha256: file.hashes.sha256 ?? "",
    ...(typeof url === "string" ? { url } : {}),
  };
}

function toTargetFile(t: SiteTarget): TargetFile {
  return new TargetFile({
    path: t.path,
    length: t.length,
    hashes: { sha256: t.sha256 },
    ...(t.url ? { unrecognizedFields: { custom: { url: t.url } } } : {}),
  });
}

function sameTargetSet(current: Targets | null, next: ReadonlyMap<string, SiteTarget>): boolean {
  if (!current) return false;
  const entries = Object.values(current.targets);
  if (entries.length !== next.size) return false;
  return entries.every((c) => {
    const t = next.get(c.path);
    return t !== undefined && c.length === t.length && c.hashes.sha256 === t.sha256 && c.custom.url === t.url;
  });
}

/**
 * Versions only grow, also where the signer keeps no state: on GitHub the signed metadata is deployed
 * to Pages but not committed, so a run may not see the previous files. A version is therefore at
 * least the signing time in seconds, and at least one more than the newest this signer has seen.
 */
export function nextVersion(previous: number, at: Date, seen = 0): number {
  return Math.max(previous + 1, seen + 1, Math.floor(at.getTime() / 1000));
}

/**
 * A bin's next version: one more than its previous version, so that snapshot's 1,024 entries stay a
 * few distinct numbers that gzip folds away (epoch-second versions per bin would cost ~3 bytes of
 * entropy each on every refresh). A bin first signed without state takes the signing time in
 * seconds, which is above any version an earlier signer counted up to (one per publication).
 */
function nextBinVersion(previous: number, at: Date): number {
  return previous > 0 ? previous + 1 : Math.floor(at.getTime() / 1000);
}

function assertOnlineKeysOf(root: Root, keys: OnlineKeys): void {
  for (const role of ONLINE_ROLES) {
    const allowed = root.roles[role]?.keyIDs ?? [];
    if (!allowed.includes(keys.keys[role].keyid)) {
      throw new DistributionError(
        "tuf_key_mismatch",
        `the configured ${role} key ${keys.keys[role].keyid.slice(0, 12)} is not a ${role} key of root v${root.version}`,
      );
    }
  }
}

/**
 * How a local publication path signs (the adapters build it from SVC_TUF_ONLINE_KEYS). `now` is the
 * wall clock by default, not the publication's clock: expiry is judged by managers' real clocks.
 */
export interface SiteSigning {
  keys: OnlineKeys;
  now?: () => Date;
}

/**
 * Refuses a publication up front when its signing could not succeed (no root, or keys the root does
 * not name): checked under the publish lock before the commit, so a committed tree is never left
 * unsignable by a misconfiguration.
 */
export function assertCanSign(siteDir: string, signing: SiteSigning | null | undefined): void {
  if (!signing) return;
  const latestRoot = loadLatestRoot(siteDir);
  try {
    if (!latestRoot) {
      throw new DistributionError(
        "tuf_not_initialized",
        `signing keys are configured but ${siteDir} has no ${TUF_DIR}/N.root.json; run \`svc keys init\` first`,
      );
    }
    assertOnlineKeysOf(latestRoot.metadata.signed, signing.keys);
  } catch (error) {
    // A portal misconfiguration, reported through the portal's own error path (CLI and HTTP alike).
    if (error instanceof DistributionError)
      throw new SvcError("config_invalid", `${error.code}: ${error.message}; nothing was published`, {
        details: { code: error.code },
      });
    throw error;
  }
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

/**
 * The one signing step of every local publication path (import, the publish route, hide/unhide,
 * build, serve's start-up build, smoke --record): called under the publish lock right after the
 * commit, so the signed targets always describe the committed tree. Only the bins the committed
 * files fall in are re-signed, from the commit's own list of written and deleted files; `full`
 * (svc build) re-reads and re-hashes the whole site instead. Nothing changed: nothing signed (the
 * scheduled `svc keys sign` keeps the timestamp fresh).
 */
export function signAfterCommit(
  siteDir: string,
  signing: SiteSigning | null | undefined,
  change: { written: readonly string[]; deleted: readonly string[] },
  options: { full?: boolean } = {},
): SignResult | null {
  if (!signing) return null;
  if (change.written.length === 0 && change.deleted.length === 0) return null;
  const now = signing.now ?? (() => new Date());
  if (options.full) return signSite(siteDir, signing.keys, now);
  return signChanges(siteDir, signing.keys, change, now);
}

function expiresWithin(signed: { expires: string }, now: Date, days: number): boolean {
  return new Date(signed.expires).getTime() <= addDays(now, days).getTime();
}

/** The signed state as the live timestamp names it (each part null when absent). */
interface SignedState {
  timestamp: Metadata<Timestamp> | null;
  snapshot: SnapshotState | null;
  targets: Metadata<Targets> | null;
}

function loadState(dir: string): SignedState {
  const timestampJson = readMetadata<Record<string, unknown>>(join(dir, "timestamp.json"));
  const timestamp = timestampJson
    ? (Metadata.fromJSON(MetadataKind.Timestamp, timestampJson as never) as Metadata<Timestamp>)
    : null;
  const snapshotVersion = timestamp?.signed.snapshotMeta.version ?? 0;
  const snapshot = snapshotVersion ? readSnapshotState(join(dir, `${snapshotVersion}.snapshot.json`)) : null;
  const targetsVersion = snapshot?.meta.get("targets.json") ?? 0;
  const targetsJson = targetsVersion
    ? readMetadata<{ signed?: { delegations?: unknown } }>(join(dir, `${targetsVersion}.targets.json`))
    : null;
  // A targets file of the single-file layout (every target, no delegations) is not parsed: its
  // size would make the library's quadratic fromJSON the cost of the run, and it is replaced whole.
  const targets = targetsJson?.signed?.delegations
    ? (Metadata.fromJSON(MetadataKind.Targets, targetsJson as never) as Metadata<Targets>)
    : null;
  return { timestamp, snapshot, targets };
}

/**
 * What signing needs of the current snapshot, read as plain JSON: @tufjs/models builds a snapshot's
 * meta map (and a targets map) by spreading an accumulator per entry, quadratic in the entries —
 * ~0.4 s for 1,024 bins on each of fromJSON and toJSON. The signer never needs to verify its own
 * output, so it reads the versions directly.
 */
interface SnapshotState {
  version: number;
  expires: string;
  meta: Map<string, number>;
}

function readSnapshotState(file: string): SnapshotState | null {
  const json = readMetadata<{
    signed?: { version?: unknown; expires?: unknown; meta?: Record<string, { version?: unknown }> };
  }>(file);
  const signed = json?.signed;
  if (!signed || typeof signed.version !== "number" || typeof signed.expires !== "string") return null;
  const meta = new Map<string, number>();
  for (const [name, entry] of Object.entries(signed.meta ?? {})) {
    if (typeof entry?.version === "number") meta.set(name, entry.version);
  }
  return { version: signed.version, expires: signed.expires, meta };
}

/** The same JSON as Snapshot.toJSON, built in linear time (see SnapshotState). */
class LinearSnapshot extends Snapshot {
  override toJSON() {
    const meta: Record<string, ReturnType<MetaFile["toJSON"]>> = {};
    for (const [name, file] of Object.entries(this.meta)) meta[name] = file.toJSON();
    return {
      _type: this.type,
      meta,
      spec_version: this.specVersion,
      version: this.version,
      expires: this.expires,
      ...this.unrecognizedFields,
    };
  }
}

/** The same JSON as Targets.toJSON, built in linear time (see SnapshotState). */
export class LinearTargets extends Targets {
  override toJSON() {
    const targets: Record<string, ReturnType<TargetFile["toJSON"]>> = {};
    for (const [path, file] of Object.entries(this.targets)) targets[path] = file.toJSON();
    return {
      _type: this.type,
      spec_version: this.specVersion,
      version: this.version,
      expires: this.expires,
      targets,
      ...this.unrecognizedFields,
      ...(this.delegations ? { delegations: this.delegations.toJSON() } : {}),
    };
  }
}

/** A bin the snapshot names is gone (pruned by hand, a partial copy): the full path rebuilds it. */
class SignedStateIncomplete extends Error {}

/** Whether the current top-level targets delegates to the bins this signer writes, with its key. */
function delegatesToBins(targets: Targets | null, keys: OnlineKeys): boolean {
  const succinct = targets?.delegations?.succinctRoles;
  return (
    succinct !== undefined &&
    succinct.bitLength === BIN_BIT_LENGTH &&
    succinct.namePrefix === BIN_NAME_PREFIX &&
    succinct.keyIDs.length === 1 &&
    succinct.keyIDs[0] === keys.keys.targets.keyid
  );
}

/** A signed bin as signing needs it, read as plain JSON (see SnapshotState: no quadratic fromJSON). */
interface BinState {
  expires: string;
  targets: Map<string, SiteTarget>;
}

function loadBin(dir: string, snapshot: SnapshotState | null, bin: string): BinState | null {
  const version = snapshot?.meta.get(`${bin}.json`);
  if (!version) return null;
  const json = readMetadata<{
    signed?: {
      expires?: string;
      targets?: Record<string, { length: number; hashes?: { sha256?: string }; custom?: { url?: unknown } }>;
    };
  }>(join(dir, `${version}.${bin}.json`));
  if (!json?.signed?.expires) return null;
  const targets = new Map<string, SiteTarget>();
  for (const [path, t] of Object.entries(json.signed.targets ?? {})) {
    const url = t.custom?.url;
    targets.set(path, {
      path,
      length: t.length,
      sha256: t.hashes?.sha256 ?? "",
      ...(typeof url === "string" ? { url } : {}),
    });
  }
  return { expires: json.signed.expires, targets };
}

function sameTargetMaps(
  current: ReadonlyMap<string, SiteTarget>,
  next: ReadonlyMap<string, SiteTarget>,
): boolean {
  if (current.size !== next.size) return false;
  for (const [path, c] of current) {
    const t = next.get(path);
    if (!t || c.length !== t.length || c.sha256 !== t.sha256 || c.url !== t.url) return false;
  }
  return true;
}

/**
 * What one signing run should make true: the complete top-level target set and the complete target
 * set of each bin it names (bins it does not name keep their signed version). `force` re-signs every
 * named role even when unchanged (a key rotation or a layout change).
 */
interface SigningPlan {
  topLevel: Map<string, SiteTarget>;
  bins: Map<string, Map<string, SiteTarget>>;
  force: boolean;
  targetCount: number;
}

/**
 * Full signing (`svc keys sign`, `svc build`, the scheduled run): hashes the whole site, then
 * re-signs each role whose targets differ from its signed ones or whose expiry is near — a scheduled
 * run that finds nothing changed re-signs only the timestamp. Versions only ever grow (rollback
 * protection); the timestamp is always new (freeze protection).
 */
export function signSite(
  siteDir: string,
  keys: OnlineKeys,
  now: () => Date = () => new Date(),
  options: { liveTimestampVersion?: number; force?: boolean } = {},
): SignResult {
  const root = requireRoot(siteDir, keys);
  const dir = join(siteDir, TUF_DIR);
  const state = loadState(dir);
  const plan: SigningPlan = {
    topLevel: new Map(),
    bins: new Map(allBins().map((bin) => [bin, new Map()])),
    force: options.force === true || !delegatesToBins(state.targets?.signed ?? null, keys),
    targetCount: 0,
  };
  const siteTargets = collectSiteTargets(siteDir);
  plan.targetCount = siteTargets.length;
  const newestPage = newestChangesPage(siteTargets.map((t) => t.path));
  for (const t of siteTargets) {
    if (isTopLevelTarget(t.path, newestPage)) plan.topLevel.set(t.path, t);
    else plan.bins.get(binForTarget(t.path))!.set(t.path, t);
  }
  return applyPlan(dir, root, keys, state, plan, now(), options.liveTimestampVersion);
}

/**
 * Incremental signing after a commit: only the committed files are hashed and only their bins are
 * read and re-signed (O(one mod)). A changed per-mod versions document also brings its externally
 * hosted artifacts (`external/...`) and has each locally served artifact it lists checked against
 * its recorded sha256. Falls back to full signing when there is no bin layout to update yet.
 */
export function signChanges(
  siteDir: string,
  keys: OnlineKeys,
  change: { written: readonly string[]; deleted: readonly string[] },
  now: () => Date = () => new Date(),
): SignResult {
  const dir = join(siteDir, TUF_DIR);
  const state = loadState(dir);
  if (!state.snapshot || !state.targets || !delegatesToBins(state.targets.signed, keys)) {
    return signSite(siteDir, keys, now);
  }
  const root = requireRoot(siteDir, keys);
  const snapshot = state.snapshot;
  const topLevel = new Map(Object.values(state.targets.signed.targets).map((f) => [f.path, toSiteTarget(f)]));
  const bins = new Map<string, Map<string, SiteTarget>>();
  const binTargets = (bin: string): Map<string, SiteTarget> => {
    let targets = bins.get(bin);
    if (!targets) {
      const current = loadBin(dir, snapshot, bin);
      if (!current && snapshot.meta.has(`${bin}.json`)) {
        throw new SignedStateIncomplete(`${TUF_DIR}: the signed ${bin} is missing`);
      }
      targets = new Map(current?.targets ?? []);
      bins.set(bin, targets);
    }
    return targets;
  };
  const paths = new Set<string>();
  for (const committed of [...change.written, ...change.deleted]) {
    const path = targetPathOfCommitted(committed);
    if (path) paths.add(path);
  }
  const signedNewestPage = newestChangesPage(topLevel.keys());
  const newestPage = newestChangesPage([
    ...topLevel.keys(),
    ...[...paths].filter((path) => existsSync(join(siteDir, path))),
  ]);
  const placeOf = (path: string) =>
    isTopLevelTarget(path, newestPage) ? topLevel : binTargets(binForTarget(path));
  const setTarget = (path: string, target: SiteTarget | null) => {
    const targets = placeOf(path);
    if (target) targets.set(path, target);
    else targets.delete(path);
  };
  const targetOf = (path: string): SiteTarget | undefined => placeOf(path).get(path);

  try {
    // A new changes page became the newest: the one before it leaves top-level for its bin.
    if (signedNewestPage !== null && signedNewestPage !== newestPage) {
      const previous = `api/v1/changes/${signedNewestPage}.json`;
      const moved = topLevel.get(previous);
      topLevel.delete(previous);
      if (moved) binTargets(binForTarget(previous)).set(previous, moved);
    }
    for (const path of [...paths].sort()) {
      const full = join(siteDir, path);
      setTarget(path, existsSync(full) ? { path, ...hashFile(full) } : null);
    }
    for (const path of paths) {
      const modId = /^api\/v1\/mods\/([^/]+)\/versions\.json$/.exec(path)?.[1];
      if (!modId || !existsSync(join(siteDir, path))) continue;
      const document = JSON.parse(readFileSync(join(siteDir, path), "utf8")) as {
        versions?: CatalogVersionLike[];
      };
      for (const version of document.versions ?? []) {
        const target = checkedArtifactTarget(siteDir, modId, version, targetOf);
        if (target) setTarget(target.path, target);
      }
    }
  } catch (error) {
    if (error instanceof SignedStateIncomplete) return signSite(siteDir, keys, now);
    throw error;
  }
  const plan: SigningPlan = { topLevel, bins, force: false, targetCount: paths.size };
  return applyPlan(dir, root, keys, state, plan, now());
}

function requireRoot(siteDir: string, keys: OnlineKeys): Root {
  const latestRoot = loadLatestRoot(siteDir);
  if (!latestRoot) {
    throw new DistributionError(
      "tuf_not_initialized",
      `no ${TUF_DIR}/N.root.json under ${siteDir}; run \`svc keys init\` first`,
    );
  }
  assertOnlineKeysOf(latestRoot.metadata.signed, keys);
  return latestRoot.metadata.signed;
}

/**
 * The target of one version's package, checked like the full path checks it: a locally served
 * artifact must exist with the recorded sha256 and size (taken from its signed entry or, when it was
 * not signed yet, hashed now and returned to be signed); an external one becomes an `external/` target.
 */
function checkedArtifactTarget(
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
    served = { path, ...hashFile(full) };
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

/** Compact: bins and snapshot are read by machines only, and their size is what a refresh costs. */
function serializeCompact(metadata: Metadata<Targets | Snapshot>): string {
  return `${JSON.stringify(metadata.toJSON())}\n`;
}

function applyPlan(
  dir: string,
  root: Root,
  keys: OnlineKeys,
  state: SignedState,
  plan: SigningPlan,
  at: Date,
  liveTimestampVersion?: number,
): SignResult {
  mkdirSync(dir, { recursive: true });
  const files = new VersionedFiles(dir);
  const written: string[] = [];
  const currentSnapshot = state.snapshot;
  const snapshotMeta = new Map<string, number>(currentSnapshot?.meta ?? []);
  const targetsSigner = signerFor(keys.keys.targets);
  const binExpires = tufTime(addDays(at, EXPIRY_DAYS.targets));

  const resignedBins: string[] = [];
  for (const [bin, targets] of plan.bins) {
    const previousVersion = snapshotMeta.get(`${bin}.json`) ?? 0;
    const current = plan.force || !previousVersion ? null : loadBin(dir, currentSnapshot, bin);
    if (
      current &&
      sameTargetMaps(current.targets, targets) &&
      !expiresWithin(current, at, EXPIRY_DAYS.targets / 2)
    ) {
      continue;
    }
    const version = nextBinVersion(previousVersion, at);
    const signed = new LinearTargets({ version, specVersion: TUF_SPEC_VERSION, expires: binExpires });
    for (const t of [...targets.values()].sort((a, b) => (a.path < b.path ? -1 : 1)))
      signed.addTarget(toTargetFile(t));
    const metadata = new Metadata(signed);
    metadata.sign(targetsSigner);
    files.write(`${version}.${bin}.json`, serializeCompact(metadata));
    written.push(`${TUF_DIR}/${version}.${bin}.json`);
    snapshotMeta.set(`${bin}.json`, version);
    resignedBins.push(bin);
  }

  const currentTargets = state.targets?.signed ?? null;
  const targetsVersion = snapshotMeta.get("targets.json") ?? 0;
  let nextTargetsVersion = targetsVersion;
  if (
    plan.force ||
    !currentTargets ||
    !delegatesToBins(currentTargets, keys) ||
    !sameTargetSet(currentTargets, plan.topLevel) ||
    expiresWithin(currentTargets, at, EXPIRY_DAYS.targets / 2)
  ) {
    nextTargetsVersion = nextVersion(targetsVersion, at);
    const targets = Targets.fromJSON({
      _type: "targets",
      spec_version: TUF_SPEC_VERSION,
      version: nextTargetsVersion,
      expires: tufTime(addDays(at, EXPIRY_DAYS.targets)),
      targets: {},
      delegations: succinctDelegationJson(keys),
    });
    for (const t of [...plan.topLevel.values()].sort((a, b) => (a.path < b.path ? -1 : 1)))
      targets.addTarget(toTargetFile(t));
    const metadata = new Metadata(targets);
    metadata.sign(targetsSigner);
    files.write(`${nextTargetsVersion}.targets.json`, serializeMetadata(metadata));
    written.push(`${TUF_DIR}/${nextTargetsVersion}.targets.json`);
    snapshotMeta.set("targets.json", nextTargetsVersion);
  }

  const snapshotVersion = state.timestamp?.signed.snapshotMeta.version ?? 0;
  let nextSnapshotVersion = snapshotVersion;
  let snapshotText: string;
  if (
    written.length > 0 ||
    !currentSnapshot ||
    expiresWithin(currentSnapshot, at, EXPIRY_DAYS.snapshot / 2)
  ) {
    nextSnapshotVersion = nextVersion(snapshotVersion, at);
    // Bins first in name order, then targets.json: a stable order keeps consecutive snapshots alike.
    const names = [...snapshotMeta.keys()].filter((n) => n !== "targets.json").sort();
    const meta: Record<string, MetaFile> = {
      "targets.json": new MetaFile({ version: snapshotMeta.get("targets.json")! }),
    };
    for (const name of names) meta[name] = new MetaFile({ version: snapshotMeta.get(name)! });
    const snapshot = new LinearSnapshot({
      version: nextSnapshotVersion,
      specVersion: TUF_SPEC_VERSION,
      expires: tufTime(addDays(at, EXPIRY_DAYS.snapshot)),
      meta,
    });
    const metadata = new Metadata(snapshot);
    metadata.sign(signerFor(keys.keys.snapshot));
    snapshotText = serializeCompact(metadata);
    files.write(`${nextSnapshotVersion}.snapshot.json`, snapshotText);
    written.push(`${TUF_DIR}/${nextSnapshotVersion}.snapshot.json`);
  } else {
    snapshotText = readFileSync(join(dir, `${snapshotVersion}.snapshot.json`), "utf8");
  }

  const timestampVersion = nextVersion(state.timestamp?.signed.version ?? 0, at, liveTimestampVersion);
  const snapshotBytes = Buffer.from(snapshotText);
  const timestamp = new Timestamp({
    version: timestampVersion,
    specVersion: TUF_SPEC_VERSION,
    expires: tufTime(addDays(at, EXPIRY_DAYS.timestamp)),
    snapshotMeta: new MetaFile({
      version: nextSnapshotVersion,
      length: snapshotBytes.length,
      hashes: { sha256: sha256Hex(snapshotBytes) },
    }),
  });
  const timestampMetadata = new Metadata(timestamp);
  timestampMetadata.sign(signerFor(keys.keys.timestamp));
  files.sync();
  // Last: until this rename lands, readers see the previous, still complete, set.
  writeFileAtomic(join(dir, "timestamp.json"), serializeMetadata(timestampMetadata));
  written.push(`${TUF_DIR}/timestamp.json`);

  pruneOldVersions(dir, ["targets", "snapshot", ...resignedBins], {
    targets: nextTargetsVersion,
    snapshot: nextSnapshotVersion,
    ...Object.fromEntries(resignedBins.map((bin) => [bin, snapshotMeta.get(`${bin}.json`)!])),
  });
  return {
    rootVersion: root.version,
    targetsVersion: nextTargetsVersion,
    snapshotVersion: nextSnapshotVersion,
    timestampVersion,
    targetCount: plan.targetCount,
    binsSigned: resignedBins,
    written,
  };
}

/** Keeps KEEP_OLD_VERSIONS files behind the newest of each role just re-signed; one directory listing. */
function pruneOldVersions(dir: string, roles: readonly string[], newest: Record<string, number>): void {
  const wanted = new Set(roles);
  const byRole = new Map<string, number[]>();
  for (const name of readdirSync(dir)) {
    const match = /^(\d+)\.(.+)\.json$/.exec(name);
    if (!match || !wanted.has(match[2]!)) continue;
    const version = Number(match[1]);
    if (version >= newest[match[2]!]!) continue;
    byRole.set(match[2]!, [...(byRole.get(match[2]!) ?? []), version]);
  }
  for (const [role, versions] of byRole) {
    for (const version of versions.sort((x, y) => y - x).slice(KEEP_OLD_VERSIONS)) {
      rmSync(join(dir, `${version}.${role}.json`), { force: true });
    }
  }
}

export type SignatureStatus =
  | { signed: true; rootVersion: number; timestampVersion: number; expires: string }
  | { signed: false; reason: "no_root" | "no_timestamp" | "timestamp_expired"; detail: string };

/** What readiness reports: whether the site carries fresh signed metadata. */
export function signatureStatus(siteDir: string, now: Date = new Date()): SignatureStatus {
  const root = loadLatestRoot(siteDir);
  if (!root)
    return { signed: false, reason: "no_root", detail: `no ${TUF_DIR}/N.root.json; run svc keys init` };
  const json = readMetadata<{ signed: { version: number; expires: string } }>(
    join(siteDir, TUF_DIR, "timestamp.json"),
  );
  if (!json) return { signed: false, reason: "no_timestamp", detail: "the site was never signed (svc sign)" };
  if (new Date(json.signed.expires) <= now) {
    return {
      signed: false,
      reason: "timestamp_expired",
      detail: `timestamp expired at ${json.signed.expires}`,
    };
  }
  return {
    signed: true,
    rootVersion: root.version,
    timestampVersion: json.signed.version,
    expires: json.signed.expires,
  };
}
