import { createHash } from "node:crypto";
import type { CatalogDocument } from "../contracts/catalog.ts";
import { type SchemaName, schemaFiles, schemaRegistry } from "../contracts/schemas.ts";
import { EXTENSIONLESS_ROUTES, SITE_PATHS } from "../contracts/urls.ts";
import { checkSignedCatalog, type SignatureCheck } from "../distribution/signature-check.ts";
import { checkContractRules, type RuleFailure } from "./contract-rules.ts";
import { parseManagerCatalog } from "../contracts/manager-reader.ts";

export interface SmokeRoute {
  path: string;
  httpStatus?: number;
  contentType?: string;
  schema?: string;
  ok: boolean;
  errors?: string[];
}

export interface SmokeArtifact {
  modId?: string;
  version?: string;
  url: string;
  expectedSha256: string;
  actualSha256?: string;
  expectedSizeBytes: number;
  actualSizeBytes?: number;
  ok: boolean;
  errors?: string[];
}

/** svc.post-publish-smoke.v1 (schemas/schemas/post-publish-smoke.schema.json). */
export interface SmokeReport {
  schema: "svc.post-publish-smoke.v1";
  generatedAt: string;
  baseUrl: string;
  passed: boolean;
  durationMs: number;
  summary: {
    routesChecked: number;
    routesFailed: number;
    artifactsChecked: number;
    artifactsFailed: number;
    artifactsNotDownloaded?: number;
  };
  routes: SmokeRoute[];
  artifacts: SmokeArtifact[];
  managerParse: { ok: boolean; mods?: number; versions?: number; errors: string[] };
  ruleFailures: RuleFailure[];
  /** The TUF check (docs/distribution.md): unsigned passes; a stale, expired or broken signature fails. */
  signature?: SignatureCheck;
}

export interface SmokeOptions {
  /** The public base URL to smoke (the portal's baseUrl, or a preview deployment). */
  baseUrl: string;
  fetch?: typeof fetch;
  now?: () => Date;
  /** Parallel requests (default 8). */
  concurrency?: number;
  /** Per-request deadline for JSON routes (default 30 s) and for artifacts (default 10 min). */
  routeTimeoutMs?: number;
  artifactTimeoutMs?: number;
  /**
   * Download and hash only these artifacts (`{modId}@{version}`, or framework/manager/runtime by
   * name): what a publication run published or changed. Every JSON route is still fetched and
   * checked. Omitted: every download-enabled artifact (a full smoke).
   */
  onlyArtifacts?: ReadonlySet<string>;
}

/** The key `onlyArtifacts` names an artifact by. */
export function artifactKey(artifact: { modId?: string; version?: string }): string {
  return artifact.modId && artifact.version && !["framework", "manager"].includes(artifact.modId)
    ? `${artifact.modId}@${artifact.version}`
    : (artifact.modId ?? "");
}

/** The site-relative path of every static JSON document and the schema it must match. */
const DOCUMENT_SCHEMAS: ReadonlyArray<[string, SchemaName]> = [
  [SITE_PATHS.catalog, "catalog"],
  [SITE_PATHS.readiness, "readiness"],
  [SITE_PATHS.runtime, "runtime"],
  [SITE_PATHS.framework, "framework"],
  [SITE_PATHS.gameBuilds, "game-builds"],
  [SITE_PATHS.modsIndex, "mods-index"],
  [SITE_PATHS.manager, "manager"],
  [SITE_PATHS.workflow, "workflow"],
  [SITE_PATHS.backendContract, "backend-contract"],
  [SITE_PATHS.validationContract, "game-publishing-validation"],
];

/** The extensionless alias the contract lists for a .json route, if any (derived from EXTENSIONLESS_ROUTES). */
export function extensionlessAlias(path: string): string | null {
  const bare = `/${path.replace(/\.json$/, "")}`;
  for (const candidate of [bare.replace(/\/index$/, ""), bare]) {
    for (const route of EXTENSIONLESS_ROUTES) {
      const m = route.pattern.exec(candidate);
      if (m && route.target(m) === `/${path}`) return candidate.slice(1);
    }
  }
  return null;
}

