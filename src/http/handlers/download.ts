import { statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { CatalogDocument, VersionRecord } from "../../contracts/catalog.ts";
import { SvcError } from "../../errors.ts";
import type { AppContext, Handler } from "../context.ts";
import { guardRequest } from "../guard.ts";
import { parseRange, streamFile } from "../static-site.ts";

interface CatalogIndex {
  key: string;
  versions: Map<string, VersionRecord>;
}

let cached: { siteDir: string; index: CatalogIndex } | null = null;

/**
 * The download-enabled versions of catalog.json, keyed modId/version/fileName. Re-read only when
 * the file changes (publication replaces it atomically, so size/mtime/inode move together).
 */
async function catalogIndex(app: AppContext): Promise<CatalogIndex> {
  const path = join(app.siteDir, "api/v1/catalog.json");
  let key: string;
  try {
    const stats = statSync(path);
    key = `${stats.size}:${stats.mtimeMs}:${stats.ino}`;
  } catch {
    return { key: "missing", versions: new Map() };
  }
  if (cached && cached.siteDir === app.siteDir && cached.index.key === key) return cached.index;
  const catalog = JSON.parse(await readFile(path, "utf8")) as CatalogDocument;
  const versions = new Map<string, VersionRecord>();
  for (const mod of catalog.mods) {
    for (const version of mod.versions) {
      if (version.downloadEnabled) versions.set(`${mod.id}/${version.version}/${version.fileName}`, version);
    }
  }
  const index = { key, versions };
  cached = { siteDir: app.siteDir, index };
  return index;
}

/** The site-relative path when the artifact is hosted by this portal under /downloads/. */
function portalHostedPath(app: AppContext, record: VersionRecord, expected: string): string | null {
  const base = app.config.baseUrl.replace(/\/+$/, "");
  const url = record.packageUrl;
  const path = url.startsWith(`${base}/`) ? url.slice(base.length) : url.startsWith("/") ? url : null;
  return path === `/${expected}` ? expected : null;
}

/**
 * api_key_mod_download: a published, download-enabled artifact with its catalog sha256 as ETag,
 * Content-Length and Range/206; a redirect for artifacts held elsewhere (GitHub Releases store);
 * 404 for anything the catalog does not list as download-enabled.
 */
export const apiKeyModDownload: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  const { modId = "", version = "", fileName = "" } = route.params;
  const record = (await catalogIndex(app)).versions.get(`${modId}/${version}/${fileName}`);
  if (!record) {
    throw new SvcError("not_found", `no download-enabled artifact ${modId}/${version}/${fileName}`);
  }
  const rel = `downloads/mods/${modId}/${version}/${fileName}`;
  const local = portalHostedPath(app, record, rel);
  const etag = `"${record.sha256}"`;
  const common = {
    etag,
    "cache-control": "private, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
    "x-svc-sha256": record.sha256,
  };
  let size: number | null = null;
  if (local) {
    try {
      const stats = statSync(join(app.siteDir, local));
      size = stats.isFile() ? stats.size : null;
    } catch {
      size = null;
    }
  }
  if (size === null) {
    // Held by another store (GitHub Releases), or a platform whose functions do not carry the
    // site's artifacts: send the client to the immutable public URL, whose bytes the hash covers.
    res.writeHead(302, { location: record.packageUrl, ...common, "content-length": 0 });
    res.end();
    return;
  }
  if (size !== record.packageSizeBytes) {
    throw new Error(`artifact ${rel} is ${size} bytes on disk but ${record.packageSizeBytes} in the catalog`);
  }
  const inm = req.headers["if-none-match"];
  if (inm?.split(",").some((tag) => tag.trim() === etag || tag.trim() === `W/${etag}`)) {
    res.writeHead(304, common);
    res.end();
    return;
  }
  const ifRange = req.headers["if-range"];
  const range = ifRange && ifRange !== etag ? null : parseRange(req.headers.range, size);
  if (range === "unsatisfiable") {
    res.setHeader("content-range", `bytes */${size}`);
    throw new SvcError("range_not_satisfiable", `range outside 0-${size - 1}`);
  }
  const headers: Record<string, string | number> = {
    ...common,
    "content-type": "application/zip",
    "content-disposition": `attachment; filename="${fileName.replace(/[^A-Za-z0-9._-]/g, "_")}"`,
    "accept-ranges": "bytes",
  };
  if (range) {
    headers["content-range"] = `bytes ${range.start}-${range.end}/${size}`;
    headers["content-length"] = range.end - range.start + 1;
    res.writeHead(206, headers);
  } else {
    headers["content-length"] = size;
    res.writeHead(200, headers);
  }
  if (req.method === "HEAD") {
    res.end();
    return;
  }
  await streamFile(res, join(app.siteDir, local!), range ?? undefined);
};
