/**
 * The bot's durable delivery queue. A webhook is recorded here and acknowledged at once; the work
 * runs afterwards (after the response on Vercel, from the cron drain, or from the next delivery),
 * so GitHub's 10 s webhook budget never decides whether a label or a status comment is written.
 *
 * - The X-GitHub-Delivery id is the primary key: a redelivery of a delivery already recorded is a
 *   no-op, and one that ended `failed` is queued again (GitHub's "Redeliver" is the operator's retry).
 * - Work is serialised per key (one pull request, one release): a claim takes the key's lease row
 *   with INSERT ... ON CONFLICT DO UPDATE ... WHERE expired, so two instances draining at once never
 *   run two deliveries of one pull request together. Only row locks and plain transactions are used:
 *   no session-level advisory lock, so it works through a transaction-mode pooler and on PGlite.
 * - Within a key, deliveries run oldest first; a failure is retried with backoff; after
 *   maxAttempts the delivery ends `failed`, where the operator lists it.
 * - A lease outlives any one run (a function is killed at its maxDuration): a delivery whose
 *   instance died is claimed again once its lease has expired.
 */
import { randomBytes } from "node:crypto";
import type { SqlExecutor, Store } from "../store/store.ts";

export type DeliveryApp = "portal" | "intake";
export type DeliveryState = "queued" | "running" | "done" | "failed";

export interface NewDelivery {
  id: string;
  app: DeliveryApp;
  event: string;
  payload: unknown;
  serialKey: string;
  /** sha256 of the webhook body as received; absent for work the bot derives itself. */
  payloadSha256?: string;
}

export interface Delivery extends NewDelivery {
  state: DeliveryState;
  attempts: number;
  receivedAt: Date;
  lastError: string | null;
  result: string | null;
}

export interface QueueOptions {
  clock?: () => Date;
  /** How long a claim holds its delivery and key; longer than any function may run. */
  leaseMs?: number;
  maxAttempts?: number;
  /** Delay before attempt n+1 after n failed attempts. */
  backoffMs?: (failedAttempts: number) => number;
}

export const DEFAULT_LEASE_MS = 5 * 60_000;
export const DEFAULT_MAX_ATTEMPTS = 6;
/** 15 s, 1 min, 4 min, 16 min, then hourly: a GitHub outage of an hour still ends in success. */
export const defaultBackoffMs = (failedAttempts: number): number =>
  Math.min(15_000 * 4 ** Math.max(0, failedAttempts - 1), 3_600_000);

interface DeliveryRow {
  id: string;
  app: DeliveryApp;
  event: string;
  payload: unknown;
  serial_key: string;
  state: DeliveryState;
  attempts: number;
  received_at: Date | string;
  last_error: string | null;
  result: string | null;
}

function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    app: row.app,
    event: row.event,
    payload: typeof row.payload === "string" ? JSON.parse(row.payload) : row.payload,
    serialKey: row.serial_key,
    state: row.state,
    attempts: row.attempts,
    receivedAt: new Date(row.received_at),
    lastError: row.last_error,
    result: row.result,
  };
}

const COLUMNS = "id, app, event, payload, serial_key, state, attempts, received_at, last_error, result";

/**
 * Records a delivery. `duplicate`: already recorded (GitHub redelivered one that is queued, running
 * or done); `requeued`: it had ended failed and runs again with fresh attempts.
 */
export async function enqueueDelivery(
  store: Store,
  delivery: NewDelivery,
  now: Date,
): Promise<"queued" | "duplicate" | "requeued"> {
  return store.transaction(async (tx) => {
    // A conflict on the id (a redelivery) or on the body's hash (the same signed body under another id).
    const inserted = await tx.query(
      `INSERT INTO github_deliveries (id, app, event, payload, serial_key, state, not_before, received_at, payload_sha256)
       VALUES ($1, $2, $3, $4, $5, 'queued', $6, $6, $7) ON CONFLICT DO NOTHING RETURNING id`,
      [
        delivery.id,
        delivery.app,
        delivery.event,
        JSON.stringify(delivery.payload),
        delivery.serialKey,
        now,
        delivery.payloadSha256 ?? null,
      ],
    );
    if (inserted.rows.length > 0) return "queued";
    const requeued = await tx.query(
      `UPDATE github_deliveries SET state = 'queued', attempts = 0, not_before = $2, last_error = NULL,
         lease_owner = NULL, lease_expires_at = NULL, finished_at = NULL
       WHERE id = $1 AND state = 'failed' RETURNING id`,
      [delivery.id, now],
    );
    return requeued.rows.length > 0 ? "requeued" : "duplicate";
  });
}

