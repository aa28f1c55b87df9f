import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { CatalogDocument } from "../contracts/catalog.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import { SvcError } from "../errors.ts";
import type { AntivirusScanner } from "../validation/antivirus/scanner.ts";
import { validatePackage } from "../validation/runner.ts";
import type { EarlyPackage, GameBuildsDocument } from "../validation/types.ts";
import type { PackageValidator } from "./publisher.ts";
import { readSubmissionCatalog } from "./validation-catalog.ts";

export interface RunnerValidatorOptions {
  /** The site whose committed documents (catalog, game builds, validation contract) the checks read. */
  siteDir: string;
  /** null: antivirus_scan fails closed, so nothing can be published. */
  scanner: AntivirusScanner | null;
  clock?: () => Date;
  /**
   * The package opened, read and its scan begun before the publisher was loaded (svc import:
   * early-package.ts openEarly with the policy read then, under the same scanner). Taken over only
   * for those exact bytes and when the policy read now (after recovery) is the one it was opened
   * under; otherwise it is closed and the bytes are validated as without it.
   */
  early?: { path: string; package: EarlyPackage; policy: ValidationContract };
}

function readSiteJson<T>(siteDir: string, path: string): T | null {
  const full = join(siteDir, path);
  if (!existsSync(full)) return null;
  try {
    return JSON.parse(readFileSync(full, "utf8")) as T;
  } catch {
    return null;
  }
}

/**
 * The public documents the catalog-aware checks read: the policy (required: without it nothing can
 * be validated), and the catalog and compatibility matrix a manager sees now.
 */
export function readValidationDocuments(
  siteDir: string,
  options: { catalog?: boolean } = {},
): {
  policy: ValidationContract;
  catalog: CatalogDocument | null;
  gameBuilds: GameBuildsDocument | null;
} {
  const policy = readSiteJson<ValidationContract>(siteDir, SITE_PATHS.validationContract);
  if (!policy) {
    throw new SvcError("config_invalid", `${SITE_PATHS.validationContract} is missing: run svc build first`);
  }
  return {
    policy,
    // catalog: false when the caller reads only what a submission needs (readSubmissionCatalog).
    catalog: options.catalog === false ? null : readSiteJson<CatalogDocument>(siteDir, SITE_PATHS.catalog),
    gameBuilds: readSiteJson<GameBuildsDocument>(siteDir, SITE_PATHS.gameBuilds),
  };
}

/**
 * The publisher's validator for real publications: the validation runner over the exact bytes, with
 * the public documents as the catalog, compatibility matrix and policy (what a manager sees now).
 * The report carries the per-file hashes the runner measured while inflating (the release's files).
 */
export function runnerValidator(options: RunnerValidatorOptions): PackageValidator {
  return async (request) => {
    const documents = readValidationDocuments(options.siteDir, { catalog: false });
    const early = options.early;
    const takeOver =
      early !== undefined &&
      request.packageBytes === early.package.bytes &&
      JSON.stringify(documents.policy) === JSON.stringify(early.policy);
    if (early && !takeOver) early.package.close();
    const { report, files } = await validatePackage({
      package: takeOver ? { path: early.path, early: early.package } : { bytes: request.packageBytes },
      sidecar: request.sidecar,
      ...documents,
      catalog: readSubmissionCatalog(options.siteDir, request.sidecar),
      scanner: options.scanner,
      ...(options.clock ? { clock: options.clock } : {}),
    });
    return { ...report, files };
  };
}
