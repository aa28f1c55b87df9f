import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { waitUntil } from "@vercel/functions";
import { loadPortalConfig } from "../contracts/portal-config.ts";
import { parseSettings } from "../config/settings.ts";
import { SvcError } from "../errors.ts";
import { defaultRandomBytes } from "../accounts/secrets.ts";
import { createAppContext } from "./app.ts";
import { type AppContext, storeOf } from "./context.ts";
import { PagesVersions } from "./pages-versions.ts";
import { sendThrown } from "./respond.ts";
import { dispatchEndpoint, parseRequestUrl } from "./server.ts";

/**
 * The Vercel edge of the API: one function, api/router.js (the bundle of api/_entries/router.ts,
 * `export default createVercelHandler()`), serves every endpoint of the table; vercel.json
 * rewrites /api/v1/* to it and the request keeps its own path, which dispatches as on the local
 * server. One function per route path counted
 * 26 with the bot's; Vercel's Hobby plan deploys at most 12 per deployment. The AppContext is
 * built from process.env once per function instance and reused; a missing variable fails closed
 * with an error that names it.
 */
export type VercelHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

type Env = Record<string, string | undefined>;

/** SVC_PG_POOL_MAX's default on Vercel (docs/api.md, "Deploying on Vercel"). */
export const VERCEL_POOL_MAX = 2;

/**
 * Vercel's edge overwrites X-Forwarded-For and sets X-Real-IP itself, so on Vercel those headers
 * are the platform's word, not the client's.
 */
function platformClientIp(req: IncomingMessage): string {
  const real = req.headers["x-real-ip"];
  if (typeof real === "string" && real.trim()) return real.trim();
  const forwarded = req.headers["x-forwarded-for"];
  const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(",")[0]?.trim();
  return first || req.socket.remoteAddress || "unknown";
}

export async function appContextFromEnv(env: Env, root = process.cwd()): Promise<AppContext> {
  if (!env.DATABASE_URL?.trim()) {
    throw new SvcError(
      "config_invalid",
      "DATABASE_URL is not set: the Vercel functions keep accounts, sessions, API keys, rate limits and audit in PostgreSQL (an embedded PGlite would not survive an instance)",
    );
  }
  const config = loadPortalConfig(join(root, "portal.config.json"));
  // Every instance holds its own pool and Vercel starts many: two connections each, through the
  // provider's pooled (transaction-mode) URL, keep the server's connection limit out of reach.
  const settings = parseSettings(env, { dataDir: "/tmp/svc-data", databasePoolMax: VERCEL_POOL_MAX });
  // The GitHub-backed submissions (Octokit and the pipeline) are about two thirds of a cold
  // start's module loading: only a portal with the GitHub App loads them, and they load while the
  // database connects.
  const submissionsModule = settings.github ? import("../pipeline/submissions-runtime.ts") : null;
  submissionsModule?.catch(() => {});
  const app = await createAppContext({
    config,
    settings,
    siteDir: join(root, "site"),
    log: (line) => console.error(line),
    clientIp: platformClientIp,
    assumeHttps: true,
  });
  // Submissions on Vercel are GitHub-backed only: no package byte, no worker, no publisher in a
  // function; uploads name their package by URL and the pull request's workflows do the rest.
  const submissions = (await submissionsModule)?.createFunctionSubmissions({
    config,
    settings,
    recordsDir: join(root, "records"),
    store: storeOf(app),
    now: app.now,
    random: defaultRandomBytes,
    log: app.log,
  });
  if (submissions) app.submissions = submissions;
  // The function carries no site: which versions the API-key lane may serve is read from Pages.
  app.pagesVersions = new PagesVersions({ pagesUrl: config.deployment.pagesUrl ?? null });
  return app;
}

let shared: Promise<AppContext> | null = null;

export function createVercelHandler(
  env: Env = process.env,
  makeContext: (env: Env) => Promise<AppContext> = appContextFromEnv,
): VercelHandler {
  return async (req, res) => {
    let app: AppContext;
    try {
      shared ??= makeContext(env);
      app = await shared;
    } catch (error) {
      // Not cached: a fixed environment or a reachable database is picked up by the next request.
      shared = null;
      sendThrown(req, res, error, (line) => console.error(line));
      return;
    }
    try {
      const url = parseRequestUrl(req);
      if (!(await dispatchEndpoint(req, res, url, app))) {
        throw new SvcError("not_found", `no resource at ${url.pathname}`);
      }
    } catch (error) {
      sendThrown(req, res, error, app.log);
    }
    // An instance may be frozen once the answer is out: deferred writes (lastUsedAt) finish first.
    if (app.accounts) waitUntil(app.accounts.flushPendingWrites());
  };
}

/** For tests: forget the per-instance context. */
export function resetVercelContext(): void {
  shared = null;
}
