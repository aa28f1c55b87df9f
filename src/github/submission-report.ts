import type { Dependency, Entrypoint } from "../contracts/records.ts";
import { SOURCE_SCHEMA_BASE, type SchemaName, schemaRegistry } from "../contracts/schemas.ts";
import type { ModConfig, PackageInventory, Sidecar, ValidationReport } from "../validation/types.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import type { SubmissionProblem } from "./submission-files.ts";

export const SUBMISSION_REPORT_SCHEMA = "svc.submission-report.v1";
/** The artifact and file name the validate workflow uploads and the reporting step downloads. */
export const SUBMISSION_REPORT_ARTIFACT = "submission-report";

/**
 * The artifact of one attempt of a validation run: `submission-report-{run_attempt}`. An artifact
 * name is unique within a workflow run, every attempt included, so a re-run (`/svc revalidate`)
 * cannot upload under the first attempt's name (the upload fails with 409 and the earlier report
 * is all the run has), and `overwrite: true` deletes before it uploads, which races. One name per
 * attempt is never refused, and the reporter reads exactly the attempt the event names.
 */
export function submissionReportArtifact(attempt: number): string {
  return `${SUBMISSION_REPORT_ARTIFACT}-${attempt}`;
}
export const SUBMISSION_REPORT_FILE = "submission-report.json";
/** A report is a few kilobytes; anything bigger is refused before parsing. */
export const SUBMISSION_REPORT_MAX_BYTES = 1024 * 1024;

export interface ReportCheck {
  id: string;
  status: "passed" | "failed" | "skipped";
  reasonCode: string | null;
  log: string[];
  required: boolean;
}

/** The validator's report as a submission report carries it: its checks without their timings. */
export type ReportValidation = Omit<ValidationReport, "checks"> & { checks: ReportCheck[] };

/** At most this many files in a report: a report stays a few hundred kilobytes at worst. */
export const REPORT_MAX_FILES = 1000;

/**
 * What the release diff needs of a validated package: its files as the validator measured them (a
 * release record's files, with the detected signature) and the manifest facts of the valid sidecar.
 */
export interface ReportPackage {
  /** Files in the package; more than files.length when the list was capped at REPORT_MAX_FILES. */
  fileCount: number;
  files: Array<{ path: string; sizeBytes: number; sha256: string; signature: string | null }>;
  entrypoints: Entrypoint[];
  dependencies: Dependency[];
  modConfig: ModConfig | null;
}

/** The artifact of the validate-submission workflow (schemas/schemas/submission-report.schema.json). */
export interface SubmissionReport {
  schema: typeof SUBMISSION_REPORT_SCHEMA;
  repository: string;
  pullRequest: number;
  headSha: string;
  sidecarPath: string | null;
  problems: SubmissionProblem[];
  report: ReportValidation | null;
  /** Absent when the package's files are not all known or the sidecar is invalid (and from older validators). */
  package?: ReportPackage;
}

/**
 * The report's package facts: only from a complete inventory (every entry inflated and verified)
 * and a valid sidecar, so a diff is never drawn from a partial list. The list keeps archive order
 * and stops at REPORT_MAX_FILES; fileCount keeps the true count.
 */
export function reportPackage(
  inventory: PackageInventory | null,
  sidecar: Sidecar | null,
): ReportPackage | null {
  if (!inventory?.complete || !sidecar) return null;
  return {
    fileCount: inventory.files.length,
    files: inventory.files.slice(0, REPORT_MAX_FILES).map((f) => ({
      path: f.path,
      sizeBytes: f.sizeBytes,
      sha256: f.sha256,
      signature: f.signature,
    })),
    entrypoints: sidecar.entrypoints,
    dependencies: sidecar.dependencies,
    modConfig: sidecar.modConfig ?? null,
  };
}

export type ReportIntake =
  | { ok: true; report: SubmissionReport }
  | { ok: false; code: "report_invalid" | "report_mismatch"; message: string };

/**
 * Re-reads a report handed over by the unprivileged job as untrusted input: size cap, strict JSON,
 * the schema, then identity (same repository, same head commit as the workflow run).
 */
export function intakeSubmissionReport(
  bytes: Uint8Array,
  expected: { repository: string; headSha: string },
): ReportIntake {
  const parsed = parseUntrustedJson(bytes, { maxBytes: SUBMISSION_REPORT_MAX_BYTES, maxDepth: 16 });
  if (!parsed.ok)
    return { ok: false, code: "report_invalid", message: `the report is not JSON: ${parsed.message}` };
  const result = schemaRegistry(SOURCE_SCHEMA_BASE).validate<SubmissionReport>(
    "submission-report" as SchemaName,
    parsed.value,
  );
  if (!result.ok) {
    const first = result.issues[0]!;
    return {
      ok: false,
      code: "report_invalid",
      message: `the report does not match its schema: ${first.path} ${first.message}`,
    };
  }
  const report = result.value;
  if (report.repository.toLowerCase() !== expected.repository.toLowerCase()) {
    return {
      ok: false,
      code: "report_mismatch",
      message: `the report is for ${report.repository}, not ${expected.repository}`,
    };
  }
  if (report.headSha !== expected.headSha) {
    return {
      ok: false,
      code: "report_mismatch",
      message: `the report is for commit ${report.headSha}, the run validated ${expected.headSha}`,
    };
  }
  return { ok: true, report };
}