async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
    }
  });
  await Promise.all(workers);
}

interface Fetched {
  status: number;
  contentType: string;
  text: string;
}

/**
 * Proves a deployed portal from the outside: every static route with and without extension (schema
 * and contract rules), every download-enabled artifact (size and streamed sha256), and the reference
 * manager reader over the catalog. passed is true only when every item passed.
 */
export async function runSmoke(options: SmokeOptions): Promise<SmokeReport> {
  const doFetch = options.fetch ?? fetch;
  const now = options.now ?? (() => new Date());
  const started = Date.now();
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const routeTimeout = options.routeTimeoutMs ?? 30_000;
  const routes: SmokeRoute[] = [];
  const texts = new Map<string, string>();

  const get = async (path: string): Promise<Fetched> => {
    const response = await doFetch(`${baseUrl}/${path}`, {
      redirect: "follow",
      signal: AbortSignal.timeout(routeTimeout),
      headers: { accept: "application/json" },
    });
    return {
      status: response.status,
      contentType: response.headers.get("content-type") ?? "",
      text: await response.text(),
    };
  };

  // The catalog first: its baseUrl names the schema ids, its mods name the per-mod routes.
  let catalog: CatalogDocument | null = null;
  let catalogText: string | null = null;
  try {
    const fetched = await get(SITE_PATHS.catalog);
    if (fetched.status === 200) {
      catalogText = fetched.text;
      catalog = JSON.parse(fetched.text) as CatalogDocument;
    }
  } catch {
    // Reported below with the catalog route itself.
  }
  const registry = schemaRegistry(typeof catalog?.baseUrl === "string" ? catalog.baseUrl : baseUrl);
  const documents: Array<[string, SchemaName]> = [...DOCUMENT_SCHEMAS];
  for (const mod of Array.isArray(catalog?.mods) ? catalog.mods : []) {
    if (typeof mod?.id !== "string" || !/^[a-z0-9-]+$/.test(mod.id)) continue;
    documents.push(
      [SITE_PATHS.modDetail(mod.id), "mod-detail"],
      [SITE_PATHS.modVersions(mod.id), "mod-versions"],
    );
  }

  const checkDocument = async ([path, schema]: [string, SchemaName]) => {
    const errors: string[] = [];
    let fetched: Fetched | null = null;
    try {
      fetched = await get(path);
    } catch (error) {
      errors.push(`fetch failed: ${(error as Error).message}`);
    }
    if (fetched) {
      if (fetched.status !== 200) errors.push(`HTTP ${fetched.status}`);
      else if (!/^application\/json\b/i.test(fetched.contentType))
        errors.push(`content-type ${fetched.contentType || "(none)"} is not application/json`);
      if (fetched.status === 200) {
        try {
          const result = registry.validate(schema, JSON.parse(fetched.text));
          if (!result.ok) errors.push(...result.issues.slice(0, 20).map((i) => `${i.path} ${i.message}`));
          texts.set(path, fetched.text);
        } catch (error) {
          errors.push(`not JSON: ${(error as Error).message}`);
        }
      }
    }
    routes.push({
      path: `/${path}`,
      ...(fetched ? { httpStatus: fetched.status, contentType: fetched.contentType } : {}),
      schema,
      ok: errors.length === 0,
      ...(errors.length > 0 ? { errors } : {}),
    });
  };

  const checkAlias = async ([alias, path]: [string, string]) => {
    const errors: string[] = [];
    let fetched: Fetched | null = null;
    try {
      fetched = await get(alias);
    } catch (error) {
      errors.push(`fetch failed: ${(error as Error).message}`);
    }
    if (fetched) {
      if (fetched.status !== 200) errors.push(`HTTP ${fetched.status}`);
      else if (!/^application\/json\b/i.test(fetched.contentType))
        errors.push(`content-type ${fetched.contentType || "(none)"} is not application/json`);
      else if (texts.has(path) && fetched.text !== texts.get(path)) errors.push(`body differs from /${path}`);
    }
    routes.push({
      path: `/${alias}`,
      ...(fetched ? { httpStatus: fetched.status, contentType: fetched.contentType } : {}),
      schema: `alias of /${path}`,
      ok: errors.length === 0,
      ...(errors.length > 0 ? { errors } : {}),
    });
  };

  const checkSchemaFile = async (publicPath: string) => {
    const errors: string[] = [];
    let fetched: Fetched | null = null;
    try {
      fetched = await get(publicPath);
    } catch (error) {
      errors.push(`fetch failed: ${(error as Error).message}`);
    }
    if (fetched) {
      if (fetched.status !== 200) errors.push(`HTTP ${fetched.status}`);
      else {
        try {
          const id = (JSON.parse(fetched.text) as { $id?: unknown }).$id;
          const expected = `${registry.baseUrl}/${publicPath}`;
          if (id !== expected) errors.push(`$id is ${JSON.stringify(id)}, expected ${expected}`);
          texts.set(publicPath, fetched.text);
        } catch (error) {
          errors.push(`not JSON: ${(error as Error).message}`);
        }
      }
    }
    routes.push({
      path: `/${publicPath}`,
      ...(fetched ? { httpStatus: fetched.status, contentType: fetched.contentType } : {}),
      schema: "json-schema",
      ok: errors.length === 0,
      ...(errors.length > 0 ? { errors } : {}),
    });
  };

  const concurrency = options.concurrency ?? 8;
  await pool(documents, concurrency, checkDocument);
  const aliases = documents.flatMap(([path]) => {
    const alias = extensionlessAlias(path);
    return alias ? [[alias, path] as [string, string]] : [];
  });
  await pool(aliases, concurrency, checkAlias);
  await pool(
    schemaFiles().map((f) => f.publicPath),
    concurrency,
    checkSchemaFile,
  );
  routes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  const ruleFailures = texts.has(SITE_PATHS.catalog) ? checkContractRules(texts) : [];
  const parsed = catalogText
    ? parseManagerCatalog(catalogText)
    : { ok: false, errors: ["catalog.json could not be fetched"], mods: 0, versions: 0 };
  const managerParse = { ok: parsed.ok, mods: parsed.mods, versions: parsed.versions, errors: parsed.errors };

  const listed = listArtifacts(texts, catalog);
  const only = options.onlyArtifacts;
  const chosen = only ? listed.filter((a) => only.has(artifactKey(a))) : listed;
  const artifacts = await checkArtifacts(chosen, doFetch, concurrency, options.artifactTimeoutMs ?? 600_000);

  const routesFailed = routes.filter((r) => !r.ok).length;
  const artifactsFailed = artifacts.filter((a) => !a.ok).length;
  const signature = await checkSignedCatalog(baseUrl, doFetch);
  return {
    schema: "svc.post-publish-smoke.v1",
    generatedAt: now().toISOString(),
    baseUrl,
    passed:
      routesFailed === 0 &&
      artifactsFailed === 0 &&
      managerParse.ok &&
      ruleFailures.length === 0 &&
      signature.state !== "failed",
    durationMs: Math.max(0, Math.round(Date.now() - started)),
    summary: {
      routesChecked: routes.length,
      routesFailed,
      artifactsChecked: artifacts.length,
      artifactsFailed,
      artifactsNotDownloaded: listed.length - chosen.length,
    },
    routes,
    artifacts,
    managerParse,
    ruleFailures,
    signature,
  };
}

