import { existsSync, readFileSync, rmdirSync } from "node:fs";
import { dirname, relative, resolve } from "node:path";
import { RELEASE_SIDECAR_ASSET } from "../bot/release-intake.ts";
import { commitFiles, FileExistsError, stagingDir } from "../catalog/atomic-files.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { SIDECAR_JSON_LIMITS } from "../validation/documents.ts";
import type { Sidecar } from "../validation/types.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { configuredPortal, lastPublishedReader } from "./new-portal-lookup.ts";
import {
  type NewSidecarInput,
  type NewSidecarRefusal,
  parseAuthor,
  refuse,
  scaffoldSidecar,
} from "./new-sidecar.ts";
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
