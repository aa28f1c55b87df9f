/**
 * The one error family. Every error the portal, the pipeline, the manager client or the CLI reports
 * carries a stable snake_case code from ERROR_CODES, with its HTTP status and its meaning, so a user
 * can search for it and a handler never picks a status by hand. Each code has a scope: `http`
 * codes are the API's (their statuses are the backend contract's `statusByCode`); `manager` codes
 * are the signed-distribution chain's outcomes; `github` codes are the workflows'; `cli` codes are
 * usage errors of `svc` (exit 2; every other error exits 1); `local` codes are the local portal
 * process's own (`svc serve`).
 */
export type ErrorScope = "http" | "manager" | "github" | "cli" | "local";

interface ErrorCodeEntry {
  status: number;
  scope: ErrorScope;
  meaning: string;
}

const http = (status: number, meaning: string) => ({ status, scope: "http" as const, meaning });
const manager = (meaning: string, status = 502) => ({ status, scope: "manager" as const, meaning });
const github = (meaning: string, status = 500) => ({ status, scope: "github" as const, meaning });
const cli = (meaning: string) => ({ status: 400, scope: "cli" as const, meaning });
const local = (meaning: string, status = 500) => ({ status, scope: "local" as const, meaning });

export const ERROR_CODES = {
  invalid_request: http(400, "the request is malformed (a missing or invalid parameter)"),
  invalid_payload: http(400, "the body or a document does not match its schema"),
  invalid_json: http(400, "the body is not valid JSON"),
  unauthenticated: http(401, "no valid session or API key"),
  invalid_api_key: http(401, "the API key is unknown, revoked or malformed"),
  oidc_token_invalid: http(
    401,
    "the GitHub Actions OIDC token does not verify: its signature, algorithm, key, issuer, audience, lifetime or a required claim (details.claim names it)",
  ),
  upload_credential_invalid: http(
    401,
    "the trusted-publishing upload credential is unknown, used or expired",
  ),
  csrf_failed: http(403, "the x-svc-csrf header does not match the session"),
  forbidden: http(403, "the caller lacks the role or ownership this needs"),
  trusted_publisher_unknown: http(
    403,
    "no trusted publisher of the mod matches the token's repository id, workflow file and environment",
  ),
  trusted_publisher_unlinked: http(
    403,
    "the matching trusted publisher was registered by someone who is not a portal account that owns or collaborates on the mod",
  ),
  account_suspended: http(
    403,
    "a moderator suspended this account's uploads (details.reason says why); an admin can lift it",
  ),
  not_found: http(404, "no such resource"),
  method_not_allowed: http(405, "the route does not take this method"),
  request_timeout: http(408, "the request body arrived too slowly"),
  conflict: http(
    409,
    "the request collides with what exists: an open submission of the version, a key or owner limit, a registration already made, or a lock another publication holds",
  ),
  illegal_transition: http(409, "the submission's state does not allow this move"),
  artifact_exists: http(409, "an artifact already exists for this version; artifacts are immutable"),
  version_exists: http(409, "this version is already published"),
  last_admin: http(409, "the last admin cannot lose the admin role"),
  data_dir_locked: http(409, "another portal process holds the data folder"),
  site_locked: http(409, "another portal process serves this checkout's site/ and records/"),
  account_not_verified: http(409, "the account's email is not verified yet"),
  token_invalid: http(400, "the verification or magic-link token is unknown, used or expired"),
  payload_too_large: http(413, "the body or package exceeds its cap"),
  unsupported_media_type: http(415, "the content type is not accepted here"),
  range_not_satisfiable: http(416, "the Range header asks for bytes outside the file"),
  rate_limit_exceeded: http(429, "too many requests; retry after Retry-After seconds"),
  internal_error: http(500, "an unexpected failure (logged)"),
  not_implemented: http(501, "a planned route that is not built yet"),
  github_unavailable: http(502, "GitHub did not answer or refused the app's request"),
  oidc_issuer_unavailable: http(502, "the OIDC issuer's discovery document or key set could not be read"),
  pages_unavailable: http(
    502,
    "GitHub Pages (deployment.pagesUrl) did not serve the mod's versions.json in time or served something else, so the fast-download lane on Vercel cannot tell which versions are public",
  ),
  email_delivery_unavailable: http(503, "no email delivery is configured, or it failed"),
  uploads_disabled: http(503, "uploads are off (SVC_LIVE_UPLOADS is not 1)"),
  scanner_unavailable: http(503, "no antivirus scanner is reachable"),
  config_invalid: http(500, "portal.config.json or an environment variable is invalid or missing"),
  drift_detected: http(500, "a generated file differs from what svc build writes"),
  records_layout_outdated: http(
    500,
    "records/ is in the layout before sharding (records/mods/{modId}/{version}.json and the like): run svc records migrate and commit the result",
  ),

  catalog_tampered: manager("the signed metadata or a signed document does not verify"),
  catalog_rollback: manager("the mirror offers older signed metadata than the client already trusts"),
  metadata_expired: manager("signed metadata has expired"),
  artifact_mismatch: manager("a download differs from its signed length or sha256"),
  path_escape: manager("an archive entry or a signed file name would be written outside its folder"),
  file_hash_mismatch: manager("the package's files differ from the signed per-file hashes"),
  archive_invalid: manager("the package archive is not safe to extract"),
  target_unknown: manager("the signed metadata does not list this file", 404),
  dependency_unresolved: manager("no published version satisfies a requirement", 404),
  download_failed: manager("a download failed"),
  response_too_large: manager(
    "a mirror's response runs past its signed length or the documented cap (the endless-data attack)",
  ),
  connect_timeout: manager("the mirror did not answer within the connect timeout"),
  download_stalled: manager(
    "a download brought less than the idle timeout asks for in a window (the slow-retrieval attack)",
  ),
  symlink_in_install: manager(
    "a folder or file inside the installation is a symbolic link; svc never follows one",
    500,
  ),
  install_damaged: manager("installed files differ from the install manifest", 500),
  install_missing: manager("nothing is installed in this folder", 404),
  install_conflict: manager(
    "a package would place a file where another mod's, the game's or the runtime loader's file is, or over an installation of the other layout",
    409,
  ),
  version_withdrawn: manager(
    "the portal no longer offers this version (a moderator hid it): an installed copy is reported, an install of it refused, and the newest visible version offered",
    410,
  ),
  tuf_key_invalid: manager("a TUF key file is malformed or inconsistent", 500),
  tuf_key_mismatch: manager("the keys do not match the roles of the current root", 500),
  tuf_keys_in_repository: manager("refusing to write private keys inside a git repository", 500),
  tuf_not_initialized: manager("the site has no root metadata yet", 500),
  not_signed_yet: manager(
    "the portal is not signed yet (no tuf/timestamp.json), or its signed metadata does not list a document the mirror serves (published after its last signing): nothing unsigned is used",
    503,
  ),
  mod_not_listed: manager(
    "the signed catalog lists no such mod (no signed versions.json, and the mirror serves none)",
    404,
  ),

  zip_staged: github("a catalog commit would stage a package (packages live in the artifact store)"),
  unexpected_staged_path: github(
    "a catalog commit would stage a path outside records/ (other than deleting a published sidecar)",
  ),
  site_staged: github(
    "a catalog commit would stage site/, a build output deployed to Pages, never committed",
  ),
  push_protected: github("the default branch refused the push (branch protection)"),
  push_failed: github("git push failed"),
  push_retries_exhausted: github("the branch kept moving; the push gave up after its retries"),
  git_failed: github("a git command failed"),
  catalog_inconsistent: github("svc check failed on the tree about to be pushed"),
  not_default_branch: github("the publish workflow ran on a branch other than the default"),
  visibility_input_invalid: github("a hide/unhide dispatch has invalid inputs", 400),
  visibility_not_a_release: github("the hide/unhide names no published release", 404),
  visibility_release_mismatch: github("the hide/unhide's pull request did not publish that release", 409),
  visibility_state_mismatch: github("the release is not in a state this visibility change applies to", 409),
  visibility_withdrawn: github(
    "an unhide of a version whose package was withdrawn from GitHub Releases when it was hidden: its artifact URL can never serve bytes again (publish a new version)",
    410,
  ),
  app_config_invalid: github("the GitHub App's id or private key is malformed"),
  app_not_installed: github("the GitHub App is not installed on the portal repository", 502),

  address_in_use: local("svc serve's host and port are taken by another process; nothing was left running"),
  workers_need_database: local(
    "svc serve --workers above 1 needs PostgreSQL (DATABASE_URL): PGlite is one process's database",
  ),

  usage_invalid: cli("the command line is invalid (unknown flag, missing argument)"),
  package_unreadable: cli("--package names no readable file"),
  metadata_unreadable: cli("--metadata names no readable file"),
  pack_folder_unreadable: cli("svc pack's folder is missing or unreadable"),
  pack_out_invalid: cli("svc pack's --out is not a .zip outside the folder"),
} as const satisfies Record<string, ErrorCodeEntry>;

