import { closeSync, fstatSync, openSync, readFileSync, type Stats, statSync } from "node:fs";
import { join, resolve, sep } from "node:path";
import { onTreeChanged } from "../catalog/atomic-files.ts";
import type { ModVersionsDocument, VersionRecord } from "../contracts/catalog.ts";
import { SITE_PATHS } from "../contracts/urls.ts";

/**
 * Which mod artifacts the portal serves: exactly the download-enabled versions that the mod's own
 * `api/v1/mods/{modId}/versions.json` lists. That document is written from the release records in
 * the same atomic publication as the artifact itself, so the rule cannot drift from what the
 * catalog says: a hidden version is absent from it, and its bytes (kept in place so that unhide
 * restores the same URL) are answered 404 by the static site and the API-key lane alike. One small
 * document per mod is read, and re-read only when it changes, so the cost is O(one mod), never the
 * whole catalog.
 *
 * When it changes: a publication of this process (every one goes through commitFiles) is seen on
 * the next request; a publication by another process writing the same site folder (`svc import`
 * beside a running `npm start`) within RECHECK_MS, when the document is looked at again. Looking at
 * it on every request cost a stat(2) per API-key request, about a tenth of the lane's CPU time.
 */
export const RECHECK_MS = 1000;
const MAX_CACHED_MODS = 2048;
/**
 * Artifacts kept open for small range reads: a stat, an open and a close per request cost more
 * than the read itself on the API-key lane. Only synchronous reads use these descriptors, so one
 * can be closed on eviction at any moment; large downloads open their own.
 */
const MAX_OPEN_ARTIFACTS = 64;
const MOD_ID = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

interface ModEntry {
  /** The versions document's identity: publication replaces the file, so these move together. */
  size: number;
  mtimeMs: number;
  ino: number;
  versions: Map<string, VersionRecord>;
  /** When the identity was last compared with the file (performance.now()), and in which generation. */
  checkedAt: number;
  generation: number;
}

interface OpenArtifact {
  fd: number;
  size: number;
  /** The versions document it was opened under: a new publication of the mod reopens it. */
  document: ModEntry;
}

/** Artifact path segments: downloads/mods/{modId}/{version}/{fileName}. */
export function artifactSegments(rel: string): { modId: string; version: string; fileName: string } | null {
  const parts = rel.split("/");
  if (parts.length !== 5 || parts[0] !== "downloads" || parts[1] !== "mods") return null;
  const [, , modId, version, fileName] = parts as [string, string, string, string, string];
  return modId && version && fileName ? { modId, version, fileName } : null;
}

export class PublishedArtifacts {
  private readonly mods = new Map<string, ModEntry>();
  private readonly open = new Map<string, OpenArtifact>();
  /** Versions document paths by mod id (a path join per request showed in profiles). */
  private readonly documentPaths = new Map<string, string>();

  /** Moves on every transaction this process lands in the site folder: every entry is then re-checked. */
  private generation = 0;

  constructor(private readonly siteDir: string) {
    const root = resolve(siteDir);
    // A publication commits the project tree the site folder lies in, a rebuild the site itself.
    onTreeChanged((changed) => {
      const tree = resolve(changed);
      if (root === tree || root.startsWith(tree + sep)) this.generation++;
    });
  }

  /** The version record that makes this artifact public, or null (unknown, hidden or not download-enabled). */
  lookup(modId: string, version: string, fileName: string): VersionRecord | null {
    return this.versionsOf(modId)?.get(`${version}/${fileName}`) ?? null;
  }

  /**
   * A read-only descriptor and the size of a published artifact, or null when it is not a regular
   * file. Call right after lookup() of the same mod: the descriptor is kept while the mod's
   * versions document stays the same (artifacts are immutable; only a publication changes what is
   * served) and must only be read synchronously.
   */
  descriptor(modId: string, absolutePath: string): { fd: number; size: number } | null {
    const document = this.mods.get(modId);
    if (!document) return null;
    const hit = this.open.get(absolutePath);
    if (hit && hit.document === document) {
      this.open.delete(absolutePath);
      this.open.set(absolutePath, hit);
      return hit;
    }
    if (hit) this.close(absolutePath, hit);
    let fd: number;
    try {
      fd = openSync(absolutePath, "r");
    } catch {
      return null;
    }
    const stats = fstatSync(fd);
    if (!stats.isFile()) {
      closeSync(fd);
      return null;
    }
    const entry = { fd, size: stats.size, document };
    this.open.set(absolutePath, entry);
    if (this.open.size > MAX_OPEN_ARTIFACTS) {
      const [oldest, old] = this.open.entries().next().value as [string, OpenArtifact];
      this.close(oldest, old);
    }
    return entry;
  }

  private close(path: string, entry: OpenArtifact): void {
    this.open.delete(path);
    closeSync(entry.fd);
  }

  private versionsOf(modId: string): Map<string, VersionRecord> | null {
    // Segments come from a request: only a mod id (the records' own pattern) names a folder.
    if (!MOD_ID.test(modId)) return null;
    let path = this.documentPaths.get(modId);
    if (path === undefined) {
      path = join(this.siteDir, SITE_PATHS.modVersions(modId));
      if (this.documentPaths.size >= MAX_CACHED_MODS) this.documentPaths.clear();
      this.documentPaths.set(modId, path);
    }
    const known = this.mods.get(modId);
    const now = performance.now();
    if (known && known.generation === this.generation && now - known.checkedAt < RECHECK_MS) {
      return known.versions;
    }
    // The document's identity is what makes a version public (no exception for a missing one,
    // which an unknown mod id would otherwise cost on every request).
    let stats: Stats | undefined;
    try {
      stats = statSync(path, { throwIfNoEntry: false });
    } catch {
      stats = undefined;
    }
    if (!stats?.isFile()) {
      this.mods.delete(modId);
      return null;
    }
    if (known && known.size === stats.size && known.mtimeMs === stats.mtimeMs && known.ino === stats.ino) {
      known.checkedAt = now;
      known.generation = this.generation;
      return known.versions;
    }
    let document: ModVersionsDocument;
    try {
      document = JSON.parse(readFileSync(path, "utf8")) as ModVersionsDocument;
    } catch {
      // Caught mid-replacement or damaged: nothing is public until it reads whole.
      return null;
    }
    const versions = new Map<string, VersionRecord>();
    for (const record of Array.isArray(document.versions) ? document.versions : []) {
      if (record?.downloadEnabled === true) versions.set(`${record.version}/${record.fileName}`, record);
    }
    this.mods.delete(modId);
    this.mods.set(modId, {
      size: stats.size,
      mtimeMs: stats.mtimeMs,
      ino: stats.ino,
      versions,
      checkedAt: now,
      generation: this.generation,
    });
    if (this.mods.size > MAX_CACHED_MODS) this.mods.delete(this.mods.keys().next().value as string);
    return versions;
  }
}

const shared = new Map<string, PublishedArtifacts>();

/** One index per site folder, shared by the static site and the API-key lane of a process. */
export function publishedArtifactsFor(siteDir: string): PublishedArtifacts {
  let artifacts = shared.get(siteDir);
  if (!artifacts) {
    artifacts = new PublishedArtifacts(siteDir);
    shared.set(siteDir, artifacts);
  }
  return artifacts;
}
