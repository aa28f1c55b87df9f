/** Every public URL of a portal, derived from its baseUrl so no document spells one by hand. */
export function portalUrls(baseUrl: string) {
  const api = `${baseUrl}/api/v1`;
  return {
    base: baseUrl,
    catalog: `${api}/catalog.json`,
    readiness: `${api}/readiness.json`,
    runtime: `${api}/runtime/latest.json`,
    framework: `${api}/framework/latest.json`,
    gameBuilds: `${api}/game-builds/latest.json`,
    modsIndex: `${api}/mods/index.json`,
    manager: `${api}/manager/latest.json`,
    workflow: `${api}/publishing/workflow.json`,
    backendContract: `${api}/publishing/backend-contract.json`,
    backendContractSchema: `${api}/publishing/backend-contract.schema.json`,
    validationContract: `${api}/publishing/game-publishing-validation.v1.json`,
    validationContractSchema: `${api}/publishing/game-publishing-validation.schema.json`,
    uploadSubmissionSchema: `${api}/publishing/upload-submission.schema.json`,
    sidecarSchema: `${api}/publishing/mod-release-submission.schema.json`,
    manifestSchema: `${api}/schemas/mod-manifest.schema.json`,
    changesHead: `${api}/changes/head.json`,
    changesPageTemplate: `${api}/changes/{page}.json`,
    changesPage: (page: number) => `${api}/changes/${page}.json`,
    modDetail: (modId: string) => `${api}/mods/${modId}/index.json`,
    modVersions: (modId: string) => `${api}/mods/${modId}/versions.json`,
    modPage: (modId: string) => `${baseUrl}/mods/${modId}/`,
    artifact: (modId: string, version: string, fileName: string) =>
      `${baseUrl}/downloads/mods/${modId}/${version}/${fileName}`,
  };
}

export type PortalUrls = ReturnType<typeof portalUrls>;

/**
 * Site-relative paths of the changes feed. Kept out of SITE_PATHS on purpose: the contract lists no
 * extensionless alias for them, and a page number is not a mod id.
 */
export const CHANGES_PATHS = {
  head: "api/v1/changes/head.json",
  dir: "api/v1/changes",
  page: (page: number) => `api/v1/changes/${page}.json`,
} as const;

/** Site-relative paths of the generated documents (below site/). */
export const SITE_PATHS = {
  catalog: "api/v1/catalog.json",
  readiness: "api/v1/readiness.json",
  runtime: "api/v1/runtime/latest.json",
  framework: "api/v1/framework/latest.json",
  gameBuilds: "api/v1/game-builds/latest.json",
  modsIndex: "api/v1/mods/index.json",
  manager: "api/v1/manager/latest.json",
  workflow: "api/v1/publishing/workflow.json",
  backendContract: "api/v1/publishing/backend-contract.json",
  validationContract: "api/v1/publishing/game-publishing-validation.v1.json",
  modDetail: (modId: string) => `api/v1/mods/${modId}/index.json`,
  modVersions: (modId: string) => `api/v1/mods/${modId}/versions.json`,
  artifact: (modId: string, version: string, fileName: string) =>
    `downloads/mods/${modId}/${version}/${fileName}`,
} as const;

const PARAM = "\u0000";

/**
 * Extensionless aliases: every generated document route also answers without `.json` (and
 * `.../index.json` without `/index.json`). Derived from SITE_PATHS, so a new document cannot lack
 * one; the local server serves them and vercel.json rewrites them (a test keeps the two in step).
 */
export const EXTENSIONLESS_ROUTES: ReadonlyArray<{
  pattern: RegExp;
  target: (m: RegExpExecArray) => string;
}> = Object.values(SITE_PATHS)
  .map((path) => (typeof path === "string" ? path : path(PARAM, PARAM, PARAM)))
  .filter((path) => path.endsWith(".json"))
  .map((path) => {
    const target = `/${path}`;
    const alias = target.replace(/(\/index)?\.json$/, "");
    const source = alias.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replaceAll(PARAM, "([a-z0-9-]+)");
    return {
      pattern: new RegExp(`^${source}$`),
      target: (m: RegExpExecArray) => {
        let group = 0;
        return target.replaceAll(PARAM, () => m[++group]!);
      },
    };
  });