export type ErrorCode = keyof typeof ERROR_CODES;
export type CodeOfScope<S extends ErrorScope> = {
  [C in ErrorCode]: (typeof ERROR_CODES)[C]["scope"] extends S ? C : never;
}[ErrorCode];
export type HttpErrorCode = CodeOfScope<"http">;

/** The API's codes and statuses: the backend contract's `statusByCode`. */
export const ERROR_STATUS = Object.fromEntries(
  Object.entries(ERROR_CODES)
    .filter(([, entry]) => entry.scope === "http")
    .map(([code, entry]) => [code, entry.status]),
) as { readonly [C in HttpErrorCode]: number };

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: unknown;
}

/** A typed domain error: the HTTP layer turns it into one JSON error body, the CLI into exit 1 (2 for usage). */
export class SvcError<C extends ErrorCode = ErrorCode> extends Error {
  readonly code: C;
  readonly details: unknown;
  /** Seconds, for rate_limit_exceeded. */
  readonly retryAfterSeconds: number | undefined;

  constructor(code: C, message: string, options: { details?: unknown; retryAfterSeconds?: number } = {}) {
    super(message);
    this.name = "SvcError";
    this.code = code;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }

  /** A usage error of `svc` (exit 2), not a domain error (exit 1). */
  get isUsage(): boolean {
    return ERROR_CODES[this.code].scope === "cli";
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export function statusForCode(code: ErrorCode): number {
  return ERROR_CODES[code].status;
}

export function isSvcError(error: unknown): error is SvcError {
  return error instanceof SvcError;
}
