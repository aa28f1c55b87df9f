import type { IncomingMessage, ServerResponse } from "node:http";
import type { PortalConfig } from "../config/portal-config.ts";
import type { RuntimeSettings } from "../config/settings.ts";
import type { EndpointDefinition } from "../contracts/endpoints.ts";

/** What every handler receives: configuration, settings, folders and injected edges (clock, log). */
export interface AppContext {
  config: PortalConfig;
  settings: RuntimeSettings;
  siteDir: string;
  /** Started at, for uptime in health. */
  startedAt: Date;
  now: () => Date;
  log: (line: string) => void;
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
