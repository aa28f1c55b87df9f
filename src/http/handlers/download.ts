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

/**
 * api_key_mod_download: a published, download-enabled artifact with its catalog sha256 as ETag,
 * Content-Length and Range/206; a redirect for artifacts held elsewhere (GitHub Releases store);
 * 404 for anything the mod's versions document does not list as download-enabled (hidden
 * included), by the same rule as the static /downloads/ path (src/http/published-artifacts.ts).
 */
export const apiKeyModDownload: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  const { modId = "", version = "", fileName = "" } = route.params;
  const record = publishedArtifactsFor(app.siteDir).lookup(modId, version, fileName);
  if (!record) {
    throw new SvcError("not_found", `no download-enabled artifact ${modId}/${version}/${fileName}`);
  }
  const rel = SITE_PATHS.artifact(modId, version, fileName);
  const local = portalHostedPath(app, record, rel);
  const common = {
    "cache-control": "private, max-age=31536000, immutable",
    "x-content-type-options": "nosniff",
    "x-svc-sha256": record.sha256,
  };
  const artifacts = publishedArtifactsFor(app.siteDir);
  const file = local ? artifacts.descriptor(modId, join(app.siteDir, local)) : null;
  if (!file) {
    // Held by another store (GitHub Releases), or a platform whose functions do not carry the
    // site's artifacts: send the client to the immutable public URL, whose bytes the hash covers.
    res.writeHead(302, {
      location: record.packageUrl,
      etag: `"${record.sha256}"`,
      ...common,
      "content-length": 0,
    });
    res.end();
    return;
  }
  if (file.size !== record.packageSizeBytes) {
    throw new Error(
      `artifact ${rel} is ${file.size} bytes on disk but ${record.packageSizeBytes} in the catalog`,
    );
  }
  await sendFile(req, res, {
    path: join(app.siteDir, rel),
    fd: file.fd,
    size: file.size,
    etag: `"${record.sha256}"`,
    headers: {
      ...common,
      "content-type": "application/zip",
      "content-disposition": `attachment; filename="${fileName.replace(/[^A-Za-z0-9._-]/g, "_")}"`,
    },
  });
};
