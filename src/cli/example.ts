import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { filesystemArtifactStore } from "../catalog/artifact-store.ts";
import type { SiteSigning } from "../distribution/tuf-repository.ts";
import { publishRelease, type PackageValidator, type ValidationReport } from "../catalog/publisher.ts";
import { RECORD_PATHS } from "../contracts/records.ts";
import { readValidationDocuments, runnerValidator } from "../catalog/validator.ts";
import { isLoopbackBaseUrl, type PortalConfig } from "../config/portal-config.ts";
import { portalUrls } from "../contracts/urls.ts";
import type { RuntimeSettings } from "../config/settings.ts";
import { isSvcError } from "../errors.ts";
import { scannerFromSettings } from "../submissions/scanner-settings.ts";
import type { AntivirusScanner } from "../validation/antivirus/scanner.ts";
import { packFolder } from "../validation/pack.ts";

/** The example mod's folder and its sidecar, pinned by sha256 to the bytes `svc pack` makes of it. */
export const EXAMPLE_FOLDER = "pulls-template/example-mod";
export const EXAMPLE_SIDECAR = "pulls-template/submissions/example-mod/1.0.0.json";

export interface DevExampleOptions {
  /** svc serve --dev: only a development portal publishes the example. */
  dev: boolean;
  /** --no-example or SVC_EXAMPLE=0. */
  optedOut: boolean;
  root: string;
  recordsDir: string;
  siteDir: string;
  /** The configuration the portal serves (a development portal's base follows its port). */
  config: PortalConfig;
  /** The portal's own scanner (null: none configured). */
  scanner: AntivirusScanner | null;
  now?: () => Date;
  /** Online signing keys: the example's publication signs the site like every other. */
  signing?: SiteSigning | null;
}

export type DevExampleResult =
  | { status: "skipped"; reason: string }
  | {
      status: "published";
      modId: string;
      version: string;
      pageUrl: string;
      packageUrl: string;
      sha256: string;
      sizeBytes: number;
      /** Set when antivirus_scan was waived (no scanner; only the pinned example qualifies). */
      waiver: string | null;
    }
  | { status: "failed"; code: string; message: string; failedChecks: string[] };

function hasReleases(recordsDir: string): boolean {
  const mods = join(recordsDir, RECORD_PATHS.modsDir);
  return existsSync(mods) && readdirSync(mods).length > 0;
}

/** Why the example is not published here, or null when it is. */
export function exampleSkipReason(options: DevExampleOptions): string | null {
  if (!options.dev) return "not a development portal (svc serve --dev)";
  if (options.optedOut) return "off (--no-example or SVC_EXAMPLE=0)";
  if (!isLoopbackBaseUrl(options.config.baseUrl))
    return `baseUrl ${options.config.baseUrl} is public, and a public portal never gets the example`;
  if (hasReleases(options.recordsDir)) return "the portal already has releases";
  for (const path of [EXAMPLE_FOLDER, EXAMPLE_SIDECAR])
    if (!existsSync(join(options.root, path))) return `${path} is missing`;
  return null;
}

/**
 * Without any scanner, antivirus_scan fails closed and nothing can be published. The example is the
 * one exception, and only when its bytes are exactly the package the repository pins (the bytes its
 * tests build and scan with ClamAV): the check is then reported as waived (skipped, not required,
 * with the reason in its log) instead of passed, and the start-up output says so. Anything else,
 * including an edited example, stays refused.
 */
function waiveMissingScanner(inner: PackageValidator, waiver: string): PackageValidator {
  return async (request) => {
    const report = await inner(request);
    const failing = report.checks.filter(
      (c) => c.status === "failed" || (c.required && c.status !== "passed"),
    );
    const onlyUnscanned =
      failing.length === 1 &&
      failing[0]!.id === "antivirus_scan" &&
      failing[0]!.reasonCode === "scanner_unavailable";
    if (!onlyUnscanned) return report;
    const checks = report.checks.map((c) =>
      c.id === "antivirus_scan"
        ? { ...c, status: "skipped" as const, required: false, log: [...c.log, waiver] }
        : c,
    );
    return { ...report, checks, passed: true } as ValidationReport;
  };
}

/**
 * Publishes the example mod on an empty development portal through the same path `svc import`
 * takes: `svc pack` builds the package from pulls-template/example-mod, the validation runner checks
 * the exact bytes with the portal's scanner, the publisher promotes them, measures sha256 from the
 * stored file and regenerates the documents in one transaction.
 */
