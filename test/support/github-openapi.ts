/**
 * GitHub's own REST description (@octokit/openapi, generated/api.github.com.json) as the fake GitHub
 * server reads it: which operation a method and path are, whether a request's parameters and body
 * match that operation, what a reply of that operation looks like (GitHub's own examples) and
 * whether a reply matches the documented response schema.
 */
import { readFileSync } from "node:fs";
import type { IncomingHttpHeaders } from "node:http";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";

const require = createRequire(import.meta.url);
const SPEC_PATH = join(
  dirname(require.resolve("@octokit/openapi/package.json")),
  "generated",
  "api.github.com.json",
);

type Json = Record<string, unknown>;

export interface Operation {
  method: string;
  template: string;
  /** "METHOD /template", e.g. "POST /repos/{owner}/{repo}/releases". */
  route: string;
  regex: RegExp;
  paramNames: string[];
  op: Json;
  /** Literal segments: /pulls/comments beats /pulls/{pull_number}. */
  specificity: number;
}

interface Description {
  operations: Operation[];
  components: Json & { examples: Record<string, { value: unknown }> };
  ajv: Ajv;
  validators: Map<string, ValidateFunction>;
}

let cached: Description | undefined;
function description(): Description {
  if (cached) return cached;
  const spec = JSON.parse(readFileSync(SPEC_PATH, "utf8")) as {
    paths: Record<string, Json>;
    components: Description["components"];
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
        route: `${method.toUpperCase()} ${template}`,
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

/** Loads the description now (it takes a second), so the first request is not the slow one. */
export function loadGitHubDescription(): void {
  description();
}

/** OpenAPI 3.0 `nullable` without a `type` (beside anyOf/allOf), which Ajv refuses: the same as "or null". */
function nullableAsAnyOf(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(nullableAsAnyOf);
  if (!schema || typeof schema !== "object") return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema as Json)) out[k] = nullableAsAnyOf(v);
  // Ajv's nullable lets `type` take null but not `enum`: a check run in progress has conclusion null.
  if (out.nullable === true && Array.isArray(out.enum) && !out.enum.includes(null))
    out.enum = [...out.enum, null];
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

function resolveRef<T>(value: T): T {
  const ref = (value as { $ref?: string })?.$ref;
  if (!ref) return value;
  let node: unknown = { components: description().components };
  for (const part of ref.slice(2).split("/"))
    node = (node as Json)[part.replace(/~1/g, "/").replace(/~0/g, "~")];
  return resolveRef(node as T);
}

function validator(key: string, schema: unknown): ValidateFunction {
  const d = description();
  let fn = d.validators.get(key);
  if (!fn) {
    fn = d.ajv.compile(rebase(schema) as Json);
    d.validators.set(key, fn);
  }
  return fn;
}

function coerce(value: string, schema: Json | undefined): unknown {
  const type = schema?.type;
  if ((type === "integer" || type === "number") && /^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  if (type === "boolean" && (value === "true" || value === "false")) return value === "true";
  return value;
}

/** The operation a method and path are, with its path parameters; null when GitHub has none. */
export function findOperation(
  method: string,
  path: string,
): { operation: Operation; params: Record<string, string> } | null {
  const operation = description()
    .operations.filter((o) => o.method === method && o.regex.test(path))
    .sort((a, b) => b.specificity - a.specificity)[0];
  if (!operation) return null;
  const m = operation.regex.exec(path)!;
  const params: Record<string, string> = {};
  operation.paramNames.forEach((p, i) => {
    params[p] = decodeURIComponent(m[i + 1]!);
  });
  return { operation, params };
}

/** Whether "METHOD /template" is an operation of the description. */
export function isOperation(route: string): boolean {
  return description().operations.some((o) => o.route === route);
}

/**
 * Checks a request against its operation: path and query parameters (values against their schemas,
 * required ones present, none undocumented) and the body (JSON against the schema; a binary body
 * with a content type and a true length). Returns the parsed JSON body and the problems found.
 */
export function checkRequest(
  operation: Operation,
  request: {
    params: Record<string, string>;
    query: URLSearchParams;
    headers: IncomingHttpHeaders;
    bytes: Buffer;
  },
): { body: unknown; issues: string[] } {
  const issues: string[] = [];
  const declared = ((operation.op.parameters as unknown[]) ?? []).map((p) => resolveRef(p as Json));
  for (const param of declared) {
    const where = param.in as string;
    if (where !== "path" && where !== "query") continue;
    const name = param.name as string;
    const schema = param.schema as Json | undefined;
    const value = where === "path" ? request.params[name] : (request.query.get(name) ?? undefined);
    if (value === undefined) {
      if (param.required) issues.push(`missing required ${where} parameter ${name}`);
      continue;
    }
    if (!schema) continue;
    const check = validator(`${operation.route} ${where} ${name}`, schema);
    if (!check(coerce(value, resolveRef(schema))))
      issues.push(
        `${where} parameter ${name}=${JSON.stringify(value)}: ${description().ajv.errorsText(check.errors)}`,
      );
  }
  for (const key of new Set(request.query.keys())) {
    if (!declared.some((p) => p.in === "query" && p.name === key))
      issues.push(`undocumented query parameter ${key}`);
  }
  let body: unknown;
  const requestBody = resolveRef(operation.op.requestBody as Json | undefined);
  const content = requestBody?.content as Record<string, { schema?: unknown }> | undefined;
  if (content?.["application/json"]) {
    if (request.bytes.length === 0) {
      if (requestBody?.required) issues.push("missing JSON body");
    } else {
      try {
        body = JSON.parse(request.bytes.toString("utf8"));
        const check = validator(`${operation.route} body`, content["application/json"].schema);
        if (!check(body)) issues.push(`body: ${description().ajv.errorsText(check.errors)}`);
      } catch {
        issues.push("body is not JSON");
      }
    }
  } else if (content?.["*/*"] || content?.["application/octet-stream"]) {
    if (!request.headers["content-type"]) issues.push("missing content-type for a binary body");
    if (Number(request.headers["content-length"] ?? -1) !== request.bytes.length)
      issues.push("content-length differs from the body");
  } else if (request.bytes.length > 0) {
    issues.push("a body was sent to an operation that takes none");
  }
  return { body, issues };
}

function documentedResponse(operation: Operation, status: number): Json | undefined {
  const responses = operation.op.responses as Record<string, unknown>;
  return resolveRef(responses[String(status)] as Json | undefined);
}

/** The status GitHub answers the operation with when it succeeds (its first documented 2xx). */
export function successStatus(operation: Operation): number {
  const statuses = Object.keys(operation.op.responses as Json)
    .map(Number)
    .filter((s) => s >= 200 && s < 300)
    .sort((a, b) => a - b);
  return statuses[0] ?? 200;
}

function responseExamples(operation: Operation, status: number): unknown[] {
  const media = (documentedResponse(operation, status)?.content as Record<string, Json> | undefined)?.[
    "application/json"
  ];
  const examples = Object.values((media?.examples as Record<string, Json> | undefined) ?? {});
  return examples.map((e) => resolveRef(e).value).filter((v) => v !== null && v !== undefined);
}

/** A deep copy of one of GitHub's named examples (an array gives its first item). */
export function githubExample(name: string): Record<string, any> {
  const value = description().components.examples[name]?.value;
  if (value === undefined) throw new Error(`no example ${name} in GitHub's OpenAPI description`);
  return structuredClone(Array.isArray(value) ? value[0] : value) as Record<string, any>;
}

const isObject = (v: unknown): v is Json => !!v && typeof v === "object" && !Array.isArray(v);

/** Adds to `reply` every field it lacks from `example`, at every depth; what the reply names wins. */
function completeFrom(reply: unknown, example: unknown): unknown {
  if (Array.isArray(reply)) {
    const item = Array.isArray(example) ? example[0] : undefined;
    return item === undefined ? reply : reply.map((r) => completeFrom(r, item));
  }
  if (!isObject(reply) || !isObject(example)) return reply;
  const out: Json = {};
  for (const [key, value] of Object.entries(example)) if (!(key in reply)) out[key] = structuredClone(value);
  for (const [key, value] of Object.entries(reply)) out[key] = completeFrom(value, example[key]);
  return out;
}

/** The example that looks most like the reply: same kind (list or object), then the same `type`. */
function closestExample(reply: unknown, examples: unknown[]): unknown {
  const sameKind = examples.filter((e) => Array.isArray(e) === Array.isArray(reply));
  const type = isObject(reply) ? reply.type : undefined;
  return sameKind.find((e) => type !== undefined && isObject(e) && e.type === type) ?? sameKind[0];
}

/**
 * A reply as GitHub would send it: the fields the test named, the rest from GitHub's own example of
 * that operation and status. An error body gets the documentation_url GitHub puts on every error.
 */
export function completeReply(operation: Operation, status: number, body: unknown): unknown {
  if (body === undefined || Buffer.isBuffer(body)) return body;
  if (status >= 400) {
    return isObject(body) && !("documentation_url" in body)
      ? { ...body, documentation_url: "https://docs.github.com/rest" }
      : body;
  }
  const example = closestExample(body, responseExamples(operation, status));
  return example === undefined ? body : completeFrom(body, example);
}

/** Schema errors as "path message", array indexes as `*`: comparable between a reply and an example. */
function errorSignatures(check: ValidateFunction, value: unknown): string[] {
  if (check(value)) return [];
  return (check.errors ?? []).map((e) => `${e.instancePath.replace(/\/\d+(?=\/|$)/g, "/*")} ${e.message}`);
}

const exampleDefects = new Map<string, Set<string>>();

/**
 * Problems of a reply: a status the operation does not document (GitHub may answer anything with a
 * 5xx, so those pass), or a JSON body that does not match the documented response schema. A few of
 * GitHub's own examples miss a required field (a team without `type`, a repository without
 * `language`); a reply that inherits such a gap from the example is not the test's error.
 */
export function checkReply(operation: Operation, status: number, body: unknown): string[] {
  if (status >= 500) return [];
  const documented = documentedResponse(operation, status);
  // GitHub answers 404 to a GET of anything that does not exist or the token may not see, documented
  // or not (an environment never created is one the description leaves out).
  if (!documented && status === 404 && operation.method === "GET") return [];
  if (!documented) return [`reply status ${status} is not documented`];
  if (body === undefined || Buffer.isBuffer(body)) return [];
  const schema = (documented.content as Record<string, { schema?: unknown }> | undefined)?.[
    "application/json"
  ]?.schema;
  if (!schema) return [];
  const key = `${operation.route} ${status} response`;
  const check = validator(key, schema);
  let defects = exampleDefects.get(key);
  if (!defects) {
    defects = new Set(
      responseExamples(operation, status).flatMap((example) => errorSignatures(check, example)),
    );
    exampleDefects.set(key, defects);
  }
  const errors = errorSignatures(check, body).filter((e) => !defects.has(e));
  return errors.length === 0 ? [] : [`reply ${status}: ${errors.join(", ")}`];
}
