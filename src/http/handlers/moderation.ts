import { createReadStream } from "node:fs";
import { pipeline } from "node:stream/promises";
import { SvcError } from "../../errors.ts";
import { decodeCursor } from "../../submissions/backend.ts";
import { type Decision, QUEUE_STATES } from "../../submissions/service.ts";
import type { SubmissionState } from "../../workflow/machine.ts";
import { readJsonBody } from "../body.ts";
import type { Handler } from "../context.ts";
import { guardRequest, requireCaller } from "../guard.ts";
import { sendJson } from "../respond.ts";
import { submissionReadsOf, submissionsOf } from "../submission-backend.ts";

/** Without ?state: what waits for a moderator and what they may still act on (every state on request). */
const DEFAULT_QUEUE: SubmissionState[] = [
  "pending_review",
  "validation_failed",
  "approved",
  "hidden",
  "superseded",
];

/** moderation_queue: ?state=a,b (or all)&limit=50&cursor=...; oldest first, with positions and ages. */
export const moderationQueue: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  const params = route.url.searchParams;
  const asked = params.get("state");
  const states = (
    asked === "all" ? QUEUE_STATES : (asked?.split(",").filter(Boolean) ?? DEFAULT_QUEUE)
  ) as SubmissionState[];
  const unknown = states.filter((s) => !QUEUE_STATES.includes(s));
  if (unknown.length > 0)
    throw new SvcError("invalid_request", `unknown state(s): ${unknown.join(", ")}`, {
      details: { allowed: QUEUE_STATES },
    });
  const limit = Number(params.get("limit") ?? "50");
  if (!Number.isInteger(limit) || limit < 1 || limit > 100)
    throw new SvcError("invalid_request", "limit must be 1-100");
  const cursor = params.get("cursor");
  const after = cursor ? decodeCursor(cursor) : undefined;
  if (after === null) throw new SvcError("invalid_request", "cursor is not valid");
  sendJson(
    res,
    200,
    await submissionReadsOf(app).moderationQueue({ states, limit, ...(after ? { after } : {}) }),
  );
};

/** moderation_decision: { decision, notes }; hide and unhide also change the public catalog. */
export const moderationDecision: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const body = await readJsonBody<{ decision: Decision; notes: string }>(req, res, {
    decision: {
      type: "string",
      required: true,
      maxLength: 32,
      oneOf: ["approve", "reject", "request_changes", "hide", "unhide"],
    },
    notes: { type: "string", required: true, minLength: 1, maxLength: 10_000, singleLine: false },
  });
  const backend = submissionsOf(app);
  sendJson(
    res,
    200,
    await backend.decide(caller, route.params.submissionId ?? "", body.decision, body.notes),
  );
};

/**
 * moderation_package: the staged package, for a moderator to inspect before deciding. Always an
 * attachment (never shown inline, never served from site/), audited before the first byte.
 */
export const moderationPackage: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const staged = await submissionReadsOf(app).stagedPackage(caller, route.params.submissionId ?? "");
  const ascii = staged.fileName.replace(/[^A-Za-z0-9._-]/g, "_");
  res.writeHead(200, {
    "content-type": "application/zip",
    "content-length": staged.sizeBytes,
    "content-disposition": `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(staged.fileName)}`,
    "cache-control": "private, no-store",
    "x-content-type-options": "nosniff",
    "x-svc-sha256": staged.sha256,
  });
  if (req.method === "HEAD") {
    res.end();
    return;
  }
  try {
    await pipeline(createReadStream(staged.path), res);
  } catch (error) {
    // The headers are out: a client that hung up, or a file gone mid-read, can only end the connection.
    if (!res.destroyed) res.destroy();
    app.log(`moderation_package ${route.params.submissionId}: ${(error as Error).message}`);
  }
};

/** publish_catalog: publishes every approved submission, oldest first, and reports each one. */
export const publishCatalog: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  sendJson(res, 200, await submissionsOf(app).publishApproved(caller));
};
