import { isSvcError } from "../../errors.ts";
import { readJsonBody } from "../body.ts";
import { accountsOf, type Handler } from "../context.ts";
import { clientIpOf } from "../guard.ts";
import { sendJson } from "../respond.ts";
import { claimedRun, exchangeOidcToken } from "../trusted-publishing.ts";

/** Refusals that carry what the token claimed into the audit log; the others are audited as any route's. */
const EXCHANGE_REFUSALS = new Set([
  "oidc_token_invalid",
  "trusted_publisher_unknown",
  "trusted_publisher_unlinked",
  "account_suspended",
]);

/** trusted_publishing_exchange: { modId, token } -> 201 with a one-mod upload credential. */
export const trustedPublishingExchange: Handler = async (req, res, route, app) => {
  const body = await readJsonBody<{ modId: string; token: string }>(req, res, {
    modId: { type: "string", required: true, minLength: 2, maxLength: 64, singleLine: true },
    token: { type: "string", required: true, minLength: 1, maxLength: 16_384, singleLine: true },
  });
  try {
    const issued = await exchangeOidcToken(app, body);
    sendJson(res, 201, {
      credential: issued.credential,
      expiresAt: issued.expiresAt,
      modId: issued.modId,
      ownerAccountId: issued.ownerAccountId,
      trustedPublisher: issued.trustedPublisher,
      uploadUrl: "/api/v1/uploads",
    });
  } catch (error) {
    if (isSvcError(error) && EXCHANGE_REFUSALS.has(error.code)) {
      // Budgeted like every refusal (per client and code), so forged tokens cannot flood the log;
      // a failure to record never changes the answer.
      await accountsOf(app)
        .recordRefusal({
          code: error.code,
          status: error.status,
          method: req.method ?? "POST",
          endpointId: route.endpoint.id,
          ip: clientIpOf(req, app),
          actorAccountId: null,
          metadata: {
            modId: body.modId,
            claim: (error.details as { claim?: string } | undefined)?.claim ?? null,
            claimed: claimedRun(body.token),
          },
        })
        .catch((failure: Error) =>
          app.log(`refusal audit failed for ${route.endpoint.id}: ${failure.message}`),
        );
    }
    throw error;
  }
};
