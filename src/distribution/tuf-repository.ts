import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Root } from "@tufjs/models";
import { SvcError } from "../errors.ts";
import { DistributionError } from "./errors.ts";
import { type OnlineKeys, signerFor } from "./tuf-keys.ts";
import {
  allBins,
  binForTarget,
  type CatalogVersionLike,
  isTopLevelTarget,
  newestChangesPage,
  type SiteTarget,
  TUF_DIR,
  targetPathOfCommitted,
  topLevelPaths,
} from "./tuf-layout.ts";
import { assertOnlineKeysOf, loadLatestRoot, requireRoot } from "./tuf-root.ts";
import { loadBin, loadSignedState, type SignedState } from "./tuf-signed-state.ts";
import { checkedArtifactTarget, collectBinnedTargets, hashSiteFile } from "./tuf-site-targets.ts";
import { signSnapshot } from "./tuf-snapshot.ts";
import {
  delegatesToBins,
  signBins,
  signedByTargetsKey,
  signTopLevelTargets,
  toSiteTarget,
} from "./tuf-targets.ts";
import { signTimestamp } from "./tuf-timestamp.ts";
import { pruneOldVersions, type SigningRun, VersionedFiles } from "./tuf-versioned-files.ts";

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

/**
 * How a local publication path signs (the adapters build it from SVC_TUF_ONLINE_KEYS, or the local
 * portal's data folder). `keys` is the bundle itself, or a loader a local portal reads at each
 * publication: its keys may appear while it runs (`svc keys init` in another shell), and a portal
 * whose site is signed must never publish without them. `now` is the wall clock by default, not the
 * publication's clock: expiry is judged by managers' real clocks.
 */
export interface SiteSigning {
  keys: OnlineKeys | (() => OnlineKeys | null);
  now?: () => Date;
}

/** The signing a publication does now: the keys resolved (a loader that finds none: unsigned). */
export function resolveSigning(
  signing: SiteSigning | null | undefined,
): { keys: OnlineKeys; now?: () => Date } | null {
  if (!signing) return null;
  const keys = typeof signing.keys === "function" ? signing.keys() : signing.keys;
  if (!keys) return null;
  return signing.now ? { keys, now: signing.now } : { keys };
}

/** The refusal of a local publication on a signed site whose online keys cannot be found. */
export function signingKeysMissingError(siteDir: string, rootVersion: number): SvcError {
  return new SvcError(
    "config_invalid",
    `signing_keys_missing: ${siteDir}/${TUF_DIR} holds root v${rootVersion}, so every publication must be signed, but no online keys are configured: set SVC_TUF_ONLINE_KEYS to the online.keys.json \`svc keys init\` wrote (or keep that file as online.keys.json in the portal's data folder, .data/ or SVC_DATA_DIR, where svc keys init puts a copy); nothing was published`,
    { details: { code: "signing_keys_missing", variable: "SVC_TUF_ONLINE_KEYS" } },
  );
}

/**
 * Refuses a publication up front when its signing could not succeed (no root, or keys the root does
 * not name), and a local portal's publication on a signed site when its keys are missing: checked
 * under the publish lock before the commit, so a committed tree is never left unsignable (or its
 * signed metadata stale) by a misconfiguration. No signing at all (null: the GitHub publish job,
 * whose own step signs) is not checked.
 */
