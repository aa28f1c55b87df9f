import type { IncomingMessage, ServerResponse } from "node:http";
import type { AccountService } from "../accounts/account-service.ts";
import type { PortalConfig } from "../config/portal-config.ts";
import type { RuntimeSettings } from "../config/settings.ts";
import type { EndpointDefinition } from "../contracts/endpoints.ts";
import type { Store } from "../store/store.ts";
import type { SubmissionBackend } from "../submissions/backend.ts";
import type { PagesVersions } from "./pages-versions.ts";

/** What every handler receives: configuration, settings, folders and injected edges (clock, log). */
export interface AppContext {
  config: PortalConfig;
  settings: RuntimeSettings;
  siteDir: string;
  /**
   * records/ of the same project: the ownership records (records/owners/{shard}.json) trusted
   * publishing reads, with the history that names who registered each publisher. Default: records/
   * beside the site folder, as a project lays them out (projectPaths).
   */
  recordsDir?: string;
  /** Started at, for uptime in health. */
  startedAt: Date;
  now: () => Date;
  log: (line: string) => void;
  /**
   * The database (PGlite or PostgreSQL), migrated. Optional only so that a static-only server (site
   * tests, smoke) can run without one; backend handlers reach it through accountsOf/storeOf.
   */
  store?: Store;
  /** Accounts, sessions, API keys, roles, rate limits and audit over the store. */
  accounts?: AccountService;
  /** Uploads, moderation and publication; set up by `svc serve` and the Vercel adapter. */
  submissions?: SubmissionBackend;
  /**
   * Where the API-key lane learns which versions are public when the process has no site folder
   * (Vercel): each mod's versions.json on GitHub Pages. Unset: the site folder (the local portal).
   */
  pagesVersions?: PagesVersions;
  /**
   * How to find the client's address. Default (local server): the socket peer, and
   * X-Forwarded-For only when that peer is in config.deployment.trustedProxies. The Vercel adapter
   * passes the platform's own header instead.
   */
  clientIp?: (req: IncomingMessage) => string;
  /** Behind a TLS-terminating platform (Vercel): every request counts as HTTPS. */
  assumeHttps?: boolean;
}

/** The account service, or an internal error when the server was started without a database. */
export function accountsOf(app: AppContext): AccountService {
  if (!app.accounts)
    throw new Error("this server was started without a database (AppContext.accounts is unset)");
  return app.accounts;
}

export function storeOf(app: AppContext): Store {
  if (!app.store) throw new Error("this server was started without a database (AppContext.store is unset)");
  return app.store;
}

export interface RouteContext {
  endpoint: EndpointDefinition;
  params: Record<string, string>;
  url: URL;
}

export type Handler = (
  req: IncomingMessage,
  res: ServerResponse,
  route: RouteContext,
  app: AppContext,
) => Promise<void>;
