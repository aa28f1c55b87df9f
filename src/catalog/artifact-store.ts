import { randomBytes } from "node:crypto";
import { lstatSync, readdirSync, rmSync } from "node:fs";
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
  /**
   * Whether the artifact is stored: a file (or a release asset) under the key, holding exactly the
   * expected bytes when they are given. A store may also count what would block promote (a tag).
   */
  exists(key: ArtifactKey, expected?: { sha256: string; sizeBytes: number }): Promise<boolean>;
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
    async exists(key, expected) {
      const file = join(options.root, publicPath(key));
      if (!isFile(file)) return false;
      if (!expected) return true;
      const measured = await hashFile(file);
      return measured.sizeBytes === expected.sizeBytes && measured.sha256 === expected.sha256;
    },
    async promote(key, bytes) {
      const url = urls.artifact(key.modId, key.version, key.fileName);
      // A file anywhere in the version's folder counts (one version has exactly one artifact URL);
      // a folder alone does not: it holds no artifact, and must never block the version.
      const held = filesUnder(versionDir(key));
      if (held.length > 0)
        throw artifactExistsError(key, url, relative(options.root, held[0]!).split("\\").join("/"));
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

function isFile(path: string): boolean {
  try {
    return lstatSync(path).isFile();
  } catch {
    return false;
  }
}

/** Every entry below dir that is not a folder (files, links), depth first; none when dir is absent. */
function filesUnder(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(dir, name);
    return lstatSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}
