/**
 * The unprivileged half of validation (the validate action on pull_request): reads the sidecar the
 * pull request adds as data through the API, downloads the package it names with a streaming size
 * cap, runs every check and returns the report artifact. It executes nothing from the pull request
 * or the ZIP and needs only a read token.
 */
import { catalogWithSubmissionVersions } from "../catalog/validation-catalog.ts";
import type { CatalogDocument } from "../contracts/catalog.ts";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import type { AntivirusScanner } from "../validation/antivirus/scanner.ts";
import { SOURCE_SCHEMA_BASE } from "../contracts/schemas.ts";
import { validateSidecar } from "../validation/documents.ts";
import { validatePackage } from "../validation/runner.ts";
import type { GameBuildsDocument } from "../validation/types.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { type GitHubApi, isNotFound, type RepoRef } from "../github/api.ts";
import { downloadCapped, type FetchLike } from "../github/download.ts";
import { classifySubmission, stagedUploadId, type SubmissionProblem } from "../github/submission-files.ts";
import {
  reportPackage,
  SUBMISSION_REPORT_SCHEMA,
  type SubmissionReport,
} from "../github/submission-report.ts";

export interface ValidateSubmissionInput {
  repo: RepoRef;
  pullRequest: number;
  headSha: string;
  /** The pull request's head branch and its repository, from the event (GitHub's word, not the PR's). */
  head?: { ref: string; repository: string | null };
  policy: ValidationContract;
  catalog: CatalogDocument | null;
  /**
   * The checked-out site: catalog.json lists each mod's newest version only, so the submission's mod
   * and its dependencies get every version from their versions.json (version_exists, ranges).
   */
  siteDir?: string;
  gameBuilds: GameBuildsDocument | null;
  scanner: AntivirusScanner | null;
  fetch?: FetchLike;
  allowHttp?: boolean;
  clock?: () => Date;
}

/**
 * A pull request the portal opened for an upload whose bytes it holds privately (a draft release
 * asset a read-only token cannot see): the portal's own worker validates those bytes and reports to
 * the pull request, so this job has nothing to download and writes no report. A look-alike from a
 * fork gets a report like any other PR (its sidecar names no package URL, so it fails).
 */
export interface StagedUploadSkip {
  kind: "staged_upload";
  submissionId: string;
  sidecarPath: string;
}

export async function validateSubmission(
  api: GitHubApi,
  input: ValidateSubmissionInput,
): Promise<SubmissionReport | StagedUploadSkip> {
  const base = {
    schema: SUBMISSION_REPORT_SCHEMA,
    repository: `${input.repo.owner}/${input.repo.repo}`,
    pullRequest: input.pullRequest,
    headSha: input.headSha,
  } as const;
  const stop = (sidecarPath: string | null, problems: SubmissionProblem[]): SubmissionReport => ({
    ...base,
    sidecarPath,
    problems,
    report: null,
  });
  const files = await api.paginate(api.rest.pulls.listFiles, {
    ...input.repo,
    pull_number: input.pullRequest,
    per_page: 100,
  });
  const shape = classifySubmission(files.map((f) => ({ filename: f.filename, status: f.status })));
  if (shape.kind === "not_a_submission") {
    return stop(null, [
      { code: "not_a_submission", message: "the pull request adds no file under submissions/" },
    ]);
  }
  if (shape.kind === "malformed") return stop(null, shape.problems);
  const path = shape.sidecar.path;

  let raw: Buffer;
  try {
    const { data } = await api.rest.repos.getContent({ ...input.repo, path, ref: input.headSha });
    if (Array.isArray(data) || data.type !== "file" || !("content" in data)) {
      return stop(path, [{ code: "sidecar_unreadable", message: `${path} is not a file` }]);
    }
    raw = Buffer.from(data.content, "base64");
  } catch (error) {
    if (isNotFound(error))
      return stop(path, [{ code: "sidecar_unreadable", message: `${path} is missing at ${input.headSha}` }]);
    throw error;
  }
  const parsed = parseUntrustedJson(raw, { maxBytes: 256 * 1024, maxDepth: 32 });
  const sidecar = parsed.ok ? parsed.value : undefined;
  const url = (sidecar as { package?: { url?: unknown } } | undefined)?.package?.url;
  const staged = input.head ? stagedUploadId(input.head, `${input.repo.owner}/${input.repo.repo}`) : null;
  if (url === undefined && parsed.ok && staged)
    return { kind: "staged_upload", submissionId: staged, sidecarPath: path };
  if (typeof url !== "string") {
    return stop(path, [
      parsed.ok
        ? {
            code: "package_url_missing",
            message: "package.url is required: the immutable https URL of the release asset",
          }
        : { code: "sidecar_invalid_json", message: `${path}: ${parsed.message}` },
    ]);
  }
  const download = await downloadCapped(url, input.policy.package.maxPackageBytes, input.fetch, {
    allowHttp: input.allowHttp ?? false,
  });
  if (!download.ok)
    return stop(path, [
      {
        // A failed transfer is not the package's fault (the bot offers /svc revalidate); a package
        // over the cap or a URL that is not https is, and keeps its own code.
        code: download.code === "download_failed" ? "package_download_failed" : download.code,
        message: download.message,
      },
    ]);
  // Size and sha256 are compared with the sidecar by the artifact_hash check, over these very bytes.
  const catalog = input.siteDir
    ? catalogWithSubmissionVersions(input.catalog, input.siteDir, sidecar)
    : input.catalog;
  const { report, inventory } = await validatePackage({
    package: { bytes: download.bytes },
    sidecar,
    policy: input.policy,
    catalog,
    gameBuilds: input.gameBuilds,
    scanner: input.scanner,
    ...(input.clock ? { clock: input.clock } : {}),
  });
  // The files and manifest facts the bot's release diff compares with the last published record.
  const valid = validateSidecar(
    sidecar,
    typeof catalog?.baseUrl === "string" ? catalog.baseUrl : SOURCE_SCHEMA_BASE,
  );
  const facts = reportPackage(inventory, valid.ok ? valid.value : null);
  return { ...base, sidecarPath: path, problems: [], report, ...(facts ? { package: facts } : {}) };
}

/**
 * The report written when validation itself broke (the API, the runner, a missing policy): the job
 * always leaves a report, so the pull request ends in a visible, retryable validation_failed
 * instead of waiting for one forever.
 */
export function validationErrorReport(
  target: { repo: RepoRef; pullRequest: number; headSha: string },
  error: unknown,
): SubmissionReport {
  const message = error instanceof Error ? error.message : String(error);
  return {
    schema: SUBMISSION_REPORT_SCHEMA,
    repository: `${target.repo.owner}/${target.repo.repo}`,
    pullRequest: target.pullRequest,
    headSha: target.headSha,
    sidecarPath: null,
    problems: [{ code: "validation_error", message: `validation could not run: ${message}`.slice(0, 4000) }],
    report: null,
  };
}
