import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import type { Ajv2020, ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import { contractAjv } from "./contract-ajv.ts";
import { loadValidator } from "./validators.generated.js";

/** The base every source schema in schemas/ carries; publication rewrites it to the portal's baseUrl. */
export const SOURCE_SCHEMA_BASE = "https://svc.invalid";

export const SCHEMAS_DIR = fileURLToPath(new URL("../../schemas/", import.meta.url));

export type SchemaName =
  | "common"
  | "artifact"
  | "catalog"
  | "changes-head"
  | "changes-page"
  | "mods-index"
  | "mod-detail"
  | "mod-ownership"
  | "mod-records"
  | "owners-shard"
  | "mod-versions"
  | "runtime"
  | "framework"
  | "manager"
  | "game-builds"
  | "readiness"
  | "workflow"
  | "post-publish-smoke"
  | "mod-manifest"
  | "release-record"
  | "portal-config"
  | "backend-contract"
  | "game-publishing-validation"
  | "upload-submission"
  | "mod-release-submission"
  | "submission-report";

export interface SchemaFile {
  name: SchemaName;
  /** Path below schemas/, e.g. publishing/backend-contract.schema.json. */
  sourcePath: string;
  /** Path below the site root where the schema is published, e.g. api/v1/publishing/backend-contract.schema.json. */
  publicPath: string;
  /** The schema text as committed (with the source base). */
  text: string;
}

export interface SchemaIssue {
  path: string;
  message: string;
  keyword: string;
}

export type SchemaResult<T> = { ok: true; value: T } | { ok: false; issues: SchemaIssue[] };

function listSchemaFiles(): SchemaFile[] {
  const files: SchemaFile[] = [];
  for (const folder of ["schemas", "publishing"]) {
    for (const entry of readdirSync(join(SCHEMAS_DIR, folder)).sort()) {
      if (!entry.endsWith(".schema.json")) continue;
      const sourcePath = `${folder}/${entry}`;
      files.push({
        name: entry.replace(/\.schema\.json$/, "") as SchemaName,
        sourcePath,
        publicPath: `api/v1/${sourcePath}`,
        text: readFileSync(join(SCHEMAS_DIR, sourcePath), "utf8"),
      });
    }
  }
  return files;
}

let cachedFiles: SchemaFile[] | undefined;
export function schemaFiles(): SchemaFile[] {
  cachedFiles ??= listSchemaFiles();
  return cachedFiles;
}

/** The schema as published for a portal: every source-base URL (ids, consts) becomes the portal's base URL. */
export function publishedSchemaText(file: SchemaFile, baseUrl: string): string {
  return file.text.split(SOURCE_SCHEMA_BASE).join(baseUrl);
}

export function schemaId(name: SchemaName, baseUrl: string): string {
  const file = schemaFiles().find((f) => f.name === name);
  if (!file) throw new Error(`unknown schema ${name}`);
  return `${baseUrl}/${file.publicPath}`;
}

/**
 * Validators for one base URL. Each schema's validator was compiled ahead of time
 * (src/contracts/validators/, one module per schema loaded on first use through
 * validators.generated.js, from schemas/ by bin/build-validators.mjs; a test fails
 * while it differs from what that writes): compiling at start-up cost a fresh process about half a
 * second of CPU, paid by every CLI command, action run and serverless cold start. A schema whose
 * consts name the base URL (the backend contract pins its own baseUrl) validates documents of
 * exactly this portal, so it is compiled here, from the schemas as published for the base URL, as is
 * every schema when checkSchemas asks for the 2020-12 meta-schema check too (the schema test does).
 */
export class SchemaRegistry {
  readonly baseUrl: string;
  private readonly checkSchemas: boolean;
  private compiler: Ajv2020 | undefined;
  private readonly validators = new Map<SchemaName, ValidateFunction>();

  constructor(baseUrl: string, options: { checkSchemas?: boolean } = {}) {
    this.baseUrl = baseUrl;
    this.checkSchemas = options.checkSchemas ?? false;
  }

  /** Ajv with every published schema, made at the first schema that is not precompiled. */
  private ajv(): Ajv2020 {
    if (this.compiler) return this.compiler;
    const ajv = contractAjv({ validateSchema: this.checkSchemas });
    for (const file of schemaFiles()) ajv.addSchema(JSON.parse(publishedSchemaText(file, this.baseUrl)));
    this.compiler = ajv;
    return ajv;
  }

  validate<T>(name: SchemaName, document: unknown): SchemaResult<T> {
    let validator = this.validators.get(name);
    if (!validator) {
      validator = this.checkSchemas ? undefined : loadValidator(name);
      if (!validator) {
        const found = this.ajv().getSchema(schemaId(name, this.baseUrl));
        if (!found) throw new Error(`schema ${name} is not registered`);
        validator = found;
      }
      this.validators.set(name, validator);
    }
    if (validator(document)) return { ok: true, value: document as T };
    return { ok: false, issues: toIssues(validator.errors ?? []) };
  }
}

function toIssues(errors: ErrorObject[]): SchemaIssue[] {
  const seen = new Set<string>();
  const issues: SchemaIssue[] = [];
  for (const error of errors) {
    // if/then and allOf wrappers repeat the real failure; keep the specific one.
    if (error.keyword === "if" || error.keyword === "allOf") continue;
    let message = error.message ?? "is invalid";
    if (error.keyword === "additionalProperties" || error.keyword === "unevaluatedProperties") {
      const params = error.params as { additionalProperty?: string; unevaluatedProperty?: string };
      message = `has unknown field '${params.additionalProperty ?? params.unevaluatedProperty}'`;
    } else if (error.keyword === "const") {
      message = `must be ${JSON.stringify((error.params as { allowedValue: unknown }).allowedValue)}`;
    } else if (error.keyword === "enum") {
      message = `must be one of ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(", ")}`;
    }
    const path = error.instancePath === "" ? "/" : error.instancePath;
    const key = `${path} ${message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push({ path, message, keyword: error.keyword });
  }
  return issues;
}

export function formatIssues(issues: SchemaIssue[], limit = 20): string {
  const lines = issues.slice(0, limit).map((issue) => `${issue.path} ${issue.message}`);
  if (issues.length > limit) lines.push(`... and ${issues.length - limit} more`);
  return lines.join("\n");
}

const registries = new Map<string, SchemaRegistry>();
/** One registry per base URL for the process; compiling every schema costs tens of milliseconds. */
export function schemaRegistry(baseUrl: string): SchemaRegistry {
  let registry = registries.get(baseUrl);
  if (!registry) {
    registry = new SchemaRegistry(baseUrl);
    registries.set(baseUrl, registry);
  }
  return registry;
}

export function schemaSourcePath(name: SchemaName): string {
  const file = schemaFiles().find((f) => f.name === name);
  if (!file) throw new Error(`unknown schema ${name}`);
  return relative(process.cwd(), join(SCHEMAS_DIR, file.sourcePath));
}
