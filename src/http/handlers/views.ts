import type { Account } from "../../accounts/account-record.ts";
import type { ApiKeyMetadata } from "../../accounts/api-keys.ts";
import type { SessionInfo } from "../../accounts/sessions.ts";

/** The account resource (contract fields: id, email, displayName, roles, createdAt, verifiedAt). */
export function accountView(account: Account) {
  return {
    id: account.id,
    email: account.email,
    displayName: account.displayName,
    roles: account.roles,
    createdAt: account.createdAt,
    verifiedAt: account.verifiedAt,
  };
}

/** The session resource: account id, role set, display name and the CSRF token (contract). */
export function sessionView(session: SessionInfo) {
  return {
    accountId: session.account.id,
    email: session.account.email,
    displayName: session.account.displayName,
    roles: session.roles,
    csrfToken: session.csrfToken,
    createdAt: session.createdAt,
    expiresAt: session.expiresAt,
  };
}

export function apiKeyView(key: ApiKeyMetadata) {
  return { ...key };
}