export function assertCanSign(siteDir: string, signing: SiteSigning | null | undefined): void {
  if (!signing) return;
  const latestRoot = loadLatestRoot(siteDir);
  const resolved = resolveSigning(signing);
  if (!resolved) {
    // A local portal without keys: unsigned is fine until the site has a root.
    if (latestRoot) throw signingKeysMissingError(siteDir, latestRoot.version);
    return;
  }
  try {
    if (!latestRoot) {
      throw new DistributionError(
        "tuf_not_initialized",
        `signing keys are configured but ${siteDir} has no ${TUF_DIR}/N.root.json; run \`svc keys init\` first`,
      );
    }
    assertOnlineKeysOf(latestRoot.metadata.signed, resolved.keys);
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
 * commit, so the signed targets always describe the committed tree. Only the bins the committed
 * files fall in are re-signed, from the commit's own list of written and deleted files; `full`
 * (svc build) re-reads and re-hashes the whole site instead. Nothing changed: nothing signed (the
 * scheduled `svc keys sign` keeps the timestamp fresh).
 */
export function signAfterCommit(
  siteDir: string,
  signing: SiteSigning | null | undefined,
  change: CommittedChange,
  options: { full?: boolean } = {},
): SignResult | null {
  const resolved = resolveSigning(signing);
  if (!resolved) return null;
  if (change.written.length === 0 && change.deleted.length === 0) return null;
  const now = resolved.now ?? (() => new Date());
  if (options.full) return signSite(siteDir, resolved.keys, now);
  return signChanges(siteDir, resolved.keys, change, now);
}

/**
 * What a commit changed: paths as the committer reports them (root- or site-relative), and, when it
 * measured them while writing, each written file's length and sha256 (so signing need not read
 * megabytes of index documents back; only a file this process itself just wrote, under the publish
 * lock, is ever described this way).
 */
export interface CommittedChange {
  written: readonly string[];
  deleted: readonly string[];
  digests?: ReadonlyMap<string, { length: number; sha256: string }>;
}

/** A bin the snapshot names is gone (pruned by hand, a partial copy): the full path rebuilds it. */
class SignedStateIncomplete extends Error {}

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
  const state = loadSignedState(dir);
  const site = collectBinnedTargets(siteDir);
  const plan: SigningPlan = {
    topLevel: new Map(),
    bins: new Map(allBins().map((bin, i) => [bin, site.byBin[i]!])),
    force:
      options.force === true ||
      !delegatesToBins(state.targets?.signed ?? null, keys) ||
      !signedByTargetsKey(state.targets, keys),
    targetCount: site.count,
  };
  // The index documents and the newest changes page (files, so placed in their bins): signed top-level.
  for (const path of topLevelPaths(site.newestChangesPage)) {
    const bin = plan.bins.get(binForTarget(path))!;
    const target = bin.get(path);
    if (!target) continue;
    bin.delete(path);
    plan.topLevel.set(path, target);
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
  change: CommittedChange,
  now: () => Date = () => new Date(),
): SignResult {
  const dir = join(siteDir, TUF_DIR);
  const state = loadSignedState(dir);
  if (
    !state.snapshot ||
    !state.targets ||
    !delegatesToBins(state.targets.signed, keys) ||
    !signedByTargetsKey(state.targets, keys)
  ) {
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
  const measured = new Map<string, { length: number; sha256: string }>();
  for (const committed of [...change.written, ...change.deleted]) {
    const path = targetPathOfCommitted(committed);
    if (!path) continue;
    paths.add(path);
    const digest = change.digests?.get(committed);
    if (digest && change.written.includes(committed)) measured.set(path, digest);
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
      if (!existsSync(full)) setTarget(path, null);
      else {
        const digest = measured.get(path) ?? hashSiteFile(full);
        setTarget(path, { path, length: digest.length, sha256: digest.sha256 });
      }
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

/**
 * Bottom-up: bins, targets, snapshot, then the timestamp, each naming the versions below it; only the
 * timestamp makes the new files visible, so it is written last.
 */
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
  const run: SigningRun = {
    dir,
    keys,
    at,
    files: new VersionedFiles(dir),
    written: [],
    snapshotMeta: new Map<string, number>(state.snapshot?.meta ?? []),
  };
  const targetsSigner = signerFor(keys.keys.targets);
  let resignedBins: string[];
  let targetsVersion: number;
  let snapshot: { version: number; text: string };
  let timestampVersion: number;
  try {
    resignedBins = signBins(run, targetsSigner, state.snapshot, plan.bins, plan.force);
    targetsVersion = signTopLevelTargets(
      run,
      targetsSigner,
      state.targets?.signed ?? null,
      plan.topLevel,
      plan.force,
    );
    snapshot = signSnapshot(run, state);
    timestampVersion = signTimestamp(
      run,
      state.timestamp?.signed.version ?? 0,
      snapshot,
      liveTimestampVersion,
    );
  } catch (error) {
    // No timestamp names what this run wrote; a writer thread it started is stopped (a long-running
    // portal would otherwise keep it).
    run.files.abort();
    throw error;
  }

  pruneOldVersions(dir, ["targets", "snapshot", ...resignedBins], {
    targets: targetsVersion,
    snapshot: snapshot.version,
    ...Object.fromEntries(resignedBins.map((bin) => [bin, run.snapshotMeta.get(`${bin}.json`)!])),
  });
  return {
    rootVersion: root.version,
    targetsVersion,
    snapshotVersion: snapshot.version,
    timestampVersion,
    targetCount: plan.targetCount,
    binsSigned: resignedBins,
    written: run.written,
  };
}
