import { abortBody } from "./body-abort.ts";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { matchEndpoint } from "../contracts/endpoints.ts";
import { type ErrorCode, SvcError, statusForCode } from "../errors.ts";
import type { AppContext } from "./context.ts";
import { serveGuide } from "./guides.ts";
import { HANDLERS } from "./handlers/index.ts";
import { auditRefusal, auditUnroutedRefusal } from "./refusals.ts";
import { sendThrown } from "./respond.ts";
import { StaticSite } from "./static-site.ts";

/**
 * How long the local server waits for a client. Slow clients are refused with 408 request_timeout
 * (a JSON body where one can still be written), in the manner of Apache's mod_reqtimeout
 * ("body=20,MinRate=500"): headers must arrive within headersTimeoutMs; a body may pause at most
 * bodyIdleTimeoutMs between two pieces, and after bodyGraceMs it must keep an average of
 * bodyMinBytesPerSecond, counting only the time the server was waiting for it (while a handler is
 * still busy with bytes already received, the client is not the slow side). requestTimeoutMs is
 * the hard bound on one request: a package at the 100 MiB cap must arrive at 58 KiB/s or better.
 */
export interface ServerLimits {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  bodyIdleTimeoutMs: number;
  bodyGraceMs: number;
  bodyMinBytesPerSecond: number;
  /** How often the watchdog looks at bodies in flight (and Node at headers and whole requests). */
  checkIntervalMs: number;
}

export const DEFAULT_SERVER_LIMITS: ServerLimits = {
  headersTimeoutMs: 20_000,
  requestTimeoutMs: 30 * 60_000,
  bodyIdleTimeoutMs: 20_000,
  bodyGraceMs: 20_000,
  bodyMinBytesPerSecond: 4096,
  checkIntervalMs: 1000,
};

/** How often a local server turns closed refusal windows into their summaries. */
const REFUSAL_SUMMARY_INTERVAL_MS = 60_000;

/** A request body being received, as the watchdog sees it. */
interface BodyWatch {
  req: IncomingMessage;
  res: ServerResponse;
  socket: Socket;
  /** socket.bytesRead when the request arrived (its headers, and maybe some body, already read). */
  baseline: number;
  /** Body bytes the HTTP parser has pushed into the request stream. */
  pushed: number;
  received: number;
  /** Milliseconds waited for this client since its last byte. */
  idleTime: number;
  lastCheckAt: number;
  /** Milliseconds the server spent waiting for this client's bytes. */
  clientTime: number;
  fail: (error: SvcError) => void;
  /** Set while a handler races the deadline: it answers, so the watchdog does not. */
  raced: boolean;
}

const bodyDeadlines = new WeakMap<IncomingMessage, { deadline: Promise<never>; watch: BodyWatch }>();

function hasBody(req: IncomingMessage): boolean {
  return req.headers["transfer-encoding"] !== undefined || Number(req.headers["content-length"] ?? "0") > 0;
}

/** Awaits a handler, unless the body watchdog refuses the request first (local server only). */
async function withinBodyDeadline(req: IncomingMessage, handled: Promise<void>): Promise<void> {
  const entry = bodyDeadlines.get(req);
  if (!entry) return handled;
  // Once the deadline has answered, the handler's own failure (its body read aborted) has no one to tell.
  handled.catch(() => {});
  entry.watch.raced = true;
  try {
    await Promise.race([handled, entry.deadline]);
  } finally {
    entry.watch.raced = false;
  }
}

/**
 * Serves a request that matches the endpoint table; false when it matches no endpoint path. The
 * local server and the Vercel router function (src/http/vercel.ts) both route through it.
 */
export function dispatchEndpoint(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  app: AppContext,
): Promise<boolean> {
  return dispatchMatched(req, res, url, matchEndpoint(req.method ?? "GET", url.pathname), app);
}

type EndpointMatch = ReturnType<typeof matchEndpoint>;

