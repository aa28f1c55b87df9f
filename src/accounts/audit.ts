import { isIP } from "node:net";
import { SvcError } from "../errors.ts";
import type { SqlExecutor, Store } from "../store/store.ts";
import { countHit, type RateLimitRule, SUMMARISED_BUCKET_PREFIX } from "./rate-limit.ts";
import { newId, type RandomBytes } from "./secrets.ts";

/**
 * Stable audit actions (snake_case, <target>.<verb>). Later issues append theirs (upload.created,
 * validation.completed, moderation.decided, catalog.published, ...) in the same shape.
 */
export const AUDIT_ACTIONS = {
  accountCreated: "account.created",
  accountSignupDuplicate: "account.signup_duplicate",
  accountEmailVerified: "account.email_verified",
  accountRolesUpdated: "account.roles_updated",
  magicLinkRequested: "magic_link.requested",
  magicLinkUnmatched: "magic_link.request_unmatched",
  sessionCreated: "session.created",
  sessionEnded: "session.ended",
  apiKeyCreated: "api_key.created",
  apiKeyRevoked: "api_key.revoked",
  requestRefused: "request.refused",
  requestRefusalsSuppressed: "request.refusals_suppressed",
  trustedPublishingExchanged: "trusted_publishing.exchanged",
  trustedPublishingUploaded: "trusted_publishing.uploaded",
  accountUploadsSuspended: "account.uploads_suspended",
  accountUploadsReinstated: "account.uploads_reinstated",
} as const;

export interface AuditEvent {
  id: string;
  actorAccountId: string | null;
  action: string;
  targetType: string;
  targetId: string;
  createdAt: string;
  metadata: Record<string, unknown>;
}

export interface AuditInput {
  actorAccountId: string | null;
  action: string;
  targetType: string;
  targetId: string;
  metadata?: Record<string, unknown>;
}

const ACTION_PATTERN = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;

/** Appends one event. Pass the transaction executor so the event commits with the change it records. */
export async function appendAuditEvent(
  db: SqlExecutor,
  input: AuditInput,
  deps: { now: Date; random: RandomBytes },
): Promise<AuditEvent> {
  if (!ACTION_PATTERN.test(input.action)) throw new Error(`audit action ${input.action} is not snake_case`);
  const event: AuditEvent = {
    id: newId("evt", deps.random),
    actorAccountId: input.actorAccountId,
    action: input.action,
    targetType: input.targetType,
    targetId: input.targetId,
    createdAt: deps.now.toISOString(),
    metadata: input.metadata ?? {},
  };
  await db.query(
    `INSERT INTO audit_events (id, actor_account_id, action, target_type, target_id, created_at, metadata)
     VALUES ($1, $2, $3, $4, $5, $6::timestamptz, $7::jsonb)`,
    [
      event.id,
      event.actorAccountId,
      event.action,
      event.targetType,
      event.targetId,
      event.createdAt,
      JSON.stringify(event.metadata),
    ],
  );
  return event;
}

export interface AuditFilter {
  action?: string;
  actorAccountId?: string;
  targetType?: string;
  targetId?: string;
  /** ISO timestamps, inclusive since, exclusive until. */
  since?: string;
  until?: string;
  limit?: number;
  cursor?: string;
}

export interface AuditPage {
  events: AuditEvent[];
  nextCursor: string | null;
}

export const AUDIT_PAGE_MAX = 200;

function decodeCursor(cursor: string): string {
  const text = Buffer.from(cursor, "base64url").toString("utf8");
  const m = /^seq:(\d{1,18})$/.exec(text);
  if (!m)
    throw new SvcError("invalid_request", "cursor is not one this server issued", { details: { cursor } });
  return m[1]!;
}

interface AuditRow {
  seq_text: string;
  id: string;
  actor_account_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  created_at: Date;
  metadata: Record<string, unknown>;
}

