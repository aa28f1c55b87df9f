import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { matchEndpoint } from "../contracts/endpoints.ts";
import { SvcError } from "../errors.ts";
import type { AppContext } from "./context.ts";
import { HANDLERS } from "./handlers/index.ts";
import { sendThrown } from "./respond.ts";
import { StaticSite } from "./static-site.ts";

/**
 * Serves a request that matches the endpoint table; false when it matches no endpoint path. With
 * onlyIds (a Vercel function file), an endpoint outside the list answers not_found.
 */
export async function dispatchEndpoint(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  app: AppContext,
  onlyIds?: readonly string[],
): Promise<boolean> {
  const method = req.method ?? "GET";
  const match = matchEndpoint(method, url.pathname);
  if (match && "endpoint" in match) {
    if (onlyIds && !onlyIds.includes(match.endpoint.id)) {
      throw new SvcError("not_found", `no resource at ${url.pathname}`);
    }
    const handler = HANDLERS[match.endpoint.id];
    if (!handler || match.endpoint.status !== "implemented") {
      throw new SvcError("not_implemented", `${match.endpoint.id} is planned and not served yet`, {
        details: { endpoint: match.endpoint.id, status: match.endpoint.status },
      });
    }
    await handler(req, res, { endpoint: match.endpoint, params: match.params, url }, app);
    return true;
  }
  if (match && "methodNotAllowed" in match) {
    res.setHeader("allow", match.methodNotAllowed.join(", "));
    throw new SvcError("method_not_allowed", `${method} is not allowed on ${url.pathname}`, {
      details: { allow: match.methodNotAllowed },
    });
  }
  return false;
}

export function parseRequestUrl(req: IncomingMessage): URL {
  try {
    return new URL(req.url ?? "/", "http://portal.invalid");
  } catch {
    throw new SvcError("invalid_request", "request target is not a valid URL");
  }
}

/**
 * Routes one request: contract endpoints first (by the endpoint table), then the static site for
 * GET and HEAD. Every failure leaves as the one JSON error body.
 */
export function createRequestListener(app: AppContext, site = new StaticSite(app.siteDir)) {
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? "GET";
    try {
      const url = parseRequestUrl(req);
      if (await dispatchEndpoint(req, res, url, app)) return;
      if (method !== "GET" && method !== "HEAD") {
        res.setHeader("allow", "GET, HEAD");
        throw new SvcError("method_not_allowed", `${method} is not allowed on ${url.pathname}`);
      }
      await site.serve(req, res, url.pathname);
    } catch (error) {
      sendThrown(req, res, error, app.log);
    }
  };
}

export function createPortalServer(app: AppContext): Server {
  const server = createServer(createRequestListener(app));
  // Slow-body protection: a client has 30 s for headers and 5 minutes for a whole request.
  server.headersTimeout = 30_000;
  server.requestTimeout = 300_000;
  return server;
}

export function listen(server: Server, port: number, host: string): Promise<{ port: number; host: string }> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      const address = server.address();
      resolve({ port: typeof address === "object" && address ? address.port : port, host });
    });
  });
}