export async function publishDevExample(options: DevExampleOptions): Promise<DevExampleResult> {
  const skip = exampleSkipReason(options);
  if (skip) return { status: "skipped", reason: skip };
  const pinned = JSON.parse(readFileSync(join(options.root, EXAMPLE_SIDECAR), "utf8")) as {
    package: { sha256: string; sizeBytes: number };
  };
  const { policy } = readValidationDocuments(options.siteDir);
  const packed = await packFolder(join(options.root, EXAMPLE_FOLDER), policy);
  if (!packed.ok) {
    return {
      status: "failed",
      code: packed.problems[0]!.code,
      message: `svc pack refused ${EXAMPLE_FOLDER}`,
      failedChecks: packed.problems.map((p) => `${p.check ?? "pack"}: ${p.code}`),
    };
  }
  const isPinned =
    packed.sha256 === pinned.package.sha256 && packed.bytes.length === pinned.package.sizeBytes;
  const waiver =
    options.scanner === null && isPinned
      ? `waived: no antivirus scanner is configured; the development portal publishes its own example (sha256 ${packed.sha256}, pinned in ${EXAMPLE_SIDECAR}) unscanned, and nothing else`
      : null;
  const validate = runnerValidator({
    siteDir: options.siteDir,
    scanner: options.scanner,
    ...(options.now ? { clock: options.now } : {}),
  });
  const sidecar = {
    ...pinned,
    package: { ...pinned.package, sha256: packed.sha256, sizeBytes: packed.bytes.length },
  };
  try {
    const result = await publishRelease(
      {
        root: options.root,
        recordsDir: options.recordsDir,
        siteDir: options.siteDir,
        config: options.config,
        store: filesystemArtifactStore({
          root: options.root,
          siteDir: options.siteDir,
          baseUrl: options.config.baseUrl,
        }),
        validate: waiver ? waiveMissingScanner(validate, waiver) : validate,
        ...(options.now ? { now: options.now } : {}),
        signing: options.signing ?? null,
      },
      { packageBytes: packed.bytes, sidecar, source: { kind: "import" } },
    );
    const waived = result.report?.checks.some((c) => c.id === "antivirus_scan" && c.status === "skipped");
    return {
      status: "published",
      modId: result.record.modId,
      version: result.record.version,
      pageUrl: portalUrls(options.config.baseUrl).modPage(result.record.modId),
      packageUrl: result.record.packageUrl,
      sha256: result.record.sha256,
      sizeBytes: result.record.packageSizeBytes,
      waiver: waived ? waiver : null,
    };
  } catch (error) {
    if (!isSvcError(error)) throw error;
    const report = (error.details as ValidationReport | undefined)?.checks
      ? (error.details as ValidationReport)
      : null;
    return {
      status: "failed",
      code: error.code,
      message: error.message,
      failedChecks: (report?.checks ?? [])
        .filter((c) => c.status === "failed")
        .map((c) => `${c.id}: ${c.reasonCode ?? "failed"}`),
    };
  }
}

/** The start-up lines that say what happened to the example (aligned with the serve banner). */
export function describeDevExample(result: DevExampleResult): string[] {
  const pad = "              ";
  if (result.status === "skipped") return [`  example     not published: ${result.reason}`];
  if (result.status === "failed") {
    return [
      `  example     NOT published: ${result.code}: ${result.message.split("\n")[0]}`,
      ...result.failedChecks.map((c) => `${pad}${c}`),
      `${pad}(opt out: --no-example or SVC_EXAMPLE=0)`,
    ];
  }
  return [
    `  example     published ${result.modId}@${result.version} from ${EXAMPLE_FOLDER} (svc pack, then the importer's checks): ${result.pageUrl}`,
    `${pad}package ${result.packageUrl} (sha256 ${result.sha256}, ${result.sizeBytes} bytes)`,
    ...(result.waiver
      ? [
          `${pad}antivirus_scan WAIVED: no scanner is configured (set SVC_CLAMD or SVC_CLAMSCAN); only this pinned example is ever published unscanned`,
        ]
      : []),
    `${pad}opt out: --no-example or SVC_EXAMPLE=0`,
  ];
}

/**
 * svc serve's hook: on a development portal, publish the example in the background (validation with
 * clamscan can take seconds) and print what happened; nothing at all on any other portal.
 */
export async function startDevExample(
  options: Omit<DevExampleOptions, "scanner" | "optedOut"> & {
    settings: RuntimeSettings;
    noExample: boolean;
    env: NodeJS.ProcessEnv;
    write: (lines: string[]) => void;
  },
): Promise<void> {
  if (!options.dev) return;
  const scanner = scannerFromSettings(options.settings, options.config.limits.maxPackageBytes).create();
  const optedOut = options.noExample || options.env.SVC_EXAMPLE === "0";
  try {
    options.write(describeDevExample(await publishDevExample({ ...options, scanner, optedOut })));
  } catch (error) {
    options.write([`  example     NOT published: internal error: ${(error as Error).message}`]);
  }
}
