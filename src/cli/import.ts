import { readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { configForSite } from "../catalog/portal-base.ts";
import type { ValidationReport } from "../catalog/publisher.ts";
import { withPackageFileName } from "../contracts/package-file-name.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import { isSvcError } from "../errors.ts";
import { parseClamdTarget, createClamdScanner } from "../validation/antivirus/clamd.ts";
import { createClamscanScanner } from "../validation/antivirus/clamscan.ts";
import type { AntivirusScanner } from "../validation/antivirus/scanner.ts";
import { openEarly } from "../validation/early-package.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { openProject, PROJECT_OPTIONS, parseFlags } from "./project.ts";

// The publisher, the validation runner, the signing keys and the table of a failed report are
// loaded (import()) only once the package is read and its antivirus scan begun, so that loading
// them overlaps the scanner's round trip (issue 27, item 7).

const HELP = `usage: svc import --package FILE.zip --metadata release.json [--clamd SPEC | --clamscan [--clamscan-db DIR]] [--json]
       svc import -PackagePath FILE.zip -MetadataPath release.json   (the contract's manual-fallback spelling)

The manual fallback publisher (docs/runbooks/manual-publishing.md). Runs every validation check on
the exact package bytes and the sidecar (svc.mod-release-submission.v1), promotes the bytes to
site/downloads/mods/{modId}/{version}/{fileName} (never replacing an existing artifact), hashes the
stored file, writes the record into records/mods/{shard}/{modId}.json, marks the previous newest version
superseded, regenerates the catalog, index, detail and versions JSON, checks contract rules 1-6,
and commits all of it as one transaction. Then run \`svc smoke --base-url URL --record\`.
A publication a crash interrupted is finished (or undone) first; importing the same release again
succeeds without changing anything, while other bytes or metadata for a taken version are refused.

  --clamd SPEC      clamd socket (unix:/run/clamav/clamd.ctl, /path, HOST:PORT); default $SVC_CLAMD
  --clamscan        scan with clamscan instead (slower); without a scanner nothing can be published
  --clamscan-db DIR clamscan's signature database (implies --clamscan)
  --json            print the result (or the failure with its validation report) as JSON
`;

/** -PackagePath/-MetadataPath (PowerShell style, any case) become --package/--metadata. */
export function normalizeImportArgs(args: string[]): string[] {
  const aliases: Record<string, string> = {
    "-packagepath": "--package",
    "--packagepath": "--package",
    "-metadatapath": "--metadata",
    "--metadatapath": "--metadata",
  };
  return args.map((arg) => {
    const [flag, ...value] = arg.split("=");
    const alias = aliases[flag!.toLowerCase()];
    if (!alias) return arg;
    return value.length > 0 ? `${alias}=${value.join("=")}` : alias;
  });
}

export function scannerFrom(
  values: { clamd?: string; clamscan?: boolean; "clamscan-db"?: string },
  io: CliIo,
): AntivirusScanner | null {
  if (values.clamscan || values["clamscan-db"]) {
    const db = values["clamscan-db"];
    return createClamscanScanner("clamscan", db ? { database: resolve(io.cwd, db) } : {});
  }
  const spec = values.clamd ?? io.env.SVC_CLAMD;
  return spec ? createClamdScanner(parseClamdTarget(spec)) : null;
}

/** A sidecar shaped enough to name its package (the publisher validates the whole of it). */
function isPortalHeldSidecar(
  value: unknown,
): value is { modId: string; version: string; package: { fileName: string; url?: string } } {
  const s = value as { modId?: unknown; version?: unknown; package?: { fileName?: unknown; url?: unknown } };
  return (
    typeof s === "object" &&
    s !== null &&
    typeof s.modId === "string" &&
    typeof s.version === "string" &&
    typeof s.package === "object" &&
    s.package !== null &&
    typeof s.package.fileName === "string" &&
    s.package.url === undefined
  );
}

function isReadableFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The site's validation contract as \`svc validate\` reads it; null when missing or not JSON. */
function readPolicy(siteDir: string): ValidationContract | null {
  try {
    return JSON.parse(
      readFileSync(join(siteDir, SITE_PATHS.validationContract), "utf8"),
    ) as ValidationContract;
  } catch {
    return null;
  }
}

async function checkTable(report: ValidationReport): Promise<string> {
  const { default: Table } = await import("cli-table3");
  const table = new Table({
    head: ["check", "required", "status", "reason"],
    style: { head: [], border: [] },
  });
  for (const check of report.checks) {
    table.push([check.id, check.required ? "yes" : "no", check.status, check.reasonCode ?? ""]);
  }
  const failed = report.checks.filter((c) => c.status === "failed");
  const logs = failed.flatMap((c) => c.log.map((line) => `  ${c.id}: ${line}`));
  return `${table.toString()}\n${logs.length > 0 ? `${logs.join("\n")}\n` : ""}`;
}

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(normalizeImportArgs(args), {
    ...PROJECT_OPTIONS,
    package: { type: "string" },
    metadata: { type: "string" },
    clamd: { type: "string" },
    clamscan: { type: "boolean" },
    "clamscan-db": { type: "string" },
    json: { type: "boolean" },
  });
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  if (!values.package || !values.metadata) {
    io.stderr.write(`svc import: --package and --metadata are required\n\n${HELP}`);
    return EXIT_USAGE;
  }
  const { paths, config: configured } = openProject(values, io);
  // Beside a development portal on another port, publish at the origin its site is built for.
  const config = configForSite(configured, paths.siteDir);
  const packagePath = resolve(io.cwd, values.package);
  const metadataPath = resolve(io.cwd, values.metadata);
  for (const [code, flag, given, path] of [
    ["package_unreadable", "--package", values.package, packagePath],
    ["metadata_unreadable", "--metadata", values.metadata, metadataPath],
  ] as const) {
    if (isReadableFile(path)) continue;
    const message = `${flag} ${given} is not a readable file (${path})`;
    if (values.json) io.stdout.write(`${JSON.stringify({ ok: false, code, message }, null, 2)}\n`);
    else io.stderr.write(`svc import: ${code}: ${message}\nnothing was published\n`);
    return EXIT_USAGE;
  }
  // Refuse before reading: a package over the cap is never loaded into memory.
  const size = statSync(packagePath).size;
  if (size > config.limits.maxPackageBytes) {
    io.stderr.write(
      `svc import: ${values.package} is ${size} bytes; the limit is ${config.limits.maxPackageBytes}\n`,
    );
    return EXIT_FAILED;
  }
  let sidecar: unknown;
  try {
    sidecar = JSON.parse(readFileSync(metadataPath, "utf8"));
  } catch (error) {
    io.stderr.write(`svc import: ${values.metadata} is not valid JSON: ${(error as Error).message}\n`);
    return EXIT_FAILED;
  }
  // The portal names a package it stores {modId}-{version}.zip, as every other path does.
  if (isPortalHeldSidecar(sidecar)) sidecar = withPackageFileName(sidecar);
  const scanner = scannerFrom(values, io);
  if (!scanner)
    io.stderr.write(
      "svc import: no antivirus scanner (--clamd/--clamscan/SVC_CLAMD): antivirus_scan will fail closed\n",
    );
  // The package is read and its antivirus scan begun (early-package.ts, as svc validate does) before
  // the publisher is loaded; the validator takes them over for these bytes and this policy.
  const policy = readPolicy(paths.siteDir);
  const early = policy ? openEarly(packagePath, policy, "auto", scanner) : null;
  try {
    return await publish(
      { paths, config, configured, packagePath, sidecar, scanner, json: values.json === true },
      early && policy ? { package: early, policy } : null,
      io,
    );
  } finally {
    early?.close();
  }
}

