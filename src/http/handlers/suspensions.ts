import { liftUploadSuspension, suspendUploads } from "../../accounts/upload-suspensions.ts";
import { readJsonBody } from "../body.ts";
import { accountsOf, type Handler, storeOf } from "../context.ts";
import { guardRequest, requireCaller } from "../guard.ts";
import { sendJson } from "../respond.ts";

/** suspend_account_uploads (moderator or admin, CSRF): { reason, submissionId? } -> 201 { suspension }. */
export const suspendAccountUploads: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const body = await readJsonBody<{ reason: string; submissionId?: string }>(req, res, {
    reason: { type: "string", required: true, minLength: 1, maxLength: 1000, singleLine: true },
    submissionId: { type: "string", maxLength: 44, pattern: /^sub_[0-9a-z]{16,40}$/ },
  });
  const suspension = await suspendUploads(
    storeOf(app),
    {
      accountId: route.params.accountId ?? "",
      actor: { accountId: caller.account.id, roles: caller.roles },
      reason: body.reason,
      ...(body.submissionId ? { submissionId: body.submissionId } : {}),
    },
    { now: app.now(), random: accountsOf(app).dependencies.random },
  );
  sendJson(res, 201, { suspension });
};

/** lift_account_upload_suspension (admin, CSRF): { reason } -> 200 { suspension } with liftedAt. */
export const liftAccountUploadSuspension: Handler = async (req, res, route, app) => {
  const caller = requireCaller(await guardRequest(req, res, route, app));
  const body = await readJsonBody<{ reason: string }>(req, res, {
    reason: { type: "string", required: true, minLength: 1, maxLength: 1000, singleLine: true },
  });
  const suspension = await liftUploadSuspension(
    storeOf(app),
    { accountId: route.params.accountId ?? "", actorAccountId: caller.account.id, reason: body.reason },
    { now: app.now(), random: accountsOf(app).dependencies.random },
  );
  sendJson(res, 200, { suspension });
};
