import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmdirSync } from "node:fs";
import { open } from "node:fs/promises";
import { basename, dirname, relative, resolve } from "node:path";
import { commitFiles, FileExistsError, stagingDir } from "../catalog/atomic-files.ts";
import { SOURCE_SCHEMA_BASE, schemaFiles } from "../contracts/schemas.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import { MANIFEST_FILE_NAME, type ValidationContract } from "../contracts/validation-contract.ts";
import { RELEASE_SIDECAR_ASSET } from "../bot/release-intake.ts";
import { parseSubmissionPath, submissionPath } from "../github/submission-files.ts";
import { readManifest, SIDECAR_JSON_LIMITS, validateSidecar } from "../validation/documents.ts";
import { zipCapsFromPolicy } from "../validation/package-analysis.ts";
import type { Manifest, PackageAnalysis, Sidecar } from "../validation/types.ts";
import type { ModDetailDocument } from "../contracts/catalog.ts";
import { CARRIED_FIELDS, type CarrySource } from "../contracts/carry-forward.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { DEFAULT_ZIP_CAPS } from "../contracts/validation-contract.ts";
import { readAt } from "../validation/package-source.ts";
import { type ByteSource, inflateEntry, readZipStructure, type ZipCaps } from "../validation/zip/reader.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { parseFlags } from "./project.ts";

const HELP = `usage: svc new --package FILE.zip --url https://... --summary TEXT (--notes TEXT | --notes-file FILE)
               --author "NAME [@github-login]" [options]
       svc new --release --package FILE.zip --summary TEXT --notes ... --author ...

Scaffolds the sidecar (svc.mod-release-submission.v1) of a release. modId, name, version,
targetGameBuild, dependencies, entrypoints and modConfig come from the package's svc-mod.json;
package.sha256 and package.sizeBytes are measured from the exact bytes of FILE.zip. The result is
checked against the schema and written, never over an existing file, to
{out}/submissions/{modId}/{version}.json (or {out}/${RELEASE_SIDECAR_ASSET} with --release).
See pulls-template/README.md.

options:
  --package FILE          the release ZIP, byte for byte the file behind --url
  --url URL               the immutable https URL of that ZIP (a GitHub release asset); its last
                          path segment becomes package.fileName when it ends in .zip
  --release               write ${RELEASE_SIDECAR_ASSET} (no package, no --url) for a release in your
                          own mod repository; the portal app measures the asset and opens the PR
  --summary TEXT          one line, at most 280 characters
  --notes TEXT            release notes of this version (or --notes-file FILE)
  --description TEXT      the long description (or --description-file FILE)
  --author "NAME [@LOGIN]"  repeatable; a trailing @LOGIN is the author's GitHub login
  --tag TAG               repeatable; lower-case slug
  --homepage URL, --source URL, --issues URL   https links for the detail page
  --license SPDX          e.g. MIT
  --from FILE             copy summary, description, authors, tags, links and license from an
                          earlier sidecar (never its release notes); flags given here win
  --portal URL            the portal whose last published version of the mod this release starts
                          from (default: the site under --site when it is built, else the baseUrl
                          of ./portal.config.json)
  --no-portal             start from nothing but the flags and --from

When the mod is already on the portal, the sidecar starts from its last published version: summary,
description, authors, tags, links and license come from its public detail document
(GET {portal}/api/v1/mods/{modId}, or api/v1/mods/{modId}/index.json of the site under --site); flags
and --from win over it, and the release notes are always this version's own.
  --mod-id ID, --version V, --game-build BUILD
                          assert what svc-mod.json says (refused with manifest_mismatch otherwise)
  --out DIR               where submissions/ (or ${RELEASE_SIDECAR_ASSET}) is written (default: .)
  --site DIR              portal site for the ZIP limits and supported game builds (default: ./site)
  --json                  print the result (or the refusal) as JSON
  -h, --help

exit status: 0 written, 1 refused (the code says why: pulls-template/README.md), 2 usage error.
`;

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

