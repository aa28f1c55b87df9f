import type { ModVersionsDocument, VersionRecord } from "../contracts/catalog.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import { SvcError } from "../errors.ts";

/**
 * Which mod versions the API-key lane may serve, read from the portal's GitHub Pages site
 * (`deployment.pagesUrl`) instead of a site folder: a Vercel function carries no site, and baking
 * every versions.json into each deployment (51 MB at 10,000 mods) made a new version wait for a
 * redeploy. The rule is the local lane's (src/http/published-artifacts.ts): a version is public when
 * the mod's own versions.json lists it download-enabled, so a hidden version is refused too.
 *
 * Each mod's document is kept for FRESH_MS, then revalidated with If-None-Match /
 * If-Modified-Since (a 304 costs Pages no body). A version the kept document lacks is looked up
 * again once the document is MISS_RECHECK_MS old, so a version Pages has just started serving is
 * downloadable within seconds, and one that is not there costs at most one request per mod per
 * MISS_RECHECK_MS. When Pages cannot be read and the kept document is past FRESH_MS, the lane
 * answers 502 pages_unavailable rather than trust an old document: a version withdrawn meanwhile
 * must stop being served.
 */
export const FRESH_MS = 30_000;
export const MISS_RECHECK_MS = 5_000;
/** One read of Pages, headers and body (a function may run 60 s; a client waits on this). */
export const PAGES_TIMEOUT_MS = 5_000;
/** A versions.json lists every file of every version; one larger than this is not read. */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;
const MAX_CACHED_MODS = 2048;
const MOD_ID = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

interface PagesEntry {
  /** Download-enabled versions by `version/fileName`; empty for a mod Pages does not have. */
  versions: Map<string, VersionRecord>;
  etag: string | null;
  lastModified: string | null;
  checkedAt: number;
}

export interface PagesVersionsOptions {
  /** `deployment.pagesUrl`; null answers the lane with config_invalid, naming the field. */
  pagesUrl: string | null;
  fetch?: typeof fetch;
  /** Milliseconds on a monotonic clock (tests move it). */
  clock?: () => number;
  freshMs?: number;
  missRecheckMs?: number;
  timeoutMs?: number;
}

function pagesUnavailable(url: string, why: string, details: Record<string, unknown> = {}): SvcError {
  return new SvcError(
    "pages_unavailable",
    `GitHub Pages did not serve ${url} (${why}), so which versions are public cannot be told; retry, or download the packageUrl the catalog lists`,
    { details: { url, ...details } },
  );
}

async function readCapped(response: Response, url: string): Promise<string> {
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > MAX_DOCUMENT_BYTES) {
    await response.body?.cancel();
    throw pagesUnavailable(url, `larger than ${MAX_DOCUMENT_BYTES} bytes`, { bytes: declared });
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  if (response.body) {
    const reader = response.body.getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > MAX_DOCUMENT_BYTES) {
        await reader.cancel();
        throw pagesUnavailable(url, `larger than ${MAX_DOCUMENT_BYTES} bytes`);
      }
      chunks.push(value);
    }
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** The download-enabled versions of a versions document, or null when it is not one for this mod. */
function downloadable(value: unknown, modId: string): Map<string, VersionRecord> | null {
  const document = value as Partial<ModVersionsDocument> | null;
  if (document?.schema !== "svc.mod-versions.v1" || document.modId !== modId) return null;
  if (!Array.isArray(document.versions)) return null;
  const versions = new Map<string, VersionRecord>();
  for (const record of document.versions) {
    if (
      record?.downloadEnabled === true &&
      typeof record.version === "string" &&
      typeof record.fileName === "string" &&
      typeof record.packageUrl === "string" &&
      typeof record.sha256 === "string"
    ) {
      versions.set(`${record.version}/${record.fileName}`, record);
    }
  }
  return versions;
}

export class PagesVersions {
  private readonly base: string | null;
  private readonly fetch: typeof fetch;
  private readonly clock: () => number;
  private readonly freshMs: number;
  private readonly missRecheckMs: number;
  private readonly timeoutMs: number;
  private readonly entries = new Map<string, PagesEntry>();
  /** One read per mod at a time: a burst of downloads of a new version asks Pages once. */
  private readonly reading = new Map<string, Promise<PagesEntry>>();

