/**
 * What `svc new` writes, without the command line: the sidecar of a mod release scaffolded from its
 * package (hashed, its svc-mod.json read with the validator's own readers), the flags' fields, an
 * earlier sidecar and the mod's last published version; or a refusal with a stable code.
 */
import { createHash } from "node:crypto";
import { open } from "node:fs/promises";
import { basename } from "node:path";
import { RELEASE_SIDECAR_ASSET } from "../bot/release-intake.ts";
import { CARRIED_FIELDS } from "../contracts/carry-forward.ts";
import { SOURCE_SCHEMA_BASE, schemaFiles } from "../contracts/schemas.ts";
import {
  DEFAULT_ZIP_CAPS,
  MANIFEST_FILE_NAME,
  type ValidationContract,
} from "../contracts/validation-contract.ts";
import { parseSubmissionPath, submissionPath } from "../github/submission-files.ts";
import { readManifest, validateSidecar } from "../validation/documents.ts";
import { zipCapsFromPolicy } from "../validation/package-analysis.ts";
import { readAt } from "../validation/package-source.ts";
import type { Manifest, PackageAnalysis, Sidecar } from "../validation/types.ts";
import { type ByteSource, inflateEntry, readZipStructure, type ZipCaps } from "../validation/zip/reader.ts";
import type { PortalDetail } from "./new-portal-lookup.ts";

/** Every refusal's stable code (pulls-template/README.md explains each one). */
export const NEW_SIDECAR_CODES = [
  "package_url_invalid",
  "package_url_not_https",
  "package_url_not_immutable",
  "package_unreadable",
  "package_too_large",
  "package_not_zip",
  "manifest_missing",
  "manifest_invalid_json",
  "manifest_schema_mismatch",
  "manifest_mismatch",
  "mod_id_invalid",
  "version_invalid",
  "from_invalid",
  "sidecar_incomplete",
  "sidecar_invalid",
  "sidecar_exists",
] as const;
export type NewSidecarCode = (typeof NEW_SIDECAR_CODES)[number];

export interface NewSidecarRefusal {
  ok: false;
  code: NewSidecarCode;
  message: string;
  problems: string[];
}

export interface NewSidecarInput {
  packagePath: string;
  /** Absent for the release-intake sidecar, which carries no package. */
  url?: string;
  release: boolean;
  /** The fields the ZIP cannot give; undefined ones may come from `from`. */
  fields: Partial<
    Pick<Sidecar, "summary" | "description" | "releaseNotes" | "authors" | "tags" | "license">
  > & {
    links?: Sidecar["links"];
  };
  /** An earlier sidecar whose descriptive fields prefill this one. */
  from?: Record<string, unknown>;
  /**
   * The mod's last published version on the portal (its public detail document), once the package
   * names the mod: what the flags and `from` leave out starts from it. null: a new mod.
   */
  lastPublished?: (modId: string) => Promise<PortalDetail | null>;
  expect: { modId?: string; version?: string; targetGameBuild?: string };
  /** The portal's validation contract, when a site is at hand: ZIP caps and supported builds. */
  policy: ValidationContract | null;
}

export type NewSidecarResult =
  | {
      ok: true;
      /** The document to write: the full sidecar, or without `package` for --release. */
      document: Record<string, unknown>;
      sidecar: Sidecar;
      relativePath: string;
      warnings: string[];
      /** The fields taken from the mod's last published version, and which version that was. */
      carried: { version: string; from: string; fields: string[] } | null;
    }
  | NewSidecarRefusal;

// Used only without a site: the same ZIP caps the framework validation contract publishes, and the
// schema's own package size limit. `svc validate` applies the portal's real ones either way.
const MIB = 1024 * 1024;
const FALLBACK_CAPS: ZipCaps = DEFAULT_ZIP_CAPS;
const FALLBACK_MAX_PACKAGE_BYTES = 100 * MIB;

/** Where each required field comes from, for the message that names it. */
const FIELD_SOURCES: Record<string, string> = {
  summary: "--summary (or --from)",
  releaseNotes: "--notes or --notes-file",
  authors: '--author "NAME [@LOGIN]" (or --from)',
  description: "--description or --description-file",
  tags: "--tag",
  links: "--homepage, --source, --issues",
  license: "--license",
  package: "--package and --url",
};

export function refuse(code: NewSidecarCode, message: string, problems: string[] = []): NewSidecarRefusal {
  return { ok: false, code, message, problems };
}

/** A GitHub release asset URL is immutable; `releases/latest/download` follows whatever is newest. */
export function checkPackageUrl(url: string): NewSidecarRefusal | null {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return refuse("package_url_invalid", `--url ${JSON.stringify(url)} is not an absolute URL`);
  }
  if (parsed.protocol !== "https:") {
    return refuse(
      "package_url_not_https",
      `--url must be https (the portal downloads only https release assets); got ${parsed.protocol.replace(/:$/, "")}`,
    );
  }
  if (parsed.username || parsed.password) {
    return refuse("package_url_invalid", "--url must not carry credentials: it is published as it is");
  }
  if (/\/releases\/latest\//.test(parsed.pathname)) {
    return refuse(
      "package_url_not_immutable",
      "--url points at releases/latest, which moves with every release; use the tagged asset URL (releases/download/<tag>/<file>.zip)",
    );
  }
  return null;
}

