import { createHash } from "node:crypto";
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
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
  tufTime,
} from "./tuf-keys.ts";

/**
 * Layout (served by Pages and the local server as plain static files):
 *   site/tuf/{N}.root.json        every root version, so a client can walk rotations one by one
 *   site/tuf/root.json            a copy of the newest root, for bootstrapping (pin it, never trust it blindly)
 *   site/tuf/{N}.targets.json     consistent snapshots: a reader mid-publication still finds the
 *   site/tuf/{N}.snapshot.json      exact versions its timestamp names
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
  targetCount: number;
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

/** The target path of a package: its site path when the portal serves it, else the `external/` mapping. */
export function artifactTargetPath(baseUrl: string, modId: string, version: CatalogVersionLike): string {
  const local = `${baseUrl.replace(/\/+$/, "")}/downloads/mods/`;
  if (version.packageUrl.startsWith(local)) return new URL(version.packageUrl).pathname.replace(/^\/+/, "");
  return `external/mods/${modId}/${version.version}/${version.fileName}`;
}

function sha256Of(bytes: Buffer): string {
  return createHash("sha256").update(bytes).digest("hex");
}

function hashFile(path: string): { length: number; sha256: string } {
  const bytes = readFileSync(path);
  return { length: bytes.length, sha256: sha256Of(bytes) };
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
 * and each externally hosted artifact the catalog lists. A served artifact whose bytes disagree with
 * the sha256 the catalog records is never signed.
 */
export function collectSiteTargets(siteDir: string): SiteTarget[] {
  const targets = new Map<string, SiteTarget>();
  for (const full of [...listFiles(join(siteDir, "api", "v1")), ...listFiles(join(siteDir, "downloads"))]) {
    const path = sitePath(siteDir, full);
    targets.set(path, { path, ...hashFile(full) });
  }
  const catalogFile = join(siteDir, "api", "v1", "catalog.json");
  if (!existsSync(catalogFile)) return [...targets.values()];
  const catalog = JSON.parse(readFileSync(catalogFile, "utf8")) as CatalogLike;
  for (const mod of catalog.mods) {
    for (const version of mod.versions) {
      const path = artifactTargetPath(catalog.baseUrl, mod.id, version);
      const served = targets.get(path);
      if (served) {
        if (served.sha256 !== version.sha256 || served.length !== version.packageSizeBytes) {
          throw new DistributionError(
            "artifact_mismatch",
            `site/${path} does not match the sha256/size its catalog entry records; refusing to sign it`,
            { path, served, recorded: { sha256: version.sha256, length: version.packageSizeBytes } },
          );
        }
        continue;
      }
      if (path.startsWith("downloads/")) {
        throw new DistributionError(
          "artifact_mismatch",
          `the catalog lists ${path} but site/${path} is missing`,
        );
      }
      targets.set(path, {
        path,
        length: version.packageSizeBytes,
        sha256: version.sha256,
        url: version.packageUrl,
      });
    }
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

/** Write-then-rename with fsync, so a crash leaves either the old file or the new one. */
function writeFileAtomic(file: string, text: string): void {
  const temp = `${file}.tmp-${process.pid}`;
  const fd = openSync(temp, "w");
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
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

function sameTargets(current: Targets, next: SiteTarget[]): boolean {
  const entries = Object.values(current.targets);
  if (entries.length !== next.length) return false;
  return next.every((t) => {
    const c = current.targets[t.path];
    return c !== undefined && c.length === t.length && c.hashes.sha256 === t.sha256 && c.custom.url === t.url;
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
 * The one signing step of every local publication path (import, the publish route, hide/unhide,
 * build, serve's start-up build, smoke --record): called under the publish lock right after the
 * commit, so the signed targets always describe the committed tree. Nothing changed: nothing signed
 * (the scheduled `svc keys sign` keeps the timestamp fresh).
 */
export function signAfterCommit(
  siteDir: string,
  signing: SiteSigning | null | undefined,
  change: { written: readonly string[]; deleted: readonly string[] },
): SignResult | null {
  if (!signing) return null;
  if (change.written.length === 0 && change.deleted.length === 0) return null;
  return signSite(siteDir, signing.keys, signing.now ?? (() => new Date()));
}

function expiresWithin(signed: { expires: string }, now: Date, days: number): boolean {
  return new Date(signed.expires).getTime() <= addDays(now, days).getTime();
}

/**
 * Signs the built site with the online keys: a new targets version when any target changed (or
 * targets is past half its life), a new snapshot when targets changed (or past half its life), and
 * always a new timestamp. Run after every publication and on a schedule (the scheduled run is what
 * keeps the one-day timestamp fresh: freeze protection). Versions only ever grow (rollback protection).
 */
export function signSite(
  siteDir: string,
  keys: OnlineKeys,
  now: () => Date = () => new Date(),
  options: { liveTimestampVersion?: number } = {},
): SignResult {
  const at = now();
  const latestRoot = loadLatestRoot(siteDir);
  if (!latestRoot) {
    throw new DistributionError(
      "tuf_not_initialized",
      `no ${TUF_DIR}/N.root.json under ${siteDir}; run \`svc keys init\` first`,
    );
  }
  const root = latestRoot.metadata.signed;
  assertOnlineKeysOf(root, keys);
  const dir = join(siteDir, TUF_DIR);
  const siteTargets = collectSiteTargets(siteDir);

  const currentTimestampJson = readMetadata<Record<string, unknown>>(join(dir, "timestamp.json"));
  const currentTimestamp = currentTimestampJson
    ? (Metadata.fromJSON(MetadataKind.Timestamp, currentTimestampJson as never) as Metadata<Timestamp>)
    : null;
  const snapshotVersion = currentTimestamp?.signed.snapshotMeta.version ?? 0;
  const currentSnapshotJson = snapshotVersion
    ? readMetadata<Record<string, unknown>>(join(dir, `${snapshotVersion}.snapshot.json`))
    : null;
  const currentSnapshot = currentSnapshotJson
    ? (Metadata.fromJSON(MetadataKind.Snapshot, currentSnapshotJson as never) as Metadata<Snapshot>)
    : null;
  const targetsVersion = currentSnapshot?.signed.meta["targets.json"]?.version ?? 0;
  const currentTargetsJson = targetsVersion
    ? readMetadata<Record<string, unknown>>(join(dir, `${targetsVersion}.targets.json`))
    : null;
  const currentTargets = currentTargetsJson
    ? (Metadata.fromJSON(MetadataKind.Targets, currentTargetsJson as never) as Metadata<Targets>)
    : null;

  const written: string[] = [];
  const newTargets =
    !currentTargets ||
    !sameTargets(currentTargets.signed, siteTargets) ||
    expiresWithin(currentTargets.signed, at, EXPIRY_DAYS.targets / 2);
  let nextTargetsVersion = targetsVersion;
  if (newTargets) {
    nextTargetsVersion = nextVersion(targetsVersion, at);
    const targets = new Targets({
      version: nextTargetsVersion,
      specVersion: TUF_SPEC_VERSION,
      expires: tufTime(addDays(at, EXPIRY_DAYS.targets)),
    });
    for (const t of siteTargets) {
      targets.addTarget(
        new TargetFile({
          path: t.path,
          length: t.length,
          hashes: { sha256: t.sha256 },
          ...(t.url ? { unrecognizedFields: { custom: { url: t.url } } } : {}),
        }),
      );
    }
    const metadata = new Metadata(targets);
    metadata.sign(signerFor(keys.keys.targets));
    mkdirSync(dir, { recursive: true });
    writeFileAtomic(join(dir, `${nextTargetsVersion}.targets.json`), serializeMetadata(metadata));
    written.push(`${TUF_DIR}/${nextTargetsVersion}.targets.json`);
  }

  let nextSnapshotVersion = snapshotVersion;
  let snapshotText: string;
  if (newTargets || !currentSnapshot || expiresWithin(currentSnapshot.signed, at, EXPIRY_DAYS.snapshot / 2)) {
    nextSnapshotVersion = nextVersion(snapshotVersion, at);
    const snapshot = new Snapshot({
      version: nextSnapshotVersion,
      specVersion: TUF_SPEC_VERSION,
      expires: tufTime(addDays(at, EXPIRY_DAYS.snapshot)),
      meta: { "targets.json": new MetaFile({ version: nextTargetsVersion }) },
    });
    const metadata = new Metadata(snapshot);
    metadata.sign(signerFor(keys.keys.snapshot));
    snapshotText = serializeMetadata(metadata);
    writeFileAtomic(join(dir, `${nextSnapshotVersion}.snapshot.json`), snapshotText);
    written.push(`${TUF_DIR}/${nextSnapshotVersion}.snapshot.json`);
  } else {
    snapshotText = readFileSync(join(dir, `${snapshotVersion}.snapshot.json`), "utf8");
  }

  const timestampVersion = nextVersion(
    currentTimestamp?.signed.version ?? 0,
    at,
    options.liveTimestampVersion,
  );
  const snapshotBytes = Buffer.from(snapshotText);
  const timestamp = new Timestamp({
    version: timestampVersion,
    specVersion: TUF_SPEC_VERSION,
    expires: tufTime(addDays(at, EXPIRY_DAYS.timestamp)),
    snapshotMeta: new MetaFile({
      version: nextSnapshotVersion,
      length: snapshotBytes.length,
      hashes: { sha256: sha256Of(snapshotBytes) },
    }),
  });
  const timestampMetadata = new Metadata(timestamp);
  timestampMetadata.sign(signerFor(keys.keys.timestamp));
  // Last: until this rename lands, readers see the previous, still complete, set.
  writeFileAtomic(join(dir, "timestamp.json"), serializeMetadata(timestampMetadata));
  written.push(`${TUF_DIR}/timestamp.json`);

  pruneOldVersions(dir, "targets", nextTargetsVersion);
  pruneOldVersions(dir, "snapshot", nextSnapshotVersion);
  return {
    rootVersion: root.version,
    targetsVersion: nextTargetsVersion,
    snapshotVersion: nextSnapshotVersion,
    timestampVersion,
    targetCount: siteTargets.length,
    written,
  };
}

function pruneOldVersions(dir: string, role: "targets" | "snapshot", newest: number): void {
  const pattern = new RegExp(`^(\\d+)\\.${role}\\.json$`);
  const older = readdirSync(dir)
    .map((name) => ({ name, version: Number(pattern.exec(name)?.[1] ?? Number.NaN) }))
    .filter((f) => Number.isFinite(f.version) && f.version < newest)
    .sort((x, y) => y.version - x.version);
  for (const file of older.slice(KEEP_OLD_VERSIONS)) rmSync(join(dir, file.name), { force: true });
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
