import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CatalogDocument, VersionRecord } from "../contracts/catalog.ts";
import { SITE_PATHS } from "../contracts/urls.ts";

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
