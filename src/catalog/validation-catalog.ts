import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { join } from "node:path";
import type {
  CatalogDocument,
  CatalogMod,
  ModDetailDocument,
  ModVersionsDocument,
  VersionRecord,
} from "../contracts/catalog.ts";
import { portalUrls, SITE_PATHS } from "../contracts/urls.ts";
import { sha256Hex } from "../lib/hash.ts";

const MOD_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** The mods a submission's catalog-aware checks look at: its own and its dependencies. */
function submissionModIds(sidecar: unknown): string[] {
  if (!sidecar || typeof sidecar !== "object") return [];
  const { modId, dependencies } = sidecar as { modId?: unknown; dependencies?: unknown };
  const ids = [
    modId,
    ...(Array.isArray(dependencies) ? dependencies.map((d) => (d as { modId?: unknown })?.modId) : []),
  ];
  return [...new Set(ids.filter((id): id is string => typeof id === "string" && MOD_ID.test(id)))];
}

/**
 * The catalog as the validation checks need it: catalog.json lists only each mod's newest version,
 * so the submission's own mod and its dependencies get every version from their versions.json
 * (version_exists, dependency ranges met only by an older version). Reads those few files only.
 */
export function catalogWithSubmissionVersions(
  catalog: CatalogDocument | null,
  siteDir: string,
  sidecar: unknown,
): CatalogDocument | null {
  if (!catalog) return null;
  const wanted = new Set(submissionModIds(sidecar));
  if (wanted.size === 0) return catalog;
  return {
    ...catalog,
    mods: catalog.mods.map((mod) => {
      if (!wanted.has(mod.id)) return mod;
      const path = join(siteDir, SITE_PATHS.modVersions(mod.id));
      if (!existsSync(path)) return mod;
      try {
        const versions = (JSON.parse(readFileSync(path, "utf8")) as { versions?: VersionRecord[] }).versions;
        return Array.isArray(versions) && versions.length > 0 ? { ...mod, versions } : mod;
      } catch {
        return mod;
      }
    }),
  };
}

/** Reads one site-relative file: its bytes, or null when there is none. Tests inject one to count reads. */
export type SiteFileReader = (relativePath: string) => Buffer | null;

