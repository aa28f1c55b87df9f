/**
 * The request bodies of the ownership routes: nested JSON (principals, repositories), so they are
 * read as untrusted JSON and checked field by field with the shapes of svc.mod-ownership.v1. The
 * record is schema-checked again before it is written; these checks give the precise refusal.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Principal, RepositoryRef, TrustedPublisher } from "../contracts/ownership.ts";
import { samePrincipal } from "../contracts/ownership.ts";
import { SvcError } from "../errors.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { MAX_OWNERS, type OwnershipRequest } from "../submissions/ownership.ts";
import { MAX_JSON_BODY_BYTES, readLimited } from "./body.ts";

const ACCOUNT_ID = /^acct_[A-Za-z0-9_-]{8,64}$/;
const GITHUB_LOGIN = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const REPOSITORY_NAME = /^[A-Za-z0-9-]{1,39}\/[A-Za-z0-9._-]{1,100}$/;
const WORKFLOW_FILE = /^[A-Za-z0-9._-]{1,100}\.ya?ml$/;
const ENVIRONMENT = /^[A-Za-z0-9._ -]{1,255}$/;
/** Control and bidi characters, except the line breaks and tabs a reason may carry. */
const UNSAFE_REASON = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

function invalid(field: string, problem: string, message: string): SvcError {
  return new SvcError("invalid_payload", message, { details: { field, problem } });
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function onlyFields(value: Json, field: string, allowed: readonly string[]): void {
  const unknown = Object.keys(value).filter((key) => !allowed.includes(key));
  if (unknown.length > 0)
    throw new SvcError("invalid_payload", `unknown field(s) in ${field}: ${unknown.join(", ")}`, {
      details: { field, unknownFields: unknown, allowedFields: allowed },
    });
}

/** Any JSON value, as untrusted input: application/json only, at most 64 KiB. */
async function readJsonValue(req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  const contentType = String(req.headers["content-type"] ?? "");
  if (!/^application\/json\s*(;|$)/i.test(contentType)) {
    res.setHeader("connection", "close");
    throw new SvcError("unsupported_media_type", "send the body as application/json", {
      details: { contentType: contentType || null },
    });
  }
  const parsed = parseUntrustedJson(await readLimited(req, res, MAX_JSON_BODY_BYTES), {
    maxBytes: MAX_JSON_BODY_BYTES,
    maxDepth: 8,
  });
  if (!parsed.ok) throw new SvcError("invalid_json", `the body is not acceptable JSON: ${parsed.message}`);
  return parsed.value;
}

async function readJsonObject(req: IncomingMessage, res: ServerResponse): Promise<Json> {
  const value = await readJsonValue(req, res);
  if (!isObject(value))
    throw new SvcError("invalid_payload", "the body must be a JSON object", {
      details: { expected: "object" },
    });
  return value;
}

function principalOf(value: unknown, field: string): Principal {
  if (!isObject(value)) throw invalid(field, "type", `${field} must be { account } or { github }`);
  onlyFields(value, field, ["account", "github"]);
  const { account, github } = value;
  if ((account === undefined) === (github === undefined))
    throw invalid(field, "one_of", `${field} names exactly one of account and github`);
  if (account !== undefined) {
    if (typeof account !== "string" || !ACCOUNT_ID.test(account))
      throw invalid(`${field}.account`, "format", `${field}.account must be an account id (acct_...)`);
    return { account };
  }
  if (typeof github !== "string" || !GITHUB_LOGIN.test(github))
    throw invalid(`${field}.github`, "format", `${field}.github must be a GitHub login`);
  return { github };
}

function repositoryOf(value: unknown, field: string): RepositoryRef {
  if (!isObject(value)) throw invalid(field, "type", `${field} must be { fullName, id }`);
  onlyFields(value, field, ["fullName", "id"]);
  const { fullName, id } = value;
  if (typeof fullName !== "string" || !REPOSITORY_NAME.test(fullName))
    throw invalid(`${field}.fullName`, "format", `${field}.fullName must be owner/name`);
  // The id is what intake compares: a renamed repository keeps it, a recreated one does not.
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 1)
    throw invalid(`${field}.id`, "type", `${field}.id must be the repository's numeric id`);
  return { fullName, id };
}

/** { account } or { github }: the collaborator routes. */
export async function readCollaborator(req: IncomingMessage, res: ServerResponse): Promise<Principal> {
  return principalOf(await readJsonObject(req, res), "body");
}

/** { repository, workflow, environment? }: the trusted-publisher routes. */
export async function readTrustedPublisher(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<TrustedPublisher> {
  const body = await readJsonObject(req, res);
  onlyFields(body, "body", ["repository", "workflow", "environment"]);
  if (body.repository === undefined) throw invalid("repository", "required", "repository is required");
  const repository = repositoryOf(body.repository, "repository");
  if (typeof body.workflow !== "string" || !WORKFLOW_FILE.test(body.workflow))
    throw invalid(
      "workflow",
      "format",
      "workflow must be the workflow's file name under .github/workflows/ (for example release.yml)",
    );
  const environment = body.environment ?? null;
  if (environment !== null && (typeof environment !== "string" || !ENVIRONMENT.test(environment)))
    throw invalid("environment", "format", "environment must be a GitHub environment name or null");
  return { repository, workflow: body.workflow, environment };
}

/** { fullName, id } or null: set_source_repository. */
export async function readSourceRepository(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<RepositoryRef | null> {
  const value = await readJsonValue(req, res);
  return value === null ? null : repositoryOf(value, "body");
}

/** { owners, reason }: transfer_mod. */
export async function readTransfer(
  req: IncomingMessage,
  res: ServerResponse,
): Promise<Extract<OwnershipRequest, { action: "transfer" }>> {
  const body = await readJsonObject(req, res);
  onlyFields(body, "body", ["owners", "reason"]);
  const { owners, reason } = body;
  if (!Array.isArray(owners) || owners.length < 1 || owners.length > MAX_OWNERS)
    throw invalid("owners", "type", `owners must be an array of 1-${MAX_OWNERS} principals`);
  const principals = owners.map((owner, i) => principalOf(owner, `owners[${i}]`));
  if (principals.some((p, i) => principals.findIndex((q) => samePrincipal(p, q)) !== i))
    throw invalid("owners", "duplicates", "owners has duplicates");
  if (typeof reason !== "string") throw invalid("reason", "required", "reason is required");
  const text = reason.trim();
  if (text.length < 1 || text.length > 1000)
    throw invalid("reason", "length", "reason must be 1-1000 characters");
  if (UNSAFE_REASON.test(text))
    throw invalid("reason", "characters", "reason contains control or bidi characters");
  return { action: "transfer", owners: principals, reason: text };
}
