import type { RateLimitBucket } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import type { SqlExecutor } from "../store/store.ts";

export interface RateLimitRule {
  limit: number;
  windowSeconds: number;
}

/** One hit counted in a fixed window: how many hits the window holds now, and when it closes. */
export interface WindowCount {
  hits: number;
  windowStart: Date;
  resetAt: Date;
}

/**
 * Counts one hit for (bucket, subject) in the fixed window that holds `now`, with one atomic
 * upsert, and never refuses: callers decide what the count means.
 */
export async function countHit(
  db: SqlExecutor,
  bucket: string,
  subject: string,
  rule: RateLimitRule,
  now: Date,
): Promise<WindowCount> {
  const windowMs = rule.windowSeconds * 1000;
  const windowStart = Math.floor(now.getTime() / windowMs) * windowMs;
  const resetAt = new Date(windowStart + windowMs);
  const result = await db.query<{ hits: number }>(
    `INSERT INTO rate_limit_buckets (bucket, subject, window_start, hits, expires_at)
     VALUES ($1, $2, $3::timestamptz, 1, $4::timestamptz)
     ON CONFLICT (bucket, subject, window_start) DO UPDATE SET hits = rate_limit_buckets.hits + 1
     RETURNING hits`,
    [bucket, subject, new Date(windowStart).toISOString(), resetAt.toISOString()],
  );
  return { hits: Number(result.rows[0]?.hits ?? 1), windowStart: new Date(windowStart), resetAt };
}

/**
 * Fixed windows kept in the store, so the limit holds across processes and serverless instances.
 * One atomic upsert per request counts the hit; over the limit it throws rate_limit_exceeded with
 * the seconds left in the window (the Retry-After value).
 */
export async function consumeRateLimit(
  db: SqlExecutor,
  bucket: RateLimitBucket,
  subject: string,
  rule: RateLimitRule,
  now: Date,
): Promise<{ remaining: number; resetAt: Date }> {
  const { hits, resetAt } = await countHit(db, bucket, subject, rule, now);
  if (hits > rule.limit) {
    const retryAfterSeconds = Math.max(1, Math.ceil((resetAt.getTime() - now.getTime()) / 1000));
    throw new SvcError(
      "rate_limit_exceeded",
      `too many requests for ${bucket}; retry in ${retryAfterSeconds} s`,
      {
        details: { bucket, limit: rule.limit, windowSeconds: rule.windowSeconds },
        retryAfterSeconds,
      },
    );
  }
  return { remaining: rule.limit - hits, resetAt };
}

/**
 * Buckets whose closed windows still carry a count that must reach the audit log first (refusals
 * counted beyond their logging budget): the plain prune leaves them to the refusal summary.
 */
export const SUMMARISED_BUCKET_PREFIX = "refusal_audit_";

/** Drops finished windows; called now and then so the table stays small. */
export async function pruneRateLimits(db: SqlExecutor, now: Date): Promise<number> {
  const result = await db.query(
    "DELETE FROM rate_limit_buckets WHERE expires_at < $1::timestamptz AND left(bucket, $2) <> $3",
    [now.toISOString(), SUMMARISED_BUCKET_PREFIX.length, SUMMARISED_BUCKET_PREFIX],
  );
  return result.rowCount;
}
