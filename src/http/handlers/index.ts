import type { Handler } from "../context.ts";
import { createAccount, listAccounts, updateAccountRoles, verifyAccount } from "./accounts.ts";
import { createApiKey, listApiKeys, revokeApiKey } from "./api-keys.ts";
import { auditEvents } from "./audit.ts";
import { confirmMagicLink, currentSession, deleteSession, requestMagicLink } from "./auth.ts";
import { backendHealth } from "./backend-health.ts";
import { apiKeyModDownload } from "./download.ts";
import { moderationDecision, moderationQueue, publishCatalog } from "./moderation.ts";
import {
  addCollaborator,
  addTrustedPublisher,
  modOwnership,
  removeCollaborator,
  removeTrustedPublisher,
  setSourceRepository,
  transferMod,
} from "./ownership.ts";
import { trustedPublishingExchange } from "./trusted-publishing.ts";
import { cancelUpload, createUpload, listUploads, uploadStatus } from "./uploads.ts";

/**
 * One handler per endpoint id of the contract table. The local server and every Vercel function
 * dispatch through this map; a test keeps it in step with each endpoint's status.
 */
export const HANDLERS: Readonly<Record<string, Handler>> = {
  backend_health: backendHealth,
  create_account: createAccount,
  verify_account: verifyAccount,
  request_magic_link: requestMagicLink,
  confirm_magic_link: confirmMagicLink,
  list_accounts: listAccounts,
  update_account_roles: updateAccountRoles,
  current_session: currentSession,
  delete_session: deleteSession,
  create_api_key: createApiKey,
  list_api_keys: listApiKeys,
  revoke_api_key: revokeApiKey,
  api_key_mod_download: apiKeyModDownload,
  audit_events: auditEvents,
  trusted_publishing_exchange: trustedPublishingExchange,
  create_upload: createUpload,
  list_uploads: listUploads,
  upload_status: uploadStatus,
  cancel_upload: cancelUpload,
  moderation_queue: moderationQueue,
  moderation_decision: moderationDecision,
  publish_catalog: publishCatalog,
  mod_ownership: modOwnership,
  add_collaborator: addCollaborator,
  remove_collaborator: removeCollaborator,
  add_trusted_publisher: addTrustedPublisher,
  remove_trusted_publisher: removeTrustedPublisher,
  set_source_repository: setSourceRepository,
  transfer_mod: transferMod,
};
