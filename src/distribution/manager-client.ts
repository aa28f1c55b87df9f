import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import * as semver from "../contracts/semver.ts";
import { writeFileAtomic } from "../lib/atomic-write.ts";
import { sha256Hex } from "../lib/hash.ts";
import { DistributionError } from "./errors.ts";
import {
  assertPlaceable,
  assertSameLayout,
  type PlacedMod,
  STAGING_DIR,
  stageFiles,
  swapGameFiles,
  swapModFolders,
} from "./install-layout.ts";
import {
  INSTALL_MANIFEST,
  type InstallLayout,
  type InstalledMod,
  type InstallManifest,
  placedPath,
  readManifest,
  type VerifyReport,
  verifyInstall,
  writeManifest,
} from "./install-manifest.ts";
import { keepPlayerSettings, readModSettings } from "./mod-settings.ts";
import {
  type InstalledFile,
  matchPublishedFiles,
  type PublishedFile,
  readPackageFiles,
  safeInstallPath,
  safeJoin,
} from "./package-files.ts";
import {
  type CatalogVersion,
  type ResolvedRelease,
  SignedMirror,
  type SignedMirrorOptions,
} from "./signed-mirror.ts";

export type ManagerClientOptions = SignedMirrorOptions;

export interface InstallOptions {
  /** A version built for another game build is never picked. */
  gameBuild?: string;
  /**
   * `game`: `dir` is the game folder and each package is laid over it as the package guide says
   * (the signed runtime layout names the mods folder and the runtime loader's own files);
   * `mod-folder` (default): each package into `<dir>/<modId>/`.
   */
  layout?: "game" | "mod-folder";
}

export interface InstalledRelease {
  modId: string;
  version: string;
  files: number;
  /** Settings whose value the player had chosen and the new version still allows. */
  keptSettings: string[];
  /** The installed version this one replaces, when the portal had withdrawn it. */
  replacesWithdrawn?: string;
}

export interface RepairReport extends VerifyReport {
  /** What repair wrote, by package path; a withdrawn version is not fetched again, so not repaired. */
  rewritten: Array<{ modId: string; path: string }>;
}

const newestFirst = (a: CatalogVersion, b: CatalogVersion) => semver.rcompare(a.version, b.version);

/** Resolves, installs, verifies and repairs mods from a signed mirror. */
export class ManagerClient {
  private readonly mirror: SignedMirror;

  constructor(options: ManagerClientOptions) {
    this.mirror = new SignedMirror(options);
  }

  refresh(): Promise<void> {
    return this.mirror.refresh();
  }

  fetchDocument(path: string): Promise<Buffer> {
    return this.mirror.fetchDocument(path);
  }

  /** One mod's signed versions (svc.mod-versions.v1), or null when the signed metadata does not list the mod. */
  modListing(modId: string): Promise<CatalogVersion[] | null> {
    return this.mirror.modListing(modId);
  }

  downloadPackage(release: ResolvedRelease): Promise<Buffer> {
    return this.mirror.downloadPackage(release);
  }

  publishedVersion(
    modId: string,
    version: string,
  ): Promise<(CatalogVersion & { files?: PublishedFile[] }) | null> {
    return this.mirror.publishedVersion(modId, version);
  }

  publishedFiles(modId: string, version: string): Promise<PublishedFile[] | null> {
    return this.mirror.publishedFiles(modId, version);
  }

  /**
   * The game layout from the signed runtime profile: `layout.modsPath` (e.g. Binaries/Win64/Mods),
   * where the runtime loader reads mods and where a package's root files go, and `layout.files`,
   * the loader's own files, which no mod may replace.
   */
  async gameLayout(): Promise<{ layout: InstallLayout; reserved: string[] }> {
    const runtime = JSON.parse(
      (await this.mirror.fetchDocument("api/v1/runtime/latest.json")).toString("utf8"),
    ) as { layout?: { modsPath?: unknown; files?: unknown } };
    const modsPath = runtime.layout?.modsPath;
    if (typeof modsPath !== "string" || modsPath === "" || modsPath.endsWith("/")) {
      throw new DistributionError(
        "target_unknown",
        `the signed runtime layout names no modsPath a folder can be (${JSON.stringify(modsPath)})`,
      );
    }
    // Checked as a plain relative path, whatever folder it will later be joined to.
    safeJoin(resolve("/game"), modsPath);
    const files = runtime.layout?.files;
    const reserved = Array.isArray(files) ? files.filter((f): f is string => typeof f === "string") : [];
    return { layout: { kind: "game", modsPath }, reserved };
  }

