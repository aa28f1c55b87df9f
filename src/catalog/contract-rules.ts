import { sha256Hex } from "../lib/hash.ts";
import { isDeepStrictEqual } from "node:util";
import {
  type CatalogDocument,
  type ModDetailDocument,
  type ModsIndexDocument,
  type ModVersionsDocument,
  toCatalogVersionRecord,
} from "../contracts/catalog.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import { parseManagerCatalog } from "../contracts/manager-reader.ts";

export interface RuleFailure {
  rule: string;
  message: string;
}

const ZERO_HASH = /\b0{64}\b/;
const PLACEHOLDER_URL = /https?:\/\/[^"\s]*(example\.(com|org|net)|placeholder|changeme|todo\b)/i;

/**
 * The contract's rules 1-6 over a set of site files (path -> text). Used by `svc check` on the
 * committed files and by the publisher before it commits, so a bad generation never lands.
 */
export function checkContractRules(files: ReadonlyMap<string, string>): RuleFailure[] {
  const failures: RuleFailure[] = [];
  const fail = (rule: string, message: string) => failures.push({ rule, message });
  const json = <T>(path: string): T | undefined => {
    const text = files.get(path);
    if (text === undefined) {
      fail("files_present", `${path} is missing`);
      return undefined;
    }
    try {
      return JSON.parse(text) as T;
    } catch {
      fail("files_present", `${path} is not JSON`);
      return undefined;
    }
  };
  const readiness = json<{ overallStatus: string; liveBackend: boolean; releaseBlockers: unknown[] }>(
    SITE_PATHS.readiness,
  );
  const workflow = json<{
    liveBackend: boolean;
    backendRequirements: { requiredServices: Array<{ id: string; live: boolean }> };
  }>(SITE_PATHS.workflow);
  const contract = json<{ live: boolean; status: string }>(SITE_PATHS.backendContract);
  const catalog = json<CatalogDocument>(SITE_PATHS.catalog);
  const index = json<ModsIndexDocument>(SITE_PATHS.modsIndex);
  const gameBuilds = json<{ supportedGameBuilds: string[] }>(SITE_PATHS.gameBuilds);

  // Rule 1: not release ready, with concrete blockers, while the backend is not live.
  if (readiness && !readiness.liveBackend) {
    if (readiness.overallStatus !== "not_release_ready")
      fail("rule_1_readiness", "overallStatus must be not_release_ready while the backend is not live");
    if (readiness.releaseBlockers.length === 0)
      fail("rule_1_readiness", "releaseBlockers must list concrete blockers");
  }
  // Rule 2: liveBackend stays false until every required service is live.
  if (workflow) {
    const allLive = workflow.backendRequirements.requiredServices.every((s) => s.live);
    if (workflow.liveBackend && !allLive)
      fail("rule_2_live_backend", "workflow.liveBackend is true while a required service is not live");
    if (readiness && readiness.liveBackend !== workflow.liveBackend)
      fail("rule_2_live_backend", "readiness.liveBackend and workflow.liveBackend disagree");
    if (
      contract &&
      (contract.live !== workflow.liveBackend ||
        (contract.status === "live-backend") !== workflow.liveBackend)
    ) {
      fail("rule_2_live_backend", "backend-contract live/status disagree with workflow.liveBackend");
    }
  }
  // Rule 4: no zero hashes and no placeholder URLs anywhere in the generated documents.
  for (const [path, text] of files) {
    if (!path.endsWith(".json") || path.endsWith(".schema.json")) continue;
    if (ZERO_HASH.test(text)) fail("rule_4_no_placeholders", `${path} contains an all-zero hash`);
    const url = PLACEHOLDER_URL.exec(text);
    if (url) fail("rule_4_no_placeholders", `${path} contains a placeholder URL ${url[0]}`);
  }
  if (catalog) {
    // Rule 3 and 6: only manager-installable mods, each version a real artifact; the manager reader agrees.
    const parse = parseManagerCatalog(files.get(SITE_PATHS.catalog)!);
    for (const error of parse.errors) fail("rule_3_installable", `catalog: ${error}`);
    if (gameBuilds && !isDeepStrictEqual(catalog.supportedGameBuilds, gameBuilds.supportedGameBuilds)) {
      fail("rule_5_no_drift", "catalog.supportedGameBuilds differs from game-builds/latest.json");
    }
    if (index) {
      const catalogIds = catalog.mods.map((m) => m.id);
      const indexIds = index.mods.map((m) => m.id);
      if (!isDeepStrictEqual(catalogIds, indexIds) || index.count !== indexIds.length) {
        fail(
          "rule_3_installable",
          `mods/index.json lists [${indexIds.join(", ")}], catalog.json lists [${catalogIds.join(", ")}]`,
        );
      }
    }
    // Rule 5: detail and versions never drift from the catalog. The catalog lists each mod's newest
    // version without releaseNotes and the hash of its versions.json (catalog.schema.json says why).
    for (const mod of catalog.mods) {
      const { versions, versionsSha256, ...summary } = mod;
      const detail = json<ModDetailDocument>(SITE_PATHS.modDetail(mod.id));
      const listText = files.get(SITE_PATHS.modVersions(mod.id));
      const list = json<ModVersionsDocument>(SITE_PATHS.modVersions(mod.id));
      if (detail) {
        for (const [key, value] of Object.entries(summary)) {
          if (!isDeepStrictEqual((detail as unknown as Record<string, unknown>)[key], value)) {
            fail("rule_5_no_drift", `mods/${mod.id}/index.json field ${key} differs from catalog.json`);
          }
        }
        if (list && !isDeepStrictEqual(detail.versions, list.versions))
          fail("rule_5_no_drift", `mods/${mod.id}/index.json versions differ from versions.json`);
      }
      if (list && listText !== undefined) {
        const newest = list.versions.find((v) => v.version === versions[0]?.version);
        if (
          versions.length !== 1 ||
          !newest ||
          !isDeepStrictEqual(toCatalogVersionRecord(newest), versions[0])
        )
          fail("rule_5_no_drift", `mods/${mod.id}/versions.json differs from catalog.json`);
        if (list.latestVersion !== mod.latestVersion)
          fail("rule_5_no_drift", `mods/${mod.id}/versions.json latestVersion differs`);
        if (sha256Hex(listText) !== versionsSha256)
          fail(
            "rule_5_no_drift",
            `catalog.json versionsSha256 of ${mod.id} is not the hash of its versions.json`,
          );
      }
    }
    const listed = new Set(catalog.mods.map((m) => m.id));
    for (const path of files.keys()) {
      const m = /^api\/v1\/mods\/([^/]+)\/(index|versions)\.json$/.exec(path);
      if (m && !listed.has(m[1]!))
        fail("rule_3_installable", `${path} exists for a mod that is not in the catalog`);
    }
  }
  return failures;
}