/** Newest first; nextCursor continues after the last event of this page (stable under appends). */
export async function listAuditEvents(db: SqlExecutor, filter: AuditFilter): Promise<AuditPage> {
  const limit = Math.min(Math.max(filter.limit ?? 50, 1), AUDIT_PAGE_MAX);
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (clause: string, value: unknown) => {
    params.push(value);
    where.push(clause.replace("?", `$${params.length}`));
  };
  if (filter.action) add("action = ?", filter.action);
  if (filter.actorAccountId) add("actor_account_id = ?", filter.actorAccountId);
  if (filter.targetType) add("target_type = ?", filter.targetType);
  if (filter.targetId) add("target_id = ?", filter.targetId);
  if (filter.since) add("created_at >= ?::timestamptz", filter.since);
  if (filter.until) add("created_at < ?::timestamptz", filter.until);
  if (filter.cursor) add("seq < ?::bigint", decodeCursor(filter.cursor));
  params.push(limit + 1);
  const rows = (
    await db.query<AuditRow>(
      `SELECT seq::text AS seq_text, id, actor_account_id, action, target_type, target_id, created_at, metadata
       FROM audit_events ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
       ORDER BY audit_events.seq DESC LIMIT $${params.length}`,
      params,
    )
  ).rows;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    events: page.map((row) => ({
      id: row.id,
      actorAccountId: row.actor_account_id,
      action: row.action,
      targetType: row.target_type,
      targetId: row.target_id,
      createdAt: new Date(row.created_at).toISOString(),
      metadata: row.metadata,
    })),
    nextCursor:
      rows.length > limit && last ? Buffer.from(`seq:${last.seq_text}`).toString("base64url") : null,
  };
}

// ---- refused requests ---------------------------------------------------------------------------

/**
 * How many refusals reach the log one by one in a window; beyond that they are only counted, and
 * one request.refusals_suppressed event per error code and window carries the count once the
 * window has closed. Per client (an IPv4 address or an IPv6 /64, the smallest block one party
 * usually holds) and code, and per code over all clients, so neither one address nor many can
 * grow the log without bound: at most perCode.limit events plus one summary per code and window.
 */
export const REFUSAL_AUDIT_BUDGET = {
  perClient: { limit: 20, windowSeconds: 600 },
  perCode: { limit: 200, windowSeconds: 600 },
} as const satisfies Record<string, RateLimitRule>;

const CLIENT_BUCKET = `${SUMMARISED_BUCKET_PREFIX}client`;
const CODE_BUCKET = `${SUMMARISED_BUCKET_PREFIX}code`;
/** Closed windows summarised per sweep; the rest wait for the next one. */
const SWEEP_ROWS = 2000;
/** Clients named in one summary (largest counts first); the summary still counts all of them. */
const SUMMARY_CLIENTS = 20;

export interface RefusalInput {
  /** The error code the request was refused with (csrf_failed, payload_too_large, ...). */
  code: string;
  status: number;
  method: string;
  /** The endpoint id from the endpoint table. */
  endpointId: string;
  /** The client address as the server resolved it (trusted proxies applied). */
  ip: string;
  /** The signed-in caller, when the refusal came after authentication (a CSRF failure). */
  actorAccountId: string | null;
  /** What the refused request claimed to be, never a secret (a trusted-publishing token's claims). */
  metadata?: Record<string, unknown>;
}

