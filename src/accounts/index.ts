export type { AccountDependencies } from "./account-dependencies.ts";
export type { Account } from "./account-record.ts";
export { normalizeEmail } from "./account-record.ts";
export type { AccountServiceOptions } from "./account-service.ts";
export { AccountService, createAccountDependencies } from "./account-service.ts";
export type { ApiKeyMetadata } from "./api-keys.ts";
export { API_KEY_PREFIX, generateApiKey, isWellFormedApiKey } from "./api-key-format.ts";
export type { AuditEvent, AuditFilter, AuditInput, AuditPage } from "./audit.ts";
export { AUDIT_ACTIONS, appendAuditEvent, listAuditEvents } from "./audit.ts";
export type { EmailDelivery, EmailMessage, EmailType } from "./email.ts";
export {
  createDevDelivery,
  createWebhookDelivery,
  EMAIL_SIGNATURE_HEADER,
  EMAIL_WEBHOOK_SCHEMA,
  EmailDeliveryError,
  signWebhookBody,
} from "./email.ts";
export { consumeRateLimit, pruneRateLimits } from "./rate-limit.ts";
export { effectiveRoles, hasAnyRole, isRole, PRIVILEGED_ROLES, ROLES, SELF_SERVICE_ROLES } from "./roles.ts";
export type { RandomBytes } from "./secrets.ts";
export { constantTimeEqual, csrfTokenFor, defaultRandomBytes, hashSecret, newId } from "./secrets.ts";
export type { SessionInfo } from "./sessions.ts";
