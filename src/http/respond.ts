import type { IncomingMessage, ServerResponse } from "node:http";
import { type ErrorCode, isSvcError, SvcError, statusForCode } from "../errors.ts";

/**
 * Sent with every response of the local server (vercel.json sends the same): no page may be framed
 * (clickjacking; a <meta> CSP cannot carry frame-ancestors, so it is a header), no type is sniffed,
 * no URL leaks to another site through Referer. The pages' own <meta> policy still applies beside it.
 * The static site's answers from memory carry them in their prebuilt header lists; every other
 * answer of the local server gets them before its handler runs (StaticSite.setResponseHeaders).
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-security-policy": "frame-ancestors 'none'",
  "x-frame-options": "DENY",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
});

/** Writes one JSON body. Small documents only: downloads stream through their own path. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(text),
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    ...headers,
  });
  res.end(text);
}

/** The one error body: { code, message, details? }, status derived from the code. */
export function sendError(res: ServerResponse, error: SvcError): void {
  const headers: Record<string, string> = {};
  if (error.code === "rate_limit_exceeded")
    headers["retry-after"] = String(Math.max(1, Math.ceil(error.retryAfterSeconds ?? 1)));
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, error.status, error.toBody(), headers);
}

export function sendErrorCode(
  res: ServerResponse,
  code: ErrorCode,
  message: string,
  details?: unknown,
): void {
  sendError(res, new SvcError(code, message, details === undefined ? {} : { details }));
}

/** Maps anything thrown by a handler to an error body; unexpected errors never leak their text. */
export function sendThrown(
  req: IncomingMessage,
  res: ServerResponse,
  error: unknown,
  log: (line: string) => void,
): void {
  if (isSvcError(error)) {
    sendError(res, error);
    return;
  }
  log(
    `internal error on ${req.method} ${req.url}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
  );
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJson(res, statusForCode("internal_error"), { code: "internal_error", message: "internal error" });
}
