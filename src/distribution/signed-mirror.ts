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
import { type BoundedResponse, type MirrorLimits, mirrorLimits, openBounded } from "./mirror-transfer.ts";
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
  /** Caps and timeouts of every request (DEFAULT_MIRROR_LIMITS for what is not given). */
  limits?: Partial<MirrorLimits>;
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
  | "modConfig"
>;
export interface ResolvedRelease {
  modId: string;
  version: CatalogVersion;
}

/**
 * tuf-js's fetcher over the injected fetch, under the mirror limits. The updater names each
 * document's cap (the signed length, or its configured maximum); the stream stops there and the
 * connection is closed, where the base class only stops reading. The updater wraps snapshot and
 * targets failures in its own error text, so the last refusal is kept here with its code.
 */
class BoundedFetcher extends BaseFetcher {
  failure: DistributionError | null = null;

  constructor(
    private readonly fetchImpl: FetchLike,
    private readonly limits: MirrorLimits,
  ) {
    super();
  }

  override async downloadBytes(url: string, maxLength: number): Promise<Buffer> {
    try {
      const response = await openBounded(this.fetchImpl, url, {}, this.limits);
      if (!response.ok) {
        await response.cancel();
        // No timestamp at all: a portal that was never signed (or not yet), not a broken mirror.
        if (response.status === 404 && url.endsWith(`/${TUF_DIR}/timestamp.json`))
          this.failure = new DistributionError(
            "not_signed_yet",
            `${url} does not exist: the portal is not signed yet (its operator runs \`svc keys init\` and \`svc keys sign\`; docs/distribution.md)`,
          );
        throw new DownloadHTTPError("Failed to download", response.status);
      }
      return await response.readAll(maxLength);
    } catch (error) {
      if (error instanceof DistributionError) this.failure = error;
      throw error;
    }
  }

  // Only the base class's downloadFile (targets through the updater, which this client never asks
  // for) reads this stream; it stays under the timeouts, and the base class counts the length.
  async fetch(url: string): Promise<ReadableStream<Uint8Array<ArrayBuffer>>> {
    const response = await openBounded(this.fetchImpl, url, {}, this.limits);
    if (!response.ok) {
      await response.cancel();
      throw new DownloadHTTPError("Failed to download", response.status);
    }
    return ReadableStream.from(response.chunks(Number.MAX_SAFE_INTEGER)) as ReadableStream<
      Uint8Array<ArrayBuffer>
    >;
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
  else if (name === "DownloadLengthMismatchError") code = "response_too_large";
  else if (name === "DownloadHTTPError" || /fetch failed|ECONNREFUSED/.test(message))
    code = "download_failed";
  return new DistributionError(code, `signed metadata refused: ${message}`);
}

/** A package's signed length and sha256, and the target path the install manifest records. */
export interface PackageTarget {
  path: string;
  length: number;
  sha256: string;
}

/**
 * The portal's site read through its signed metadata: the TUF refresh (tuf-js's updater over the
 * trusted metadata in the cache), then each document and package checked against its signed length
 * and sha256 before it is returned.
 *
 * Sparse: the client reads the signed per-mod documents (api/v1/mods/{id}/versions.json) of the
 * mods it needs, each through its hashed bin, and never api/v1/catalog.json, which lists every mod.
 * tuf-js keeps each bin it loaded in the metadata folder and loads it again only when the snapshot
 * names a newer version, and a document comes from the target cache while its signed sha256 is the
 * same: a refresh costs the timestamp, and when something changed the snapshot and the top-level
 * targets, plus the bins and documents of the needed mods that changed (docs/distribution.md,
 * "What a manager fetches").
 */
export class SignedMirror {
  private readonly options: SignedMirrorOptions;
  private readonly fetchImpl: FetchLike;
  private readonly limits: MirrorLimits;
  private updater: Updater | null = null;
  private fetcher: BoundedFetcher | null = null;
  /** Each mod's parsed signed versions.json (null: not listed) since the last refresh. */
  private listings = new Map<string, CatalogVersion[] | null>();

  constructor(options: SignedMirrorOptions) {
    this.options = { ...options, mirrorUrl: options.mirrorUrl.replace(/\/+$/, "") };
    this.fetchImpl = options.fetch ?? fetch;
    this.limits = mirrorLimits(options.limits);
  }

  /** The site root without its trailing slashes. */
  get mirrorUrl(): string {
    return this.options.mirrorUrl;
  }

