import * as semver from "../../contracts/semver.ts";
import { parseManagerCatalog } from "../../contracts/manager-reader.ts";
import {
  type CatalogDocument,
  type CatalogMod,
  toCatalogVersionRecord,
  type VersionRecord,
} from "../../contracts/catalog.ts";
import { portalUrls } from "../../contracts/urls.ts";
import type { CheckContext, CheckOutcome, CompleteSidecar, PackageCheck } from "../types.ts";
import { blocked, failuresOf, passed } from "./common.ts";

const ID = "manager_catalog_parse";

export const managerCatalogParse = {
  id: ID,
  scope: "package",
  required: true,
  pack: null,
  description: "The reference manager reader parses the catalog with this release in it.",
  reasons: {
    manager_parse_failed: {
      meaning: "The catalog with this version added is rejected by the reference manager reader.",
      fix: "See the log; usually a field the manager cannot read (version, URL, hash or dependency format).",
    },
  },
  run: checkManagerCatalogParse,
} as const satisfies PackageCheck;

const { failed } = failuresOf(managerCatalogParse);

/** The catalog as it would be with this release published (pure; the input is not modified). */
export function prospectiveCatalog(
  catalog: CatalogDocument,
  sidecar: CompleteSidecar,
  now: string,
): CatalogDocument {
  const urls = portalUrls(catalog.baseUrl);
  const record: VersionRecord = {
    version: sidecar.version,
    targetGameBuild: sidecar.targetGameBuild,
    packageUrl:
      sidecar.package.url ?? urls.artifact(sidecar.modId, sidecar.version, sidecar.package.fileName),
    fileName: sidecar.package.fileName,
    packageSizeBytes: sidecar.package.sizeBytes,
    sha256: sidecar.package.sha256,
    artifactStatus: "published",
    downloadEnabled: true,
    dependencies: sidecar.dependencies,
    entrypoints: sidecar.entrypoints,
    publishedAt: now,
    status: "published",
    releaseNotes: sidecar.releaseNotes,
    ...(sidecar.modConfig ? { modConfig: sidecar.modConfig } : {}),
  };
  // Only the release's own entry changes: it alone is copied, never the whole catalog.
  const doc: CatalogDocument = { ...catalog, mods: [...catalog.mods] };
  const at = doc.mods.findIndex((m) => m.id === sidecar.modId);
  let mod: CatalogMod | undefined;
  if (at >= 0) {
    mod = structuredClone(doc.mods[at]!);
    doc.mods[at] = mod;
  }
  if (!mod) {
    mod = {
      id: sidecar.modId,
      name: sidecar.name,
      summary: sidecar.summary,
      authors: sidecar.authors,
      tags: sidecar.tags ?? [],
      latestVersion: sidecar.version,
      detailUrl: urls.modDetail(sidecar.modId),
      versionsUrl: urls.modVersions(sidecar.modId),
      pageUrl: urls.modPage(sidecar.modId),
      updatedAt: now,
      // Not known before the build writes versions.json; any well-formed hash parses the same.
      versionsSha256: sidecar.package.sha256,
      versions: [],
    };
    doc.mods.push(mod);
    doc.mods.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
  mod.versions.push(record);
  mod.versions.sort((a, b) => semver.rcompare(a.version, b.version));
  if (mod.versions[0] === record) {
    for (const v of mod.versions.slice(1)) if (v.status === "published") v.status = "superseded";
    Object.assign(mod, {
      name: sidecar.name,
      summary: sidecar.summary,
      authors: sidecar.authors,
      tags: sidecar.tags ?? [],
      latestVersion: record.version,
    });
  }
  mod.updatedAt = now;
  // The catalog lists only the newest version, without release notes (catalog.schema.json).
  mod.versions = [toCatalogVersionRecord(mod.versions[0]! as VersionRecord)];
  return doc;
}

/**
 * What this release changes for a manager: the mod's own catalog entry. The document parsed is that
 * entry with the entries its newest version depends on (a dependency must resolve inside the
 * catalog), every one in the shape catalog.json lists it (newest version only, no release notes),
 * never the whole catalog: the other entries are untouched by the release, and parsing them cost
 * most of a validation at 20,000 mods. Nothing else in the reader relates two entries (ids stay
 * unique: the release replaces its mod's entry).
 */
export function managerView(doc: CatalogDocument, modId: string): CatalogDocument {
  const byId = new Map(doc.mods.map((m) => [m.id, m]));
  const own = byId.get(modId)!;
  const ids = new Set([modId, ...(own.versions[0]?.dependencies ?? []).map((d) => d.modId)]);
  const mods = doc.mods
    .filter((m) => ids.has(m.id))
    .map((m) => ({
      ...m,
      versions: m.versions.slice(0, 1).map((v) => toCatalogVersionRecord(v as VersionRecord)),
    }));
  return { ...doc, mods };
}

export function checkManagerCatalogParse(ctx: CheckContext): CheckOutcome {
  const sidecar = ctx.sidecar.valid;
  if (!sidecar) return blocked(ID, "sidecar_schema", "the catalog entry is built from a valid sidecar");
  if (!ctx.catalog)
    return failed("catalog_unavailable", ["the current catalog is needed to build the prospective one"]);
  const doc = managerView(prospectiveCatalog(ctx.catalog, sidecar, ctx.now), sidecar.modId);
  const result = parseManagerCatalog(JSON.stringify(doc));
  if (!result.ok) return failed("manager_parse_failed", result.errors.slice(0, 50));
  return passed(ID, [
    `the reference manager reader parses ${sidecar.modId}'s catalog entry with ${sidecar.version} added, ${
      result.mods === 1
        ? "which depends on no other mod"
        : `beside the ${result.mods - 1} entr${result.mods === 2 ? "y" : "ies"} it depends on`
    }`,
  ]);
}