interface MeasuredPackage {
  sha256: string;
  sizeBytes: number;
  manifest: Manifest;
}

/**
 * Hashes the package as a stream and reads svc-mod.json with the validator's own ZIP reader and
 * manifest reader (same caps, same codes), through one open file that must not change meanwhile.
 */
async function measurePackage(
  path: string,
  caps: ZipCaps,
  maxBytes: number,
): Promise<MeasuredPackage | NewSidecarRefusal> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "r");
  } catch (error) {
    return refuse("package_unreadable", `--package ${path}: ${(error as Error).message}`);
  }
  try {
    const before = await handle.stat();
    if (!before.isFile()) return refuse("package_unreadable", `--package ${path} is not a regular file`);
    if (before.size > maxBytes) {
      return refuse("package_too_large", `--package is ${before.size} bytes; the limit is ${maxBytes}`);
    }
    const hash = createHash("sha256");
    let sizeBytes = 0;
    for await (const chunk of handle.createReadStream({ start: 0, autoClose: false, highWaterMark: MIB })) {
      hash.update(chunk as Buffer);
      sizeBytes += (chunk as Buffer).length;
    }
    const source = fileSource(handle.fd, before.size);
    const structure = readZipStructure(source, caps);
    if (structure.unsafeToInflate) {
      return refuse(
        "package_not_zip",
        `--package ${path} is not a ZIP the validator can read`,
        structure.findings.slice(0, 20).map((f) => `${f.code}: ${f.message}`),
      );
    }
    const entries = structure.entries.map((entry) => ({ entry, kind: null }));
    const files = new Map<string, Buffer>();
    const manifestEntry = structure.entries.find((e) => e.name === MANIFEST_FILE_NAME && !e.isDirectory);
    if (manifestEntry) {
      const inflated = inflateEntry(source, manifestEntry);
      if (!inflated.ok) return refuse("package_not_zip", `${inflated.code}: ${inflated.message}`);
      files.set(MANIFEST_FILE_NAME, inflated.data);
    }
    const analysis: PackageAnalysis = {
      sizeBytes,
      sha256: null,
      unreadable: null,
      structure,
      nameFindings: [],
      entries,
      contentInspected: false,
      inflateFindings: [],
      files,
      packageKind: null,
      scan: { state: "not_run" },
    };
    const manifest = readManifest(analysis, MANIFEST_FILE_NAME, SOURCE_SCHEMA_BASE);
    if (!manifest.ok) {
      return refuse(
        manifest.code,
        `the package's ${MANIFEST_FILE_NAME} cannot prefill the sidecar (docs/validation.md: ${manifest.code})`,
        manifest.log,
      );
    }
    const after = await handle.stat();
    if (after.size !== before.size || after.mtimeMs !== before.mtimeMs || sizeBytes !== before.size) {
      return refuse("package_unreadable", `--package ${path} changed while it was being read; try again`);
    }
    return { sha256: hash.digest("hex"), sizeBytes, manifest: manifest.value };
  } finally {
    await handle.close();
  }
}

function fileSource(fd: number, size: number): ByteSource {
  return { size, read: (offset, length) => readAt(fd, size, offset, length) };
}

const REQUIRED_FIELDS: readonly string[] = (() => {
  const file = schemaFiles().find((f) => f.name === "mod-release-submission")!;
  return (JSON.parse(file.text) as { required: string[] }).required;
})();

/** Parses `Ada Lovelace @ada` into { name: "Ada Lovelace", github: "ada" }. */
export function parseAuthor(text: string): NonNullable<Sidecar["authors"]>[number] {
  const match = /^(.*?)\s+@([A-Za-z0-9-]+)$/.exec(text.trim());
  return match ? { name: match[1]!, github: match[2]! } : { name: text.trim() };
}