export interface Claim {
  delivery: Delivery;
  holder: string;
}

/** Ready: queued and due, or running under a lease that has expired (its instance died). */
const READY = (alias: string) =>
  `((${alias}.state = 'queued' AND ${alias}.not_before <= $1) OR (${alias}.state = 'running' AND ${alias}.lease_expires_at <= $1))`;

/**
 * Claims the oldest ready delivery whose key is free, or null. Each attempt is its own short
 * transaction holding at most one key row, so two claimers can wait on each other's key but never
 * deadlock.
 */
export async function claimDelivery(
  store: Store,
  holder: string,
  options: QueueOptions = {},
): Promise<Claim | null> {
  const clock = options.clock ?? (() => new Date());
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
  const busyKeys: string[] = [];
  for (;;) {
    const now = clock();
    const outcome = await store.transaction(async (tx): Promise<Claim | "none" | string> => {
      const candidate = await tx.query<{ id: string; serial_key: string }>(
        `SELECT d.id, d.serial_key FROM github_deliveries d
         WHERE ${READY("d")}
           AND NOT (d.serial_key = ANY($2::text[]))
           AND NOT EXISTS (SELECT 1 FROM github_delivery_keys k WHERE k.serial_key = d.serial_key AND k.expires_at > $1)
           AND NOT EXISTS (SELECT 1 FROM github_deliveries e WHERE e.serial_key = d.serial_key AND e.id <> d.id
                 AND ${READY("e")} AND (e.received_at, e.id) < (d.received_at, d.id))
         ORDER BY d.received_at, d.id
         LIMIT 1
         FOR UPDATE OF d SKIP LOCKED`,
        [now, busyKeys],
      );
      const row = candidate.rows[0];
      if (!row) return "none";
      const expires = new Date(now.getTime() + leaseMs);
      const key = await tx.query(
        `INSERT INTO github_delivery_keys (serial_key, holder, expires_at) VALUES ($1, $2, $3)
         ON CONFLICT (serial_key) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
         WHERE github_delivery_keys.expires_at <= $4
         RETURNING holder`,
        [row.serial_key, holder, expires, now],
      );
      if (key.rows.length === 0) return row.serial_key;
      const claimed = await tx.query<DeliveryRow>(
        `UPDATE github_deliveries SET state = 'running', attempts = attempts + 1, lease_owner = $2,
           lease_expires_at = $3
         WHERE id = $1 RETURNING ${COLUMNS}`,
        [row.id, holder, expires],
      );
      return { delivery: toDelivery(claimed.rows[0]!), holder };
    });
    if (outcome === "none") return null;
    if (typeof outcome === "string") {
      busyKeys.push(outcome);
      continue;
    }
    return outcome;
  }
}

async function release(tx: SqlExecutor, claim: Claim): Promise<void> {
  await tx.query("DELETE FROM github_delivery_keys WHERE serial_key = $1 AND holder = $2", [
    claim.delivery.serialKey,
    claim.holder,
  ]);
}

/** Marks a claimed delivery done and frees its key (a no-op when the lease was lost meanwhile). */
export async function completeDelivery(
  store: Store,
  claim: Claim,
  result: string | null,
  now: Date,
): Promise<void> {
  await store.transaction(async (tx) => {
    await tx.query(
      `UPDATE github_deliveries SET state = 'done', result = $3, finished_at = $4, lease_owner = NULL,
         lease_expires_at = NULL
       WHERE id = $1 AND lease_owner = $2`,
      [claim.delivery.id, claim.holder, result?.slice(0, 2000) ?? null, now],
    );
    await release(tx, claim);
  });
}

/** Records a failed attempt: queued again after the backoff, or failed for good after maxAttempts. */
export async function failDelivery(
  store: Store,
  claim: Claim,
  error: string,
  now: Date,
  options: QueueOptions = {},
): Promise<"retry" | "failed"> {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  const backoff = options.backoffMs ?? defaultBackoffMs;
  const attempts = claim.delivery.attempts;
  const final = attempts >= maxAttempts;
  await store.transaction(async (tx) => {
    await tx.query(
      `UPDATE github_deliveries SET state = $3, last_error = $4, not_before = $5, lease_owner = NULL,
         lease_expires_at = NULL, finished_at = $6
       WHERE id = $1 AND lease_owner = $2`,
      [
        claim.delivery.id,
        claim.holder,
        final ? "failed" : "queued",
        error.slice(0, 2000),
        new Date(now.getTime() + (final ? 0 : backoff(attempts))),
        final ? now : null,
      ],
    );
    await release(tx, claim);
  });
  return final ? "failed" : "retry";
}

