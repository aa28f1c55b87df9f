import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import { parseCookie, stringifySetCookie } from "cookie";
import type { AppContext } from "./context.ts";
import { isLoopback } from "./client-ip.ts";

export const SESSION_COOKIE = "svc_session";
export const CSRF_HEADER = "x-svc-csrf";

export function readSessionCookie(req: IncomingMessage): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  const value = parseCookie(header)[SESSION_COOKIE];
  return value ? value : null;
}

/**
 * Secure everywhere except plain HTTP to a loopback address (npm start on a laptop), where a
 * browser would otherwise drop the cookie.
 */
function secureCookie(req: IncomingMessage, app: AppContext): boolean {
  if (app.assumeHttps || (req.socket as TLSSocket).encrypted) return true;
  return !isLoopback(req.socket.remoteAddress);
}

function appendSetCookie(res: ServerResponse, value: string): void {
  const current = res.getHeader("set-cookie");
  const list = Array.isArray(current) ? current : current === undefined ? [] : [String(current)];
  res.setHeader("set-cookie", [...list, value]);
}

export function setSessionCookie(
  req: IncomingMessage,
  res: ServerResponse,
  app: AppContext,
  token: string,
  maxAgeSeconds: number,
): void {
  appendSetCookie(
    res,
    stringifySetCookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: "lax",
      path: "/",
      maxAge: maxAgeSeconds,
      secure: secureCookie(req, app),
    }),
  );
}

export function clearSessionCookie(req: IncomingMessage, res: ServerResponse, app: AppContext): void {
  appendSetCookie(
    res,
    stringifySetCookie(SESSION_COOKIE, "", {
      httpOnly: true,
      sameSite: "lax",
      path: "/",
      maxAge: 0,
      expires: new Date(0),
      secure: secureCookie(req, app),
    }),
  );
}