  /**
   * Every installed version the signed catalog no longer offers: not listed in its mod's signed
   * versions.json (a moderator hid it), not downloadable, or listed with other bytes. Each comes
   * with the newest version still offered for the same game build, or null.
   */
  async withdrawnVersions(manifest: InstallManifest): Promise<VerifyReport["withdrawn"]> {
    const withdrawn: VerifyReport["withdrawn"] = [];
    for (const [modId, mod] of Object.entries(manifest.mods).sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (await this.isOffered(modId, mod)) continue;
      const listed = await this.mirror.signedModVersions(modId);
      withdrawn.push({
        modId,
        version: mod.version,
        newestVisible: newestVisible(listed, mod.targetGameBuild),
      });
    }
    return withdrawn;
  }

  /**
   * Picks the newest version of each requested mod and of each required dependency that satisfies
   * every range seen, for the game build (a version built for another build is never picked).
   */
  async resolve(
    requests: Array<{ modId: string; range: string }>,
    gameBuild?: string,
  ): Promise<ResolvedRelease[]> {
    const chosen = new Map<string, ResolvedRelease>();
    const ranges = new Map<string, string[]>();
    const queue = [...requests];
    while (queue.length > 0) {
      const { modId, range } = queue.shift()!;
      ranges.set(modId, [...(ranges.get(modId) ?? []), range]);
      const existing = chosen.get(modId);
      if (existing) {
        if (!semver.satisfies(existing.version.version, range)) {
          throw new DistributionError(
            "dependency_unresolved",
            `${modId}@${existing.version.version} was chosen but ${range} is also required`,
            { modId, ranges: ranges.get(modId) },
          );
        }
        continue;
      }
      // Only this mod's signed versions.json (and its bin): never catalog.json, which lists every mod.
      const listing = await this.mirror.modListing(modId);
      if (listing === null) {
        throw new DistributionError(
          "mod_not_listed",
          `${modId} is not listed in the signed catalog of ${this.mirror.mirrorUrl} (its signed metadata names no api/v1/mods/${modId}/versions.json and the mirror serves none): check the id`,
          { modId, range, gameBuild, newestVisible: null },
        );
      }
      const listed = listing;
      const candidates = listed
        .filter((v) => v.downloadEnabled && semver.satisfies(v.version, range))
        .filter((v) => (gameBuild ? v.targetGameBuild === gameBuild : true))
        .sort(newestFirst);
      const pick = candidates[0];
      if (!pick) {
        const offer = newestVisible(listed, gameBuild);
        throw new DistributionError(
          "dependency_unresolved",
          `no published ${modId} satisfies ${range}${gameBuild ? ` for game build ${gameBuild}` : ""}${
            offer ? `; the newest visible version is ${offer} (svc install ${modId}@${offer})` : ""
          }`,
          { modId, range, gameBuild, newestVisible: offer },
        );
      }
      chosen.set(modId, { modId, version: pick });
      for (const dep of pick.dependencies) {
        if (!dep.optional) queue.push({ modId: dep.modId, range: dep.versionRange });
      }
    }
    return [...chosen.values()];
  }

  /**
   * Installs each resolved release into `dir` under the layout asked for. Every package is
   * downloaded, verified, checked against its signed per-file list and the layout's rules, and
   * written to a staging folder first; only then are files swapped in and the manifest rewritten,
   * so a refusal at any step leaves the installation as it was. A settings file the player changed
   * keeps every value the new version still allows.
   */
  async install(
    dir: string,
    requests: Array<{ modId: string; range: string }>,
    options: InstallOptions = {},
  ): Promise<InstalledRelease[]> {
    const root = resolve(dir);
    const game = options.layout === "game" ? await this.gameLayout() : null;
    const manifest: InstallManifest = readManifest(root) ?? {
      schema: "svc.install-manifest.v1",
      mirrorUrl: this.mirror.mirrorUrl,
      ...(game ? { layout: game.layout } : {}),
      mods: {},
    };
    // The manifest's layout wins over a runtime profile that later moved its mods folder: every file
    // already placed stays where the manifest says it is.
    const layout: InstallLayout = manifest.layout ?? game?.layout ?? { kind: "mod-folder" };
    assertSameLayout(root, manifest, game?.layout ?? { kind: "mod-folder" });
    let releases: ResolvedRelease[];
    try {
      releases = await this.resolve(requests, options.gameBuild);
    } catch (error) {
      throw await this.withdrawnRefusal(manifest, error);
    }
    const prepared: Array<
      PlacedMod & CarriedSettings & { release: ResolvedRelease; path: string; replacesWithdrawn?: string }
    > = [];
    for (const release of releases) {
      // The mod id names a folder: even a signed catalog does not get to pick `..` or a separator.
      if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(release.modId)) {
        throw new DistributionError(
          "path_escape",
          `mod id ${JSON.stringify(release.modId)} is not a plain folder name`,
        );
      }
      const bytes = await this.mirror.downloadPackage(release);
      const files = readPackageFiles(bytes, join(root, release.modId));
      const published = await this.mirror.publishedFiles(release.modId, release.version.version);
      if (published) matchPublishedFiles(release.modId, release.version.version, files, published);
      const { path } = await this.mirror.packageTarget(release);
      const previous = manifest.mods[release.modId];
      const replaced =
        previous &&
        previous.version !== release.version.version &&
        !(await this.isOffered(release.modId, previous))
          ? { replacesWithdrawn: previous.version }
          : {};
      prepared.push({
        release,
        path,
        modId: release.modId,
        ...carrySettings(root, manifest, release, files),
        ...replaced,
      });
    }
    assertPlaceable(root, manifest, layout, prepared, game?.reserved ?? []);
    const staging = join(root, STAGING_DIR);
    rmSync(staging, { recursive: true, force: true });
    try {
      stageFiles(staging, prepared);
      if (layout.kind === "game") swapGameFiles(root, staging, manifest, layout, prepared);
      else swapModFolders(root, staging, prepared);
      for (const { release, path, files, configFile } of prepared) {
        manifest.mods[release.modId] = {
          version: release.version.version,
          packageSha256: release.version.sha256,
          packageSizeBytes: release.version.packageSizeBytes,
          packageTarget: path,
          targetGameBuild: release.version.targetGameBuild,
          ...(configFile ? { configFile } : {}),
          files: files.map(({ path: p, size, sha256 }) => ({ path: p, size, sha256 })),
        };
      }
      writeManifest(root, manifest);
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
    return prepared.map(({ release, files, keptSettings, replacesWithdrawn }) => ({
      modId: release.modId,
      version: release.version.version,
      files: files.length,
      keptSettings,
      ...(replacesWithdrawn ? { replacesWithdrawn } : {}),
    }));
  }

