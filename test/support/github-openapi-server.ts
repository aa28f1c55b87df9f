import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";

/**
 * A loopback stand-in for api.github.com (and its uploads/download hosts) that checks every request
 * against GitHub's own OpenAPI description (@octokit/openapi, generated/api.github.com.json): the
 * method and path must be a documented operation, path parameters, query parameters and the JSON body
 * must match the operation's schemas, and (by default) every JSON reply the test scripts must match
 * the documented response schema, so fixtures cannot drift from real GitHub shapes. A test scripts
 * the calls it expects in order-independent form and ends with assertDone(): no expected call may be
 * left unmade, and no unexpected or invalid request may have happened.
 */

const require = createRequire(import.meta.url);
const SPEC_PATH = join(
  dirname(require.resolve("@octokit/openapi/package.json")),
  "generated",
  "api.github.com.json",
);

type Json = Record<string, unknown>;
interface Operation {
  method: string;
  template: string;
  regex: RegExp;
  paramNames: string[];
  op: Json;
  specificity: number;
}

interface Spec {
  operations: Operation[];
  components: Json;
  ajv: Ajv;
  validators: Map<string, ValidateFunction>;
}

let cached: Spec | undefined;
function loadSpec(): Spec {
  if (cached) return cached;
  const spec = JSON.parse(readFileSync(SPEC_PATH, "utf8")) as {
    paths: Record<string, Json>;
    components: Json;
  };
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(spec.paths)) {
    const paramNames: string[] = [];
    const pattern = template
      .split("/")
      .map((segment) =>
        segment.replace(/\{([^}]+)\}|[^{}]+/g, (m, name?: string) => {
          if (name) {
            paramNames.push(name);
            return "([^/]+)";
          }
          return m.replace(/[.*+?^$()|[\]\\]/g, "\\$&");
        }),
      )
      .join("/");
    for (const method of ["get", "post", "put", "patch", "delete", "head"]) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      operations.push({
        method: method.toUpperCase(),
        template,
        regex: new RegExp(`^${pattern}$`),
        paramNames,
        op,
        specificity: template.split("/").filter((s) => !s.startsWith("{")).length,
      });
    }
  }
  // OpenAPI 3.0 schemas: nullable and example keywords; strict mode off for the vendor extensions.
  const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: true });
  (addFormatsModule as unknown as (a: Ajv) => Ajv)(ajv);
  ajv.addSchema({ $id: "github-components", components: nullableAsAnyOf(spec.components) });
  cached = { operations, components: spec.components, ajv, validators: new Map() };
  return cached;
}

/** OpenAPI 3.0 `nullable` without a `type` (beside anyOf/allOf), which Ajv refuses: the same as "or null". */
function nullableAsAnyOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(nullableAsAnyOf);
  if (!schema || typeof schema !== "object") return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema as Json)) out[k] = nullableAsAnyOf(v);
  if (out.nullable === true && !("type" in out)) {
    const { nullable: _, ...rest } = out;
    return { anyOf: [rest, { type: "null" }] };
  }
  return out;
}

/** Points local refs (#/components/...) at the registered components document. */
function rebase(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(rebase);
  if (schema && typeof schema === "object") {
    const out: Json = {};
    for (const [k, v] of Object.entries(schema as Json)) {
      out[k] =
        k === "$ref" && typeof v === "string" && v.startsWith("#/") ? `github-components${v}` : rebase(v);
    }
    return out;
  }
  return schema;
}

function resolveRef<T>(spec: Spec, value: T): T {
  const ref = (value as { $ref?: string })?.$ref;
  if (!ref) return value;
  let node: unknown = { components: spec.components };
  for (const part of ref.slice(2).split("/"))
    node = (node as Json)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  return resolveRef(spec, node as T);
}

function validator(spec: Spec, key: string, schema: unknown): ValidateFunction {
  let fn = spec.validators.get(key);
  if (!fn) {
    fn = spec.ajv.compile(rebase(schema) as Json);
    spec.validators.set(key, fn);
  }
  return fn;
}

