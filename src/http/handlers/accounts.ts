import { ROLES, SELF_SERVICE_ROLES } from "../../accounts/roles.ts";
import type { Role } from "../../config/portal-config.ts";
import { SvcError } from "../../errors.ts";
import { EMAIL_PATTERN, readJsonBody, readQuery } from "../body.ts";
import { accountsOf, type Handler } from "../context.ts";
import { guardRequest, requireCaller } from "../guard.ts";
import { sendJson } from "../respond.ts";
import { accountView } from "./views.ts";

const TOKEN_PATTERN = /^[A-Za-z0-9_-]{20,128}$/;

/** create_account: 202 with the same body whether or not the address already has an account. */
export const createAccount: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  // Fail closed before the body is even read: no delivery, no account.
  accountsOf(app).requireEmailDelivery();
  const body = await readJsonBody<{ email: string; displayName: string; role?: "player" | "modder" }>(
    req,
    res,
    {
      email: { type: "string", required: true, maxLength: 254, pattern: EMAIL_PATTERN },
      displayName: { type: "string", required: true, maxLength: 64 },
      role: { type: "string", maxLength: 16, oneOf: SELF_SERVICE_ROLES },
    },
  );
  const result = await accountsOf(app).createAccount({
    email: body.email,
    displayName: body.displayName,
    role: body.role ?? "player",
  });
  sendJson(res, 202, {
    ...result,
    message:
      result.status === "verified"
        ? "Account ready (developer auto-verify mode). Request a magic link to sign in."
        : "Check your email for the verification token.",
  });
};

/** verify_account: consumes the one-time verification token of this account. */
export const verifyAccount: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  const body = await readJsonBody<{ token: string }>(req, res, {
    token: { type: "string", required: true, maxLength: 128, pattern: TOKEN_PATTERN },
  });
  const account = await accountsOf(app).verifyEmail(route.params.accountId ?? "", body.token);
  sendJson(res, 200, { account: accountView(account) });
};

/** list_accounts (admin): ?limit=1..500&cursor=... */
export const listAccounts: Handler = async (req, res, route, app) => {
  await guardRequest(req, res, route, app);
  const query = readQuery(route.url, ["limit", "cursor"]);
  const limit = query.limit === undefined ? undefined : parseLimit(query.limit, 500);
  const page = await accountsOf(app).listAccounts({
    ...(limit === undefined ? {} : { limit }),
    ...(query.cursor ? { cursor: query.cursor } : {}),
  });
  sendJson(res, 200, { accounts: page.accounts.map(accountView), nextCursor: page.nextCursor });
};

/** update_account_roles (admin, CSRF): { roles: [...] } replaces the role set. */
export const updateAccountRoles: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const body = await readJsonBody<{ roles: Role[] }>(req, res, {
    roles: { type: "string[]", required: true, maxItems: ROLES.length, oneOf: ROLES },
  });
  const account = await accountsOf(app).updateRoles(
    caller.account.id,
    route.params.accountId ?? "",
    body.roles,
  );
  sendJson(res, 200, { account: accountView(account) });
};

export function parseLimit(value: string, max: number): number {
  const n = Number(value);
  if (!/^\d{1,4}$/.test(value) || n < 1 || n > max) {
    throw new SvcError("invalid_request", `limit must be an integer from 1 to ${max}`, {
      details: { parameter: "limit", max },
    });
  }
  return n;
}