/** What the operator lists: deliveries in one state, newest first. */
export async function listDeliveries(store: Store, state: DeliveryState, limit = 100): Promise<Delivery[]> {
  const rows = await store.query<DeliveryRow>(
    `SELECT ${COLUMNS} FROM github_deliveries WHERE state = $1 ORDER BY received_at DESC, id DESC LIMIT $2`,
    [state, limit],
  );
  return rows.rows.map(toDelivery);
}

/**
 * When the next retry falls due, or null when none waits. A delivery due now but blocked by a key
 * another instance holds is not waited for: that instance runs it when it is done with the key.
 */
export async function nextRetryAt(store: Store, now: Date): Promise<Date | null> {
  const rows = await store.query<{ due: Date | string | null }>(
    "SELECT min(not_before) AS due FROM github_deliveries WHERE state = 'queued' AND not_before > $1",
    [now],
  );
  const due = rows.rows[0]?.due;
  return due ? new Date(due) : null;
}

/**
 * Done deliveries are kept long enough to recognise a redelivery (GitHub offers redelivery for
 * three days), then deleted; failed ones stay until the operator acts.
 */
export async function pruneDeliveries(store: Store, olderThan: Date): Promise<number> {
  const result = await store.query(
    "DELETE FROM github_deliveries WHERE state = 'done' AND finished_at < $1",
    [olderThan],
  );
  return result.rowCount;
}

export interface DrainOptions extends QueueOptions {
  /** Stop claiming at this moment (the function's maxDuration minus a margin). */
  deadline: Date;
  sleep?: (ms: number) => Promise<void>;
  /** Called once when a delivery ends failed for good (best effort: its errors are only logged). */
  onFailed?: (delivery: Delivery, error: string) => Promise<void>;
  log?: (line: string) => void;
}

export interface DrainSummary {
  done: string[];
  retried: string[];
  failed: string[];
}

/** A delivery's work: returns a short result to keep on the row, or throws to be retried. */
export type DeliveryProcessor = (delivery: Delivery) => Promise<string | null>;

export function newHolderId(): string {
  return `drain_${randomBytes(9).toString("base64url")}`;
}

/**
 * Runs ready deliveries until none is left or the deadline is near. A retry that falls due before
 * the deadline is waited for, so a brief GitHub error heals within the same invocation.
 */
export async function drainDeliveries(
  store: Store,
  process: DeliveryProcessor,
  options: DrainOptions,
): Promise<DrainSummary> {
  const clock = options.clock ?? (() => new Date());
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const holder = newHolderId();
  const summary: DrainSummary = { done: [], retried: [], failed: [] };
  while (clock() < options.deadline) {
    const claim = await claimDelivery(store, holder, options);
    if (!claim) {
      const due = await nextRetryAt(store, clock());
      if (!due || due >= options.deadline) break;
      await sleep(Math.max(50, due.getTime() - clock().getTime()));
      continue;
    }
    let result: string | null;
    try {
      result = await process(claim.delivery);
    } catch (error) {
      const message = describeError(error);
      const outcome = await failDelivery(store, claim, message, clock(), options);
      options.log?.(
        `delivery ${claim.delivery.id} (${claim.delivery.event}) attempt ${claim.delivery.attempts}: ${message}`,
      );
      if (outcome === "failed") {
        summary.failed.push(claim.delivery.id);
        await options.onFailed?.(claim.delivery, message).catch((e: unknown) => {
          options.log?.(`delivery ${claim.delivery.id}: reporting the failure failed: ${describeError(e)}`);
        });
      } else summary.retried.push(claim.delivery.id);
      continue;
    }
    await completeDelivery(store, claim, result, clock());
    summary.done.push(claim.delivery.id);
  }
  return summary;
}

export function describeError(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0)
    return error.errors.map(describeError).join("; ");
  if (error instanceof Error) {
    const status = (error as { status?: unknown }).status;
    return `${typeof status === "number" ? `HTTP ${status}: ` : ""}${error.message}`;
  }
  return String(error);
}
