import { randomBytes } from "node:crypto";
import { existsSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { portalUrls, SITE_PATHS } from "../contracts/urls.ts";
import { SvcError } from "../errors.ts";
import { writeFileSynced } from "../lib/atomic-write.ts";
import { hashFile } from "../lib/hash.ts";
import { stagingDir } from "./atomic-files.ts";

/** Identifies one immutable artifact: a mod version's package. */
export interface ArtifactKey {
  modId: string;
  version: string;
  fileName: string;
}

/**
 * An artifact promoted into a store, measured from the stored bytes (read back, never from the
 * caller's buffer). It is not public until the publisher commits: filesystem stores hand the
 * publisher files to create inside its transaction; remote stores are already uploaded and can be
 * withdrawn with abort() when the publication fails before its commit point.
 */
export interface PromotedArtifact {
  key: ArtifactKey;
  url: string;
  sha256: string;
  sizeBytes: number;
  /** Root-relative paths the publisher creates (create-only) in its transaction. */
  files: ReadonlyMap<string, { stagedFile: string }>;
  /** Called after a successful commit (cleans staging). */
  finish(): Promise<void>;
  /** Called when the publication fails before its commit point: the store forgets the artifact. */
  abort(): Promise<void>;
}

/** The artifact store port (DESIGN decision 5). Artifacts are immutable: an existing URL is never replaced. */
export interface ArtifactStore {
  readonly kind: "filesystem" | "github-releases";
  readonly description: string;
  /** The public URL an artifact has (or would have). */
  urlFor(key: ArtifactKey): string;
  /** Whether anything is already stored for this key (an artifact, a release or a tag). */
  exists(key: ArtifactKey): Promise<boolean>;
  /** Stores the exact bytes and measures them back; throws artifact_exists when the key is taken. */
  promote(key: ArtifactKey, bytes: Uint8Array): Promise<PromotedArtifact>;
}

export function artifactExistsError(key: ArtifactKey, url: string, where: string): SvcError {
  return new SvcError(
    "artifact_exists",
    `${key.modId}@${key.version}: an artifact already exists at ${url} (${where}); published artifacts are immutable and never replaced — publish a new version instead`,
    { details: { modId: key.modId, version: key.version, url } },
  );
}

export interface FilesystemStoreOptions {
  /** The transaction root (project root): staging and the returned file paths are relative to it. */
  root: string;
  /** The site root below root; artifacts live at {siteDir}/downloads/mods/{modId}/{version}/{fileName}. */
  siteDir: string;
  /** The portal's public base URL (portal.config.json baseUrl). */
  baseUrl: string;
}

/**
 * Artifacts as files under the site root, served by Pages or the local server. promote() writes the
 * bytes to private staging on the same filesystem, fsyncs and hashes them by reading the file back;
 * the publisher's transaction hard-links that very inode to the public path, create-only.
 */
export function filesystemArtifactStore(options: FilesystemStoreOptions): ArtifactStore {
  const siteRel = relative(options.root, options.siteDir);
  if (siteRel.startsWith("..")) throw new Error(`site ${options.siteDir} must be inside ${options.root}`);
  const urls = portalUrls(options.baseUrl);
  const publicPath = (key: ArtifactKey) =>
    join(siteRel, SITE_PATHS.artifact(key.modId, key.version, key.fileName))
      .split("\\")
      .join("/");
  const versionDir = (key: ArtifactKey) => join(options.siteDir, "downloads", "mods", key.modId, key.version);
  return {
    kind: "filesystem",
    description: `filesystem ${join(options.siteDir, "downloads")}`,
    urlFor: (key) => urls.artifact(key.modId, key.version, key.fileName),
    // A version folder with any file in it counts: one version has exactly one artifact URL.
    exists: async (key) => existsSync(versionDir(key)),
    async promote(key, bytes) {
      const url = urls.artifact(key.modId, key.version, key.fileName);
      if (existsSync(versionDir(key))) throw artifactExistsError(key, url, publicPath(key));
      const dir = join(stagingDir(options.root), randomBytes(8).toString("hex"));
      const staged = join(dir, key.fileName);
      writeFileSynced(staged, bytes, { exclusive: true });
      const measured = await hashFile(staged);
      const cleanup = async () => rmSync(dir, { recursive: true, force: true });
      return {
        key,
        url,
        ...measured,
        files: new Map([[publicPath(key), { stagedFile: staged }]]),
        finish: cleanup,
        abort: cleanup,
      };
    },
  };
}
