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
import { join } from "node:path";
import type { TargetFile } from "@tufjs/models";
import { BaseFetcher, Updater } from "tuf-js";
// Not re-exported by the package root; the updater recognises a 404 on N.root.json only by this class.
import { DownloadHTTPError } from "tuf-js/dist/error.js";
import type { VersionRecord } from "../contracts/catalog.ts";
import { writeFileSynced } from "../lib/atomic-write.ts";
import { sha256Hex } from "../lib/hash.ts";
import { type DistributionCode, DistributionError } from "./errors.ts";
import { assertPlainZipName, type PublishedFile } from "./package-files.ts";
import { artifactTargetPath, TUF_DIR } from "./tuf-layout.ts";

type FetchLike = typeof fetch;

export interface SignedMirrorOptions {
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

/**
 * The portal's site read through its signed metadata: the TUF refresh (tuf-js's updater over the
 * trusted metadata in the cache), then each document and package checked against its signed length
 * and sha256 before it is returned.
 */
export class SignedMirror {
  private readonly options: SignedMirrorOptions;
  private readonly fetchImpl: FetchLike;
  private updater: Updater | null = null;
  private catalog: VerifiedCatalog | null = null;

  constructor(options: SignedMirrorOptions) {
    this.options = { ...options, mirrorUrl: options.mirrorUrl.replace(/\/+$/, "") };
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** The site root without its trailing slashes. */
  get mirrorUrl(): string {
    return this.options.mirrorUrl;
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
    // The hash names a cache file: signed metadata (a leaked key) must not get to pick a path.
    if (!/^[0-9a-f]{64}$/.test(info.hashes.sha256 ?? "") || !Number.isSafeInteger(info.length)) {
      throw new DistributionError(
        "catalog_tampered",
        `the signed target ${path} has no sha256 of 64 hex digits or no length`,
      );
    }
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

  /** Every listed version of one mod, from its signed versions.json; none when the mod is not listed. */
  async signedModVersions(modId: string): Promise<CatalogVersion[]> {
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

  async packageTarget(release: ResolvedRelease): Promise<{ path: string; info: TargetFile }> {
    const catalog = await this.verifiedCatalog();
    // The file name is also a URL segment on the API-key lane and svc fetch's output name.
    assertPlainZipName(release.version.fileName);
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
}
