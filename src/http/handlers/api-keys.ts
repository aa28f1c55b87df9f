import { readJsonBody } from "../body.ts";
import { accountsOf, type Handler } from "../context.ts";
import { guardRequest, requireCaller } from "../guard.ts";
import { sendJson } from "../respond.ts";
import { apiKeyView } from "./views.ts";

/** create_api_key (CSRF): { name? } -> 201 with the plaintext key, shown this once. */
export const createApiKey: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const body = await readJsonBody<{ name?: string }>(req, res, {
    name: { type: "string", maxLength: 100 },
  });
  const created = await accountsOf(app).createApiKey(caller.account.id, body.name ?? "API key");
  sendJson(res, 201, {
    secret: created.apiKey,
    apiKey: apiKeyView(created.metadata),
    message: "Store this key now: it is shown only once. Send it as 'Authorization: Bearer <key>'.",
  });
};

/** list_api_keys: metadata only, never a secret or its hash. */
export const listApiKeys: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const keys = await accountsOf(app).listApiKeys(caller.account.id);
  sendJson(res, 200, { apiKeys: keys.map(apiKeyView) });
};

/** revoke_api_key (CSRF): the key stops working on the download lane at once. */
export const revokeApiKey: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const key = await accountsOf(app).revokeApiKey(caller.account.id, route.params.apiKeyId ?? "");
  sendJson(res, 200, { apiKey: apiKeyView(key) });
};