/** The part of an address one party usually controls: IPv4 as is, IPv6 cut to its /64. */
export function refusalClientKey(ip: string): string {
  const address = ip.split("%")[0]!;
  if (isIP(address) !== 6) return address;
  const [head = "", tail] = address.split("::");
  const groups = (part: string) =>
    part === ""
      ? []
      : part
          .split(":")
          .flatMap((g) => (g.includes(".") ? ["0", "0"] : [g.toLowerCase().replace(/^0+(?=.)/, "")]));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const full = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${full.slice(0, 4).join(":")}::/64`;
}

/**
 * Records one refused request: an audit event while the client's and the code's budgets last,
 * otherwise only a count in the store's rate-limit buckets (summarised later). Never stores the
 * body, the message or any header but the resolved address.
 */
export async function recordRefusal(
  store: Store,
  input: RefusalInput,
  deps: { now: Date; random: RandomBytes },
): Promise<"logged" | "counted"> {
  const { perClient, perCode } = REFUSAL_AUDIT_BUDGET;
  const client = refusalClientKey(input.ip);
  const own = await countHit(store, CLIENT_BUCKET, `${input.code}|${client}`, perClient, deps.now);
  if (own.hits > perClient.limit) return "counted";
  // Counted against the code's budget only while the client's lasts, so every refusal is counted once.
  const overall = await countHit(store, CODE_BUCKET, input.code, perCode, deps.now);
  if (overall.hits > perCode.limit) return "counted";
  await summariseRefusals(store, deps);
  await appendAuditEvent(
    store,
    {
      actorAccountId: input.actorAccountId,
      action: AUDIT_ACTIONS.requestRefused,
      targetType: "endpoint",
      targetId: input.endpointId,
      metadata: {
        ...input.metadata,
        code: input.code,
        status: input.status,
        method: input.method,
        ip: input.ip,
        ...(own.hits === perClient.limit ? { budgetSpent: true } : {}),
      },
    },
    deps,
  );
  return "logged";
}

interface ClosedWindow {
  bucket: string;
  subject: string;
  window_start: Date;
  hits: number;
  expires_at: Date;
}

/**
 * Turns closed refusal windows into audit events: one request.refusals_suppressed per error code
 * and window whose refusals went over a budget, with the number not logged one by one and the
 * clients that sent most. The windows are deleted in the same transaction, so each is summarised
 * exactly once even when several instances sweep at the same moment. Returns the events written.
 */
export async function summariseRefusals(
  store: Store,
  deps: { now: Date; random: RandomBytes },
): Promise<number> {
  const { perClient, perCode } = REFUSAL_AUDIT_BUDGET;
  return store.transaction(async (tx) => {
    const closed = (
      await tx.query<ClosedWindow>(
        `DELETE FROM rate_limit_buckets WHERE (bucket, subject, window_start) IN (
           SELECT bucket, subject, window_start FROM rate_limit_buckets
           WHERE bucket IN ($1, $2) AND expires_at <= $3::timestamptz
           ORDER BY expires_at LIMIT $4)
         RETURNING bucket, subject, window_start, hits, expires_at`,
        [CLIENT_BUCKET, CODE_BUCKET, deps.now.toISOString(), SWEEP_ROWS],
      )
    ).rows;
    const groups = new Map<
      string,
      { code: string; start: Date; end: Date; suppressed: number; clients: Map<string, number> }
    >();
    for (const row of closed) {
      const byClient = row.bucket === CLIENT_BUCKET;
      const over = Number(row.hits) - (byClient ? perClient.limit : perCode.limit);
      if (over <= 0) continue;
      const split = row.subject.indexOf("|");
      const code = byClient ? row.subject.slice(0, split) : row.subject;
      const start = new Date(row.window_start);
      const key = `${code} ${start.toISOString()}`;
      let group = groups.get(key);
      if (!group) {
        group = { code, start, end: new Date(row.expires_at), suppressed: 0, clients: new Map() };
        groups.set(key, group);
      }
      group.suppressed += over;
      if (byClient) group.clients.set(row.subject.slice(split + 1), over);
    }
    for (const group of groups.values()) {
      const top = [...group.clients].sort((a, b) => b[1] - a[1]).slice(0, SUMMARY_CLIENTS);
      await appendAuditEvent(
        tx,
        {
          actorAccountId: null,
          action: AUDIT_ACTIONS.requestRefusalsSuppressed,
          targetType: "error_code",
          targetId: group.code,
          metadata: {
            code: group.code,
            windowStart: group.start.toISOString(),
            windowEnd: group.end.toISOString(),
            suppressed: group.suppressed,
            clientsOverBudget: group.clients.size,
            topClients: top.map(([client, suppressed]) => ({ client, suppressed })),
            budget: {
              perClient: perClient.limit,
              perCode: perCode.limit,
              windowSeconds: perCode.windowSeconds,
            },
          },
        },
        deps,
      );
    }
    return groups.size;
  });
}