export function siteFileReader(siteDir: string): SiteFileReader {
  return (relativePath) => {
    try {
      return readFileSync(join(siteDir, relativePath));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
  };
}

/** Where the top-level mods array starts in catalog.json as the site writes it (serializeDocument). */
const MODS_KEY = Buffer.from('\n  "mods": [');
/** The header (every field but mods) is a few hundred bytes; this much is decoded to find it. */
const HEADER_WINDOW = 64 * 1024;

/** catalog.json without its mods, parsed from the bytes before the mods array; null in another layout. */
function catalogHeader(bytes: Buffer): Omit<CatalogDocument, "mods"> | null {
  const at = bytes.subarray(0, HEADER_WINDOW).indexOf(MODS_KEY);
  if (at < 0) return null;
  try {
    const header = JSON.parse(
      `${bytes.subarray(0, at).toString("utf8")}\n  "mods": []\n}`,
    ) as CatalogDocument;
    if (header.schema !== "svc.catalog.v1" || typeof header.baseUrl !== "string") return null;
    const { mods: _, ...rest } = header;
    return rest;
  } catch {
    return null;
  }
}

/** Whether the bytes hold this string as a JSON string value (JSON.stringify writes one escaping). */
function mentions(bytes: Buffer, value: string): boolean {
  return bytes.indexOf(JSON.stringify(value)) >= 0;
}

function parseJson<T>(bytes: Buffer | null): T | null {
  if (!bytes) return null;
  try {
    return JSON.parse(bytes.toString("utf8")) as T;
  } catch {
    return null;
  }
}

/** The artifact URL semantic_version compares (the sidecar's, or the portal's own for it). */
function artifactUrlOf(sidecar: unknown, baseUrl: string): string | null {
  const s = sidecar as {
    modId?: unknown;
    version?: unknown;
    package?: { url?: unknown; fileName?: unknown };
  } | null;
  if (!s || typeof s !== "object") return null;
  if (typeof s.package?.url === "string") return s.package.url;
  if (typeof s.modId !== "string" || typeof s.version !== "string" || typeof s.package?.fileName !== "string")
    return null;
  return portalUrls(baseUrl).artifact(s.modId, s.version, s.package.fileName);
}

/**
 * One mod of the catalog as its own documents give it: the summary of mods/{id}/index.json, every
 * version of mods/{id}/versions.json and the sha256 of that file's bytes (catalog.json's
 * versionsSha256). Null when either is missing or unreadable.
 */
function readCatalogMod(read: SiteFileReader, modId: string): CatalogMod | null {
  const versionsBytes = read(SITE_PATHS.modVersions(modId));
  const versions = parseJson<ModVersionsDocument>(versionsBytes);
  const detail = parseJson<ModDetailDocument>(read(SITE_PATHS.modDetail(modId)));
  if (!versions || !detail || !Array.isArray(versions.versions) || versions.versions.length === 0)
    return null;
  if (detail.id !== modId || versions.modId !== modId) return null;
  return {
    id: detail.id,
    name: detail.name,
    summary: detail.summary,
    authors: detail.authors,
    tags: detail.tags,
    latestVersion: detail.latestVersion,
    detailUrl: detail.detailUrl,
    versionsUrl: detail.versionsUrl,
    pageUrl: detail.pageUrl,
    updatedAt: detail.updatedAt,
    versionsSha256: sha256Hex(versionsBytes!),
    // Every version, newest first (versions.json's order): the catalog-aware checks see them all.
    versions: versions.versions,
  };
}

/**
 * The catalog a submission's checks need, read from the site without parsing catalog.json: its
 * header (the bytes before the mods array), then only the mods the checks look at, each from its own
 * documents with every version: the submission's own mod, its dependencies, and every mod their
 * newest versions depend on in turn (dependency_contract's cycle search walks exactly those). A mod
 * counts as in the catalog when catalog.json names its versionsUrl, so a stale per-mod file of a mod
 * the catalog dropped is never read as published.
 *
 * catalog.json's bytes are searched (not parsed) for the artifact URL the release would use:
 * semantic_version refuses a URL any listed version serves. Only when the URL occurs, or when the
 * file or a listed mod's documents are not as the site writes them, is the whole catalog parsed
 * (catalogWithSubmissionVersions): same checks, same answers, the old cost.
 */
export function readSubmissionCatalog(
  siteDir: string,
  sidecar: unknown,
  read?: SiteFileReader,
): CatalogDocument | null {
  if (read) {
    const bytes = read(SITE_PATHS.catalog);
    return bytes ? submissionCatalog(bytesCatalog(bytes), siteDir, sidecar, read) : null;
  }
  const file = CatalogFile.open(join(siteDir, SITE_PATHS.catalog));
  if (!file) return null;
  try {
    return submissionCatalog(file, siteDir, sidecar, siteFileReader(siteDir));
  } finally {
    file.close();
  }
}

/** catalog.json as readSubmissionCatalog reads it: its first bytes, searches of its text, the whole. */
interface CatalogSource {
  head(): Buffer;
  /** Whether each value occurs as a JSON string value (JSON.stringify writes one escaping). */
  mentions(values: readonly string[]): boolean[];
  whole(): Buffer;
}

/** A catalog given whole (an injected reader: what the tests count reads through). */
function bytesCatalog(bytes: Buffer): CatalogSource {
  return {
    head: () => bytes.subarray(0, HEADER_WINDOW),
    mentions: (values) => values.map((value) => mentions(bytes, value)),
    whole: () => bytes,
  };
}

/** Bytes searched at a time: catalog.json is 73 MB at 50,000 mods, and is never held whole to be searched. */
const SEARCH_WINDOW = 1024 * 1024;

/**
 * catalog.json opened once and read in windows through that descriptor: every read (the header,
 * each search, the whole file when parsed) sees the same file, as one readFileSync did, also when a
 * publication replaces it meanwhile (by rename). All the values of one question are searched in one
 * pass, each window once.
 */
class CatalogFile implements CatalogSource {
  private constructor(
    private readonly fd: number,
    private readonly size: number,
  ) {}

  static open(path: string): CatalogFile | null {
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
    try {
      return new CatalogFile(fd, fstatSync(fd).size);
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  private readInto(buffer: Buffer, offset: number, length: number, position: number): number {
    let done = 0;
    while (done < length) {
      const n = readSync(this.fd, buffer, offset + done, length - done, position + done);
      if (n === 0) break;
      done += n;
    }
    return done;
  }

  head(): Buffer {
    const buffer = Buffer.allocUnsafe(Math.min(HEADER_WINDOW, this.size));
    return buffer.subarray(0, this.readInto(buffer, 0, buffer.length, 0));
  }

  mentions(values: readonly string[]): boolean[] {
    const needles = values.map((value) => Buffer.from(JSON.stringify(value)));
    const found = needles.map(() => false);
    const overlap = Math.max(0, ...needles.map((n) => n.length - 1));
    const buffer = Buffer.allocUnsafe(overlap + SEARCH_WINDOW);
    let kept = 0;
    let left = needles.length;
    for (let position = 0; position < this.size && left > 0; ) {
      const n = this.readInto(buffer, kept, Math.min(SEARCH_WINDOW, this.size - position), position);
      if (n === 0) break;
      position += n;
      const text = buffer.subarray(0, kept + n);
      for (let i = 0; i < needles.length; i++) {
        if (!found[i] && text.indexOf(needles[i]!) >= 0) {
          found[i] = true;
          left--;
        }
      }
      // The last bytes are searched again with the next window: a value cut in two is still found.
      kept = Math.min(overlap, text.length);
      text.copy(buffer, 0, text.length - kept);
    }
    return found;
  }

  whole(): Buffer {
    const buffer = Buffer.allocUnsafe(this.size);
    return buffer.subarray(0, this.readInto(buffer, 0, this.size, 0));
  }

  close(): void {
    closeSync(this.fd);
  }
}

function submissionCatalog(
  source: CatalogSource,
  siteDir: string,
  sidecar: unknown,
  read: SiteFileReader,
): CatalogDocument | null {
  const whole = () => {
    const catalog = parseJson<CatalogDocument>(source.whole());
    return catalog ? catalogWithSubmissionVersions(catalog, siteDir, sidecar) : null;
  };
  const header = catalogHeader(source.head());
  if (!header) return whole();
  const url = artifactUrlOf(sidecar, header.baseUrl);
  const urls = portalUrls(header.baseUrl);
  const mods = new Map<string, CatalogMod>();
  const queue = submissionModIds(sidecar);
  const seen = new Set(queue);
  // The artifact URL and the submission's own mods are searched in one pass; a mod their newest
  // versions depend on (found while walking) in one more pass per round.
  const listed = new Map<string, boolean>();
  const ask = (values: string[]) => {
    const answers = source.mentions(values);
    for (const [i, value] of values.entries()) listed.set(value, answers[i]!);
  };
  ask([...(url !== null ? [url] : []), ...queue.map((modId) => urls.modVersions(modId))]);
  if (url !== null && listed.get(url)) return whole();
  for (let i = 0; i < queue.length; i++) {
    const modId = queue[i]!;
    if (!listed.has(urls.modVersions(modId)))
      ask(
        queue
          .slice(i)
          .filter((id) => !listed.has(urls.modVersions(id)))
          .map((id) => urls.modVersions(id)),
      );
    if (!listed.get(urls.modVersions(modId))) continue;
    const mod = readCatalogMod(read, modId);
    if (!mod) return whole();
    mods.set(modId, mod);
    for (const dep of mod.versions[0]!.dependencies ?? []) {
      if (typeof dep?.modId === "string" && MOD_ID.test(dep.modId) && !seen.has(dep.modId)) {
        seen.add(dep.modId);
        queue.push(dep.modId);
      }
    }
  }
  const sorted = [...mods.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { ...header, mods: sorted };
}
