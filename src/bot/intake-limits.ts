/**
 * Release intake is public: anyone can install the intake app and publish releases, and each
 * release that becomes a pull request costs a package download, a validation run and some thirty
 * writes of the portal app. So intake is counted per source repository (by id) and per repository
 * owner (by account id) in the store's fixed windows, the same rate_limit_buckets the API counts
 * in, with the buckets of portal.config.json on the portal's default branch. A release over either
 * limit opens nothing; the modder learns why on their newest open submission pull request.
 */
import { countHit, type RateLimitRule } from "../accounts/rate-limit.ts";
import type { RateLimitBucket } from "../config/portal-config.ts";
import type { GitHubApi, RepoRef } from "../github/api.ts";
import type { SqlExecutor } from "../store/store.ts";
import { SUBMITTER_MARKER } from "./comments.ts";
import { intakeRateLimitedNote } from "./intake-comments.ts";
import { parseSubmitterRecord } from "./derive.ts";
import { PORTAL_CONFIG_PATH, readJsonFile } from "./fetch.ts";

export type IntakeScope = "repository" | "owner";

export const INTAKE_BUCKETS: Record<IntakeScope, Extract<RateLimitBucket, `releaseIntake${string}`>> = {
  repository: "releaseIntakeRepository",
  owner: "releaseIntakeOwner",
};

/** What portal.config.json ships with; used when the portal's own config does not name a bucket. */
export const DEFAULT_INTAKE_LIMITS: Record<IntakeScope, RateLimitRule> = {
  repository: { limit: 6, windowSeconds: 3600 },
  owner: { limit: 20, windowSeconds: 86400 },
};

/** One release against the limits of where it came from. */
export interface IntakeSource {
  repositoryId: number;
  ownerId: number;
}

export type IntakeAdmission =
  | { ok: true }
  | { ok: false; scope: IntakeScope; limit: number; windowSeconds: number; retryAt: Date };

export interface IntakeLimiter {
  /** Counts one intake of the source; refused when either of its windows is over its limit. */
  admit(source: IntakeSource): Promise<IntakeAdmission>;
}

function ruleOf(value: unknown, fallback: RateLimitRule): RateLimitRule {
  const rule = value as Partial<RateLimitRule> | undefined;
  const limit = rule?.limit;
  const windowSeconds = rule?.windowSeconds;
  return Number.isInteger(limit) &&
    (limit as number) >= 1 &&
    Number.isInteger(windowSeconds) &&
    (windowSeconds as number) >= 1 &&
    (windowSeconds as number) <= 86400
    ? { limit: limit as number, windowSeconds: windowSeconds as number }
    : fallback;
}

/** The intake buckets of portal.config.json on the portal's default branch (defaults for any it lacks). */
export async function readIntakeLimits(
  api: GitHubApi,
  portal: RepoRef,
): Promise<Record<IntakeScope, RateLimitRule>> {
  const config = (await readJsonFile(api, portal, PORTAL_CONFIG_PATH)) as {
    limits?: { rateLimits?: Record<string, unknown> };
  } | null;
  const buckets = config?.limits?.rateLimits ?? {};
  return {
    repository: ruleOf(buckets[INTAKE_BUCKETS.repository], DEFAULT_INTAKE_LIMITS.repository),
    owner: ruleOf(buckets[INTAKE_BUCKETS.owner], DEFAULT_INTAKE_LIMITS.owner),
  };
}

export function intakeLimiter(options: {
  db: () => Promise<SqlExecutor>;
  rules: () => Promise<Record<IntakeScope, RateLimitRule>>;
  clock?: () => Date;
}): IntakeLimiter {
  const clock = options.clock ?? (() => new Date());
  return {
    async admit(source) {
      const rules = await options.rules();
      const db = await options.db();
      const now = clock();
      const subjects: Array<[IntakeScope, string]> = [
        ["repository", `repository:${source.repositoryId}`],
        ["owner", `owner:${source.ownerId}`],
      ];
      for (const [scope, subject] of subjects) {
        const rule = rules[scope];
        const { hits, resetAt } = await countHit(db, INTAKE_BUCKETS[scope], subject, rule, now);
        if (hits > rule.limit)
          return { ok: false, scope, limit: rule.limit, windowSeconds: rule.windowSeconds, retryAt: resetAt };
      }
      return { ok: true };
    },
  };
}

/** Where a refused release's note goes, and the release it is about. */
export interface IntakeNote {
  submitter: string;
  release: {
    fullName: string;
    tagName: string;
    htmlUrl: string;
    repositoryId: number;
    ownerLogin: string;
    ownerId: number;
  };
  refusal: Extract<IntakeAdmission, { ok: false }>;
}

/**
 * Leaves the note on the newest open submission pull request of the same source repository (else
 * of the same owner's repositories). The intake app may not write to the modder's repository (it
 * reads contents only), and a refusal means the source opened pull requests here just now, so one
 * is where the modder already looks. One note per source and window: a flood of refused releases
 * does not become a flood of comments. Returns the pull request noted, or null.
 */
export async function leaveIntakeNote(
  api: GitHubApi,
  portal: RepoRef,
  note: IntakeNote,
  options: { db: () => Promise<SqlExecutor>; clock?: () => Date; botLogins: readonly string[] },
): Promise<number | null> {
  const now = (options.clock ?? (() => new Date()))();
  const { refusal, release } = note;
  const { hits } = await countHit(
    await options.db(),
    "releaseIntakeNote",
    `${refusal.scope}:${refusal.scope === "repository" ? release.repositoryId : release.ownerId}`,
    { limit: 1, windowSeconds: refusal.windowSeconds },
    now,
  );
  if (hits > 1) return null;
  // Newest first; one page is plenty, since the source opened its pull requests within the window.
  const { data: pulls } = await api.rest.pulls.list({
    ...portal,
    state: "open",
    sort: "created",
    direction: "desc",
    per_page: 100,
  });
  const bots = options.botLogins.map((l) => l.toLowerCase());
  const intake = pulls.filter(
    (p) => bots.includes((p.user?.login ?? "").toLowerCase()) && p.head.ref.startsWith("svc/release/"),
  );
  const sameRepository = intake.find((p) => p.head.ref.startsWith(`svc/release/${release.repositoryId}/`));
  const sameOwner = intake.find((p) => {
    const record = (p.body ?? "").includes(SUBMITTER_MARKER) ? parseSubmitterRecord(p.body ?? "") : null;
    return record?.repository?.fullName.split("/")[0]?.toLowerCase() === release.ownerLogin.toLowerCase();
  });
  const target = sameRepository ?? (refusal.scope === "owner" ? sameOwner : undefined);
  if (!target) return null;
  await api.rest.issues.createComment({
    ...portal,
    issue_number: target.number,
    body: intakeRateLimitedNote({
      submitter: note.submitter,
      release: `${release.fullName}@${release.tagName}`,
      releaseUrl: release.htmlUrl,
      scope: refusal.scope,
      source: refusal.scope === "repository" ? release.fullName : release.ownerLogin,
      limit: refusal.limit,
      windowSeconds: refusal.windowSeconds,
      retryAt: refusal.retryAt,
      now,
    }),
  });
  return target.number;
}
