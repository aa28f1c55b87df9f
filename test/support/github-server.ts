/**
 * A loopback stand-in for api.github.com and its upload and download hosts (a fake of the network
 * edge, named as one). Every request must be an operation of GitHub's own OpenAPI description
 * (github-openapi.ts) with valid path and query parameters and body; every reply is completed from
 * GitHub's example for that operation and checked against the documented response schema, so a
 * fixture cannot drift from what GitHub sends. A test (or the state model, github-repository.ts)
 * registers the calls it expects; assertDone() fails on an unexpected or invalid request, an invalid
 * reply, or an expected call left unmade. limitNext() answers the next requests the way GitHub's
 * primary and secondary rate limits do, so a client's retry and throttling can be tested.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  checkReply,
  checkRequest,
  completeReply,
  findOperation,
  isOperation,
  loadGitHubDescription,
  type Operation,
  successStatus,
} from "./github-openapi.ts";

export interface RecordedRequest {
  method: string;
  /** The OpenAPI path template (/repos/{owner}/{repo}/check-runs), or the path of a raw route. */
  route: string;
  /** "METHOD /template" for an operation of GitHub's description; null for a raw route. */
  operation: string | null;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  headers: IncomingMessage["headers"];
  /** The JSON body, parsed (undefined when there is none). */
  body: unknown;
  /** The body as sent (a release asset's bytes). */
  bytes: Buffer;
  /** Answered by limitNext() instead of by the expected call. */
  rateLimited: boolean;
}

export interface Reply {
  /** Default: the operation's documented success status (200, 201 or 204). */
  status?: number;
  /** JSON (completed from GitHub's example), or a Buffer sent as it is. */
  body?: unknown;
  headers?: Record<string, string>;
}

export type ReplyFunction = (request: RecordedRequest) => Reply | Promise<Reply>;

/**
 * What a repository's answer (github-repository.ts) returns for a request about another
 * repository: the server asks the next expectation of the same route, so several repositories can
 * be served at once; when none is about it, the first answers 404, as GitHub does for a repository
 * it does not show you.
 */
export const OTHER_REPOSITORY: Reply = Object.freeze({ status: 404, body: { message: "Not Found" } });

export interface RateLimit {
  /** primary: the hourly budget is spent; secondary: too many requests too fast. */
  kind: "primary" | "secondary";
  /** GitHub answers both with 403 or 429 (default 403). */
  status?: 403 | 429;
  /** How many of the next requests are refused (default 1). */
  count?: number;
  /** secondary: the retry-after header (default 60). */
  retryAfterSeconds?: number;
  /** primary: x-ratelimit-reset is now plus this (default 60). */
  resetAfterSeconds?: number;
  /** Only requests of this operation ("METHOD /template") count; default any operation. */
  route?: string;
}

interface Expectation {
  route: string;
  raw: boolean;
  reply: ReplyFunction;
  times: number;
  made: number;
}

const asFunction = (reply: Reply | ReplyFunction): ReplyFunction =>
  typeof reply === "function" ? reply : () => reply;

const RATE_LIMIT_DOCS = "https://docs.github.com/rest/using-the-rest-api/rate-limits-for-the-rest-api";

export class GitHubServer {
  readonly recorded: RecordedRequest[] = [];
  /** Unknown operations, invalid requests and replies, unexpected calls. */
  readonly problems: string[] = [];
  /** Added before every answer: GitHub is hundreds of milliseconds away, not loopback-close. */
  latencyMs = 0;
  url = "";
  private readonly expectations: Expectation[] = [];
  private readonly rawHandlers = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  private readonly limits: Array<Required<Omit<RateLimit, "route">> & { route?: string }> = [];
  private server: Server | undefined;

