/**
 * A loopback stand-in for api.github.com (a fake of the network edge, named as one). Every request
 * is matched to an operation of GitHub's own OpenAPI description (@octokit/openapi) and its path
 * parameters, required query parameters and JSON body are validated against it. Tests register the
 * calls they expect; an unexpected call, an invalid request or an expected call left unmade fails
 * assertDone(). Written for issue 7 because test/support/github-openapi-server.ts had not landed.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { Ajv, type ValidateFunction } from "ajv";

const require = createRequire(import.meta.url);
const SPEC_PATH = require.resolve("@octokit/openapi/generated/api.github.com.json");

interface Operation {
  method: string;
  template: string;
  regex: RegExp;
  paramNames: string[];
  operation: Record<string, unknown>;
}

interface Spec {
  operations: Operation[];
  ajv: Ajv;
  doc: {
    paths: Record<string, Record<string, unknown>>;
    components: { parameters: Record<string, unknown> };
  };
}

let cachedSpec: Spec | undefined;
function loadSpec(): Spec {
  if (cachedSpec) return cachedSpec;
  const doc = JSON.parse(readFileSync(SPEC_PATH, "utf8")) as Spec["doc"];
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    const paramNames: string[] = [];
    const pattern = template
      .replace(/[.*+?^$()|[\]\\]/g, "\\$&")
      .replace(/\{([^}]+)\}/g, (_m, name: string) => {
        paramNames.push(name);
        return "([^/]+)";
      });
    for (const method of ["get", "post", "put", "patch", "delete"]) {
      const operation = item[method];
      if (operation) {
        operations.push({
          method: method.toUpperCase(),
          template,
          regex: new RegExp(`^${pattern}$`),
          paramNames,
          operation: operation as Record<string, unknown>,
        });
      }
    }
  }
  // Literal segments beat parameters (/repos/{o}/{r}/pulls/comments vs /pulls/{pull_number}).
  operations.sort((a, b) => b.template.split("{").length - a.template.split("{").length).reverse();
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
  cachedSpec = { operations, ajv, doc };
  return cachedSpec;
}

export interface RecordedRequest {
  method: string;
  /** The OpenAPI path template, e.g. /repos/{owner}/{repo}/check-runs. */
  route: string;
  path: string;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  headers: IncomingMessage["headers"];
}

export interface Reply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  raw?: Buffer;
}

interface Expectation {
  key: string;
  reply: (req: RecordedRequest) => Reply;
  remaining: number;
  /** Background calls (installation tokens) that may happen any number of times. */
  optional: boolean;
}

const bodyValidators = new Map<string, ValidateFunction>();

export class GitHubApiServer {
  readonly recorded: RecordedRequest[] = [];
  readonly problems: string[] = [];
  private readonly expectations: Expectation[] = [];
  private readonly extraRoutes = new Map<string, (req: IncomingMessage, res: ServerResponse) => void>();
  private server: Server | undefined;
  url = "";
  /** Added before every answer: GitHub is hundreds of milliseconds away, not loopback-close. */
  latencyMs = 0;

