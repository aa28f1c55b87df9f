import type { VersionRecord } from "../contracts/catalog.ts";
import { writeFileAtomic, writeFileSynced } from "../lib/atomic-write.ts";
import { sha256Hex } from "../lib/hash.ts";
import {
  closeSync,
  copyFileSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from "node:fs";
import { isAbsolute, join, resolve, sep } from "node:path";
import type { TargetFile } from "@tufjs/models";
import * as semver from "../contracts/semver.ts";
import { BaseFetcher, Updater } from "tuf-js";
// Not re-exported by the package root; the updater recognises a 404 on N.root.json only by this class.
import { DownloadHTTPError } from "tuf-js/dist/error.js";
import {
  inflateEntry,
  isSpecialFile,
  isSymlink,
  readZipStructure,
  type ZipCaps,
} from "../validation/zip/reader.ts";
import { DistributionError, type DistributionCode } from "./errors.ts";
import { artifactTargetPath, TUF_DIR } from "./tuf-layout.ts";

type FetchLike = typeof fetch;

export interface ManagerClientOptions {
  /** The portal's site root, e.g. https://owner.github.io/repo (metadata under /tuf/). */
  mirrorUrl: string;
  /** Client state: trusted metadata (what rollback protection compares against) and a target cache. */
  cacheDir: string;
  /** The root the user pinned; used only when the cache holds no root yet. */
  trustedRootFile?: string;
  /** Downloads through the API-key lane instead of the public URL. */
  apiKey?: string;
  fetch?: FetchLike;
}

/** The fields of a signed version record (svc.mod-versions.v1) the client acts on. */
export type CatalogVersion = Pick<
  VersionRecord,
  | "version"
  | "targetGameBuild"
  | "packageUrl"
  | "fileName"
  | "packageSizeBytes"
  | "sha256"
  | "downloadEnabled"
  | "dependencies"
>;
export interface VerifiedCatalog {
  baseUrl: string;
  supportedGameBuilds: string[];
  mods: Array<{ id: string; versions: CatalogVersion[] }>;
}

export interface ResolvedRelease {
  modId: string;
  version: CatalogVersion;
}

export interface InstalledFile {
  path: string;
  size: number;
  sha256: string;
}
/** One entry of a version's `files` in the signed versions.json (measured by the portal's validator). */
export interface PublishedFile {
  path: string;
  sizeBytes: number;
  sha256: string;
}
export interface InstalledMod {
  version: string;
  packageSha256: string;
  packageSizeBytes: number;
  packageTarget: string;
  files: InstalledFile[];
}
/** `<dir>/svc-install.json`: what verify and repair compare the folder against. */
export interface InstallManifest {
  schema: "svc.install-manifest.v1";
  mirrorUrl: string;
  mods: Record<string, InstalledMod>;
}

export const INSTALL_MANIFEST = "svc-install.json";
const STAGING_DIR = ".svc-staging";

/** Generous caps for extraction; validation already enforced the portal's own caps before publication. */
const EXTRACT_CAPS: ZipCaps = {
  maxEntries: 20_000,
  maxNameBytes: 512,
  maxPathDepth: 32,
  maxEntryUncompressedBytes: 1 << 30,
  maxTotalUncompressedBytes: 2 ** 32,
  maxCompressionRatio: 1000,
  compressionRatioMinBytes: 1 << 20,
};

class InjectedFetcher extends BaseFetcher {
  constructor(private readonly fetchImpl: FetchLike) {
    super();
  }
  async fetch(url: string): Promise<ReadableStream<Uint8Array<ArrayBuffer>>> {
    const response = await this.fetchImpl(url);
    if (!response.ok || !response.body) throw new DownloadHTTPError("Failed to download", response.status);
    return response.body as ReadableStream<Uint8Array<ArrayBuffer>>;
  }
}

/** Maps a tuf-js failure to a stable code. tuf-js wraps snapshot/targets errors in a RuntimeError, so the text decides. */
export function classifyTufError(error: unknown): DistributionError {
  if (error instanceof DistributionError) return error;
  const name = (error as Error)?.constructor?.name ?? "";
  const message = error instanceof Error ? error.message : String(error);
  let code: DistributionCode = "catalog_tampered";
  if (name === "ExpiredMetadataError" || /is expired/.test(message)) code = "metadata_expired";
  else if (name === "BadVersionError" || /is less than current version/.test(message))
    code = "catalog_rollback";
  else if (name === "DownloadHTTPError" || /fetch failed|ECONNREFUSED/.test(message))
    code = "download_failed";
  return new DistributionError(code, `signed metadata refused: ${message}`);
}

/** Refuses any archive name that is not a plain relative path staying inside `root`. */
export function safeJoin(root: string, name: string): string {
  const bad =
    name === "" ||
    name.includes("\0") ||
    name.includes("\\") ||
    name.startsWith("/") ||
    /^[A-Za-z]:/.test(name) ||
    isAbsolute(name) ||
    name.split("/").some((s) => s === ".." || s === ".");
  const full = resolve(root, name);
  if (bad || !(full === root || full.startsWith(`${root}${sep}`))) {
    throw new DistributionError(
      "path_escape",
      `archive entry ${JSON.stringify(name)} would escape the install folder`,
    );
  }
  return full;
}

/** Reads a package with the project's safe reader and returns each file's bytes (never touching disk). */
export function readPackageFiles(bytes: Buffer, modRoot: string): Array<InstalledFile & { data: Buffer }> {
  const structure = readZipStructure(bytes, EXTRACT_CAPS);
  const files: Array<InstalledFile & { data: Buffer }> = [];
  // Names first: a single escaping entry refuses the whole package, before anything is inflated.
  for (const entry of structure.entries) {
    if (!entry.nameDecoded)
      throw new DistributionError("path_escape", "archive entry with an undecodable name");
    if (isSymlink(entry) || isSpecialFile(entry)) {
      throw new DistributionError(
        "path_escape",
        `archive entry ${JSON.stringify(entry.name)} is a link or device`,
      );
    }
    safeJoin(modRoot, entry.isDirectory ? entry.name.replace(/\/$/, "") || "." : entry.name);
  }
  if (structure.unsafeToInflate) {
    throw new DistributionError(
      "archive_invalid",
      `the package archive is unsafe to extract: ${structure.findings.map((f) => f.code).join(", ")}`,
    );
  }
  const seen = new Set<string>();
  for (const entry of structure.entries) {
    if (entry.isDirectory) continue;
    const key = entry.name.toLowerCase();
    if (seen.has(key))
      throw new DistributionError("archive_invalid", `duplicate archive entry ${entry.name}`);
    seen.add(key);
    const result = inflateEntry(bytes, entry);
    if (!result.ok) throw new DistributionError("archive_invalid", result.message);
    files.push({
      path: entry.name,
      size: result.data.length,
      sha256: sha256Hex(result.data),
      data: result.data,
    });
  }
  return files;
}

/**
 * Refuses a package whose files are not exactly the signed list: the same paths, each with the
 * listed size and sha256. Checked before anything is written under the install folder.
 */
export function matchPublishedFiles(
  modId: string,
  version: string,
  files: readonly InstalledFile[],
  published: readonly PublishedFile[],
): void {
  const listed = new Map(published.map((f) => [f.path, f]));
  const problems: Array<{ path: string; problem: "unlisted" | "missing" | "changed" }> = [];
  for (const file of files) {
    const entry = listed.get(file.path);
    if (!entry) problems.push({ path: file.path, problem: "unlisted" });
    else if (entry.sizeBytes !== file.size || entry.sha256 !== file.sha256)
      problems.push({ path: file.path, problem: "changed" });
    listed.delete(file.path);
  }
  for (const path of listed.keys()) problems.push({ path, problem: "missing" });
  if (problems.length > 0) {
    throw new DistributionError(
      "file_hash_mismatch",
      `${modId}@${version}: the package's files differ from the signed per-file hashes (${problems
        .slice(0, 5)
        .map((p) => `${p.path}: ${p.problem}`)
        .join(", ")}${problems.length > 5 ? `, and ${problems.length - 5} more` : ""})`,
      { modId, version, files: problems },
    );
  }
}

export class ManagerClient {
  private readonly options: ManagerClientOptions;
  private readonly fetchImpl: FetchLike;
  private updater: Updater | null = null;
  private catalog: VerifiedCatalog | null = null;

  constructor(options: ManagerClientOptions) {
    this.options = { ...options, mirrorUrl: options.mirrorUrl.replace(/\/+$/, "") };
    this.fetchImpl = options.fetch ?? fetch;
  }

  private get metadataDir(): string {
    return join(this.options.cacheDir, "metadata");
  }

  /** TUF refresh: root rotations, then timestamp, snapshot and targets, each checked for signature, version and expiry. */
  async refresh(): Promise<void> {
    mkdirSync(this.metadataDir, { recursive: true });
    const trusted = join(this.metadataDir, "root.json");
    if (!existsSync(trusted)) {
      if (!this.options.trustedRootFile) {
        throw new DistributionError("tuf_not_initialized", "no trusted root: pass --trusted-root root.json");
      }
      copyFileSync(this.options.trustedRootFile, trusted);
    }
    const updater = new Updater({
      metadataDir: this.metadataDir,
      metadataBaseUrl: `${this.options.mirrorUrl}/${TUF_DIR}/`,
      targetBaseUrl: `${this.options.mirrorUrl}/`,
      fetcher: new InjectedFetcher(this.fetchImpl),
      config: { prefixTargetsWithHash: false, fetchRetries: 0 },
    });
    try {
      await updater.refresh();
    } catch (error) {
      throw classifyTufError(error);
    }
    this.updater = updater;
    this.catalog = null;
  }

  private async targetInfo(path: string): Promise<TargetFile> {
    if (!this.updater) await this.refresh();
    let info: TargetFile | undefined;
    try {
      info = await this.updater!.getTargetInfo(path);
    } catch (error) {
      throw classifyTufError(error);
    }
    if (!info) throw new DistributionError("target_unknown", `the signed targets do not list ${path}`);
    return info;
  }

  /** A signed document's bytes; an unchanged document (same sha256) comes from the cache, not the network. */
  async fetchDocument(path: string): Promise<Buffer> {
    const info = await this.targetInfo(path);
    const sha256 = info.hashes.sha256!;
    const cached = join(this.options.cacheDir, "targets", sha256);
    if (existsSync(cached)) {
      const bytes = readFileSync(cached);
      if (bytes.length === info.length && sha256Hex(bytes) === sha256) return bytes;
    }
    const response = await this.get(`${this.options.mirrorUrl}/${path}`);
    const bytes = Buffer.from(await response.arrayBuffer());
    if (bytes.length !== info.length || sha256Hex(bytes) !== sha256) {
      throw new DistributionError(
        "catalog_tampered",
        `${path} does not match its signed length/sha256 (got ${bytes.length} bytes, signed ${info.length})`,
      );
    }
    writeFileSynced(cached, bytes);
    return bytes;
  }

  async verifiedCatalog(): Promise<VerifiedCatalog> {
    if (this.catalog) return this.catalog;
    this.catalog = JSON.parse(
      (await this.fetchDocument("api/v1/catalog.json")).toString("utf8"),
    ) as VerifiedCatalog;
    return this.catalog;
  }

  /**
   * The mods folder of a game installation, from the signed runtime layout (`layout.modsPath`, e.g.
   * Binaries/Win64/Mods): the folder the runtime loader reads mods from.
   */
  async modsFolder(gameDir: string): Promise<string> {
    const runtime = JSON.parse((await this.fetchDocument("api/v1/runtime/latest.json")).toString("utf8")) as {
      layout?: { modsPath?: unknown };
    };
    const modsPath = runtime.layout?.modsPath;
    if (typeof modsPath !== "string" || modsPath === "") {
      throw new DistributionError("target_unknown", "the signed runtime layout names no modsPath");
    }
    return safeJoin(resolve(gameDir), modsPath);
  }

  private async get(url: string, headers: Record<string, string> = {}): Promise<Response> {
    let response: Response;
    try {
      response = await this.fetchImpl(url, { headers });
    } catch (error) {
      throw new DistributionError("download_failed", `${url}: ${(error as Error).message}`);
    }
    if (!response.ok) throw new DistributionError("download_failed", `${url}: HTTP ${response.status}`);
    return response;
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
      const candidates = (await this.signedModVersions(modId))
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

  /** Every listed version of one mod, from its signed versions.json; none when the mod is not listed. */
  private async signedModVersions(modId: string): Promise<CatalogVersion[]> {
    // The id becomes a path segment: one that is not a slug names no mod (and no other document).
    if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(modId)) return [];
    let bytes: Buffer;
    try {
      bytes = await this.fetchDocument(`api/v1/mods/${modId}/versions.json`);
    } catch (error) {
      if (error instanceof DistributionError && error.code === "target_unknown") return [];
      throw error;
    }
    const document = JSON.parse(bytes.toString("utf8")) as { versions?: CatalogVersion[] };
    return Array.isArray(document.versions) ? document.versions : [];
  }

  private async packageTarget(release: ResolvedRelease): Promise<{ path: string; info: TargetFile }> {
    const catalog = await this.verifiedCatalog();
    const path = artifactTargetPath(catalog.baseUrl, release.modId, release.version);
    const info = await this.targetInfo(path);
    if (info.length !== release.version.packageSizeBytes || info.hashes.sha256 !== release.version.sha256) {
      throw new DistributionError("catalog_tampered", `${path}: the catalog and the signed targets disagree`);
    }
    return { path, info };
  }

  /**
   * Downloads a package into the cache, resuming a partial download with Range, never accepting
   * more bytes than signed, and returns it only once its length and sha256 match the signed target.
   */
  async downloadPackage(release: ResolvedRelease): Promise<Buffer> {
    const { info } = await this.packageTarget(release);
    const sha256 = info.hashes.sha256!;
    const dir = join(this.options.cacheDir, "packages");
    const done = join(dir, sha256);
    if (existsSync(done)) {
      const bytes = readFileSync(done);
      if (bytes.length === info.length && sha256Hex(bytes) === sha256) return bytes;
      rmSync(done, { force: true });
    }
    mkdirSync(dir, { recursive: true });
    const partial = `${done}.part`;
    let have = existsSync(partial) ? statSync(partial).size : 0;
    if (have > info.length) {
      rmSync(partial, { force: true });
      have = 0;
    }
    const { modId, version } = release;
    const url = this.options.apiKey
      ? `${this.options.mirrorUrl}/api/v1/downloads/mods/${modId}/${version.version}/${version.fileName}`
      : version.packageUrl;
    const headers: Record<string, string> = { "accept-encoding": "identity" };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    if (have > 0 && have < info.length) headers.range = `bytes=${have}-`;
    if (have < info.length) {
      const response = await this.get(url, headers);
      const append = response.status === 206;
      if (!append) have = 0;
      const fd = openSync(partial, append ? "a" : "w");
      try {
        const reader = response.body!.getReader();
        for (;;) {
          const { done: finished, value } = await reader.read();
          if (finished) break;
          have += value.length;
          if (have > info.length) {
            await reader.cancel();
            closeSync(fd);
            rmSync(partial, { force: true });
            throw new DistributionError(
              "artifact_mismatch",
              `${url} sends more than its signed ${info.length} bytes`,
            );
          }
          writeSync(fd, value);
        }
        fsyncSync(fd);
      } catch (error) {
        if (error instanceof DistributionError) throw error;
        throw new DistributionError(
          "download_failed",
          `${url}: ${(error as Error).message} (kept ${have} bytes to resume)`,
        );
      } finally {
        try {
          closeSync(fd);
        } catch {
          // already closed on the overlong path
        }
      }
    }
    if (have < info.length) {
      throw new DistributionError(
        "artifact_mismatch",
        `${url} ended after ${have} of its signed ${info.length} bytes (kept to resume)`,
        { received: have, length: info.length },
      );
    }
    const bytes = readFileSync(partial);
    if (sha256Hex(bytes) !== sha256) {
      rmSync(partial, { force: true });
      throw new DistributionError(
        "artifact_mismatch",
        `${url} has sha256 ${sha256Hex(bytes)}, signed ${sha256}`,
      );
    }
    renameSync(partial, done);
    return bytes;
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
      const bytes = await this.downloadPackage(release);
      const modRoot = join(root, release.modId);
      const files = readPackageFiles(bytes, modRoot);
      const published = await this.publishedFiles(release.modId, release.version.version);
      if (published) matchPublishedFiles(release.modId, release.version.version, files, published);
      const { path } = await this.packageTarget(release);
      prepared.push({ release, path, files });
    }
    const manifest = readManifest(root) ?? {
      schema: "svc.install-manifest.v1",
      mirrorUrl: this.options.mirrorUrl,
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
        if (existsSync(target)) renameSync(target, join(staging, "old", release.modId));
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
   * One version as the signed versions.json of its mod lists it (every listed version, with its
   * per-file hashes); null when the mod or the version is not listed (hidden, or never published).
   */
  async publishedVersion(
    modId: string,
    version: string,
  ): Promise<(CatalogVersion & { files?: PublishedFile[] }) | null> {
    const versions: Array<CatalogVersion & { files?: PublishedFile[] }> = await this.signedModVersions(modId);
    return versions.find((v) => v.version === version) ?? null;
  }

  /**
   * The per-file hashes the portal published for a version, or null for a version published
   * before them or no longer listed.
   */
  async publishedFiles(modId: string, version: string): Promise<PublishedFile[] | null> {
    return (await this.publishedVersion(modId, version))?.files ?? null;
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
      const published = await this.publishedFiles(modId, mod.version);
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
      const version = await this.publishedVersion(damage.modId, installed.version);
      if (!version || version.sha256 !== installed.packageSha256) {
        throw new DistributionError(
          "dependency_unresolved",
          `${damage.modId}@${installed.version} is no longer in the signed catalog with the same bytes`,
        );
      }
      const bytes = await this.downloadPackage({ modId: damage.modId, version });
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
        const target = safeJoin(modRoot, bad.path);
        writeFileAtomic(target, file.data);
      }
    }
    return report;
  }
}