  private get metadataDir(): string {
    return join(this.options.cacheDir, "metadata");
  }

  /** Runs one updater step; a refusal of the fetcher (a cap, a timeout) keeps its own code. */
  private async tufStep<T>(fetcher: BoundedFetcher, step: () => Promise<T>): Promise<T> {
    fetcher.failure = null;
    try {
      return await step();
    } catch (error) {
      throw fetcher.failure ?? classifyTufError(error);
    }
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
    const fetcher = new BoundedFetcher(this.fetchImpl, this.limits);
    const updater = new Updater({
      metadataDir: this.metadataDir,
      metadataBaseUrl: `${this.options.mirrorUrl}/${TUF_DIR}/`,
      targetBaseUrl: `${this.options.mirrorUrl}/`,
      fetcher,
      // Each is the cap of a document whose length the metadata above it does not sign; the
      // updater uses the signed length instead wherever there is one (snapshot in timestamp).
      config: {
        prefixTargetsWithHash: false,
        fetchRetries: 0,
        rootMaxLength: this.limits.rootMaxBytes,
        timestampMaxLength: this.limits.timestampMaxBytes,
        snapshotMaxLength: this.limits.snapshotMaxBytes,
        targetsMaxLength: this.limits.targetsMaxBytes,
      },
    });
    await this.tufStep(fetcher, () => updater.refresh());
    this.updater = updater;
    this.fetcher = fetcher;
    this.listings.clear();
  }

  private async targetInfo(path: string): Promise<TargetFile> {
    if (!this.updater || !this.fetcher) await this.refresh();
    const updater = this.updater!;
    const info = await this.tufStep(this.fetcher!, () => updater.getTargetInfo(path));
    if (!info) throw await this.unlistedTarget(path);
    // The hash names a cache file: signed metadata (a leaked key) must not get to pick a path.
    if (!/^[0-9a-f]{64}$/.test(info.hashes.sha256 ?? "") || !Number.isSafeInteger(info.length)) {
      throw new DistributionError(
        "catalog_tampered",
        `the signed target ${path} has no sha256 of 64 hex digits or no length`,
      );
    }
    return info;
  }

  /**
   * Why the signed targets do not list a path: the mirror serving the file means the portal published
   * it after its last signing (not signed yet: the operator's signing is behind); otherwise the file
   * is not listed at all (never published, or removed). Either way nothing unsigned is used: the
   * answer only names the cause.
   */
  private async unlistedTarget(path: string): Promise<DistributionError> {
    let served = false;
    try {
      const response = await openBounded(
        this.fetchImpl,
        `${this.options.mirrorUrl}/${path}`,
        {},
        this.limits,
      );
      served = response.ok;
      await response.cancel();
    } catch {
      // Unreachable: reported as not listed, which is what the signed metadata says.
    }
    if (served)
      return new DistributionError(
        "not_signed_yet",
        `the mirror serves ${path} but the portal's signed metadata does not list it yet: it was published after the portal's last signing (its operator runs \`svc keys sign\`, or sets SVC_TUF_ONLINE_KEYS so every publication signs); nothing unsigned is used`,
        { path },
      );
    return new DistributionError("target_unknown", `the signed targets do not list ${path}`, { path });
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
    let bytes: Buffer;
    try {
      bytes = await response.readAll(info.length);
    } catch (error) {
      if (!(error instanceof DistributionError) || error.code !== "response_too_large") throw error;
      throw new DistributionError(
        "response_too_large",
        `${path} runs past its signed ${info.length} bytes: the mirror serves other bytes than the portal signed (an endless or swapped document, or a portal that rewrote it without signing: its operator runs \`svc keys sign\`); ${error.message}`,
        error.details,
      );
    }
    if (bytes.length !== info.length || sha256Hex(bytes) !== sha256) {
      throw new DistributionError(
        "catalog_tampered",
        `${path} does not match its signed length/sha256 (got ${bytes.length} bytes, signed ${info.length}): the mirror serves other bytes than the portal signed (changed on the way or on the mirror, or by a portal that rewrote it without signing: its operator runs \`svc keys sign\`)`,
        { path, length: bytes.length, signedLength: info.length },
      );
    }
    writeFileSynced(cached, bytes);
    return bytes;
  }

  private async get(url: string, headers: Record<string, string> = {}): Promise<BoundedResponse> {
    const response = await openBounded(this.fetchImpl, url, headers, this.limits);
    if (!response.ok) {
      await response.cancel();
      throw new DistributionError("download_failed", `${url}: HTTP ${response.status}`);
    }
    return response;
  }