async function dispatchMatched(
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  match: EndpointMatch,
  app: AppContext,
): Promise<boolean> {
  const method = req.method ?? "GET";
  if (match && "endpoint" in match) {
    const handler = HANDLERS[match.endpoint.id];
    if (!handler || match.endpoint.status !== "implemented") {
      throw new SvcError("not_implemented", `${match.endpoint.id} is planned and not served yet`, {
        details: { endpoint: match.endpoint.id, status: match.endpoint.status },
      });
    }
    try {
      await withinBodyDeadline(
        req,
        handler(req, res, { endpoint: match.endpoint, params: match.params, url }, app),
      );
    } catch (error) {
      await auditRefusal(req, match.endpoint.id, error, app);
      throw error;
    }
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

/** Targets longer than this are parsed every time and never held in memory (as are queries). */
const ROUTE_CACHE_TARGET_CHARS = 512;
const ROUTE_CACHE_ENTRIES = 256;

/**
 * Parsed request targets and their endpoint match, by method and the raw target: a keep-alive
 * client asks for the same few URLs over and over, and parsing and matching them against the
 * endpoint table cost several microseconds per request on the download lane. The result is a pure
 * function of the key, so nothing can go stale; entries are shared between requests, so handlers
 * must treat route.url and route.params as read-only (params are frozen). Full: it starts over
 * rather than tracking use.
 */
class RouteCache {
  private readonly entries = new Map<string, { url: URL; match: EndpointMatch }>();

  resolve(method: string, req: IncomingMessage): { url: URL; match: EndpointMatch } {
    const target = req.url ?? "/";
    // Query strings are never kept: one may carry a secret (an API key is refused there, not stored).
    if (target.length > ROUTE_CACHE_TARGET_CHARS || target.includes("?")) {
      const url = parseRequestUrl(req);
      return { url, match: matchEndpoint(method, url.pathname) };
    }
    const key = `${method} ${target}`;
    const hit = this.entries.get(key);
    if (hit) return hit;
    const url = parseRequestUrl(req);
    const match = matchEndpoint(method, url.pathname);
    if (match && "endpoint" in match) Object.freeze(match.params);
    const entry = { url, match };
    if (this.entries.size >= ROUTE_CACHE_ENTRIES) this.entries.clear();
    this.entries.set(key, entry);
    return entry;
  }
}

/** Re-exported: the headers moved to respond.ts, beside the answers that carry them. */
export { SECURITY_HEADERS } from "./respond.ts";

/** What the listener returns for a request answered synchronously (one shared promise, no allocation). */
const ANSWERED: Promise<void> = Promise.resolve();

/**
 * Routes one request: contract endpoints first (by the endpoint table), then the static site for
 * GET and HEAD. Every failure leaves as the one JSON error body, and every answer carries
 * SECURITY_HEADERS and the site's extra headers (StaticSite.setResponseHeaders).
 *
 * A GET or HEAD of a site document held in memory (no endpoint, no guide) is answered first and
 * synchronously by StaticSite.answerFromMemory: one stat, one writeHead with the file's prebuilt
 * header list (security headers included), one end. Anything else it declines, having written
 * nothing, and the request takes the general path below, which sets the security headers first.
 */
export function createRequestListener(app: AppContext, site = new StaticSite(app.siteDir)) {
  const targets = new RouteCache();
  const route = async (
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    url: URL,
    match: EndpointMatch,
  ): Promise<void> => {
    site.setResponseHeaders(res);
    try {
      if (await dispatchMatched(req, res, url, match, app)) return;
      if (method !== "GET" && method !== "HEAD") {
        res.setHeader("allow", "GET, HEAD");
        throw new SvcError("method_not_allowed", `${method} is not allowed on ${url.pathname}`);
      }
      if (serveGuide(req, res, url.pathname)) return;
      await site.serve(req, res, url.pathname);
    } catch (error) {
      sendThrown(req, res, error, app.log);
    }
  };
  return (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? "GET";
    let resolved: { url: URL; match: EndpointMatch };
    try {
      resolved = targets.resolve(method, req);
      const { url, match } = resolved;
      if (
        !match &&
        (method === "GET" || method === "HEAD") &&
        // Guides (/docs/{name}.md) answer before the site: that path never takes the shortcut.
        !url.pathname.startsWith("/docs/") &&
        site.answerFromMemory(req, res, url.pathname)
      ) {
        return ANSWERED;
      }
    } catch (error) {
      if (!res.headersSent) site.setResponseHeaders(res);
      sendThrown(req, res, error, app.log);
      return ANSWERED;
    }
    return route(req, res, method, resolved.url, resolved.match);
  };
}

/**
 * Watches request bodies in flight: a body that pauses too long or falls below the minimum rate
 * is refused with request_timeout, through the handler's error path while it can still answer,
 * else by closing the connection.
 */
function createBodyWatchdog(limits: ServerLimits) {
  // A monotonic clock, not the portal's injected one: that may be a test's fixed date.
  const now = () => performance.now();
  const watched = new Set<BodyWatch>();
  const check = () => {
    const at = now();
    for (const watch of watched) {
      // Body bytes the parser handed over, or (once Node discards an unread body) bytes off the socket.
      const bytes = Math.max(watch.pushed, watch.socket.bytesRead - watch.baseline);
      // A check that comes late measures the server's own stall (a blocked event loop), not the client's.
      const credited = Math.min(at - watch.lastCheckAt, 2 * limits.checkIntervalMs);
      watch.lastCheckAt = at;
      // Bytes received but not yet consumed mean the server is the slow side.
      const waitingForClient = watch.req.readableLength === 0;
      if (bytes > watch.received || !waitingForClient) watch.idleTime = 0;
      else watch.idleTime += credited;
      if (waitingForClient) watch.clientTime += credited;
      watch.received = bytes;
      const idle = watch.idleTime;
      const allowed = limits.bodyGraceMs + (1000 * watch.received) / limits.bodyMinBytesPerSecond;
      if (idle > limits.bodyIdleTimeoutMs || watch.clientTime > allowed) {
        watched.delete(watch);
        watch.fail(
          new SvcError(
            "request_timeout",
            idle > limits.bodyIdleTimeoutMs
              ? `the request body stalled for more than ${limits.bodyIdleTimeoutMs / 1000} s`
              : `the request body arrived slower than ${limits.bodyMinBytesPerSecond} bytes per second`,
            {
              details: {
                bodyIdleTimeoutSeconds: limits.bodyIdleTimeoutMs / 1000,
                bodyMinBytesPerSecond: limits.bodyMinBytesPerSecond,
                receivedBytes: watch.received,
              },
            },
          ),
        );
      }
    }
  };
  const timer = setInterval(check, limits.checkIntervalMs);
  timer.unref();
  return {
    watch(req: IncomingMessage, res: ServerResponse): void {
      if (!hasBody(req) || req.complete) return;
      let fail!: (error: SvcError) => void;
      const deadline = new Promise<never>((_, reject) => {
        fail = reject;
      });
      // Observed even when no handler races it (the static site), so it never goes unhandled.
      deadline.catch(() => {});
      const at = now();
      const watch: BodyWatch = {
        req,
        res,
        socket: req.socket,
        baseline: req.socket.bytesRead,
        pushed: 0,
        received: 0,
        idleTime: 0,
        lastCheckAt: at,
        clientTime: 0,
        raced: false,
        fail: (error) => {
          // Whatever the handler staged from this body is dropped now, not when the socket closes.
          abortBody(req, error);
          const cutOff = () => req.socket.destroy();
          if (res.headersSent) {
            cutOff();
            return;
          }
          res.setHeader("connection", "close");
          // A client that never reads the 408 is cut off all the same.
          res.once("finish", () => setTimeout(cutOff, 1000).unref());
          setTimeout(cutOff, 10_000).unref();
          if (watch.raced) fail(error);
          else sendThrown(req, res, error, () => {});
        },
      };
      // Counting what the parser pushes (rather than reading the stream) leaves flow control to the handler.
      const push = req.push;
      req.push = (chunk: unknown, encoding?: BufferEncoding) => {
        if (chunk) watch.pushed += (chunk as Buffer).length;
        return push.call(req, chunk, encoding);
      };
      bodyDeadlines.set(req, { deadline, watch });
      watched.add(watch);
      const done = () => watched.delete(watch);
      req.once("end", done);
      req.once("close", done);
    },
    stop(): void {
      clearInterval(timer);
      watched.clear();
    },
  };
}

/** A JSON error written straight to a socket whose request never reached a handler. */
function writeRawError(socket: Socket, code: ErrorCode, message: string): void {
  const body = JSON.stringify({ code, message });
  const status = statusForCode(code);
  socket.end(
    `HTTP/1.1 ${status} ${code === "request_timeout" ? "Request Timeout" : "Bad Request"}\r\n` +
      "content-type: application/json; charset=utf-8\r\n" +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      "cache-control: no-store\r\nconnection: close\r\n\r\n" +
      body,
  );
}

/**
 * responseHeaders go with every answer beside SECURITY_HEADERS (svc serve --workers names the
 * answering process with them). Give them here rather than with setHeader in another request
 * listener: the static site's answers from memory carry them in their prepared header lists.
 */
export function createPortalServer(
  app: AppContext,
  overrides: Partial<ServerLimits> = {},
  responseHeaders: Readonly<Record<string, string>> = {},
): Server {
  const limits = { ...DEFAULT_SERVER_LIMITS, ...overrides };
  const watchdog = createBodyWatchdog(limits);
  const listener = createRequestListener(app, new StaticSite(app.siteDir, undefined, responseHeaders));
  const server = createServer({ connectionsCheckingInterval: limits.checkIntervalMs }, (req, res) => {
    watchdog.watch(req, res);
    return listener(req, res);
  });
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  // Requests that never reach a handler (headers too slow, a request line or header Node cannot
  // parse) still get the one JSON error body, and count as refusals.
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Socket) => {
    const timedOut = error.code === "ERR_HTTP_REQUEST_TIMEOUT";
    const code: ErrorCode = timedOut ? "request_timeout" : "invalid_request";
    const pending = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
    const answer = error.code !== "ECONNRESET" && socket.writable && !pending?.headersSent;
    if (answer) {
      // Closed once the answer is flushed (or after a second for a client that never reads it).
      socket.once("finish", () => socket.destroy());
      setTimeout(() => socket.destroy(), 1000).unref();
      writeRawError(
        socket,
        code,
        timedOut
          ? `the request did not arrive in time (headers within ${limits.headersTimeoutMs / 1000} s, the whole request within ${limits.requestTimeoutMs / 1000} s)`
          : "the request could not be parsed as HTTP/1.1",
      );
    } else {
      socket.destroy();
    }
    if (error.code !== "ECONNRESET") void auditUnroutedRefusal(socket, code, app);
  });
  const summaries = app.accounts
    ? setInterval(() => {
        app
          .accounts!.summariseRefusals()
          .catch((e: Error) => app.log(`refusal summary failed: ${e.message}`));
      }, REFUSAL_SUMMARY_INTERVAL_MS)
    : null;
  summaries?.unref();
  server.on("close", () => {
    watchdog.stop();
    if (summaries) clearInterval(summaries);
  });
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