/** What a portal's mod detail document (svc.mod-detail.v1) gives a new version to start from. */
export interface PortalDetail extends CarrySource {
  latestVersion: string;
  summary?: string;
  /** Where it was read, for the message. */
  from: string;
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

function refuse(code: NewSidecarCode, message: string, problems: string[] = []): NewSidecarRefusal {
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

function shellQuote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

function nextSteps(sidecar: Sidecar, written: string, packageArg: string, release: boolean): string[] {
  const { modId, version } = sidecar;
  if (release) {
    return [
      `gh release create v${version} ${shellQuote(packageArg)} ${shellQuote(written)} --title ${shellQuote(`${sidecar.name} ${version}`)}`,
      `  (in your mod repository: exactly one .zip asset beside ${RELEASE_SIDECAR_ASSET})`,
      "the portal app downloads the ZIP, measures sha256 and size, and opens the submission pull request",
    ];
  }
  const branch = `submit/${modId}-${version}`;
  return [
    `npx svc validate --package ${shellQuote(packageArg)} --metadata ${shellQuote(written)}`,
    `git switch -c ${branch}`,
    `git add ${shellQuote(written)}`,
    `git commit -m ${shellQuote(`Submit ${modId}@${version}`)}`,
    `git push -u origin ${branch}`,
    `gh pr create --title ${shellQuote(`Submit ${modId}@${version}`)} --body-file .github/PULL_REQUEST_TEMPLATE.md`,
    "then: one svc / <check> check run per check, a status comment edited in place, a moderator's review",
  ];
}

function readText(io: CliIo, inline: string | undefined, file: string | undefined): string | undefined {
  if (file === undefined) return inline;
  try {
    return readFileSync(resolve(io.cwd, file), "utf8").replace(/\s+$/, "");
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${(error as Error).message}`);
  }
}

class UsageError extends Error {}

/** The descriptive fields of a mod detail document, or null when it is not one. */
function portalDetail(value: unknown, from: string): PortalDetail | null {
  const doc = value as Partial<ModDetailDocument> | null;
  if (doc?.schema !== "svc.mod-detail.v1" || typeof doc.latestVersion !== "string") return null;
  return {
    latestVersion: doc.latestVersion,
    from,
    ...(typeof doc.summary === "string" ? { summary: doc.summary } : {}),
    ...(typeof doc.description === "string" ? { description: doc.description } : {}),
    ...(doc.links && typeof doc.links === "object" ? { links: doc.links } : {}),
    ...(Array.isArray(doc.tags) ? { tags: doc.tags } : {}),
    ...(typeof doc.license === "string" ? { license: doc.license } : {}),
    ...(Array.isArray(doc.authors) && doc.authors.length > 0 ? { authors: doc.authors } : {}),
  };
}

/**
 * The mod's last published version: with --portal, GET {portal}/api/v1/mods/{modId}; else its detail
 * document in the local site when there is a built one (a mod it does not list is new), else the
 * portal of ./portal.config.json. null when the portal does not list the mod (404). A portal that
 * cannot be reached is a warning, never a guess.
 */
function lastPublishedReader(
  siteDir: string,
  portal: { explicit: string | null; configured: string | null },
  warnings: string[],
) {
  return async (modId: string): Promise<PortalDetail | null> => {
    if (portal.explicit === null && existsSync(resolve(siteDir, SITE_PATHS.catalog))) {
      const local = resolve(siteDir, SITE_PATHS.modDetail(modId));
      if (!existsSync(local)) return null;
      const parsed = parseUntrustedJson(readFileSync(local, "utf8"), SIDECAR_JSON_LIMITS);
      return parsed.ok ? portalDetail(parsed.value, local) : null;
    }
    const base = portal.explicit ?? portal.configured;
    if (!base) return null;
    const url = `${base.replace(/\/+$/, "")}/api/v1/mods/${encodeURIComponent(modId)}`;
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(15_000) });
      if (response.status === 404) return null;
      if (!response.ok) {
        warnings.push(`${url} answered ${response.status}: the sidecar starts from the flags alone`);
        return null;
      }
      const parsed = parseUntrustedJson(await response.text(), SIDECAR_JSON_LIMITS);
      return parsed.ok ? portalDetail(parsed.value, url) : null;
    } catch (error) {
      warnings.push(`${url}: ${(error as Error).message}; the sidecar starts from the flags alone`);
      return null;
    }
  };
}

/** The portal's base URL from ./portal.config.json, when the working directory is a portal repository. */
function configuredPortal(cwd: string): string | null {
  const path = resolve(cwd, "portal.config.json");
  if (!existsSync(path)) return null;
  try {
    const baseUrl = (JSON.parse(readFileSync(path, "utf8")) as { baseUrl?: unknown }).baseUrl;
    return typeof baseUrl === "string" ? baseUrl : null;
  } catch {
    return null;
  }
}

function readPolicy(siteDir: string): ValidationContract | null {
  const path = resolve(siteDir, SITE_PATHS.validationContract);
  return existsSync(path) ? (JSON.parse(readFileSync(path, "utf8")) as ValidationContract) : null;
}

export async function run(args: string[], io: CliIo): Promise<number> {
  let values: ReturnType<typeof parse>["values"];
  const parse = (a: string[]) =>
    parseFlags(a, {
      package: { type: "string" },
      url: { type: "string" },
      release: { type: "boolean" },
      summary: { type: "string" },
      notes: { type: "string" },
      "notes-file": { type: "string" },
      description: { type: "string" },
      "description-file": { type: "string" },
      author: { type: "string", multiple: true },
      tag: { type: "string", multiple: true },
      homepage: { type: "string" },
      source: { type: "string" },
      issues: { type: "string" },
      license: { type: "string" },
      from: { type: "string" },
      portal: { type: "string" },
      "no-portal": { type: "boolean" },
      "mod-id": { type: "string" },
      version: { type: "string" },
      "game-build": { type: "string" },
      out: { type: "string" },
      site: { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    });
  try {
    values = parse(args).values;
  } catch (error) {
    io.stderr.write(`svc new: ${(error as Error).message}\n\n${HELP}`);
    return EXIT_USAGE;
  }
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  const usage = [
    !values.package && "--package is required",
    !values.release && !values.url && "--url is required (or --release)",
    values.release && values.url && "--url is not used with --release: the app records the asset's URL",
    values.notes !== undefined && values["notes-file"] && "give --notes or --notes-file, not both",
    values.description !== undefined &&
      values["description-file"] &&
      "give --description or --description-file, not both",
  ].filter((p): p is string => typeof p === "string");
  if (usage.length > 0) {
    io.stderr.write(`svc new: ${usage.join("; ")}\n\n${HELP}`);
    return EXIT_USAGE;
  }

  const report = (refusal: NewSidecarRefusal): number => {
    if (values.json) io.stdout.write(`${JSON.stringify(refusal, null, 2)}\n`);
    else {
      io.stderr.write(`svc new: ${refusal.code}: ${refusal.message}\n`);
      for (const problem of refusal.problems) io.stderr.write(`  - ${problem}\n`);
    }
    return EXIT_FAILED;
  };

  let fields: NewSidecarInput["fields"];
  let from: Record<string, unknown> | undefined;
  try {
    const links = {
      ...(values.homepage ? { homepage: values.homepage } : {}),
      ...(values.source ? { source: values.source } : {}),
      ...(values.issues ? { issues: values.issues } : {}),
    };
    fields = {
      summary: values.summary,
      description: readText(io, values.description, values["description-file"]),
      releaseNotes: readText(io, values.notes, values["notes-file"]),
      authors: values.author?.map(parseAuthor),
      tags: values.tag,
      links: Object.keys(links).length > 0 ? links : undefined,
      license: values.license,
    };
    if (values.from) {
      const parsed = parseUntrustedJson(readText(io, undefined, values.from)!, SIDECAR_JSON_LIMITS);
      const value = parsed.ok ? parsed.value : undefined;
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        return report(
          refuse(
            "from_invalid",
            `--from ${values.from} is not a JSON object${parsed.ok ? "" : `: ${parsed.message}`}`,
          ),
        );
      }
      from = value as Record<string, unknown>;
    }
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`svc new: ${error.message}\n`);
    return EXIT_USAGE;
  }
  const outDir = resolve(io.cwd, values.out ?? ".");
  const siteDir = resolve(io.cwd, values.site ?? "site");
  const portalWarnings: string[] = [];
  const result = await scaffoldSidecar({
    packagePath: resolve(io.cwd, values.package!),
    ...(values.url !== undefined ? { url: values.url } : {}),
    release: values.release === true,
    fields,
    ...(from ? { from } : {}),
    ...(values["no-portal"]
      ? {}
      : {
          lastPublished: lastPublishedReader(
            siteDir,
            { explicit: values.portal ?? null, configured: configuredPortal(io.cwd) },
            portalWarnings,
          ),
        }),
    expect: { modId: values["mod-id"], version: values.version, targetGameBuild: values["game-build"] },
    policy: readPolicy(siteDir),
  });
  if (!result.ok) return report(result);
  result.warnings.unshift(...portalWarnings);

  try {
    commitFiles(outDir, {
      write: new Map(),
      create: new Map([[result.relativePath, `${JSON.stringify(result.document, null, 2)}\n`]]),
    });
  } catch (error) {
    if (!(error instanceof FileExistsError)) throw error;
    return report(
      refuse(
        "sidecar_exists",
        `${relative(io.cwd, resolve(outDir, result.relativePath))} already exists and is never replaced: a new release is a new version`,
      ),
    );
  } finally {
    // commitFiles leaves its (empty) transaction folder behind; in a modder's checkout it is clutter.
    try {
      rmdirSync(dirname(stagingDir(outDir)));
    } catch {}
  }
  const written = relative(io.cwd, resolve(outDir, result.relativePath)) || result.relativePath;
  const next = nextSteps(result.sidecar, written, values.package!, values.release === true);
  if (values.json) {
    io.stdout.write(
      `${JSON.stringify({ ok: true, path: written, sidecar: result.document, carried: result.carried, warnings: result.warnings, next }, null, 2)}\n`,
    );
    return EXIT_OK;
  }
  const pkg = result.sidecar.package;
  io.stdout.write(
    [
      `svc new: wrote ${written}`,
      `  release   ${result.sidecar.modId}@${result.sidecar.version} (${result.sidecar.name}, game build ${result.sidecar.targetGameBuild})`,
      `  package   ${pkg.fileName}, ${pkg.sizeBytes} bytes`,
      `  sha256    ${pkg.sha256}`,
      ...(pkg.url ? [`  url       ${pkg.url}`] : []),
      ...(result.carried
        ? [
            `  from      ${result.carried.version}, the last published version (${result.carried.from}): ${result.carried.fields.join(", ")}`,
          ]
        : []),
      ...result.warnings.map((w) => `warning: ${w}`),
      "",
      "next:",
      ...next.map((line) => `  ${line}`),
      "",
    ].join("\n"),
  );
  return EXIT_OK;
}
