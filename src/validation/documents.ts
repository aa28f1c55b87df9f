import { type SchemaIssue, SOURCE_SCHEMA_BASE, schemaRegistry } from "../contracts/schemas.ts";
import type { Manifest, PackageAnalysis, Sidecar } from "./types.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";

/** Limits for JSON inside a package or beside it: far above any real manifest, far below harm. */
export const MANIFEST_JSON_LIMITS = { maxBytes: 256 * 1024, maxDepth: 32 };
export const SIDECAR_JSON_LIMITS = { maxBytes: 256 * 1024, maxDepth: 32 };
export const CONFIG_JSON_LIMITS = { maxBytes: 4 * 1024 * 1024, maxDepth: 64 };

// Sidecar and manifest schemas pin no base URL, so any portal's registry validates them. The runner
// passes the catalog's base URL so the manager reader's registry (and its compiled schemas) is reused.
export function validateSidecar(
  raw: unknown,
  baseUrl: string = SOURCE_SCHEMA_BASE,
): { ok: true; value: Sidecar } | { ok: false; issues: SchemaIssue[] } {
  return schemaRegistry(baseUrl).validate<Sidecar>("mod-release-submission", raw);
}

export type ManifestRead =
  | { ok: true; value: Manifest }
  | {
      ok: false;
      code: "manifest_missing" | "manifest_invalid_json" | "manifest_schema_mismatch";
      log: string[];
    };

/** Read and check svc-mod.json from the analysed package (the runner keeps its bytes). */
export function readManifest(
  pkg: PackageAnalysis,
  fileName: string,
  baseUrl: string = SOURCE_SCHEMA_BASE,
): ManifestRead {
  const bytes = pkg.files.get(fileName);
  if (!bytes) {
    const near = pkg.entries.find((e) => e.entry.name.toLowerCase().endsWith(fileName.toLowerCase()));
    return {
      ok: false,
      code: "manifest_missing",
      log: [
        `no ${fileName} at the archive root`,
        ...(near
          ? [
              `found ${JSON.stringify(near.entry.name)}: the manifest must sit at the root, named exactly ${fileName}`,
            ]
          : []),
      ],
    };
  }
  const parsed = parseUntrustedJson(bytes, MANIFEST_JSON_LIMITS);
  if (!parsed.ok)
    return { ok: false, code: "manifest_invalid_json", log: [`${fileName}: ${parsed.message}`] };
  const result = schemaRegistry(baseUrl).validate<Manifest>("mod-manifest", parsed.value);
  if (!result.ok) {
    return {
      ok: false,
      code: "manifest_schema_mismatch",
      log: result.issues.slice(0, 50).map((i) => `${fileName}${i.path === "/" ? "" : i.path}: ${i.message}`),
    };
  }
  return { ok: true, value: result.value };
}
