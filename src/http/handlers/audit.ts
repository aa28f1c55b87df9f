import { SvcError } from "../../errors.ts";
import { readQuery } from "../body.ts";
import { accountsOf, type Handler } from "../context.ts";
import { guardRequest } from "../guard.ts";
import { sendJson } from "../respond.ts";
import { parseLimit } from "./accounts.ts";

const FILTERS = [
  "action",
  "actorAccountId",
  "targetType",
  "targetId",
  "since",
  "until",
  "limit",
  "cursor",
] as const;

function isoTime(name: string, value: string): string {
  const time = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(value) || Number.isNaN(time)) {
    throw new SvcError("invalid_request", `${name} must be an ISO 8601 date-time`, {
      details: { parameter: name },
    });
  }
  return new Date(time).toISOString();
}

/** audit_events (admin): newest first, filters by exact match, opaque cursor paging. */
export const auditEvents: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  const query = readQuery(route.url, FILTERS);
  for (const name of ["action", "actorAccountId", "targetType", "targetId", "cursor"] as const) {
    const value = query[name];
    if (value !== undefined && !/^[A-Za-z0-9_.:=-]{1,200}$/.test(value)) {
      throw new SvcError("invalid_request", `${name} has characters outside [A-Za-z0-9_.:=-]`, {
        details: { parameter: name },
      });
    }
  }
  const page = await accountsOf(app).listAuditEvents({
    ...(query.action ? { action: query.action } : {}),
    ...(query.actorAccountId ? { actorAccountId: query.actorAccountId } : {}),
    ...(query.targetType ? { targetType: query.targetType } : {}),
    ...(query.targetId ? { targetId: query.targetId } : {}),
    ...(query.since ? { since: isoTime("since", query.since) } : {}),
    ...(query.until ? { until: isoTime("until", query.until) } : {}),
    ...(query.limit ? { limit: parseLimit(query.limit, 200) } : {}),
    ...(query.cursor ? { cursor: query.cursor } : {}),
  });
  sendJson(res, 200, page);
};
