import { SvcError } from "../errors.ts";
import type { SqlExecutor } from "../store/store.ts";
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
