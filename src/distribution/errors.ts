import { type CodeOfScope, ERROR_CODES, SvcError } from "../errors.ts";

/**
 * Stable codes of the signed-distribution chain (scope `manager` of the one registry in errors.ts).
 * They are a manager's (and an operator's) outcomes, not HTTP outcomes.
 */
export type DistributionCode = CodeOfScope<"manager">;

/** Each distribution code with its meaning, as the registry holds them. */
export const DISTRIBUTION_CODES = Object.fromEntries(
  Object.entries(ERROR_CODES)
    .filter(([, entry]) => entry.scope === "manager")
    .map(([code, entry]) => [code, entry.meaning]),
) as Record<DistributionCode, string>;

export class DistributionError extends SvcError<DistributionCode> {
  constructor(code: DistributionCode, message: string, details?: unknown) {
    super(code, message, details === undefined ? {} : { details });
    this.name = "DistributionError";
  }
}

export function isDistributionError(error: unknown): error is DistributionError {
  return error instanceof DistributionError;
}
