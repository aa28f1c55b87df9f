import type { IncomingMessage, ServerResponse } from "node:http";
import { SvcError } from "../errors.ts";

/** JSON request bodies of the account routes are small; anything larger is refused while streaming. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

export type FieldSpec =
  | {
      type: "string";
      required?: boolean;
      minLength?: number;
      maxLength: number;
      pattern?: RegExp;
      /** Rejects control characters (CR, LF, NUL...) and bidi overrides: header injection and spoofing. */
      singleLine?: boolean;
      oneOf?: readonly string[];
    }
  | { type: "string[]"; required?: boolean; maxItems: number; oneOf: readonly string[] };

export type BodySpec = Record<string, FieldSpec>;

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);
const UNSAFE_TEXT = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

function invalid(message: string, details: unknown): SvcError {
  return new SvcError("invalid_payload", message, { details });
}

export async function readLimited(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
): Promise<Buffer> {
  const tooLarge = () => {
    // The rest of the body is not read: close the connection instead of draining it.
    res.setHeader("connection", "close");
    return new SvcError("payload_too_large", `the JSON body is limited to ${maxBytes} bytes`, {
      details: { maxBytes },
    });
  };
  const declared = Number(req.headers["content-length"] ?? "0");
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();
  // Events, not async iteration: on Vercel the Node helpers read the body before the function runs
  // and replay it to "data" and "end" listeners only; the request stream itself is already spent
  // (test/http/vercel-build.test.ts runs the built functions that way).
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let total = 0;
    let settled = false;
    const settle = (finish: () => void) => {
      if (settled) return;
      settled = true;
      finish();
    };
    req.on("data", (chunk: Buffer) => {
      if (settled) return;
      total += chunk.length;
      if (total > maxBytes) {
        req.pause();
        settle(() => reject(tooLarge()));
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => settle(() => resolve(Buffer.concat(chunks))));
    req.on("error", (error) => settle(() => reject(error)));
    req.on("close", () => settle(() => reject(new Error("the request closed before its body ended"))));
  });
}

/**
 * Reads and checks a JSON object body: application/json only, at most maxBytes, no unknown or
 * prototype-polluting keys, every field of the declared type. An empty body is {} when every field
 * is optional. Call it only after authentication, roles, CSRF and rate limits have passed.
 */
export async function readJsonBody<T>(
  req: IncomingMessage,
  res: ServerResponse,
  spec: BodySpec,
  maxBytes = MAX_JSON_BODY_BYTES,
): Promise<T> {
  const contentType = String(req.headers["content-type"] ?? "");
  const hasBody =
    Number(req.headers["content-length"] ?? "0") > 0 || req.headers["transfer-encoding"] !== undefined;
  const required = Object.entries(spec)
    .filter(([, field]) => field.required)
    .map(([name]) => name);
  // A body-less request (curl -X POST with or without a content type) is {} when nothing is required.
  if (!hasBody && required.length === 0) return {} as T;
  if (!/^application\/json\s*(;|$)/i.test(contentType)) {
    res.setHeader("connection", "close");
    throw new SvcError("unsupported_media_type", "send the body as application/json", {
      details: { contentType: contentType || null },
    });
  }
  const raw = await readLimited(req, res, maxBytes);
  let value: unknown;
  try {
    value = JSON.parse(raw.toString("utf8"));
  } catch (error) {
    throw new SvcError("invalid_json", `the body is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalid("the body must be a JSON object", { expected: "object" });
  }
  const body = value as Record<string, unknown>;
  const keys = Object.keys(body);
  const forbidden = keys.filter((key) => FORBIDDEN_KEYS.has(key));
  if (forbidden.length > 0) throw invalid("forbidden keys in the body", { forbiddenFields: forbidden });
  const unknown = keys.filter((key) => !Object.hasOwn(spec, key));
  if (unknown.length > 0) {
    throw invalid(`unknown field(s): ${unknown.join(", ")}`, {
      unknownFields: unknown,
      allowedFields: Object.keys(spec),
    });
  }
  const out: Record<string, unknown> = Object.create(null);
  for (const [name, field] of Object.entries(spec)) {
    const present = Object.hasOwn(body, name);
    const fieldValue = body[name];
    if (!present || fieldValue === undefined) {
      if (field.required) throw invalid(`${name} is required`, { field: name, problem: "required" });
      continue;
    }
    if (field.type === "string") {
      if (typeof fieldValue !== "string") {
        throw invalid(`${name} must be a string`, { field: name, problem: "type", expected: "string" });
      }
      const text = fieldValue.trim();
      if (field.singleLine !== false && UNSAFE_TEXT.test(fieldValue)) {
        throw invalid(`${name} contains control or bidi characters`, { field: name, problem: "characters" });
      }
      if (text.length < (field.minLength ?? 1) || text.length > field.maxLength) {
        throw invalid(`${name} must be ${field.minLength ?? 1}-${field.maxLength} characters`, {
          field: name,
          problem: "length",
        });
      }
      if (field.pattern && !field.pattern.test(text)) {
        throw invalid(`${name} is not well-formed`, { field: name, problem: "format" });
      }
      if (field.oneOf && !field.oneOf.includes(text)) {
        throw invalid(`${name} must be one of ${field.oneOf.join(", ")}`, {
          field: name,
          problem: "enum",
          allowed: field.oneOf,
        });
      }
      out[name] = text;
    } else {
      if (!Array.isArray(fieldValue) || fieldValue.length > field.maxItems) {
        throw invalid(`${name} must be an array of at most ${field.maxItems} strings`, {
          field: name,
          problem: "type",
          expected: "array",
        });
      }
      for (const item of fieldValue) {
        if (typeof item !== "string" || !field.oneOf.includes(item)) {
          throw invalid(`${name} items must be among ${field.oneOf.join(", ")}`, {
            field: name,
            problem: "enum",
            allowed: field.oneOf,
          });
        }
      }
      if (new Set(fieldValue).size !== fieldValue.length) {
        throw invalid(`${name} has duplicates`, { field: name, problem: "duplicates" });
      }
      out[name] = [...fieldValue];
    }
  }
  return { ...out } as T;
}

/** A deliberately plain email shape: one @, a dot in the domain, no spaces, quotes or brackets. */
export const EMAIL_PATTERN =
  /^[^\s@"'<>()[\]\\,;:]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$/;

/** Query parameters: only the listed names, each at most once. */
export function readQuery(url: URL, allowed: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of url.searchParams) {
    if (!allowed.includes(name)) {
      throw new SvcError("invalid_request", `unknown query parameter ${name}`, {
        details: { parameter: name, allowed },
      });
    }
    if (Object.hasOwn(out, name)) {
      throw new SvcError("invalid_request", `query parameter ${name} given twice`, {
        details: { parameter: name },
      });
    }
    out[name] = value;
  }
  return out;
}
