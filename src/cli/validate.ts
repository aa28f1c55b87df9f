import { existsSync, readFileSync, statSync } from "node:fs";
import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { readSubmissionCatalog } from "../catalog/validation-catalog.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import { createClamdScanner, parseClamdTarget } from "../validation/antivirus/clamd.ts";
import { createClamscanScanner } from "../validation/antivirus/clamscan.ts";
import type { AntivirusScanner } from "../validation/antivirus/scanner.ts";
import { openEarly } from "../validation/early-package.ts";
import type { GameBuildsDocument, ValidationProgress } from "../validation/types.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { byteProgressBar } from "./progress-bar.ts";

const HELP = `usage: svc validate --package FILE --metadata FILE [options]

Runs every validation check of the framework validation contract on a package and its sidecar
release metadata, exactly as the GitHub Action, the upload worker and the importer do.

options:
  --package FILE          the release ZIP
  --metadata FILE         the sidecar (svc.mod-release-submission.v1 JSON)
  --site DIR              portal site with api/v1/catalog.json, game-builds/latest.json and
                          publishing/game-publishing-validation.v1.json (default: ./site)
  --clamd SOCKET|HOST:PORT  scan with clamd (INSTREAM); default: $SVC_CLAMD, else
                          /run/clamav/clamd.ctl when it exists
  --clamscan PATH         scan with clamscan instead (slower: loads its database per run)
  --clamscan-db PATH      signature database for --clamscan
  --no-antivirus          skip scanning; antivirus_scan then FAILS (a package never passes unscanned)
  --json                  print the report as JSON
  --timings               also print how long each step took (start-up, hashing, structure,
                          names, entries, each check) to standard error
  -h, --help

environment: SVC_VALIDATE_WORKER=never|always: inflate a package of 4,000+ entries on one thread,
or always beside a worker thread (default: a worker when a core is free and no scanner runs).

exit status: 0 every required check passed, 1 a check failed, 2 usage or internal error.
Checks and reason codes: docs/validation.md.
`;

const DEFAULT_CLAMD_SOCKETS = ["/run/clamav/clamd.ctl", "/var/run/clamav/clamd.ctl"];

function readSiteJson<T>(siteDir: string, relative: string): T | null {
  const path = resolve(siteDir, relative);
  if (!existsSync(path)) return null;
  return JSON.parse(readFileSync(path, "utf8")) as T;
}

function chooseScanner(
  values: { clamd?: string; clamscan?: string; "clamscan-db"?: string },
  env: NodeJS.ProcessEnv,
): AntivirusScanner | null {
  if (values.clamscan) {
    return createClamscanScanner(
      values.clamscan,
      values["clamscan-db"] ? { database: values["clamscan-db"] } : {},
    );
  }
  const spec = values.clamd ?? env.SVC_CLAMD ?? DEFAULT_CLAMD_SOCKETS.find((p) => existsSync(p));
  return spec ? createClamdScanner(parseClamdTarget(spec)) : null;
}

async function progressBar(
  io: CliIo,
  totalBytes: number,
): Promise<((p: ValidationProgress) => void) | undefined> {
  // Only worth drawing for large packages, and only on a terminal (never into logs or pipes).
  if (!io.stderr.isTTY || totalBytes < 8 * 1024 * 1024) return undefined;
  return byteProgressBar(io, 10);
}

/** The --timings table: each step with its milliseconds and its share of the total, then the total. */
export function renderTimings(steps: ReadonlyArray<readonly [string, number]>): string {
  const total = steps.reduce((sum, [, ms]) => sum + ms, 0);
  const width = Math.max(5, ...steps.map(([step]) => step.length));
  const row = (step: string, ms: number) =>
    `  ${step.padEnd(width)}  ${ms.toFixed(1).padStart(8)} ms  ${((100 * ms) / (total || 1)).toFixed(1).padStart(5)}%`;
  return [
    "svc validate: time per step",
    ...steps.map(([step, ms]) => row(step, ms)),
    `  ${"-".repeat(width)}  ${"-".repeat(11)}  ${"-".repeat(6)}`,
    row("total", total),
    "",
  ].join("\n");
}

