import type { ServerResponse } from "node:http";
import { join } from "node:path";
import type { VersionRecord } from "../../contracts/catalog.ts";
import { SITE_PATHS } from "../../contracts/urls.ts";
import { SvcError } from "../../errors.ts";
import type { AppContext, Handler } from "../context.ts";
import { guardRequest } from "../guard.ts";
import { publishedArtifactsFor } from "../published-artifacts.ts";
import { sendFile } from "../static-site.ts";

/** The site-relative path when the artifact is hosted by this portal under /downloads/. */
function portalHostedPath(app: AppContext, record: VersionRecord, expected: string): string | null {
  const base = app.config.baseUrl.replace(/\/+$/, "");
  const url = record.packageUrl;
  const path = url.startsWith(`${base}/`) ? url.slice(base.length) : url.startsWith("/") ? url : null;
  return path === `/${expected}` ? expected : null;
}

/** What the lane answers for one version record, worked out once per record. */
interface PreparedArtifact {
  /** What it was worked out under: a portal's configuration object may be replaced while it runs. */
  baseUrl: string;
  siteDir: string;
  rel: string;
  /** Absolute path when this portal holds the bytes, else null (a redirect to packageUrl). */
  path: string | null;
  etag: string;
  /** Headers of the redirect and of the 304 (validators and caching). */
  common: Record<string, string>;
  /** Headers of the download itself; sendFile adds length, range and validator headers. */
  download: Record<string, string>;
}

/**
 * Keyed by the record object itself: PublishedArtifacts builds new records whenever the mod's
 * versions document changes, so a prepared answer never outlives the record it was made from
 * (and a record belongs to one mod's document, so its mod id is fixed too). The lane answers the
 * same few records over and over: paths and headers are built once, not per 4 KiB range.
 */
const preparedAnswers = new WeakMap<VersionRecord, PreparedArtifact>();

function prepare(app: AppContext, modId: string, record: VersionRecord, fileName: string): PreparedArtifact {
  const hit = preparedAnswers.get(record);
  if (hit && hit.baseUrl === app.config.baseUrl && hit.siteDir === app.siteDir) return hit;
  const rel = SITE_PATHS.artifact(modId, record.version, fileName);
  const local = portalHostedPath(app, record, rel);
  const common = {
    "cache-control": "private, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
    "x-svc-sha256": record.sha256,
  };
  const entry: PreparedArtifact = {
    baseUrl: app.config.baseUrl,
    siteDir: app.siteDir,
    rel,
    path: local ? join(app.siteDir, local) : null,
    etag: `"${record.sha256}"`,
    common,
    download: {
      ...common,
      "content-type": "application/zip",
      "content-disposition": `attachment; filename="${fileName.replace(/[^A-Za-z0-9._-]/g, "_")}"`,
    },
  };
  preparedAnswers.set(record, entry);
  return entry;
}

function redirect(res: ServerResponse, location: string, answer: PreparedArtifact): void {
  res.writeHead(302, { location, etag: answer.etag, ...answer.common, "content-length": 0 });
  res.end();
}

function notFound(modId: string, version: string, fileName: string): SvcError {
  return new SvcError("not_found", `no download-enabled artifact ${modId}/${version}/${fileName}`);
}

/**
 * api_key_mod_download: a published, download-enabled artifact with its catalog sha256 as ETag,
 * Content-Length and Range/206; a redirect for artifacts held elsewhere (GitHub Releases store);
 * 404 for anything the mod's versions document does not list as download-enabled (hidden
 * included), by the same rule as the static /downloads/ path (src/http/published-artifacts.ts).
 * Without a site folder (Vercel) the document is read from GitHub Pages (src/http/pages-versions.ts)
 * and every answer is a redirect.
 */
export const apiKeyModDownload: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  const { modId = "", version = "", fileName = "" } = route.params;
  if (app.pagesVersions) {
    const record = await app.pagesVersions.lookup(modId, version, fileName);
    if (!record) throw notFound(modId, version, fileName);
    const answer = prepare(app, modId, record, fileName);
    redirect(res, app.pagesVersions.locationOf(record, app.config.baseUrl), answer);
    return;
  }
  const artifacts = publishedArtifactsFor(app.siteDir);
  const record = artifacts.lookup(modId, version, fileName);
  if (!record) throw notFound(modId, version, fileName);
  const answer = prepare(app, modId, record, fileName);
  const file = answer.path ? artifacts.descriptor(modId, answer.path) : null;
  if (!file) {
    // Held by another store (GitHub Releases): send the client to the immutable public URL, whose
    // bytes the hash covers.
    redirect(res, record.packageUrl, answer);
    return;
  }
  if (file.size !== record.packageSizeBytes) {
    throw new Error(
      `artifact ${answer.rel} is ${file.size} bytes on disk but ${record.packageSizeBytes} in the catalog`,
    );
  }
  const accel = app.settings.accelRedirect;
  if (accel) {
    // Behind nginx: the key was checked above; nginx sends the bytes (sendfile, Range, validators)
    // from its `internal` location, taking these content headers from this answer.
    res.writeHead(200, {
      ...answer.download,
      etag: answer.etag,
      "x-accel-redirect": `${accel}${answer.rel}`,
      "content-length": 0,
    });
    res.end();
    return;
  }
  await sendFile(req, res, {
    path: answer.path!,
    fd: file.fd,
    size: file.size,
    etag: answer.etag,
    headers: answer.download,
  });
};
