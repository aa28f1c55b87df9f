/**
 * Every error the portal reports carries a stable snake_case code. The HTTP status is derived from
 * the code through ERROR_STATUS, so a handler never picks a status by hand.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  invalid_payload: 400,
  invalid_json: 400,
  unauthenticated: 401,
  invalid_api_key: 401,
  csrf_failed: 403,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  request_timeout: 408,
  conflict: 409,
  illegal_transition: 409,
  artifact_exists: 409,
  version_exists: 409,
  last_admin: 409,
  data_dir_locked: 409,
  account_not_verified: 409,
  token_invalid: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  range_not_satisfiable: 416,
  rate_limit_exceeded: 429,
  internal_error: 500,
  not_implemented: 501,
  github_unavailable: 502,
  email_delivery_unavailable: 503,
  uploads_disabled: 503,
  scanner_unavailable: 503,
  config_invalid: 500,
  drift_detected: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: unknown;
}

/** A typed domain error: the HTTP layer turns it into one JSON error body. */
export class SvcError extends Error {
  readonly code: ErrorCode;
  readonly details: unknown;
  /** Seconds, for rate_limit_exceeded. */
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { details?: unknown; retryAfterSeconds?: number } = {},
  ) {
    super(message);
    this.name = "SvcError";
    this.code = code;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toBody(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

export function statusForCode(code: ErrorCode): number {
  return ERROR_STATUS[code];
}

export function isSvcError(error: unknown): error is SvcError {
  return error instanceof SvcError;
}
