import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { type ErrorCode, isSvcError, statusForCode } from "../errors.ts";
import type { AppContext } from "./context.ts";
import { callerOf, clientIpOf } from "./guard.ts";

/**
 * Refusals that say something about the client rather than about the portal's state: a missing or
 * foreign CSRF header, bodies that break the rules (CRLF or control characters, unknown fields,
 * malformed multipart, invalid JSON, a wrong content type, oversize, too slow), API keys and tokens
 * that do not verify, and missing roles; and the refusals an operator must be able to count: every
 * 409 (a conflict, an illegal transition, a version or artifact that exists, the last admin, an
 * unverified account) and every 429 (rate_limit_exceeded: who hits a limit, and how often). Each is
 * audited as request.refused within a budget (see recordRefusal), so a flood of them cannot grow the
 * log without bound. Everyday outcomes (not_found, unauthenticated) are not.
 */
export const AUDITED_REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "csrf_failed",
  "invalid_payload",
  "invalid_json",
  "invalid_request",
  "unsupported_media_type",
  "payload_too_large",
  "request_timeout",
  "invalid_api_key",
  "upload_credential_invalid",
  "token_invalid",
  "forbidden",
  "conflict",
  "illegal_transition",
  "artifact_exists",
  "version_exists",
  "last_admin",
  "account_not_verified",
  "rate_limit_exceeded",
]);

/**
 * Records a refused request of a routed endpoint. The audit never changes the answer: a failure to
 * record is logged and the refusal goes out as it would have.
 */
export async function auditRefusal(
  req: IncomingMessage,
  endpointId: string,
  error: unknown,
  app: AppContext,
): Promise<void> {
  if (!isSvcError(error) || !AUDITED_REFUSALS.has(error.code) || !app.accounts) return;
  try {
    await app.accounts.recordRefusal({
      code: error.code,
      status: error.status,
      method: req.method ?? "GET",
      endpointId,
      ip: clientIpOf(req, app),
      actorAccountId: callerOf(req)?.account.id ?? null,
    });
  } catch (failure) {
    app.log(`refusal audit failed for ${endpointId} ${error.code}: ${(failure as Error).message}`);
  }
}

/**
 * Records a refusal Node answered before any handler ran (headers too slow, unparsable HTTP). No
 * header was read, so the address is the socket peer's.
 */
export async function auditUnroutedRefusal(socket: Socket, code: ErrorCode, app: AppContext): Promise<void> {
  if (!app.accounts) return;
  const peer = socket.remoteAddress ?? "unknown";
  try {
    await app.accounts.recordRefusal({
      code,
      status: statusForCode(code),
      method: "",
      endpointId: "unrouted",
      ip: peer.startsWith("::ffff:") && peer.includes(".") ? peer.slice(7) : peer,
      actorAccountId: null,
    });
  } catch (failure) {
    app.log(`refusal audit failed for an unrouted ${code}: ${(failure as Error).message}`);
  }
}