interface ExpectedArtifact {
  modId?: string;
  version?: string;
  url: string;
  sha256: string;
  sizeBytes: number;
}

function listArtifacts(
  texts: ReadonlyMap<string, string>,
  catalog: CatalogDocument | null,
): ExpectedArtifact[] {
  const out: ExpectedArtifact[] = [];
  const json = (path: string) => {
    try {
      return JSON.parse(texts.get(path) ?? "null") as Record<string, unknown> | null;
    } catch {
      return null;
    }
  };
  for (const mod of Array.isArray(catalog?.mods) ? catalog.mods : []) {
    // The catalog lists each mod's newest version only; versions.json lists every downloadable one.
    const listed = typeof mod?.id === "string" ? json(SITE_PATHS.modVersions(mod.id))?.versions : undefined;
    const versions = (
      Array.isArray(listed) ? listed : mod.versions
    ) as CatalogDocument["mods"][number]["versions"];
    for (const v of Array.isArray(versions) ? versions : []) {
      if (v.downloadEnabled)
        out.push({
          modId: mod.id,
          version: v.version,
          url: v.packageUrl,
          sha256: v.sha256,
          sizeBytes: v.packageSizeBytes,
        });
    }
  }
  const framework = json(SITE_PATHS.framework);
  if (framework?.downloadEnabled === true) {
    out.push({
      modId: "framework",
      version: String(framework.version),
      url: String(framework.packageUrl),
      sha256: String(framework.sha256),
      sizeBytes: Number(framework.packageSizeBytes),
    });
  }
  const manager = json(SITE_PATHS.manager);
  if (manager?.downloadEnabled === true) {
    out.push({
      modId: "manager",
      version: String(manager.version),
      url: String(manager.downloadUrl),
      sha256: String(manager.sha256),
      sizeBytes: Number(manager.packageSizeBytes),
    });
  }
  const runtime = json(SITE_PATHS.runtime) as { version?: string; asset?: Record<string, unknown> } | null;
  if (runtime?.asset?.downloadEnabled === true) {
    out.push({
      modId: "runtime",
      url: String(runtime.asset.url),
      sha256: String(runtime.asset.sha256),
      sizeBytes: Number(runtime.asset.sizeBytes),
    });
  }
  return out;
}