  /** Whether the signed catalog still offers exactly the installed version's bytes. */
  private async isOffered(modId: string, mod: InstalledMod): Promise<boolean> {
    const entry = (await this.mirror.signedModVersions(modId)).find((v) => v.version === mod.version);
    return entry?.downloadEnabled === true && entry.sha256 === mod.packageSha256;
  }

  /**
   * A request that no offered version satisfies, where the folder holds a version that would: that
   * version was withdrawn, which the player should hear as such, with the newest visible offered.
   */
  private async withdrawnRefusal(manifest: InstallManifest, error: unknown): Promise<unknown> {
    if (
      !(error instanceof DistributionError) ||
      (error.code !== "dependency_unresolved" && error.code !== "mod_not_listed")
    )
      return error;
    const { modId, range, newestVisible } = (error.details ?? {}) as {
      modId?: string;
      range?: string;
      newestVisible?: string | null;
    };
    const installed = modId ? manifest.mods[modId] : undefined;
    if (!modId || !installed || !range || !semver.satisfies(installed.version, range)) return error;
    if (await this.isOffered(modId, installed)) return error;
    return new DistributionError(
      "version_withdrawn",
      `${modId}@${installed.version}, installed here, was withdrawn by the portal; ${
        newestVisible
          ? `the newest visible version is ${newestVisible} (svc install ${modId}@${newestVisible})`
          : `no version of ${modId} is offered any more`
      }`,
      { modId, version: installed.version, newestVisible: newestVisible ?? null },
    );
  }

  /**
   * What each installed mod's files must be: the signed per-file hashes of its version, or, for a
   * version published without them (or no longer offered), what install measured from the verified
   * package. Also each mod's settings file as its signed modConfig names it.
   */
  private async expectations(manifest: InstallManifest) {
    const expected: Record<string, InstalledFile[]> = {};
    const configFiles: Record<string, string> = {};
    for (const [modId, mod] of Object.entries(manifest.mods)) {
      const version = await this.mirror.publishedVersion(modId, mod.version);
      const signed = version && version.sha256 === mod.packageSha256 ? version : null;
      expected[modId] = signed?.files
        ? signed.files.map((f) => ({ path: f.path, size: f.sizeBytes, sha256: f.sha256 }))
        : mod.files;
      const settings = readModSettings(signed?.modConfig);
      if (settings) configFiles[modId] = settings.file;
    }
    return { expected, configFiles };
  }

  async expectedFiles(dir: string): Promise<Record<string, InstalledFile[]>> {
    return (await this.expectations(this.manifestOf(dir))).expected;
  }

  private manifestOf(dir: string): InstallManifest {
    const manifest = readManifest(resolve(dir));
    if (!manifest)
      throw new DistributionError("install_missing", `no ${INSTALL_MANIFEST} in ${resolve(dir)}`);
    return manifest;
  }