/** Builds, checks and returns the sidecar; writes nothing. */
export async function scaffoldSidecar(input: NewSidecarInput): Promise<NewSidecarResult> {
  if (!input.release) {
    const urlProblem = checkPackageUrl(input.url ?? "");
    if (urlProblem) return urlProblem;
  }
  const { expect } = input;
  // The path rule of submission pull requests is the one rule for both (submission-files.ts).
  if (expect.modId !== undefined && !parseSubmissionPath(submissionPath(expect.modId, "1.0.0"))) {
    return refuse(
      "mod_id_invalid",
      `--mod-id ${JSON.stringify(expect.modId)} is not a mod id: 2-64 lower-case letters, digits and single hyphens`,
    );
  }
  if (expect.version !== undefined && !parseSubmissionPath(submissionPath("mod", expect.version))) {
    return refuse(
      "version_invalid",
      `--version ${JSON.stringify(expect.version)} is not a semantic version (MAJOR.MINOR.PATCH[-pre], no +build)`,
    );
  }
  const measured = await measurePackage(
    input.packagePath,
    input.policy ? zipCapsFromPolicy(input.policy) : FALLBACK_CAPS,
    input.policy?.package.maxPackageBytes ?? FALLBACK_MAX_PACKAGE_BYTES,
  );
  if ("ok" in measured) return measured;
  const { manifest } = measured;

  const mismatches = (
    [
      ["--mod-id", expect.modId, "id", manifest.id],
      ["--version", expect.version, "version", manifest.version],
      ["--game-build", expect.targetGameBuild, "targetGameBuild", manifest.targetGameBuild],
    ] as const
  )
    .filter(([, wanted, , actual]) => wanted !== undefined && wanted !== actual)
    .map(
      ([flag, wanted, field, actual]) => `${flag} is ${wanted}, ${MANIFEST_FILE_NAME} ${field} is ${actual}`,
    );
  if (mismatches.length > 0) {
    return refuse(
      "manifest_mismatch",
      `the package is not the release you named: fix ${MANIFEST_FILE_NAME} (and rebuild the ZIP) or the flag`,
      mismatches,
    );
  }

  const from = input.from ?? {};
  const previous = input.lastPublished ? await input.lastPublished(manifest.id) : null;
  const carried: string[] = [];
  const pick = <K extends keyof NewSidecarInput["fields"]>(key: K): unknown => {
    if (input.fields[key] !== undefined) return input.fields[key];
    if (from[key] !== undefined) return from[key];
    const kept = key === "summary" || (CARRIED_FIELDS as readonly string[]).includes(key);
    const value = kept && previous ? previous[key as keyof PortalDetail] : undefined;
    if (value === undefined || value === null) return undefined;
    carried.push(key);
    return value;
  };
  const urlFileName = input.url ? lastSegment(input.url) : "";
  const fileName = urlFileName.toLowerCase().endsWith(".zip") ? urlFileName : basename(input.packagePath);
  const draft: Record<string, unknown> = {
    schema: "svc.mod-release-submission.v1",
    modId: manifest.id,
    name: manifest.name,
    version: manifest.version,
    targetGameBuild: manifest.targetGameBuild,
    summary: pick("summary"),
    description: pick("description"),
    releaseNotes: input.fields.releaseNotes,
    package: {
      fileName,
      sha256: measured.sha256,
      sizeBytes: measured.sizeBytes,
      ...(input.url ? { url: input.url } : {}),
    },
    dependencies: manifest.dependencies,
    entrypoints: manifest.entrypoints,
    modConfig: manifest.modConfig,
    authors: pick("authors"),
    tags: pick("tags"),
    links: pick("links"),
    license: pick("license"),
  };
  for (const key of Object.keys(draft)) if (draft[key] === undefined) delete draft[key];

  // A first release names its authors; a later one may leave them to the last published version.
  const missing = [...REQUIRED_FIELDS, "authors"].filter((field) => draft[field] === undefined);
  const result = validateSidecar(draft);
  const problems = [
    ...missing.map((field) => `${field}: missing; give it with ${FIELD_SOURCES[field] ?? `--${field}`}`),
    ...(result.ok ? [] : result.issues)
      .filter((issue) => !(issue.keyword === "required" && issue.path === "/"))
      .map((issue) => {
        const field = issue.path.split("/")[1] ?? "";
        const source = FIELD_SOURCES[field] ? ` (${FIELD_SOURCES[field]})` : "";
        return `${issue.path.slice(1) || "(sidecar)"}: ${issue.message}${source}`;
      }),
  ];
  if (missing.length > 0) {
    return refuse(
      "sidecar_incomplete",
      `the sidecar lacks ${missing.join(", ")}: nothing was written`,
      problems,
    );
  }
  if (!result.ok)
    return refuse("sidecar_invalid", "the sidecar does not match its schema: nothing was written", problems);

  const warnings: string[] = [];
  const supported = input.policy?.supportedGameBuilds;
  if (supported && !supported.includes(manifest.targetGameBuild)) {
    warnings.push(
      `targetGameBuild ${manifest.targetGameBuild} is not a supported game build of this portal (${supported.join(", ") || "none"}): target_game_build will fail`,
    );
  }
  const carriedFrom =
    previous && carried.length > 0
      ? { version: previous.latestVersion, from: previous.from, fields: carried }
      : null;
  if (input.release) {
    const { package: _measuredOnly, ...document } = draft;
    return {
      ok: true,
      document,
      sidecar: result.value,
      relativePath: RELEASE_SIDECAR_ASSET,
      warnings,
      carried: carriedFrom,
    };
  }
  return {
    ok: true,
    document: draft,
    sidecar: result.value,
    relativePath: submissionPath(manifest.id, manifest.version),
    warnings,
    carried: carriedFrom,
  };
}

/** The file name a download of the URL gets (GitHub serves the asset under its own name). */
function lastSegment(url: string): string {
  const segment = new URL(url).pathname.split("/").pop() ?? "";
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
