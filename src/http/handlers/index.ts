import type { Handler } from "../context.ts";

/**
 * A handler whose module is imported on its first request. One Vercel function serves every
 * endpoint (api/router.js), so eager imports made each cold start load every route's code (the
 * upload, ownership and moderation modules and what they pull in) before answering the one route
 * it was asked for. Once loaded the handler is called directly: no await is added to a request.
 */
function onFirstUse(load: () => Promise<Handler>): Handler {
  let handler: Handler | undefined;
  return (req, res, route, app) => {
    if (handler) return handler(req, res, route, app);
    return load().then((loaded) => {
      handler = loaded;
      return loaded(req, res, route, app);
    });
  };
}

const accounts = () => import("./accounts.ts");
const apiKeys = () => import("./api-keys.ts");
const auth = () => import("./auth.ts");
const moderation = () => import("./moderation.ts");
const ownership = () => import("./ownership.ts");
const suspensions = () => import("./suspensions.ts");
const uploads = () => import("./uploads.ts");

/**
 * One handler per endpoint id of the contract table. The local server and the Vercel router
 * dispatch through this map; a test keeps it in step with each endpoint's status.
 */
export const HANDLERS: Readonly<Record<string, Handler>> = {
  backend_health: onFirstUse(async () => (await import("./backend-health.ts")).backendHealth),
  create_account: onFirstUse(async () => (await accounts()).createAccount),
  verify_account: onFirstUse(async () => (await accounts()).verifyAccount),
  request_magic_link: onFirstUse(async () => (await auth()).requestMagicLink),
  confirm_magic_link: onFirstUse(async () => (await auth()).confirmMagicLink),
  list_accounts: onFirstUse(async () => (await accounts()).listAccounts),
  update_account_roles: onFirstUse(async () => (await accounts()).updateAccountRoles),
  current_session: onFirstUse(async () => (await auth()).currentSession),
  delete_session: onFirstUse(async () => (await auth()).deleteSession),
  create_api_key: onFirstUse(async () => (await apiKeys()).createApiKey),
  list_api_keys: onFirstUse(async () => (await apiKeys()).listApiKeys),
  revoke_api_key: onFirstUse(async () => (await apiKeys()).revokeApiKey),
  api_key_mod_download: onFirstUse(async () => (await import("./download.ts")).apiKeyModDownload),
  audit_events: onFirstUse(async () => (await import("./audit.ts")).auditEvents),
  trusted_publishing_exchange: onFirstUse(
    async () => (await import("./trusted-publishing.ts")).trustedPublishingExchange,
  ),
  create_upload: onFirstUse(async () => (await uploads()).createUpload),
  list_uploads: onFirstUse(async () => (await uploads()).listUploads),
  upload_status: onFirstUse(async () => (await uploads()).uploadStatus),
  cancel_upload: onFirstUse(async () => (await uploads()).cancelUpload),
  moderation_queue: onFirstUse(async () => (await moderation()).moderationQueue),
  moderation_decision: onFirstUse(async () => (await moderation()).moderationDecision),
  publish_catalog: onFirstUse(async () => (await moderation()).publishCatalog),
  mod_ownership: onFirstUse(async () => (await ownership()).modOwnership),
  add_collaborator: onFirstUse(async () => (await ownership()).addCollaborator),
  remove_collaborator: onFirstUse(async () => (await ownership()).removeCollaborator),
  add_trusted_publisher: onFirstUse(async () => (await ownership()).addTrustedPublisher),
  remove_trusted_publisher: onFirstUse(async () => (await ownership()).removeTrustedPublisher),
  set_source_repository: onFirstUse(async () => (await ownership()).setSourceRepository),
  transfer_mod: onFirstUse(async () => (await ownership()).transferMod),
  moderation_package: onFirstUse(async () => (await moderation()).moderationPackage),
  suspend_account_uploads: onFirstUse(async () => (await suspensions()).suspendAccountUploads),
  lift_account_upload_suspension: onFirstUse(async () => (await suspensions()).liftAccountUploadSuspension),
};
