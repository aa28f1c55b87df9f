import * as semver from "../../contracts/semver.ts";
import { portalUrls } from "../../contracts/urls.ts";
import type { CheckContext, CheckOutcome } from "../types.ts";
import { blocked, failed, passed } from "./common.ts";

const ID = "semantic_version";

export function checkSemanticVersion(ctx: CheckContext): CheckOutcome {
  const sidecar = ctx.sidecar.valid;
  if (!sidecar) return blocked(ID, "sidecar_schema", "the version is read from a valid sidecar");
  const { modId, version } = sidecar;
  if (semver.valid(version) !== version || version.includes("+")) {
    return failed(ID, "version_not_semver", [
      `${JSON.stringify(version)} is not a semantic version without build metadata`,
    ]);
  }
  const catalog = ctx.catalog;
  if (!catalog)
    return failed(ID, "catalog_unavailable", ["the catalog is needed to prove the version is not reused"]);
  const url =
    sidecar.package.url ?? portalUrls(catalog.baseUrl).artifact(modId, version, sidecar.package.fileName);
  const mod = catalog.mods.find((m) => m.id === modId);
  if (mod?.versions.some((v) => v.version === version)) {
    return failed(ID, "version_exists", [
      `${modId}@${version} is already published; published versions are immutable`,
      `published versions: ${mod.versions.map((v) => v.version).join(", ")}`,
    ]);
  }
  for (const other of catalog.mods) {
    const clash = other.versions.find((v) => v.packageUrl === url);
    if (clash)
      return failed(ID, "artifact_url_exists", [`${url} already serves ${other.id}@${clash.version}`]);
  }
  const log = [`${version} is a new semantic version of ${modId}; artifact URL ${url} is unused`];
  const latest = mod?.latestVersion;
  if (latest && semver.lt(version, latest))
    log.push(`note: ${version} is older than the latest ${latest}; it will not become the latest`);
  return passed(ID, log);
}