  constructor(options: PagesVersionsOptions) {
    this.base = options.pagesUrl ? options.pagesUrl.replace(/\/+$/, "") : null;
    this.fetch = options.fetch ?? fetch;
    this.clock = options.clock ?? (() => performance.now());
    this.freshMs = options.freshMs ?? FRESH_MS;
    this.missRecheckMs = options.missRecheckMs ?? MISS_RECHECK_MS;
    this.timeoutMs = options.timeoutMs ?? PAGES_TIMEOUT_MS;
  }

  /** The version record that makes this artifact public, or null (unknown, hidden or not download-enabled). */
  async lookup(modId: string, version: string, fileName: string): Promise<VersionRecord | null> {
    if (this.base === null) {
      throw new SvcError(
        "config_invalid",
        "portal.config.json deployment.pagesUrl is null: a function carries no site, so the fast-download lane reads each mod's versions.json from GitHub Pages (docs/api.md, Deploying on Vercel)",
      );
    }
    // Segments come from a request: only a mod id (the records' own pattern) names a document.
    if (!MOD_ID.test(modId)) return null;
    const key = `${version}/${fileName}`;
    const kept = this.entries.get(modId);
    const age = kept ? this.clock() - kept.checkedAt : Number.POSITIVE_INFINITY;
    if (kept && age < this.freshMs) {
      const hit = kept.versions.get(key);
      if (hit || age < this.missRecheckMs) return hit ?? null;
      try {
        return (await this.revalidate(modId, kept)).versions.get(key) ?? null;
      } catch {
        // Still within FRESH_MS: the kept document's answer stands.
        return null;
      }
    }
    return (await this.revalidate(modId, kept)).versions.get(key) ?? null;
  }

  /**
   * Where a published record's bytes are: a package this portal hosts ({baseUrl}/downloads/...) is
   * at the same path on Pages from the moment its versions document lists it, which the
   * deployment's own copy of the site may not be yet; any other packageUrl as it is.
   */
  locationOf(record: VersionRecord, baseUrl: string): string {
    const base = baseUrl.replace(/\/+$/, "");
    const url = record.packageUrl;
    return this.base !== null && url.startsWith(`${base}/downloads/`)
      ? this.base + url.slice(base.length)
      : url;
  }

  private revalidate(modId: string, kept: PagesEntry | undefined): Promise<PagesEntry> {
    let pending = this.reading.get(modId);
    if (!pending) {
      pending = this.read(modId, kept).finally(() => this.reading.delete(modId));
      this.reading.set(modId, pending);
    }
    return pending;
  }

  private async read(modId: string, kept: PagesEntry | undefined): Promise<PagesEntry> {
    const url = `${this.base}/${SITE_PATHS.modVersions(modId)}`;
    const headers: Record<string, string> = { accept: "application/json" };
    if (kept?.etag) headers["if-none-match"] = kept.etag;
    if (kept?.lastModified) headers["if-modified-since"] = kept.lastModified;
    let response: Response;
    let text = "";
    try {
      response = await this.fetch(url, {
        headers,
        redirect: "follow",
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      if (response.status === 200) text = await readCapped(response, url);
      else await response.body?.cancel();
    } catch (error) {
      if (error instanceof SvcError) throw error;
      const reason =
        (error as Error).name === "TimeoutError"
          ? `no answer within ${this.timeoutMs} ms`
          : (error as Error).message;
      throw pagesUnavailable(url, reason);
    }
    let entry: PagesEntry;
    if (response.status === 304 && kept) {
      entry = kept;
    } else if (response.status === 404) {
      entry = { versions: new Map(), etag: null, lastModified: null, checkedAt: 0 };
    } else if (response.status === 200) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw pagesUnavailable(url, "the body is not JSON");
      }
      const versions = downloadable(parsed, modId);
      if (!versions) throw pagesUnavailable(url, `the body is not the versions document of ${modId}`);
      entry = {
        versions,
        etag: response.headers.get("etag"),
        lastModified: response.headers.get("last-modified"),
        checkedAt: 0,
      };
    } else {
      throw pagesUnavailable(url, `HTTP ${response.status}`, { status: response.status });
    }
    entry.checkedAt = this.clock();
    this.entries.delete(modId);
    this.entries.set(modId, entry);
    if (this.entries.size > MAX_CACHED_MODS) this.entries.delete(this.entries.keys().next().value as string);
    return entry;
  }
}
