import { lstatSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import * as semver from "../contracts/semver.ts";
import { writeFileAtomic, writeFileSynced } from "../lib/atomic-write.ts";
import { DistributionError } from "./errors.ts";
import {
  INSTALL_MANIFEST,
  readManifest,
  type VerifyReport,
  verifyInstall,
  writeManifest,
} from "./install-manifest.ts";
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
  type VerifiedCatalog,
} from "./signed-mirror.ts";

export type ManagerClientOptions = SignedMirrorOptions;

const STAGING_DIR = ".svc-staging";

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

  verifiedCatalog(): Promise<VerifiedCatalog> {
    return this.mirror.verifiedCatalog();
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
   * The mods folder of a game installation, from the signed runtime layout (`layout.modsPath`, e.g.
   * Binaries/Win64/Mods): the folder the runtime loader reads mods from.
   */
  async modsFolder(gameDir: string): Promise<string> {
    const runtime = JSON.parse(
      (await this.mirror.fetchDocument("api/v1/runtime/latest.json")).toString("utf8"),
    ) as {
      layout?: { modsPath?: unknown };
    };
    const modsPath = runtime.layout?.modsPath;
    if (typeof modsPath !== "string" || modsPath === "") {
      throw new DistributionError("target_unknown", "the signed runtime layout names no modsPath");
    }
    return safeJoin(resolve(gameDir), modsPath);
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
      // catalog.json lists only each mod's newest version; every version is in its signed versions.json.
      const candidates = (await this.mirror.signedModVersions(modId))
        .filter((v) => v.downloadEnabled && semver.satisfies(v.version, range))
        .filter((v) => (gameBuild ? v.targetGameBuild === gameBuild : true))
        .sort((a, b) => semver.rcompare(a.version, b.version));
      const pick = candidates[0];
      if (!pick) {
        throw new DistributionError(
          "dependency_unresolved",
          `no published ${modId} satisfies ${range}${gameBuild ? ` for game build ${gameBuild}` : ""}`,
          { modId, range, gameBuild },
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
   * Installs each resolved release into `<dir>/<modId>/`. Every package is downloaded, verified and
   * extracted into a staging folder first; only then are mod folders swapped in and the manifest
   * rewritten, so a refusal at any step leaves the installation as it was.
   */
  async install(
    dir: string,
    requests: Array<{ modId: string; range: string }>,
    gameBuild?: string,
  ): Promise<Array<{ modId: string; version: string; files: number }>> {
    const root = resolve(dir);
    const releases = await this.resolve(requests, gameBuild);
    const prepared: Array<{
      release: ResolvedRelease;
      path: string;
      files: Array<InstalledFile & { data: Buffer }>;
    }> = [];
    for (const release of releases) {
      // The mod id names a folder: even a signed catalog does not get to pick `..` or a separator.
      if (!/^[a-z0-9][a-z0-9-]{0,63}$/.test(release.modId)) {
        throw new DistributionError(
          "path_escape",
          `mod id ${JSON.stringify(release.modId)} is not a plain folder name`,
        );
      }
      const bytes = await this.mirror.downloadPackage(release);
      const modRoot = join(root, release.modId);
      const files = readPackageFiles(bytes, modRoot);
      const published = await this.mirror.publishedFiles(release.modId, release.version.version);
      if (published) matchPublishedFiles(release.modId, release.version.version, files, published);
      const { path } = await this.mirror.packageTarget(release);
      prepared.push({ release, path, files });
    }
    const manifest = readManifest(root) ?? {
      schema: "svc.install-manifest.v1",
      mirrorUrl: this.mirror.mirrorUrl,
      mods: {},
    };
    const staging = join(root, STAGING_DIR);
    rmSync(staging, { recursive: true, force: true });
    try {
      for (const { release, files } of prepared) {
        const modStage = join(staging, "new", release.modId);
        for (const file of files) writeFileSynced(safeJoin(modStage, file.path), file.data);
      }
      mkdirSync(join(staging, "old"), { recursive: true });
      for (const { release, path, files } of prepared) {
        const target = join(root, release.modId);
        // Whatever stands there, a symbolic link included, is moved aside as itself (rename never
        // follows a link), then removed with the staging folder: replaced, never followed.
        if (lstatSync(target, { throwIfNoEntry: false }))
          renameSync(target, join(staging, "old", release.modId));
        renameSync(join(staging, "new", release.modId), target);
        manifest.mods[release.modId] = {
          version: release.version.version,
          packageSha256: release.version.sha256,
          packageSizeBytes: release.version.packageSizeBytes,
          packageTarget: path,
          files: files.map(({ path: p, size, sha256 }) => ({ path: p, size, sha256 })),
        };
      }
      writeManifest(root, manifest);
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
    return prepared.map(({ release, files }) => ({
      modId: release.modId,
      version: release.version.version,
      files: files.length,
    }));
  }

  /**
   * What each installed mod's files must be: the signed per-file hashes of its version, or, for a
   * version published without them, what install measured from the verified package.
   */
  async expectedFiles(dir: string): Promise<Record<string, InstalledFile[]>> {
    const root = resolve(dir);
    const manifest = readManifest(root);
    if (!manifest) throw new DistributionError("install_missing", `no ${INSTALL_MANIFEST} in ${root}`);
    const expected: Record<string, InstalledFile[]> = {};
    for (const [modId, mod] of Object.entries(manifest.mods)) {
      const published = await this.mirror.publishedFiles(modId, mod.version);
      expected[modId] = published
        ? published.map((f) => ({ path: f.path, size: f.sizeBytes, sha256: f.sha256 }))
        : mod.files;
    }
    return expected;
  }

  /** verifyInstall against the signed per-file hashes (refreshed through TUF first). */
  async verify(dir: string): Promise<VerifyReport> {
    return verifyInstall(dir, await this.expectedFiles(dir));
  }

  /** Re-downloads (verified) the package of each damaged mod and rewrites only the bad files. */
  async repair(dir: string): Promise<VerifyReport> {
    const root = resolve(dir);
    const expectedByMod = await this.expectedFiles(root);
    const report = verifyInstall(root, expectedByMod);
    const manifest = readManifest(root)!;
    for (const damage of report.damaged) {
      const installed = manifest.mods[damage.modId]!;
      // versions.json lists every version; the catalog only each mod's newest.
      const version = await this.mirror.publishedVersion(damage.modId, installed.version);
      if (!version || version.sha256 !== installed.packageSha256) {
        throw new DistributionError(
          "dependency_unresolved",
          `${damage.modId}@${installed.version} is no longer in the signed catalog with the same bytes`,
        );
      }
      const bytes = await this.mirror.downloadPackage({ modId: damage.modId, version });
      const modRoot = join(root, damage.modId);
      const files = new Map(readPackageFiles(bytes, modRoot).map((f) => [f.path, f]));
      for (const bad of damage.files) {
        const file = files.get(bad.path);
        const expected = expectedByMod[damage.modId]?.find((f) => f.path === bad.path);
        if (!file || !expected || file.size !== expected.size || file.sha256 !== expected.sha256) {
          throw new DistributionError(
            "file_hash_mismatch",
            `${bad.path} in the verified package differs from its signed per-file hash`,
          );
        }
        writeFileAtomic(safeInstallPath(root, `${damage.modId}/${bad.path}`), file.data);
      }
    }
    return report;
  }
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
