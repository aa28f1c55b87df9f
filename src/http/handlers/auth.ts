import { EMAIL_PATTERN, readJsonBody } from "../body.ts";
import { accountsOf, type Handler } from "../context.ts";
import { clearSessionCookie, readSessionCookie, setSessionCookie } from "../cookies.ts";
import { guardRequest, requireCaller } from "../guard.ts";
import { sendJson } from "../respond.ts";
import { sessionView } from "./views.ts";

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{20,128}$/;

/** request_magic_link: always 202 with the same body; the mail goes out only for verified accounts. */
export const requestMagicLink: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  accountsOf(app).requireEmailDelivery();
  const body = await readJsonBody<{ email: string }>(req, res, {
    email: { type: "string", required: true, maxLength: 254, pattern: EMAIL_PATTERN },
  });
  const result = await accountsOf(app).requestMagicLink(body.email);
  sendJson(res, 202, {
    status: "accepted",
    message: "If this address belongs to a verified account, a sign-in link is on its way.",
    ...result,
  });
};

/** confirm_magic_link: a fresh session (cookie) and its CSRF token for a one-time token. */
export const confirmMagicLink: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  const body = await readJsonBody<{ token: string }>(req, res, {
    token: { type: "string", required: true, maxLength: 128, pattern: TOKEN_PATTERN },
  });
  const { sessionToken, session } = await accountsOf(app).confirmMagicLink(
    body.token,
    readSessionCookie(req) ?? undefined,
  );
  setSessionCookie(req, res, app, sessionToken, accountsOf(app).sessionTtlSeconds);
  sendJson(res, 200, { session: sessionView(session) });
};

/** current_session: account id, roles, display name and CSRF token of the signed-in caller. */
export const currentSession: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  sendJson(res, 200, { session: sessionView(caller.session!.info) });
};

/** delete_session (CSRF): ends the session server-side and clears the cookie. */
export const deleteSession: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  await accountsOf(app).endSession(caller.session!.token, caller.account.id);
  clearSessionCookie(req, res, app);
  res.writeHead(204, { "cache-control": "no-store" });
  res.end();
};