export function readManifest(root: string): InstallManifest | null {
  const file = join(root, INSTALL_MANIFEST);
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as InstallManifest) : null;
}

function writeManifest(root: string, manifest: InstallManifest): void {
  const file = join(root, INSTALL_MANIFEST);
  writeFileAtomic(file, `${JSON.stringify(manifest, null, 2)}\n`);
}

export interface VerifyReport {
  ok: boolean;
  checked: number;
  damaged: Array<{ modId: string; files: Array<{ path: string; problem: "missing" | "changed" }> }>;
}

/**
 * Compares every installed file with its expected size and sha256: `expected` (per mod id, e.g.
 * the signed per-file hashes from ManagerClient.expectedFiles), else what the install manifest
 * recorded (offline; install checked those against the signed hashes when the version had them).
 */
export function verifyInstall(dir: string, expected: Record<string, InstalledFile[]> = {}): VerifyReport {
  const root = resolve(dir);
  const manifest = readManifest(root);
  if (!manifest) throw new DistributionError("install_missing", `no ${INSTALL_MANIFEST} in ${root}`);
  const damaged: VerifyReport["damaged"] = [];
  let checked = 0;
  for (const [modId, mod] of Object.entries(manifest.mods).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const bad: VerifyReport["damaged"][number]["files"] = [];
    for (const file of expected[modId] ?? mod.files) {
      checked++;
      const full = safeJoin(join(root, modId), file.path);
      if (!existsSync(full)) {
        bad.push({ path: file.path, problem: "missing" });
        continue;
      }
      const bytes = readFileSync(full);
      if (bytes.length !== file.size || sha256Hex(bytes) !== file.sha256)
        bad.push({ path: file.path, problem: "changed" });
    }
    if (bad.length > 0) damaged.push({ modId, files: bad });
  }
  return { ok: damaged.length === 0, checked, damaged };
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
