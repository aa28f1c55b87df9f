import { readFileSync } from "node:fs";
import { join } from "node:path";
import { isLoopbackBaseUrl, type PortalConfig } from "../config/portal-config.ts";
import { portalUrls, SITE_PATHS } from "../contracts/urls.ts";
import { SvcError } from "../errors.ts";
import { RECORD_PATHS, type ReleaseRecord } from "../contracts/records.ts";

/** The base a portal-hosted artifact URL was published under, or null for artifacts held elsewhere. */
function publishedBase(record: ReleaseRecord): string | null {
  const tail = `/downloads/mods/${record.modId}/${record.version}/${record.fileName}`;
  return record.packageUrl.endsWith(tail) ? record.packageUrl.slice(0, -tail.length) : null;
}

/**
 * Release records as a portal at baseUrl reads them. A public artifact URL never changes; a
 * loopback one names this machine's portal, wherever it listens now, so a loopback portal that moved
 * to another port (a development portal follows the port it listens on) lists its own downloads at
 * its current origin (and a record a later publication rewrites keeps that origin). A record
 * published on a loopback portal cannot appear on a public one: that is refused with what to do,
 * instead of the manager reader's "packageUrl must be https" further down.
 */
export function recordsAtBase(records: readonly ReleaseRecord[], baseUrl: string): ReleaseRecord[] {
  const urls = portalUrls(baseUrl);
  const stranded: ReleaseRecord[] = [];
  const shown = records.map((record) => {
    const base = publishedBase(record);
    if (base === null || base === baseUrl || !isLoopbackBaseUrl(base)) return record;
    if (!isLoopbackBaseUrl(baseUrl)) {
      stranded.push(record);
      return record;
    }
    return { ...record, packageUrl: urls.artifact(record.modId, record.version, record.fileName) };
  });
  if (stranded.length > 0) {
    const first = stranded[0]!;
    const oldBase = publishedBase(first)!;
    const files = [...new Set(stranded.map((r) => `records/${RECORD_PATHS.modRecords(r.modId)}`))];
    throw new SvcError(
      "config_invalid",
      `portal.config.json baseUrl is ${baseUrl}, but ${stranded.length} release(s) were published on the local portal at ${oldBase} (${files.slice(0, 5).join(", ")}${files.length > 5 ? ", ..." : ""}); published artifact URLs never change. Either set baseUrl back to ${oldBase}, or remove those local releases and their files (for example: rm records/${RECORD_PATHS.modRecords(first.modId)} && rm -r site/downloads/mods/${first.modId}) and publish them again on this portal (svc import or an upload), then run svc build.`,
      { details: { reason: "base_url_changed", baseUrl, publishedAt: oldBase, records: files } },
    );
  }
  return shown;
}

/** The base URL the site on disk was built for (its backend contract names it), or null. */
function builtBaseUrl(siteDir: string): string | null {
  try {
    const doc = JSON.parse(readFileSync(join(siteDir, SITE_PATHS.backendContract), "utf8")) as {
      baseUrl?: unknown;
    };
    return typeof doc.baseUrl === "string" ? doc.baseUrl : null;
  } catch {
    return null;
  }
}

/**
 * The configuration a command that publishes into siteDir (svc import) works with. A development
 * portal (npm start on any port) builds the site for the origin it listens on; a publication beside
 * it with portal.config.json's loopback base would put two origins in one catalog (refused as
 * "packageUrl must be https") and links the running portal cannot serve. So while the site on disk
 * was built for another loopback base, the publication follows it; the portal rebuilds the site for
 * the configured base when it stops, and release records on loopback follow that (recordsAtBase).
 * A public baseUrl is never replaced.
 */
export function configForSite(config: PortalConfig, siteDir: string): PortalConfig {
  if (!isLoopbackBaseUrl(config.baseUrl)) return config;
  const built = builtBaseUrl(siteDir);
  if (built === null || built === config.baseUrl || !isLoopbackBaseUrl(built)) return config;
  return { ...config, baseUrl: built };
}