  /**
   * verifyInstall against the signed per-file hashes (refreshed through TUF first), and every
   * installed version the portal has since withdrawn: what a manager runs after each refresh.
   */
  async verify(dir: string): Promise<VerifyReport> {
    return (await this.check(dir)).report;
  }

  private async check(dir: string) {
    const root = resolve(dir);
    const manifest = this.manifestOf(root);
    const { expected, configFiles } = await this.expectations(manifest);
    const files = verifyInstall(root, expected, configFiles);
    const withdrawn = await this.withdrawnVersions(manifest);
    const report: VerifyReport = { ...files, ok: files.ok && withdrawn.length === 0, withdrawn };
    return { root, manifest, expected, report };
  }

  /**
   * Re-downloads (verified) the package of each damaged mod and rewrites only the bad files. A
   * settings file the player changed is theirs and stays, unless `resetConfig` asks for the
   * version's defaults. A withdrawn version is reported, never fetched again.
   */
  async repair(dir: string, options: { resetConfig?: boolean } = {}): Promise<RepairReport> {
    const { root, manifest, expected, report } = await this.check(dir);
    const work = new Map(report.damaged.map((d) => [d.modId, d.files.map((f) => f.path)]));
    if (options.resetConfig) {
      for (const { modId, path } of report.changedByYou) work.set(modId, [...(work.get(modId) ?? []), path]);
    }
    const withdrawn = new Set(report.withdrawn.map((w) => w.modId));
    const rewritten: RepairReport["rewritten"] = [];
    for (const [modId, paths] of work) {
      if (withdrawn.has(modId)) continue;
      const installed = manifest.mods[modId]!;
      const version = (await this.mirror.publishedVersion(modId, installed.version))!;
      const bytes = await this.mirror.downloadPackage({ modId, version });
      const files = new Map(readPackageFiles(bytes, join(root, modId)).map((f) => [f.path, f]));
      for (const path of paths) {
        const file = files.get(path);
        const want = expected[modId]?.find((f) => f.path === path);
        if (!file || !want || file.size !== want.size || file.sha256 !== want.sha256) {
          throw new DistributionError(
            "file_hash_mismatch",
            `${path} in the verified package differs from its signed per-file hash`,
          );
        }
        const full = safeInstallPath(root, placedPath(manifest.layout, modId, path));
        mkdirSync(dirname(full), { recursive: true });
        writeFileAtomic(full, file.data);
        rewritten.push({ modId, path });
      }
    }
    return { ...report, rewritten };
  }
}

interface CarriedSettings {
  files: Array<InstalledFile & { data: Buffer }>;
  keptSettings: string[];
  configFile?: string;
}

/**
 * The package's files with its settings file (the signed `modConfig.file`) merged with the
 * player's, when the folder holds an earlier install of the mod whose settings file the player
 * changed (it differs from what that version shipped).
 */
function carrySettings(
  root: string,
  manifest: InstallManifest,
  release: ResolvedRelease,
  files: Array<InstalledFile & { data: Buffer }>,
): CarriedSettings {
  const settings = readModSettings(release.version.modConfig);
  const configFile = settings && files.some((f) => f.path === settings.file) ? settings.file : undefined;
  const previous = manifest.mods[release.modId];
  const unchanged = { files, keptSettings: [], ...(configFile ? { configFile } : {}) };
  if (!settings || !configFile || !previous) return unchanged;
  const full = safeInstallPath(root, placedPath(manifest.layout, release.modId, configFile));
  if (!existsSync(full)) return unchanged;
  const mine = readFileSync(full);
  const shipped = previous.files.find((f) => f.path === configFile);
  if (shipped && shipped.size === mine.length && shipped.sha256 === sha256Hex(mine)) return unchanged;
  const config = files.find((f) => f.path === configFile)!;
  const { data, kept } = keepPlayerSettings(settings, config.data, mine);
  return { files: files.map((f) => (f === config ? { ...f, data } : f)), keptSettings: kept, configFile };
}

/** The newest version still offered, for one game build when one is known. */
function newestVisible(listed: CatalogVersion[], gameBuild: string | undefined): string | null {
  const offered = listed.filter((v) => v.downloadEnabled && (!gameBuild || v.targetGameBuild === gameBuild));
  return offered.sort(newestFirst)[0]?.version ?? null;
}

/** Parses `modId` or `modId@range`. */
export function parseModRequest(text: string): { modId: string; range: string } {
  const at = text.indexOf("@");
  const modId = at === -1 ? text : text.slice(0, at);
  const range = at === -1 ? "*" : text.slice(at + 1);
  if (!/^[a-z0-9][a-z0-9-]*$/.test(modId) || semver.validRange(range) === null) {
    throw new DistributionError("dependency_unresolved", `'${text}' is not modId or modId@range`);
  }
  return { modId, range };
}
