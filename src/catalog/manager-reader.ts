import semver from "semver";
import { SOURCE_SCHEMA_BASE, schemaRegistry } from "../contracts/schemas.ts";
import type { CatalogDocument } from "../contracts/catalog.ts";

export interface ManagerCatalogParse {
  ok: boolean;
  errors: string[];
  mods: number;
  versions: number;
  catalog?: CatalogDocument;
}

/**
 * The reference manager reader: as strict as the desktop manager. It accepts a catalog only when
 * it parses as JSON, matches svc.catalog.v1, and every install decision it would make is sound:
 * unique ids and versions, newest first, latestVersion first, dependencies that resolve inside the
 * catalog, artifact URLs that end in the file name, and https everywhere except a loopback portal.
 */
export function parseManagerCatalog(text: string): ManagerCatalogParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, errors: [`not JSON: ${(error as Error).message}`], mods: 0, versions: 0 };
  }
  const baseUrl =
    typeof (value as { baseUrl?: unknown })?.baseUrl === "string"
      ? (value as { baseUrl: string }).baseUrl
      : SOURCE_SCHEMA_BASE;
  const result = schemaRegistry(baseUrl).validate<CatalogDocument>("catalog", value);
  if (!result.ok) {
    return {
      ok: false,
      errors: result.issues.slice(0, 50).map((i) => `${i.path} ${i.message}`),
      mods: 0,
      versions: 0,
    };
  }
  const catalog = result.value;
  const errors: string[] = [];
  const loopback = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/|$)/.test(catalog.baseUrl);
  const ids = new Set<string>();
  let versions = 0;
  for (const mod of catalog.mods) {
    if (ids.has(mod.id)) errors.push(`mods: duplicate id ${mod.id}`);
    ids.add(mod.id);
  }
  for (const mod of catalog.mods) {
    const seen = new Set<string>();
    mod.versions.forEach((v, i) => {
      versions++;
      if (seen.has(v.version)) errors.push(`${mod.id}: duplicate version ${v.version}`);
      seen.add(v.version);
      const next = mod.versions[i + 1];
      if (next && !semver.gt(v.version, next.version))
        errors.push(`${mod.id}: versions are not newest first at ${v.version}`);
      if (!v.packageUrl.endsWith(`/${v.fileName}`))
        errors.push(`${mod.id}@${v.version}: packageUrl does not end in ${v.fileName}`);
      if (!v.packageUrl.startsWith("https://") && !(loopback && v.packageUrl.startsWith(catalog.baseUrl))) {
        errors.push(`${mod.id}@${v.version}: packageUrl must be https`);
      }
      if (v.downloadEnabled && v.artifactStatus !== "published")
        errors.push(`${mod.id}@${v.version}: download enabled without a published artifact`);
      for (const dep of v.dependencies) {
        if (dep.modId === mod.id) errors.push(`${mod.id}@${v.version}: depends on itself`);
        else if (!ids.has(dep.modId) && !dep.optional)
          errors.push(`${mod.id}@${v.version}: dependency ${dep.modId} is not in the catalog`);
        if (semver.validRange(dep.versionRange) === null)
          errors.push(`${mod.id}@${v.version}: dependency range ${dep.versionRange} does not parse`);
      }
    });
    if (mod.versions[0] && mod.latestVersion !== mod.versions[0].version) {
      errors.push(
        `${mod.id}: latestVersion ${mod.latestVersion} is not the newest version ${mod.versions[0].version}`,
      );
    }
    if (!mod.versions.some((v) => v.downloadEnabled))
      errors.push(`${mod.id}: no downloadable version (not manager-installable)`);
  }
  return { ok: errors.length === 0, errors, mods: catalog.mods.length, versions, catalog };
}