function coerce(value: string, schema: Json | undefined): unknown {
  const type = schema?.type;
  if ((type === "integer" || type === "number") && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  if (type === "boolean" && (value === "true" || value === "false")) return value === "true";
  return value;
}

export interface RecordedRequest {
  method: string;
  path: string;
  /** The OpenAPI operation, e.g. "POST /repos/{owner}/{repo}/releases"; null for raw routes. */
  operation: string | null;
  params: Record<string, string>;
  query: Record<string, string>;
  headers: IncomingMessage["headers"];
  body: Buffer;
  json: unknown;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ExpectedCall {
  /** "METHOD /openapi/template" for API calls, or "METHOD /raw/path" for a raw (non-API) route. */
  route: string;
  reply: (request: RecordedRequest) => Reply | Promise<Reply>;
  /** How many times the call must happen (default 1); Infinity: any number, none included (a stateful fake). */
  times?: number;
  /** Raw routes (download hosts) are matched literally and not checked against the API description. */
  raw?: boolean;
}

export interface GitHubApiServer {
  url: string;
  requests: RecordedRequest[];
  /** Problems seen: unknown operations, invalid parameters or bodies, unexpected calls, invalid replies. */
  problems: string[];
  expect(call: ExpectedCall): void;
  /** Throws unless every expected call happened (exactly as often as declared) and no problem was seen. */
  assertDone(): void;
  close(): Promise<void>;
}

export async function startGitHubApi(
  options: { validateResponses?: boolean } = {},
): Promise<GitHubApiServer> {
  const spec = loadSpec();
  const validateResponses = options.validateResponses ?? true;
  const expected: Array<ExpectedCall & { made: number }> = [];
  const requests: RecordedRequest[] = [];
  const problems: string[] = [];

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks);
    const url = new URL(req.url ?? "/", "http://github.invalid");
    const method = req.method ?? "GET";
    const query = Object.fromEntries(url.searchParams);
    const send = (reply: Reply) => {
      const headers: Record<string, string> = { ...reply.headers };
      let payload: Buffer | undefined;
      if (Buffer.isBuffer(reply.body)) payload = reply.body;
      else if (reply.body !== undefined) {
        payload = Buffer.from(JSON.stringify(reply.body));
        headers["content-type"] ??= "application/json; charset=utf-8";
      }
      res.writeHead(reply.status, headers);
      res.end(payload);
    };

    const raw = expected.find((e) => e.raw && e.route === `${method} ${url.pathname}`);
    if (raw) {
      const request: RecordedRequest = {
        method,
        path: url.pathname,
        operation: null,
        params: {},
        query,
        headers: req.headers,
        body,
        json: undefined,
      };
      requests.push(request);
      raw.made++;
      send(await raw.reply(request));
      return;
    }

    const matches = spec.operations
      .filter((o) => o.method === method && o.regex.test(url.pathname))
      .sort((a, b) => b.specificity - a.specificity);
    const operation = matches[0];
    if (!operation) {
      problems.push(`${method} ${url.pathname}: not an operation of GitHub's REST API description`);
      send({ status: 404, body: { message: "Not Found (not in the OpenAPI description)" } });
      return;
    }
    const name = `${method} ${operation.template}`;
    const m = operation.regex.exec(url.pathname)!;
    const params: Record<string, string> = {};
    operation.paramNames.forEach((p, i) => {
      params[p] = decodeURIComponent(m[i + 1]!);
    });
    const issues: string[] = [];
    const declared = ((operation.op.parameters as unknown[]) ?? []).map((p) => resolveRef(spec, p as Json));
    for (const param of declared) {
      const where = param.in as string;
      const pname = param.name as string;
      const schema = param.schema as Json | undefined;
      const value = where === "path" ? params[pname] : where === "query" ? query[pname] : undefined;
      if (where !== "path" && where !== "query") continue;
      if (value === undefined) {
        if (param.required) issues.push(`missing required ${where} parameter ${pname}`);
        continue;
      }
      if (schema) {
        const check = validator(spec, `${name} ${where} ${pname}`, schema);
        if (!check(coerce(value, resolveRef(spec, schema)))) {
          issues.push(
            `${where} parameter ${pname}=${JSON.stringify(value)}: ${spec.ajv.errorsText(check.errors)}`,
          );
        }
      }
    }
    for (const key of Object.keys(query)) {
      if (!declared.some((p) => p.in === "query" && p.name === key))
        issues.push(`undocumented query parameter ${key}`);
    }
    let json: unknown;
    const requestBody = resolveRef(spec, operation.op.requestBody as Json | undefined);
    const content = requestBody?.content as Record<string, { schema?: unknown }> | undefined;
    if (content?.["application/json"]) {
      if (body.length === 0) {
        if (requestBody?.required) issues.push("missing JSON body");
      } else {
        try {
          json = JSON.parse(body.toString("utf8"));
          const check = validator(spec, `${name} body`, content["application/json"].schema);
          if (!check(json)) issues.push(`body: ${spec.ajv.errorsText(check.errors)}`);
        } catch {
          issues.push("body is not JSON");
        }
      }
    } else if (content?.["*/*"] || content?.["application/octet-stream"]) {
      if (!req.headers["content-type"]) issues.push("missing content-type for a binary body");
      if (Number(req.headers["content-length"] ?? -1) !== body.length)
        issues.push("content-length differs from the body");
    } else if (body.length > 0) {
      issues.push("a body was sent to an operation that takes none");
    }
    const request: RecordedRequest = {
      method,
      path: url.pathname,
      operation: name,
      params,
      query,
      headers: req.headers,
      body,
      json,
    };
    requests.push(request);
    if (issues.length > 0) {
      problems.push(`${name}: ${issues.join("; ")}`);
      send({ status: 422, body: { message: "Validation Failed (OpenAPI)", errors: issues } });
      return;
    }
    const call = expected.find((e) => !e.raw && e.route === name && e.made < (e.times ?? 1));
    if (!call) {
      problems.push(`${name} (${url.pathname}): unexpected call`);
      send({ status: 500, body: { message: `unexpected call ${name}` } });
      return;
    }
    call.made++;
    const reply = await call.reply(request);
    if (validateResponses && reply.body !== undefined && !Buffer.isBuffer(reply.body)) {
      const responses = operation.op.responses as Record<string, unknown>;
      const documented = resolveRef(spec, responses[String(reply.status)] as Json | undefined);
      const schema = (documented?.content as Record<string, { schema?: unknown }> | undefined)?.[
        "application/json"
      ]?.schema;
      if (!documented) problems.push(`${name}: reply status ${reply.status} is not documented`);
      else if (schema) {
        const check = validator(spec, `${name} ${reply.status} response`, schema);
        if (!check(reply.body))
          problems.push(`${name}: scripted reply ${reply.status}: ${spec.ajv.errorsText(check.errors)}`);
      }
    }
    send(reply);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      problems.push(`handler error: ${(error as Error).message}`);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    problems,
    expect(call) {
      if (!call.raw && !/^[A-Z]+ \//.test(call.route)) throw new Error(`bad route ${call.route}`);
      if (!call.raw) {
        const [method, template] = call.route.split(" ");
        if (!spec.operations.some((o) => o.method === method && o.template === template)) {
          throw new Error(`${call.route} is not an operation of GitHub's REST API description`);
        }
      }
      expected.push({ ...call, made: 0 });
    },
    assertDone() {
      const unmade = expected
        .filter((e) => e.times !== Number.POSITIVE_INFINITY && e.made !== (e.times ?? 1))
        .map((e) => `${e.route}: made ${e.made} of ${e.times ?? 1}`);
      const all = [...problems, ...unmade.map((u) => `expected call not made as declared: ${u}`)];
      if (all.length > 0) throw new Error(`GitHub API fake:\n  ${all.join("\n  ")}`);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A simple-user as GitHub returns it. */
export function githubUser(login = "svc-bot", id = 1) {
  const api = `https://api.github.com/users/${login}`;
  return {
    login,
    id,
    node_id: `U_${id}`,
    avatar_url: `https://avatars.githubusercontent.com/u/${id}`,
    gravatar_id: "",
    url: api,
    html_url: `https://github.com/${login}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: "User",
    site_admin: false,
  };
}

/** A release-asset as GitHub returns it. */
export function releaseAsset(fields: {
  id: number;
  name: string;
  size: number;
  repo: string;
  tag: string;
  digest?: string | null;
  apiUrl?: string;
  downloadBase?: string;
}) {
  const api = fields.apiUrl ?? "https://api.github.com";
  return {
    url: `${api}/repos/${fields.repo}/releases/assets/${fields.id}`,
    browser_download_url: `${fields.downloadBase ?? "https://github.com"}/${fields.repo}/releases/download/${fields.tag}/${fields.name}`,
    id: fields.id,
    node_id: `RA_${fields.id}`,
    name: fields.name,
    label: null,
    state: "uploaded" as const,
    content_type: "application/zip",
    size: fields.size,
    digest: fields.digest ?? null,
    download_count: 0,
    created_at: "2026-11-01T10:00:00Z",
    updated_at: "2026-11-01T10:00:00Z",
    uploader: githubUser(),
  };
}

/** A release as GitHub returns it. */
export function githubRelease(fields: {
  id: number;
  tag: string;
  repo: string;
  name?: string;
  body?: string;
  assets?: ReturnType<typeof releaseAsset>[];
  apiUrl?: string;
  uploadUrl?: string;
  publishedAt?: string;
}) {
  const api = fields.apiUrl ?? "https://api.github.com";
  const base = `${api}/repos/${fields.repo}/releases/${fields.id}`;
  return {
    url: base,
    html_url: `https://github.com/${fields.repo}/releases/tag/${fields.tag}`,
    assets_url: `${base}/assets`,
    upload_url: `${fields.uploadUrl ?? "https://uploads.github.com"}/repos/${fields.repo}/releases/${fields.id}/assets{?name,label}`,
    tarball_url: `${api}/repos/${fields.repo}/tarball/${fields.tag}`,
    zipball_url: `${api}/repos/${fields.repo}/zipball/${fields.tag}`,
    id: fields.id,
    node_id: `RE_${fields.id}`,
    tag_name: fields.tag,
    target_commitish: "main",
    name: fields.name ?? fields.tag,
    body: fields.body ?? null,
    draft: false,
    prerelease: false,
    immutable: false,
    created_at: "2026-11-01T10:00:00Z",
    published_at: fields.publishedAt ?? "2026-11-01T10:00:00Z",
    updated_at: "2026-11-01T10:00:00Z",
    author: githubUser(),
    assets: fields.assets ?? [],
  };
}