  /** Every listed version of one mod, from its signed versions.json; none when the mod is not listed. */
  async signedModVersions(modId: string): Promise<CatalogVersion[]> {
    return (await this.modListing(modId)) ?? [];
  }

  /**
   * One mod's signed versions.json: its versions, or null when the signed metadata does not list the
   * mod (and the mirror serves no such document). A document the mirror serves but the signed
   * metadata does not list yet is `not_signed_yet`, never "not listed".
   */
  async modListing(modId: string): Promise<CatalogVersion[] | null> {
    // The id becomes a path segment: one that is not a slug names no mod (and no other document).
    if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(modId)) return null;
    if (!this.updater) await this.refresh();
    const known = this.listings.get(modId);
    if (known !== undefined) return known;
    let listing: CatalogVersion[] | null;
    try {
      const bytes = await this.fetchDocument(`api/v1/mods/${modId}/versions.json`);
      const document = JSON.parse(bytes.toString("utf8")) as { versions?: CatalogVersion[] };
      listing = Array.isArray(document.versions) ? document.versions : [];
    } catch (error) {
      if (!(error instanceof DistributionError) || error.code !== "target_unknown") throw error;
      listing = null;
    }
    this.listings.set(modId, listing);
    return listing;
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
   * A release's package as its mod's signed versions.json lists it. That document is itself a
   * signed target (its bytes matched their signed length and sha256), so the package's length and
   * sha256 in it are signed too; the signer refuses to sign a served package whose bytes differ from
   * them (tuf-site-targets.ts). The package's own entry in its hashed bin is therefore not read: a
   * second bin would cost a fresh manager about as much as the rest of a first install (docs/distribution.md).
   * A release that does not match the signed listing (built by a caller, or from another document)
   * is refused.
   */
  async packageTarget(release: ResolvedRelease): Promise<PackageTarget> {
    // The file name is also a URL segment on the API-key lane and svc fetch's output name.
    assertPlainZipName(release.version.fileName);
    // Decided by the signed packageUrl alone (tuf-layout.ts): no catalog read for its baseUrl.
    const path = artifactTargetPath("", release.modId, release.version);
    const listing = await this.modListing(release.modId);
    const signed = listing?.find((v) => v.version === release.version.version);
    if (!signed) {
      throw new DistributionError(
        "target_unknown",
        `the signed versions.json of ${release.modId} does not list ${release.version.version}`,
        { path },
      );
    }
    // The hash names a cache file: signed metadata (a leaked key) must not get to pick a path.
    if (
      !/^[0-9a-f]{64}$/.test(signed.sha256 ?? "") ||
      !Number.isSafeInteger(signed.packageSizeBytes) ||
      signed.packageSizeBytes < 0
    ) {
      throw new DistributionError(
        "catalog_tampered",
        `the signed versions.json of ${release.modId} gives ${release.version.version} no sha256 of 64 hex digits or no size`,
        { path },
      );
    }
    const differs = (["sha256", "packageSizeBytes", "fileName", "packageUrl"] as const).filter(
      (field) => signed[field] !== release.version[field],
    );
    if (differs.length > 0) {
      throw new DistributionError(
        "catalog_tampered",
        `${path}: the release and the signed versions.json of ${release.modId} disagree on ${differs.join(", ")}`,
        { path, fields: differs },
      );
    }
    return { path, length: signed.packageSizeBytes, sha256: signed.sha256 };
  }

  /**
   * Downloads a package into the cache, resuming a partial download with Range, never accepting
   * more bytes than signed, and returns it only once its length and sha256 match the signed target.
   */
  async downloadPackage(release: ResolvedRelease): Promise<Buffer> {
    const info = await this.packageTarget(release);
    const sha256 = info.sha256;
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
      let failure: unknown = null;
      try {
        for await (const chunk of response.chunks(info.length, have)) {
          writeSync(fd, chunk);
          have += chunk.length;
        }
        fsyncSync(fd);
      } catch (error) {
        failure = error;
      } finally {
        closeSync(fd);
      }
      if (failure) {
        if (!(failure instanceof DistributionError)) throw failure;
        // A body longer than signed is not the package: none of it is worth resuming from.
        if (failure.code === "response_too_large") {
          rmSync(partial, { force: true });
          throw failure;
        }
        throw new DistributionError(
          failure.code,
          `${failure.message} (kept ${have} bytes to resume)`,
          failure.details,
        );
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