  async start(): Promise<this> {
    loadSpec();
    this.server = createServer((req, res) => {
      void this.handle(req, res).catch((error: unknown) => {
        this.problems.push(`server error: ${String(error)}`);
        res.writeHead(500).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server!.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }

  /** Expects `METHOD /openapi/template` once (or `times`); the reply may be computed from the request. */
  expect(key: string, reply: Reply | ((req: RecordedRequest) => Reply) = {}, times = 1): this {
    this.expectations.push({
      key,
      reply: typeof reply === "function" ? reply : () => reply,
      remaining: times,
      optional: false,
    });
    return this;
  }

  allow(key: string, reply: Reply | ((req: RecordedRequest) => Reply)): this {
    this.expectations.push({
      key,
      reply: typeof reply === "function" ? reply : () => reply,
      remaining: Number.POSITIVE_INFINITY,
      optional: true,
    });
    return this;
  }

  /** A non-API path (an artifact or release-asset download behind a redirect). */
  serveRaw(path: string, handler: (req: IncomingMessage, res: ServerResponse) => void): string {
    this.extraRoutes.set(path, handler);
    return `${this.url}${path}`;
  }

  calls(key: string): RecordedRequest[] {
    return this.recorded.filter((r) => `${r.method} ${r.route}` === key);
  }

  /** Throws when a request was invalid or unexpected, or an expected call was never made. */
  assertDone(): void {
    const unmade = this.expectations
      .filter((e) => !e.optional && e.remaining > 0)
      .map((e) => `expected call not made: ${e.key}`);
    const all = [...this.problems, ...unmade];
    if (all.length > 0) throw new Error(all.join("\n"));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    const url = new URL(req.url ?? "/", this.url);
    const raw = this.extraRoutes.get(url.pathname);
    if (raw) return raw(req, res);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const method = req.method ?? "GET";
    const spec = loadSpec();
    const op = spec.operations.find((o) => o.method === method && o.regex.test(url.pathname));
    if (!op) {
      this.problems.push(`${method} ${url.pathname}: no such operation in GitHub's OpenAPI description`);
      res
        .writeHead(404, { "content-type": "application/json" })
        .end(JSON.stringify({ message: "Not Found" }));
      return;
    }
    const match = op.regex.exec(url.pathname)!;
    const params = Object.fromEntries(op.paramNames.map((n, i) => [n, decodeURIComponent(match[i + 1]!)]));
    let body: unknown;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        this.problems.push(`${method} ${op.template}: body is not JSON`);
      }
    }
    const request: RecordedRequest = {
      method,
      route: op.template,
      path: url.pathname,
      params,
      query: url.searchParams,
      body,
      headers: req.headers,
    };
    this.validate(op, request);
    this.recorded.push(request);
    const key = `${method} ${op.template}`;
    const expectation = this.expectations.find((e) => e.key === key && e.remaining > 0);
    if (!expectation) {
      this.problems.push(`unexpected call: ${key} (${url.pathname}${url.search})`);
      res
        .writeHead(500, { "content-type": "application/json" })
        .end(JSON.stringify({ message: "unexpected call in test" }));
      return;
    }
    expectation.remaining -= 1;
    const reply = expectation.reply(request);
    const status = reply.status ?? (method === "POST" ? 201 : method === "DELETE" ? 204 : 200);
    const headers = { "content-type": "application/json; charset=utf-8", ...reply.headers };
    if (reply.raw) res.writeHead(status, headers).end(reply.raw);
    else if (status === 204 || reply.body === undefined) res.writeHead(status, reply.headers ?? {}).end();
    else res.writeHead(status, headers).end(JSON.stringify(reply.body));
  }

  private validate(op: Operation, request: RecordedRequest): void {
    const where = `${op.method} ${op.template}`;
    const spec = loadSpec();
    const parameters = ((op.operation.parameters ?? []) as Array<Record<string, unknown>>).map((p) =>
      typeof p.$ref === "string"
        ? (spec.doc.components.parameters[(p.$ref as string).split("/").pop()!] as Record<string, unknown>)
        : p,
    );
    for (const p of parameters) {
      const name = p.name as string;
      const schema = p.schema as { type?: string; enum?: unknown[] } | undefined;
      const value =
        p.in === "path" ? request.params[name] : p.in === "query" ? request.query.get(name) : undefined;
      if (p.in === "query" && p.required && value === null)
        this.problems.push(`${where}: required query parameter ${name} missing`);
      if (value === undefined || value === null) continue;
      if (schema?.type === "integer" && !/^-?[0-9]+$/.test(value))
        this.problems.push(`${where}: ${p.in} parameter ${name}=${value} is not an integer`);
      if (schema?.enum && !schema.enum.includes(value))
        this.problems.push(
          `${where}: ${p.in} parameter ${name}=${value} is not one of ${schema.enum.join(", ")}`,
        );
    }
    const known = new Set(parameters.filter((p) => p.in === "query").map((p) => p.name as string));
    for (const name of request.query.keys()) {
      if (!known.has(name)) this.problems.push(`${where}: unknown query parameter ${name}`);
    }
    const requestBody = op.operation.requestBody as
      | { required?: boolean; content?: Record<string, unknown> }
      | undefined;
    if (!requestBody) {
      if (request.body !== undefined && op.method !== "GET") this.problems.push(`${where}: takes no body`);
      return;
    }
    if (request.body === undefined) {
      if (requestBody.required) this.problems.push(`${where}: a body is required`);
      return;
    }
    if (!requestBody.content?.["application/json"]) return;
    let validator = bodyValidators.get(where);
    if (!validator) {
      validator = spec.ajv.compile(
        standaloneSchema(spec, requestBody.content["application/json"] as { schema: unknown }),
      );
      bodyValidators.set(where, validator);
    }
    if (!validator(request.body)) {
      for (const e of validator.errors ?? [])
        this.problems.push(`${where}: body${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
    }
  }
}

/** The body schema with only the components it references (as $defs): compiling the 13 MB document is slow. */
function standaloneSchema(spec: Spec, media: { schema: unknown }): object {
  const components = (spec.doc.components as unknown as { schemas: Record<string, unknown> }).schemas;
  const defs: Record<string, unknown> = {};
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite);
    if (!node || typeof node !== "object") return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string" && value.startsWith("#/components/schemas/")) {
        const name = value.slice("#/components/schemas/".length);
        if (!(name in defs)) {
          defs[name] = true;
          defs[name] = rewrite(components[name]);
        }
        out.$ref = `#/$defs/${name}`;
      } else out[key] = rewrite(value);
    }
    return out;
  };
  const root = rewrite(media.schema) as Record<string, unknown>;
  return { ...root, $defs: defs };
}
