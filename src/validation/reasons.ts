/**
 * Reason codes. Each check declares the codes it reports, with what they mean and how to fix them,
 * in its own file (checks/<id>.ts); checks/index.ts joins them, with the codes below, into the one
 * reason table (REASONS). This module holds what every check shares and imports no check, so that
 * every check can import it.
 */
export interface ReasonInfo {
  meaning: string;
  fix: string;
}

/** The reason codes of one check. */
export type CheckReasons = Readonly<Record<string, ReasonInfo>>;

/** A reason code in the joined table: its meaning, its fix and the check that reports it ("*": any). */
export interface OwnedReason extends ReasonInfo {
  check: string;
}

export type ReasonTable = Readonly<Record<string, OwnedReason>>;

/** Codes any check may report: missing inputs it needs, and the runner's own verdicts. */
export const ANY_CHECK_REASONS = {
  game_builds_unavailable: {
    meaning: "The game-build compatibility matrix could not be read, so the build cannot be checked.",
    fix: "Point --site at a portal site with api/v1/game-builds/latest.json.",
  },
  catalog_unavailable: {
    meaning: "The catalog could not be read, so catalog-aware checks cannot run.",
    fix: "Point --site at a portal site with api/v1/catalog.json.",
  },
  check_error: {
    meaning: "The check itself failed unexpectedly; it fails closed.",
    fix: "Report the log line to the portal maintainers.",
  },
  policy_invalid: {
    meaning:
      "The framework validation contract is missing something the check needs; the check fails closed.",
    fix: "Regenerate game-publishing-validation.v1.json with svc build.",
  },
} as const satisfies CheckReasons;

export type AnyCheckReasonCode = keyof typeof ANY_CHECK_REASONS;

/**
 * A check that cannot run because an earlier one failed reports `blocked_by_<check id>`: it is a
 * failure, never a pass.
 */
export function blockedBy(checkId: string): string {
  return `blocked_by_${checkId}`;
}
