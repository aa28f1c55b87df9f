import { requiredPackageCheckIds } from "../../contracts/checks.ts";
import { ANY_CHECK_REASONS, type OwnedReason, type ReasonInfo } from "../reasons.ts";
import type { CheckDescriptor } from "../types.ts";
import type { ZipReasonCode } from "../zip/reader.ts";
import { antivirusScan } from "./antivirus_scan.ts";
import { archiveContentPolicy } from "./archive_content_policy.ts";
import { artifactHash } from "./artifact_hash.ts";
import { backendReadiness } from "./backend_readiness.ts";
import { dependencyContract } from "./dependency_contract.ts";
import { detailPage } from "./detail_page.ts";
import { entrypointPresence } from "./entrypoint_presence.ts";
import { fileSignature } from "./file_signature.ts";
import { managerCatalogParse } from "./manager_catalog_parse.ts";
import { manifestIdentity } from "./manifest_identity.ts";
import { manifestSchema } from "./manifest_schema.ts";
import { modConfigContract } from "./mod_config_contract.ts";
import { publicSmoke } from "./public_smoke.ts";
import { semanticVersion } from "./semantic_version.ts";
import { sidecarSchema } from "./sidecar_schema.ts";
import { targetGameBuild } from "./target_game_build.ts";
import { zipPathSafety } from "./zip_path_safety.ts";

/**
 * Every validation check, in the order the runner reports them. A check is one file,
 * checks/<id>.ts, that says what it is (id, scope, required, description), which reason codes it
 * reports, what `svc pack` runs it on, and how it runs; listing it here is the only other step.
 * The checks of the published documents (the framework validation contract, the workflow document,
 * the backend contract's requiredChecks), the reason table, CheckId, the runner's checks and svc
 * pack's checks all derive from this array.
 *
 * The 15 package checks are the backend contract's requiredChecks. backend_readiness (before
 * uploads go live) and public_smoke (after every publication) are required too, but run over the
 * deployment, not over one package, so they are scoped "workflow" and stay out of a package's
 * validation report.
 */
export const CHECKS = [
  sidecarSchema,
  manifestSchema,
  manifestIdentity,
  semanticVersion,
  targetGameBuild,
  dependencyContract,
  zipPathSafety,
  antivirusScan,
  fileSignature,
  archiveContentPolicy,
  entrypointPresence,
  modConfigContract,
  artifactHash,
  detailPage,
  managerCatalogParse,
  backendReadiness,
  publicSmoke,
] as const satisfies readonly CheckDescriptor[];

export type CheckId = (typeof CHECKS)[number]["id"];

export const REQUIRED_PACKAGE_CHECK_IDS: readonly CheckId[] = requiredPackageCheckIds(CHECKS);

type ReasonCodeOf<C> = C extends { reasons: infer R } ? keyof R & string : never;

/** Every reason code: each check's own, and those any check may report. */
export type ReasonCode = ReasonCodeOf<(typeof CHECKS)[number]> | keyof typeof ANY_CHECK_REASONS;

/**
 * Every code the ZIP reader reports (zip/reader.ts ZipReasonCode) is a check's reason code: this
 * type is `true` only while that holds, and the assignment below fails to compile otherwise.
 */
export type ZipCodesAreReasonCodes = [ZipReasonCode] extends [ReasonCode] ? true : false;
export const ZIP_CODES_ARE_REASON_CODES: ZipCodesAreReasonCodes = true;

/**
 * Every reason code a check can report, with the check that owns it ("*": any check), what it
 * means and how to fix it. docs/validation.md lists the same codes; a test keeps the two in step.
 */
export const REASONS = Object.fromEntries([
  ...CHECKS.flatMap((check) =>
    Object.entries(check.reasons as Readonly<Record<string, ReasonInfo>>).map(
      ([code, reason]) => [code, { check: check.id, ...reason }] as const,
    ),
  ),
  ...Object.entries(ANY_CHECK_REASONS).map(([code, reason]) => [code, { check: "*", ...reason }] as const),
]) as Readonly<Record<ReasonCode, OwnedReason & { check: CheckId | "*" }>>;

export function fixFor(code: string): string | undefined {
  return (REASONS as Readonly<Record<string, ReasonInfo>>)[code]?.fix;
}