  async start(): Promise<this> {
    loadGitHubDescription();
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((error: unknown) => {
        this.problems.push(`handler error: ${(error as Error).message}`);
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  stop(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (!this.server) return resolve();
      this.server.closeAllConnections();
      this.server.close(() => resolve());
    });
  }

  /** Expects `METHOD /openapi/template` once (or `times`); the reply may be computed from the request. */
  expect(route: string, reply: Reply | ReplyFunction = {}, times = 1): this {
    if (!isOperation(route)) throw new Error(`${route} is not an operation of GitHub's REST API description`);
    this.expectations.push({ route, raw: false, reply: asFunction(reply), times, made: 0 });
    return this;
  }

  /** Answers `METHOD /openapi/template` any number of times, none included (background calls, state). */
  allow(route: string, reply: Reply | ReplyFunction): this {
    return this.expect(route, reply, Number.POSITIVE_INFINITY);
  }

  /** Expects `METHOD /path` outside the API (a download host) once (or `times`). */
  expectRaw(route: string, reply: Reply | ReplyFunction, times = 1): this {
    this.expectations.push({ route, raw: true, reply: asFunction(reply), times, made: 0 });
    return this;
  }

  /** Serves a path outside the API (a download or upload host) with a handler, any number of times. */
  serveRaw(path: string, handler: (req: IncomingMessage, res: ServerResponse) => void): string {
    this.rawHandlers.set(path, handler);
    return `${this.url}${path}`;
  }

  /** Answers the next `count` API requests as GitHub's primary or secondary rate limit does. */
  limitNext(limit: RateLimit): this {
    this.limits.push({
      kind: limit.kind,
      status: limit.status ?? 403,
      count: limit.count ?? 1,
      retryAfterSeconds: limit.retryAfterSeconds ?? 60,
      resetAfterSeconds: limit.resetAfterSeconds ?? 60,
      ...(limit.route ? { route: limit.route } : {}),
    });
    return this;
  }

  /** The requests made to `METHOD /template` (or `METHOD /raw/path`), in order. */
  calls(route: string): RecordedRequest[] {
    return this.recorded.filter((r) => `${r.method} ${r.route}` === route);
  }

  /** Throws unless every expected call happened as often as declared and no problem was seen. */
  assertDone(): void {
    const unmade = this.expectations
      .filter((e) => Number.isFinite(e.times) && e.made !== e.times)
      .map((e) => `expected call not made as declared: ${e.route}: made ${e.made} of ${e.times}`);
    const all = [...this.problems, ...unmade];
    if (all.length > 0) throw new Error(`GitHub API fake:\n  ${all.join("\n  ")}`);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    const url = new URL(req.url ?? "/", this.url);
    const method = req.method ?? "GET";
    const request: RecordedRequest = {
      method,
      route: url.pathname,
      operation: null,
      path: url.pathname,
      params: {},
      query: url.searchParams,
      headers: req.headers,
      body: undefined,
      bytes: Buffer.alloc(0),
      rateLimited: false,
    };
    const handler = this.rawHandlers.get(url.pathname);
    if (handler) {
      this.recorded.push(request);
      return handler(req, res);
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    request.bytes = Buffer.concat(chunks);

    const raw = this.nextExpectation(`${method} ${url.pathname}`, true);
    if (raw) {
      this.recorded.push(request);
      raw.made++;
      return send(res, await raw.reply(request));
    }
    const found = findOperation(method, url.pathname);
    if (!found) {
      this.recorded.push(request);
      this.problems.push(`${method} ${url.pathname}: not an operation of GitHub's REST API description`);
      return send(res, { status: 404, body: { message: "Not Found (not in the OpenAPI description)" } });
    }
    const { operation, params } = found;
    Object.assign(request, { route: operation.template, operation: operation.route, params });
    const checked = checkRequest(operation, request);
    request.body = checked.body;
    this.recorded.push(request);
    if (checked.issues.length > 0) {
      this.problems.push(`${operation.route}: ${checked.issues.join("; ")}`);
      return send(res, {
        status: 422,
        body: { message: "Validation Failed (OpenAPI)", errors: checked.issues },
      });
    }
    const limited = this.rateLimit(operation.route);
    if (limited) {
      request.rateLimited = true;
      return send(res, limited);
    }
    const candidates = this.expectations.filter(
      (e) => !e.raw && e.route === operation.route && e.made < e.times,
    );
    if (candidates.length === 0) {
      this.problems.push(`${operation.route} (${url.pathname}${url.search}): unexpected call`);
      return send(res, { status: 500, body: { message: `unexpected call ${operation.route}` } });
    }
    for (const expectation of candidates) {
      const reply = await expectation.reply(request);
      if (reply === OTHER_REPOSITORY) continue;
      expectation.made++;
      return send(res, this.checked(operation, reply));
    }
    candidates[0]!.made++;
    send(res, this.checked(operation, OTHER_REPOSITORY));
  }

  private nextExpectation(route: string, raw: boolean): Expectation | undefined {
    return this.expectations.find((e) => e.raw === raw && e.route === route && e.made < e.times);
  }

  /** The reply completed from GitHub's example, its problems recorded. */
  private checked(operation: Operation, reply: Reply): Reply {
    const status = reply.status ?? successStatus(operation);
    const body = completeReply(operation, status, reply.body);
    for (const problem of checkReply(operation, status, body))
      this.problems.push(`${operation.route}: ${problem}`);
    return { ...reply, status, body };
  }

  private rateLimit(route: string): Reply | null {
    const limit = this.limits.find((l) => l.count > 0 && (!l.route || l.route === route));
    if (!limit) return null;
    limit.count--;
    const now = Math.floor(Date.now() / 1000);
    if (limit.kind === "primary") {
      return {
        status: limit.status,
        headers: {
          "x-ratelimit-limit": "5000",
          "x-ratelimit-remaining": "0",
          "x-ratelimit-used": "5000",
          "x-ratelimit-reset": String(now + limit.resetAfterSeconds),
          "x-ratelimit-resource": "core",
        },
        body: {
          message: "API rate limit exceeded for installation.",
          documentation_url: `${RATE_LIMIT_DOCS}#about-the-primary-rate-limit`,
        },
      };
    }
    return {
      status: limit.status,
      headers: {
        "retry-after": String(limit.retryAfterSeconds),
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "4999",
        "x-ratelimit-used": "1",
        "x-ratelimit-reset": String(now + 3600),
        "x-ratelimit-resource": "core",
      },
      body: {
        message: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
        documentation_url: `${RATE_LIMIT_DOCS}#about-secondary-rate-limits`,
      },
    };
  }
}

function send(res: ServerResponse, reply: Reply): void {
  const status = reply.status ?? 200;
  const headers: Record<string, string> = { ...reply.headers };
  let payload: Buffer | undefined;
  if (Buffer.isBuffer(reply.body)) payload = reply.body;
  else if (reply.body !== undefined && status !== 204) {
    payload = Buffer.from(JSON.stringify(reply.body));
    headers["content-type"] ??= "application/json; charset=utf-8";
  }
  res.writeHead(status, headers).end(payload);
}

/** Starts a fake GitHub on 127.0.0.1 and a free port. */
export function startGitHubServer(): Promise<GitHubServer> {
  return new GitHubServer().start();
}

/** The writes made since the `from`th request (installation tokens left out): a step's file snapshot. */
export function sentSince(github: GitHubServer, from: number): string {
  const writes = github.recorded
    .slice(from)
    .filter((r) => r.method !== "GET" && !r.route.startsWith("/app/"))
    .map((r) => ({ request: `${r.method} ${r.route}`, params: r.params, body: r.body }));
  return maskSeals(`${JSON.stringify(writes, null, 2)}\n`);
}

/**
 * A snapshot's text with the time and MAC of every sealed record replaced: they change with the
 * clock and with the test run's private key, and are checked by verifying them, not by bytes.
 */
export function maskSeals(text: string): string {
  return text
    .replace(/(\\?"at\\?":\\?")[0-9T:.Z-]+(\\?")/g, "$1(time)$2")
    .replace(/(\\?"sig\\?":\\?")[0-9a-f]{64}(\\?")/g, "$1(seal)$2");
}
