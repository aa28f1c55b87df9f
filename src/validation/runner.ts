import { SOURCE_SCHEMA_BASE } from "../contracts/schemas.ts";
import { CHECKS, REASONS } from "./checks/index.ts";
import { failed } from "./checks/common.ts";
import { readManifest, validateSidecar } from "./documents.ts";
import { analyzePackage, stepTimer } from "./package-analysis.ts";
import { policyShapeProblems } from "./policy-shape.ts";
import type { CatalogDocument } from "../contracts/catalog.ts";
import { carryForward } from "../contracts/carry-forward.ts";
import type {
  CheckContext,
  CompleteSidecar,
  Sidecar,
  CheckFunction,
  CheckOutcome,
  CheckResult,
  ValidationInput,
  ValidationOutcome,
  ValidationReport,
} from "./types.ts";

/** The package-scoped checks, keyed by contract id; the report follows the policy's order. */
export const PACKAGE_CHECKS: Readonly<Record<string, CheckFunction>> = Object.fromEntries(
  CHECKS.flatMap((check) => (check.scope === "package" ? [[check.id, check.run]] : [])),
);

/**
 * A valid sidecar with the authors and tags it leaves out taken from the catalog's entry of the mod
 * (its newest visible version), as the publisher takes them from the last published version.
 */
export function completeFromCatalog(sidecar: Sidecar, catalog: CatalogDocument | null): CompleteSidecar {
  const entry = Array.isArray(catalog?.mods) ? catalog.mods.find((m) => m.id === sidecar.modId) : undefined;
  const { sidecar: complete } = carryForward(
    sidecar,
    entry ? { authors: entry.authors, tags: entry.tags } : null,
  );
  return { ...complete, authors: complete.authors ?? [] };
}

export async function runValidation(input: ValidationInput): Promise<ValidationReport> {
  return (await validatePackage(input)).report;
}

/**
 * The report and, when every entry inflated and verified, the files the package installs with
 * their sizes and sha256 from the same pass (what the publisher stores in the release record).
 */
export async function validatePackage(input: ValidationInput): Promise<ValidationOutcome> {
  const stepDone = stepTimer(input.onStepTimed);
  const clock = input.clock ?? (() => new Date());
  const startedAt = clock().toISOString();
  const schemaBaseUrl =
    typeof input.catalog?.baseUrl === "string" ? input.catalog.baseUrl : SOURCE_SCHEMA_BASE;
  const problems = policyShapeProblems(input.policy);
  const declared = Array.isArray(input.policy?.checks)
    ? input.policy.checks.filter((c) => c.scope === "package")
    : [];
  const order =
    declared.length > 0 ? declared : Object.keys(PACKAGE_CHECKS).map((id) => ({ id, required: true }));
  const sidecarResult =
    input.sidecarParseError === undefined && input.sidecar !== undefined
      ? validateSidecar(input.sidecar, schemaBaseUrl)
      : null;
  const sidecarValid = sidecarResult?.ok ? completeFromCatalog(sidecarResult.value, input.catalog) : null;
  const raw = input.sidecar as { modId?: unknown; version?: unknown } | undefined;
  const identity = {
    modId: sidecarValid?.modId ?? (typeof raw?.modId === "string" ? raw.modId : null),
    version: sidecarValid?.version ?? (typeof raw?.version === "string" ? raw.version : null),
  };

  if (problems.length > 0) {
    const checks = order.map((c) => ({ ...failed(c.id, "policy_invalid", problems), required: true }));
    const report: ValidationReport = {
      schema: "svc.validation-report.v1",
      ...identity,
      packageSha256: null,
      packageSizeBytes: null,
      passed: false,
      checks,
      startedAt,
      finishedAt: clock().toISOString(),
    };
    return { report, files: null, inventory: null };
  }

  stepDone("check the policy and the sidecar");
  const pkg = await analyzePackage(input, stepDone);
  const manifestRead = pkg.structure ? readManifest(pkg, input.policy.manifestFileName, schemaBaseUrl) : null;
  const results = new Map<string, CheckOutcome>();
  const ctx: CheckContext = {
    policy: input.policy,
    sidecar: {
      raw: input.sidecar,
      valid: sidecarValid,
      ...(input.sidecarParseError !== undefined ? { parseError: input.sidecarParseError } : {}),
    },
    manifest: { valid: manifestRead?.ok ? manifestRead.value : null },
    catalog: input.catalog,
    gameBuilds: input.gameBuilds,
    pkg,
    schemaBaseUrl,
    now: startedAt,
    results,
    reasons: REASONS,
  };
  stepDone("read the manifest");
  const checks: CheckResult[] = [];
  for (const { id, required } of order) {
    const fn = PACKAGE_CHECKS[id];
    let outcome: CheckOutcome;
    if (!fn) {
      outcome = failed(id, "check_error", [
        `the policy lists check ${id}, which this validator does not implement`,
      ]);
    } else {
      try {
        outcome = fn(ctx);
      } catch (error) {
        outcome = failed(id, "check_error", [
          `internal error: ${error instanceof Error ? error.message : String(error)}`,
        ]);
      }
    }
    // A required check is passed or failed; "skipped" can never count as a pass.
    if (required && outcome.status === "skipped") {
      outcome = failed(id, "check_error", [...outcome.log, "a required check did not run"]);
    }
    results.set(id, outcome);
    checks.push({ ...outcome, required });
    stepDone(`check ${id}`);
  }
  const report: ValidationReport = {
    schema: "svc.validation-report.v1",
    ...identity,
    packageSha256: pkg.sha256,
    packageSizeBytes: pkg.sizeBytes,
    passed: checks.every((c) => !c.required || c.status === "passed"),
    checks,
    startedAt,
    finishedAt: clock().toISOString(),
  };
  const inventory = pkg.structure ? { complete: pkg.contentInspected, files: pkg.inventory ?? [] } : null;
  return { report, files: pkg.contentInspected ? (pkg.installFiles ?? null) : null, inventory };
}
