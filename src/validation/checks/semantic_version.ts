import * as semver from "../../contracts/semver.ts";
import { portalUrls } from "../../contracts/urls.ts";
import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import { blocked, failuresOf, passed } from "./common.ts";

const ID = "semantic_version";

export const semanticVersion = {
  id: ID,
  scope: "package",
  required: true,
  pack: null,
  description: "Version is semantic and does not reuse an existing immutable artifact URL.",
  reasons: {
    version_not_semver: {
      meaning: "The version is not a semantic version (MAJOR.MINOR.PATCH[-pre][+build]).",
      fix: "Use a semantic version such as 1.2.0.",
    },
    version_exists: {
      meaning: "The catalog already has this version of this mod; published versions are immutable.",
      fix: "Bump the version (for example the patch number) and rebuild the package.",
    },
    artifact_url_exists: {
      meaning: "The artifact URL is already used by a published release; artifacts are never replaced.",
      fix: "Publish the new version under a new, unused URL.",
    },
  },
  run: checkSemanticVersion,
} as const satisfies PackageCheck;

const { failed } = failuresOf(semanticVersion);

export function checkSemanticVersion(ctx: CheckContext): CheckOutcome {
  const sidecar = ctx.sidecar.valid;
  if (!sidecar) return blocked(ID, "sidecar_schema", "the version is read from a valid sidecar");
  const { modId, version } = sidecar;
  if (semver.valid(version) !== version || version.includes("+")) {
    return failed("version_not_semver", [
      `${JSON.stringify(version)} is not a semantic version without build metadata`,
    ]);
  }
  const catalog = ctx.catalog;
  if (!catalog)
    return failed("catalog_unavailable", ["the catalog is needed to prove the version is not reused"]);
  const url =
    sidecar.package.url ?? portalUrls(catalog.baseUrl).artifact(modId, version, sidecar.package.fileName);
  const mod = catalog.mods.find((m) => m.id === modId);
  if (mod?.versions.some((v) => v.version === version)) {
    return failed("version_exists", [
      `${modId}@${version} is already published; published versions are immutable`,
      `published versions: ${mod.versions.map((v) => v.version).join(", ")}`,
    ]);
  }
  for (const other of catalog.mods) {
    const clash = other.versions.find((v) => v.packageUrl === url);
    if (clash) return failed("artifact_url_exists", [`${url} already serves ${other.id}@${clash.version}`]);
  }
  const log = [`${version} is a new semantic version of ${modId}; artifact URL ${url} is unused`];
  const latest = mod?.latestVersion;
  if (latest && semver.lt(version, latest))
    log.push(`note: ${version} is older than the latest ${latest}; it will not become the latest`);
  return passed(ID, log);
}