async function publish(
  input: {
    paths: ReturnType<typeof openProject>["paths"];
    config: ReturnType<typeof openProject>["config"];
    configured: ReturnType<typeof openProject>["config"];
    packagePath: string;
    sidecar: unknown;
    scanner: AntivirusScanner | null;
    json: boolean;
  },
  early: { package: NonNullable<ReturnType<typeof openEarly>>; policy: ValidationContract } | null,
  io: CliIo,
): Promise<number> {
  const { paths, config, configured, packagePath, sidecar, scanner } = input;
  const [{ publishRelease }, { runnerValidator }, { filesystemArtifactStore }, { portalSigning }] =
    await Promise.all([
      import("../catalog/publisher.ts"),
      import("../catalog/validator.ts"),
      import("../catalog/artifact-store.ts"),
      import("./online-keys.ts"),
    ]);
  try {
    const result = await publishRelease(
      {
        root: paths.root,
        recordsDir: paths.recordsDir,
        siteDir: paths.siteDir,
        config,
        store: filesystemArtifactStore({ root: paths.root, siteDir: paths.siteDir, baseUrl: config.baseUrl }),
        validate: runnerValidator({
          siteDir: paths.siteDir,
          scanner,
          ...(early ? { early: { path: packagePath, ...early } } : {}),
        }),
        signing: portalSigning(io),
      },
      {
        // The bytes read once: what is validated (and scanned) is what is published.
        packageBytes: early ? early.package.bytes : readFileSync(packagePath),
        sidecar,
        source: { kind: "import" },
      },
    );
    const { record, artifact } = result;
    if (result.alreadyPublished && !input.json) {
      // A re-run (after a crash, or by a script) of a publication that is already complete.
      io.stdout.write(
        `svc import: ${record.modId}@${record.version} is already published with these exact bytes and metadata (sha256 ${record.sha256}); nothing changed\n`,
      );
      return EXIT_OK;
    }
    if (input.json) {
      io.stdout.write(
        `${JSON.stringify({ ok: true, alreadyPublished: result.alreadyPublished === true, record, changed: result.changed, artifact, written: result.written, deleted: result.deleted }, null, 2)}\n`,
      );
      return EXIT_OK;
    }
    io.stdout.write(
      [
        `svc import: published ${record.modId}@${record.version} (${record.status})`,
        `  artifact  ${artifact!.url}`,
        `  sha256    ${artifact!.sha256}`,
        `  size      ${artifact!.sizeBytes} bytes`,
        ...result.changed.map((r) => `  ${r.status.padEnd(9)} ${r.modId}@${r.version}`),
        `  ${result.written.length} file(s) written, ${result.deleted.length} removed, in one transaction:`,
        ...result.written.map((p) => `    ${p}`),
        ...result.deleted.map((p) => `    removed ${p}`),
        ...(config === configured
          ? []
          : [
              `  base URL  ${config.baseUrl}: the site is built for a development portal there (portal.config.json says ${configured.baseUrl})`,
            ]),
        `next: svc smoke --base-url ${config.baseUrl} --record`,
        "",
      ].join("\n"),
    );
    return EXIT_OK;
  } catch (error) {
    if (!isSvcError(error)) throw error;
    const report = (error.details as ValidationReport | undefined)?.checks
      ? (error.details as ValidationReport)
      : null;
    if (input.json) {
      io.stdout.write(
        `${JSON.stringify({ ok: false, code: error.code, message: error.message, details: error.details }, null, 2)}\n`,
      );
      return EXIT_FAILED;
    }
    io.stderr.write(`svc import: ${error.code}: ${error.message}\n`);
    if (report) io.stderr.write(await checkTable(report));
    io.stderr.write("nothing was published; every published file is unchanged\n");
    return EXIT_FAILED;
  }
}