export async function run(args: string[], io: CliIo): Promise<number> {
  let values: ReturnType<typeof parse>["values"];
  const parse = (a: string[]) =>
    parseArgs({
      args: a,
      allowPositionals: false,
      strict: true,
      options: {
        package: { type: "string" },
        metadata: { type: "string" },
        site: { type: "string" },
        clamd: { type: "string" },
        clamscan: { type: "string" },
        "clamscan-db": { type: "string" },
        "no-antivirus": { type: "boolean" },
        json: { type: "boolean" },
        timings: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  try {
    values = parse(args).values;
  } catch (error) {
    io.stderr.write(`svc validate: ${(error as Error).message}\n\n${HELP}`);
    return EXIT_USAGE;
  }
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  if (!values.package || !values.metadata) {
    io.stderr.write(`svc validate: --package and --metadata are required\n\n${HELP}`);
    return EXIT_USAGE;
  }
  const packagePath = resolve(io.cwd, values.package);
  const metadataPath = resolve(io.cwd, values.metadata);
  for (const [flag, path] of [
    ["--package", packagePath],
    ["--metadata", metadataPath],
  ] as const) {
    if (!existsSync(path) || !statSync(path).isFile()) {
      io.stderr.write(`svc validate: ${flag} ${path} is not a readable file\n`);
      return EXIT_USAGE;
    }
  }
  const siteDir = resolve(io.cwd, values.site ?? "site");
  const policy = readSiteJson<ValidationContract>(siteDir, SITE_PATHS.validationContract);
  if (!policy) {
    io.stderr.write(
      `svc validate: no validation contract at ${resolve(siteDir, SITE_PATHS.validationContract)} (use --site)\n`,
    );
    return EXIT_USAGE;
  }
  let scanner: AntivirusScanner | null;
  try {
    scanner = values["no-antivirus"] ? null : chooseScanner(values, io.env);
  } catch (error) {
    io.stderr.write(`svc validate: ${(error as Error).message}\n`);
    return EXIT_USAGE;
  }
  const steps: Array<[string, number]> = [];
  const stepDone = (step: string, milliseconds: number) => steps.push([step, milliseconds]);
  const last = performance.now();
  // performance.now() counts from the process's start: Node's own start-up and loading svc's modules.
  stepDone("start Node and load svc", last);
  // The package is read, its inflate worker started and its antivirus scan begun before the checks
  // are loaded: those overlap that loading (docs/validation.md, On both cores).
  const early = openEarly(packagePath, policy, workerMode(io.env), scanner);
  try {
    return await validateOpened(early, values, { packagePath, metadataPath, siteDir, policy, scanner }, io, {
      steps,
      stepDone,
      last,
    });
  } finally {
    early?.close();
  }
}

/**
 * SVC_VALIDATE_WORKER=never keeps validation on one thread, =always starts the inflate worker
 * whatever the machine's load (to compare the two on a machine); unset or anything else: auto.
 */
function workerMode(env: NodeJS.ProcessEnv): "auto" | "never" | "always" {
  const mode = env.SVC_VALIDATE_WORKER;
  return mode === "never" || mode === "always" ? mode : "auto";
}

async function validateOpened(
  early: ReturnType<typeof openEarly>,
  values: { json?: boolean; timings?: boolean; "no-antivirus"?: boolean },
  paths: {
    packagePath: string;
    metadataPath: string;
    siteDir: string;
    policy: ValidationContract;
    scanner: AntivirusScanner | null;
  },
  io: CliIo,
  timing: { steps: Array<[string, number]>; stepDone: (step: string, ms: number) => void; last: number },
): Promise<number> {
  const { packagePath, metadataPath, siteDir, policy, scanner } = paths;
  const { steps, stepDone } = timing;
  let { last } = timing;
  const [{ runValidation }, { SIDECAR_JSON_LIMITS }] = await Promise.all([
    import("../validation/runner.ts"),
    import("../validation/documents.ts"),
  ]);
  stepDone("load the checks", performance.now() - last);
  last = performance.now();
  const metadataBytes = readFileSync(metadataPath);
  const sidecar = parseUntrustedJson(metadataBytes, SIDECAR_JSON_LIMITS);
  stepDone("read the sidecar and the site's documents", performance.now() - last);
  const report = await runValidation({
    package: early ? { path: packagePath, early } : { path: packagePath },
    sidecar: sidecar.ok ? sidecar.value : undefined,
    ...(sidecar.ok ? {} : { sidecarParseError: sidecar.message }),
    policy,
    catalog: readSubmissionCatalog(siteDir, sidecar.ok ? sidecar.value : undefined),
    gameBuilds: readSiteJson<GameBuildsDocument>(siteDir, SITE_PATHS.gameBuilds),
    scanner,
    antivirusDisabled: values["no-antivirus"] === true,
    ...(values.json ? {} : { onProgress: await progressBar(io, statSync(packagePath).size) }),
    ...(values.timings ? { onStepTimed: stepDone } : {}),
  });
  last = performance.now();
  if (values.json) {
    io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const { renderReport } = await import("../validation/render-report.ts");
    io.stdout.write(renderReport(report, { columns: io.stdout.columns ?? 100 }));
  }
  if (values.timings) {
    stepDone("write the report", performance.now() - last);
    io.stderr.write(renderTimings(steps));
  }
  return report.passed ? EXIT_OK : EXIT_FAILED;
}