async function checkArtifacts(
  expected: readonly ExpectedArtifact[],
  doFetch: typeof fetch,
  concurrency: number,
  timeoutMs: number,
): Promise<SmokeArtifact[]> {
  const results: SmokeArtifact[] = [];
  await pool(expected, concurrency, async (artifact) => {
    const errors: string[] = [];
    let actualSha256: string | undefined;
    let actualSizeBytes: number | undefined;
    try {
      const response = await doFetch(artifact.url, {
        redirect: "follow",
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (response.status !== 200 || !response.body) {
        errors.push(`HTTP ${response.status}`);
        await response.body?.cancel();
      } else {
        // Streamed: a large artifact is hashed chunk by chunk and never held whole; reading stops one
        // byte past the expected size, so an oversized or endless body cannot run the smoke away.
        const hash = createHash("sha256");
        let size = 0;
        const reader = response.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          size += value.length;
          hash.update(value);
          if (size > artifact.sizeBytes) {
            await reader.cancel();
            break;
          }
        }
        actualSizeBytes = size;
        actualSha256 = hash.digest("hex");
        if (size !== artifact.sizeBytes)
          errors.push(
            size > artifact.sizeBytes
              ? `larger than the ${artifact.sizeBytes} bytes listed`
              : `${size} bytes, expected ${artifact.sizeBytes}`,
          );
        else if (actualSha256 !== artifact.sha256)
          errors.push(`sha256 ${actualSha256} differs from the listed ${artifact.sha256}`);
      }
    } catch (error) {
      errors.push(`download failed: ${(error as Error).message}`);
    }
    results.push({
      ...(artifact.modId ? { modId: artifact.modId } : {}),
      ...(artifact.version ? { version: artifact.version } : {}),
      url: artifact.url,
      expectedSha256: artifact.sha256,
      ...(actualSha256 ? { actualSha256 } : {}),
      expectedSizeBytes: artifact.sizeBytes,
      ...(actualSizeBytes !== undefined ? { actualSizeBytes } : {}),
      ok: errors.length === 0,
      ...(errors.length > 0 ? { errors } : {}),
    });
  });
  return results.sort((a, b) => (a.url < b.url ? -1 : a.url > b.url ? 1 : 0));
}
