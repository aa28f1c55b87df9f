/**
 * What a submission pull request may contain: exactly one added sidecar file
 * submissions/{modId}/{version}.json. Anything else makes the pull request a non-submission (no
 * file under submissions/) or a malformed one (the problems say why).
 */
export const SUBMISSIONS_DIR = "submissions";

const MOD_ID = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const SEMVER =
  /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?$/;

export interface SubmissionPath {
  path: string;
  modId: string;
  version: string;
}

export interface ChangedFile {
  filename: string;
  /** GitHub's file status: added, modified, removed, renamed, copied, changed, unchanged. */
  status: string;
}

export interface SubmissionProblem {
  code: string;
  message: string;
}

export type SubmissionShape =
  | { kind: "not_a_submission" }
  | { kind: "submission"; sidecar: SubmissionPath }
  | { kind: "malformed"; problems: SubmissionProblem[] };

/**
 * Uploads through the portal API with the package bytes: the pull request's branch in the portal
 * repository, and the private draft release holding the staged package.
 */
export const STAGING_TAG_PREFIX = "svc-upload-";
export const UPLOAD_BRANCH_PREFIX = "svc/upload/";
const SUBMISSION_ID = /^sub_[0-9a-z]{25,26}$/;

/** The submission id of a pull request the portal opened for a staged upload, from its head branch. */
export function stagedUploadId(
  head: { ref: string; repository: string | null },
  portal: string,
): string | null {
  if (!head.repository || head.repository.toLowerCase() !== portal.toLowerCase()) return null;
  if (!head.ref.startsWith(UPLOAD_BRANCH_PREFIX)) return null;
  const id = head.ref.slice(UPLOAD_BRANCH_PREFIX.length);
  return SUBMISSION_ID.test(id) ? id : null;
}

export function submissionPath(modId: string, version: string): string {
  return `${SUBMISSIONS_DIR}/${modId}/${version}.json`;
}

export function parseSubmissionPath(path: string): SubmissionPath | null {
  const parts = path.split("/");
  if (parts.length !== 3 || parts[0] !== SUBMISSIONS_DIR) return null;
  const modId = parts[1]!;
  const file = parts[2]!;
  if (!file.endsWith(".json")) return null;
  const version = file.slice(0, -".json".length);
  if (modId.length < 2 || modId.length > 64 || !MOD_ID.test(modId)) return null;
  if (version.length > 64 || !SEMVER.test(version)) return null;
  return { path, modId, version };
}

/** Judges the changed files of a pull request (the whole list, every page). */
export function classifySubmission(files: readonly ChangedFile[]): SubmissionShape {
  const touched = files.filter((f) => f.filename.startsWith(`${SUBMISSIONS_DIR}/`));
  if (touched.length === 0) return { kind: "not_a_submission" };
  const problems: SubmissionProblem[] = [];
  const others = files.filter((f) => !f.filename.startsWith(`${SUBMISSIONS_DIR}/`));
  if (others.length > 0) {
    problems.push({
      code: "submission_touches_other_files",
      message: `a submission pull request changes only its sidecar file; this one also changes ${others
        .slice(0, 5)
        .map((f) => f.filename)
        .join(", ")}${others.length > 5 ? ` and ${others.length - 5} more` : ""}`,
    });
  }
  if (touched.length > 1) {
    problems.push({
      code: "submission_multiple_sidecars",
      message: `a submission pull request adds exactly one sidecar file; this one changes ${touched.length} files under ${SUBMISSIONS_DIR}/`,
    });
  }
  const first = touched[0]!;
  if (first.status !== "added") {
    problems.push({
      code: "submission_not_added",
      message: `${first.filename} is ${first.status}; published submissions are immutable, so a new version adds a new file`,
    });
  }
  const sidecar = parseSubmissionPath(first.filename);
  if (!sidecar) {
    problems.push({
      code: "submission_path_invalid",
      message: `${first.filename} is not ${SUBMISSIONS_DIR}/{modId}/{version}.json (modId a lower-case slug, version a semantic version)`,
    });
  }
  if (problems.length > 0 || !sidecar) return { kind: "malformed", problems };
  return { kind: "submission", sidecar };
}
