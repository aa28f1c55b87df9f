/**
 * `svc new`'s carry-forward source: the mod's last published version, read from a portal (its public
 * mod detail document, svc.mod-detail.v1) or from the local site, so a new version's sidecar starts
 * from what the portal already shows.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { ModDetailDocument } from "../contracts/catalog.ts";
import type { CarrySource } from "../contracts/carry-forward.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { SIDECAR_JSON_LIMITS } from "../validation/documents.ts";

/** What a portal's mod detail document (svc.mod-detail.v1) gives a new version to start from. */
export interface PortalDetail extends CarrySource {
  latestVersion: string;
  summary?: string;
  /** Where it was read, for the message. */
  from: string;
}

/** The descriptive fields of a mod detail document, or null when it is not one. */
function portalDetail(value: unknown, from: string): PortalDetail | null {
  const doc = value as Partial<ModDetailDocument> | null;
  if (doc?.schema !== "svc.mod-detail.v1" || typeof doc.latestVersion !== "string") return null;
  return {
    latestVersion: doc.latestVersion,
    from,
    ...(typeof doc.summary === "string" ? { summary: doc.summary } : {}),
    ...(typeof doc.description === "string" ? { description: doc.description } : {}),
    ...(doc.links && typeof doc.links === "object" ? { links: doc.links } : {}),
    ...(Array.isArray(doc.tags) ? { tags: doc.tags } : {}),
    ...(typeof doc.license === "string" ? { license: doc.license } : {}),
    ...(Array.isArray(doc.authors) && doc.authors.length > 0 ? { authors: doc.authors } : {}),
  };
}

/**
 * The mod's last published version: with --portal, GET {portal}/api/v1/mods/{modId}; else its detail
 * document in the local site when there is a built one (a mod it does not list is new), else the
 * portal of ./portal.config.json. null when the portal does not list the mod (404). A portal that
 * cannot be reached is a warning, never a guess.
 */
export function lastPublishedReader(
  siteDir: string,
  portal: { explicit: string | null; configured: string | null },
  warnings: string[],
) {
  return async (modId: string): Promise<PortalDetail | null> => {
    if (portal.explicit === null && existsSync(resolve(siteDir, SITE_PATHS.catalog))) {
      const local = resolve(siteDir, SITE_PATHS.modDetail(modId));
      if (!existsSync(local)) return null;
      const parsed = parseUntrustedJson(readFileSync(local, "utf8"), SIDECAR_JSON_LIMITS);
      return parsed.ok ? portalDetail(parsed.value, local) : null;
    }
    const base = portal.explicit ?? portal.configured;
    if (!base) return null;
    const url = `${base.replace(/\/+$/, "")}/api/v1/mods/${encodeURIComponent(modId)}`;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(15_000) });
      if (response.status === 404) return null;
      if (!response.ok) {
        warnings.push(`${url} answered ${response.status}: the sidecar starts from the flags alone`);
        return null;
      }
      const parsed = parseUntrustedJson(await response.text(), SIDECAR_JSON_LIMITS);
      return parsed.ok ? portalDetail(parsed.value, url) : null;
    } catch (error) {
      warnings.push(`${url}: ${(error as Error).message}; the sidecar starts from the flags alone`);
      return null;
    }
  };
}

/** The portal's base URL from ./portal.config.json, when the working directory is a portal repository. */
export function configuredPortal(cwd: string): string | null {
  const path = resolve(cwd, "portal.config.json");
  if (!existsSync(path)) return null;
  try {
    const baseUrl = (JSON.parse(readFileSync(path, "utf8")) as { baseUrl?: unknown }).baseUrl;
    return typeof baseUrl === "string" ? baseUrl : null;
  } catch {
    return null;
  }
}
