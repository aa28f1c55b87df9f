import * as semver from "../../contracts/semver.ts";
import { parseManagerCatalog } from "../../contracts/manager-reader.ts";
import {
  type CatalogDocument,
  type CatalogMod,
  toCatalogVersionRecord,
  type VersionRecord,
} from "../../contracts/catalog.ts";
import { portalUrls } from "../../contracts/urls.ts";
import type { CheckContext, CheckOutcome, PackageCheck, Sidecar } from "../types.ts";
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
export function prospectiveCatalog(catalog: CatalogDocument, sidecar: Sidecar, now: string): CatalogDocument {
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
  const doc: CatalogDocument = structuredClone(catalog);
  let mod: CatalogMod | undefined = doc.mods.find((m) => m.id === sidecar.modId);
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

export function checkManagerCatalogParse(ctx: CheckContext): CheckOutcome {
  const sidecar = ctx.sidecar.valid;
  if (!sidecar) return blocked(ID, "sidecar_schema", "the catalog entry is built from a valid sidecar");
  if (!ctx.catalog)
    return failed("catalog_unavailable", ["the current catalog is needed to build the prospective one"]);
  const doc = prospectiveCatalog(ctx.catalog, sidecar, ctx.now);
  const result = parseManagerCatalog(JSON.stringify(doc));
  if (!result.ok) return failed("manager_parse_failed", result.errors.slice(0, 50));
  return passed(ID, [
    `the reference manager reader parses the catalog with ${sidecar.modId}@${sidecar.version} added (${result.mods} mod(s), ${result.versions} version(s))`,
  ]);
}
