import type { RateLimitBucket, Role } from "../config/portal-config.ts";

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE";

export interface EndpointDefinition {
  id: string;
  method: HttpMethod;
  /** Contract path with {param} placeholders. */
  path: string;
  authRequired: boolean;
  roles: Role[];
  /**
   * implemented once a handler exists in src/http; a test keeps this flag and the handler table in
   * step, so the backend contract document never claims a route the code does not serve.
   */
  status: "planned" | "implemented";
  summary: string;
  contentType?: string;
  requiredFields?: string[];
  metadataSchema?: "svc.mod-release-submission.v1";
  allowedDecisions?: Array<"approve" | "reject" | "request_changes" | "hide" | "unhide">;
  allowedRoles?: Role[];
  /** Which rate-limit bucket the route draws from (contract "Errors"). */
  rateLimit?: { scope: "ip" | "account"; bucket: RateLimitBucket };
  /** Cookie-authenticated writes require the x-svc-csrf header. */
  csrf?: boolean;
  /** How the caller authenticates: a session cookie, or an API key on the download lane. */
  authScheme?: "session" | "api_key";
  /**
   * Also takes a trusted-publishing upload credential ('Authorization: Bearer svc_tp_...') in
   * place of the session: no cookie, so no CSRF header; good for one mod and one accepted upload.
   */
  uploadCredential?: boolean;
  /** Error codes beyond the common ones (invalid_payload, unauthenticated, forbidden, csrf_failed). */
  errors?: string[];
  /** Documentation of the request (body fields or query parameters) the implementation accepts. */
  request?: Record<string, string>;
  /** Documentation of the success response: status and body fields. */
  response?: Record<string, string>;
  /**
   * Served only by the local portal (`svc serve`), whose process publishes into the records it
   * reads and writes. A deployment that does not publish by itself (the Vercel functions, a
   * GitHub-backed portal whose records live in git) answers 501 not_implemented.
   */
  localPortalOnly?: true;
}

const ALL_ROLES: Role[] = ["player", "modder", "moderator", "admin"];

export const ENDPOINTS: readonly EndpointDefinition[] = [
  {
    id: "backend_health",
    method: "GET",
    path: "/api/v1/backend/health",
    authRequired: false,
    roles: [],
    status: "implemented",
    summary: "Returns process health and whether live uploads are enabled.",
  },
  {
    id: "create_account",
    method: "POST",
    path: "/api/v1/accounts",
    authRequired: false,
    roles: [],
    status: "implemented",
    summary:
      "Creates a free player or modder account and starts email verification through the configured verification email webhook.",
    contentType: "application/json",
    requiredFields: ["email", "displayName"],
    rateLimit: { scope: "ip", bucket: "accountCreation" },
    errors: ["email_delivery_unavailable", "rate_limit_exceeded"],
    request: {
      body: "{ email: string (<=254, no CR/LF), displayName: string (1-64, no control characters), role?: 'player' | 'modder' (default player) }; unknown fields are refused",
    },
    response: {
      status: "202",
      body: "{ accountId, status: 'verification_sent' | 'verified', verificationExpiresAt: date-time | null, message, devToken? (SVC_DEV_EMAIL=return-token only) }; identical for an address that already has an account (its owner is mailed instead), so sign-up does not reveal accounts",
    },
  },
  {
    id: "verify_account",
    method: "POST",
    path: "/api/v1/accounts/{accountId}/verify-email",
    authRequired: false,
    roles: [],
    status: "implemented",
    summary: "Verifies the email address with a one-time verification token.",
    contentType: "application/json",
    requiredFields: ["token"],
    rateLimit: { scope: "ip", bucket: "emailVerification" },
    errors: ["token_invalid", "rate_limit_exceeded"],
    request: {
      body: "{ token: string } (the one-time verification token, 24 h, single use, bound to {accountId})",
    },
    response: { status: "200", body: "{ account: Account }" },
  },
  {
    id: "request_magic_link",
    method: "POST",
    path: "/api/v1/auth/magic-link/request",
    authRequired: false,
    roles: [],
    status: "implemented",
    summary:
      "Requests a one-time magic-link email for a verified account; the response does not reveal whether the email exists.",
    contentType: "application/json",
    requiredFields: ["email"],
    rateLimit: { scope: "ip", bucket: "magicLinkRequest" },
    errors: ["email_delivery_unavailable", "rate_limit_exceeded"],
    request: { body: "{ email: string }" },
    response: {
      status: "202",
      body: "{ status: 'accepted', message, expiresInSeconds: 900, devToken? } \u2014 the same status, body shape and work whether or not the address has a verified account",
    },
  },
  {
    id: "confirm_magic_link",
    method: "POST",
    path: "/api/v1/auth/magic-link/confirm",
    authRequired: false,
    roles: [],
    status: "implemented",
    summary: "Exchanges a one-time magic-link token for an authenticated session cookie and a CSRF token.",
    contentType: "application/json",
    requiredFields: ["token"],
    rateLimit: { scope: "ip", bucket: "sessionCreation" },
    errors: ["token_invalid", "rate_limit_exceeded"],
    request: { body: "{ token: string } (one-time, 15 minutes, consumed atomically)" },
    response: {
      status: "200",
      body: "{ session: { accountId, email, displayName, roles, csrfToken, createdAt, expiresAt } }",
      headers:
        "Set-Cookie: svc_session=<new random id>; HttpOnly; SameSite=Lax; Path=/; Max-Age=604800; Secure (except plain-HTTP loopback)",
    },
  },
  {
    id: "list_accounts",
    method: "GET",
    path: "/api/v1/accounts",
    authRequired: true,
    roles: ["admin"],
    status: "implemented",
    summary: "Lists accounts for role review and moderation staffing.",
    authScheme: "session",
    request: { query: "limit (1-500, default 100), cursor (from nextCursor)" },
    response: { status: "200", body: "{ accounts: Account[], nextCursor: string | null }" },
  },
  {
    id: "update_account_roles",
    method: "PUT",
    path: "/api/v1/accounts/{accountId}/roles",
    authRequired: true,
    roles: ["admin"],
    status: "implemented",
    summary:
      "Assigns or removes roles. CSRF protected; privileged roles require a verified account; the last admin cannot be removed; audit-logged.",
    contentType: "application/json",
    requiredFields: ["roles"],
    allowedRoles: ALL_ROLES,
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    errors: ["last_admin", "account_not_verified", "not_found", "rate_limit_exceeded"],
    request: {
      body: "{ roles: Array<'player' | 'modder' | 'moderator' | 'admin'> } (replaces the set; at least one)",
      headers: "x-svc-csrf",
    },
    response: { status: "200", body: "{ account: Account }" },
  },
  {
    id: "current_session",
    method: "GET",
    path: "/api/v1/auth/session",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary: "Returns account id, role set, display name and CSRF token.",
    authScheme: "session",
    response: {
      status: "200",
      body: "{ session: { accountId, email, displayName, roles, csrfToken, createdAt, expiresAt } }",
    },
  },
  {
    id: "delete_session",
    method: "DELETE",
    path: "/api/v1/auth/session",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary: "Ends the current session.",
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    request: { headers: "x-svc-csrf" },
    response: { status: "204", headers: "Set-Cookie clearing svc_session" },
  },
  {
    id: "create_api_key",
    method: "POST",
    path: "/api/v1/auth/api-keys",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary:
      "Creates an account-scoped API key for manager fast downloads. The plaintext key is returned once only.",
    contentType: "application/json",
    rateLimit: { scope: "account", bucket: "apiKeyLifecycle" },
    csrf: true,
    authScheme: "session",
    errors: ["conflict", "rate_limit_exceeded"],
    request: { body: "{ name?: string (1-100, default 'API key') }", headers: "x-svc-csrf" },
    response: {
      status: "201",
      body: "{ secret: 'svc_<32 base62><6 base62 CRC32 checksum>' (shown once), apiKey: ApiKeyMetadata, message }",
    },
  },
  {
    id: "list_api_keys",
    method: "GET",
    path: "/api/v1/auth/api-keys",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary: "Lists non-secret metadata of the current account's keys.",
    rateLimit: { scope: "account", bucket: "apiKeyLifecycle" },
    authScheme: "session",
    response: {
      status: "200",
      body: "{ apiKeys: Array<{ id, name, prefix, createdAt, lastUsedAt, revokedAt }> } (never a secret or hash)",
    },
  },
  {
    id: "revoke_api_key",
    method: "DELETE",
    path: "/api/v1/auth/api-keys/{apiKeyId}",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary: "Revokes one key; later fast-download use of that secret is rejected.",
    rateLimit: { scope: "account", bucket: "apiKeyLifecycle" },
    csrf: true,
    authScheme: "session",
    errors: ["not_found"],
    request: { headers: "x-svc-csrf" },
    response: { status: "200", body: "{ apiKey: ApiKeyMetadata } (revokedAt set; repeat calls are no-ops)" },
  },
  {
    id: "api_key_mod_download",
    method: "GET",
    path: "/api/v1/downloads/mods/{modId}/{version}/{fileName}",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary:
      "Serves a published, download-enabled mod ZIP through the API-key fast-download lane; the immutable artifact hash is preserved.",
    authScheme: "api_key",
    errors: ["invalid_api_key", "not_found", "range_not_satisfiable", "pages_unavailable"],
    request: {
      headers:
        "Authorization: Bearer svc_... (never a query string); optional Range, If-Range, If-None-Match",
    },
    response: {
      status:
        "200 | 206 | 304 | 302 (artifact held by another store, e.g. GitHub Releases; on Vercel always, to the package on GitHub Pages or its packageUrl)",
      headers:
        'ETag: \\"<catalog sha256>\\", X-Svc-Sha256, Content-Length, Accept-Ranges: bytes, Content-Range on 206',
      body: "the exact published ZIP bytes",
    },
  },
  {
    id: "create_upload",
    method: "POST",
    path: "/api/v1/uploads",
    authRequired: true,
    roles: ["modder", "admin"],
    status: "implemented",
    summary:
      "multipart/form-data with parts package (application/zip or application/x-zip-compressed, at most maxPackageBytes) and metadata (svc.mod-release-submission.v1). Creates an immutable staged submission.",
    contentType: "multipart/form-data",
    requiredFields: ["package", "metadata"],
    metadataSchema: "svc.mod-release-submission.v1",
    rateLimit: { scope: "account", bucket: "uploadCreation" },
    csrf: true,
    authScheme: "session",
    uploadCredential: true,
    errors: [
      "uploads_disabled",
      "rate_limit_exceeded",
      "payload_too_large",
      "unsupported_media_type",
      "upload_credential_invalid",
      "conflict",
      "version_exists",
    ],
    request: {
      headers:
        "Cookie svc_session + x-svc-csrf, or 'Authorization: Bearer svc_tp_...' (an upload credential from trusted_publishing_exchange: no cookie, no CSRF; only its own mod, else 403 forbidden; spent by the first accepted upload, returned by a refused one)",
    },
  },
  {
    id: "list_uploads",
    method: "GET",
    path: "/api/v1/uploads",
    authRequired: true,
    // As upload_status: a moderator who once uploaded (or holds both roles) follows their own too.
    roles: ["modder", "moderator", "admin"],
    status: "implemented",
    summary:
      "Lists the caller's own submissions in every state, newest first; all=1 lists every account's (moderators and admins).",
    authScheme: "session",
    errors: ["forbidden"],
    request: {
      query:
        "limit (1-100, default 50), cursor (from nextCursor), all=1 (moderator or admin: every account's submissions; 403 forbidden otherwise); unknown parameters are refused",
    },
    response: {
      status: "200",
      body: "{ items: Array<{ submissionId, ownerAccountId, modId, version, state, revision, package: { fileName, sizeBytes, sha256 }, queuePosition: number | null, failedChecks: Array<{ id, reasonCode }>, pullRequestUrl: string | null, packageUrl: string | null, createdAt, updatedAt, statusUrl }> (newest created first), nextCursor: string | null, medianWaitSeconds: number | null }",
    },
  },
  {
    id: "upload_status",
    method: "GET",
    path: "/api/v1/uploads/{submissionId}",
    authRequired: true,
    roles: ["modder", "moderator", "admin"],
    status: "implemented",
    summary:
      "Returns an object matching svc.upload-submission.v1: validation state, validation logs, review state, artifact hash, publication links; the release as it will be published, its files with signatures and the diff against the mod's last published version; for moderators and admins also the uploader (name, account age, history, suspension), earlier submissions of the same version and reviewers' names.",
    authScheme: "session",
    errors: ["not_found"],
  },
  {
    id: "cancel_upload",
    method: "POST",
    path: "/api/v1/uploads/{submissionId}/cancel",
    authRequired: true,
    roles: ["modder", "admin"],
    status: "implemented",
    summary: "Cancels a draft, uploaded or failed submission that is not approved.",
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    errors: ["not_found", "illegal_transition"],
  },
  {
    id: "moderation_queue",
    method: "GET",
    path: "/api/v1/moderation/releases",
    authRequired: true,
    roles: ["moderator", "admin"],
    status: "implemented",
    summary:
      "Lists submissions by state: by default pending, failed, approved, hidden and superseded; any state on request, rejected included.",
    authScheme: "session",
    request: {
      query:
        "state (comma-separated states of svc.upload-submission.v1, or all; default pending_review,validation_failed,approved,hidden,superseded), limit (1-100, default 50), cursor (from nextCursor)",
    },
    response: {
      status: "200",
      body: "{ items: Array<{ submissionId, modId, version, state, ownerAccountId, packageSha256, queuePosition, ageSeconds, failedChecks, ownership?: { claim: 'new_mod' | 'owner' | 'collaborator' | 'not_permitted', owners: Principal[] }, createdAt, updatedAt, statusUrl }> (oldest first), nextCursor: string | null, medianWaitSeconds: number | null }",
    },
  },
  {
    id: "moderation_decision",
    method: "POST",
    path: "/api/v1/moderation/releases/{submissionId}/decision",
    authRequired: true,
    roles: ["moderator", "admin"],
    status: "implemented",
    summary: "Records a decision with reviewer notes and transitions the release.",
    contentType: "application/json",
    requiredFields: ["decision", "notes"],
    allowedDecisions: ["approve", "reject", "request_changes", "hide", "unhide"],
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    errors: ["not_found", "illegal_transition", "forbidden"],
  },
  {
    id: "publish_catalog",
    method: "POST",
    path: "/api/v1/catalog/publish",
    authRequired: true,
    roles: ["admin"],
    status: "implemented",
    summary:
      "Atomically publishes approved releases into immutable downloads plus catalog, detail and versions JSON.",
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    errors: ["artifact_exists", "version_exists"],
  },
  {
    id: "audit_events",
    method: "GET",
    path: "/api/v1/audit/events",
    authRequired: true,
    roles: ["admin"],
    status: "implemented",
    summary:
      "Reads immutable audit events for account, upload, validation, moderation and publication actions.",
    authScheme: "session",
    request: {
      query:
        "action, actorAccountId, targetType, targetId (exact match), since, until (ISO date-time; since inclusive, until exclusive), limit (1-200, default 50), cursor",
    },
    response: { status: "200", body: "{ events: AuditEvent[] (newest first), nextCursor: string | null }" },
  },
  {
    id: "trusted_publishing_exchange",
    method: "POST",
    path: "/api/v1/trusted-publishing/exchange",
    authRequired: false,
    roles: [],
    status: "implemented",
    summary:
      "Exchanges a GitHub Actions OIDC token from a workflow registered as a trusted publisher of the mod (repository id, workflow file, environment) for a short-lived upload credential for that mod alone, as PyPI's trusted publishing does. Rate-limited per source repository and per mod owner once the token verifies; every exchange and refusal is audit-logged.",
    contentType: "application/json",
    requiredFields: ["modId", "token"],
    errors: [
      "oidc_token_invalid",
      "oidc_issuer_unavailable",
      "trusted_publisher_unknown",
      "trusted_publisher_unlinked",
      "rate_limit_exceeded",
    ],
    request: {
      body: "{ modId: string, token: the job's OIDC token (RS256, iss trustedPublishing.issuer, aud trustedPublishing.audience, with repository_id, repository, job_workflow_ref, ref, actor, jti, environment when the publisher names one) }; unknown fields are refused",
    },
    response: {
      status: "201",
      body: "{ credential: 'svc_tp_<43 base64url>' (shown once), expiresAt, modId, ownerAccountId (the owner who registered the publisher), trustedPublisher: { repository, workflow, environment }, uploadUrl: '/api/v1/uploads' }",
    },
  },
  // Mod ownership (svc.mod-ownership.v1): who may publish a mod, and who changes that.
  {
    id: "mod_ownership",
    method: "GET",
    path: "/api/v1/mods/{modId}/ownership",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary:
      "Returns the mod's whole ownership record with its append-only history (the detail document carries the public part).",
    authScheme: "session",
    localPortalOnly: true,
    errors: ["not_found", "not_implemented"],
    response: {
      status: "200",
      body: "{ ownership: svc.mod-ownership.v1 } (404 not_found while the mod id is unclaimed)",
    },
  },
  {
    id: "add_collaborator",
    method: "POST",
    path: "/api/v1/mods/{modId}/collaborators",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary:
      "An owner (or an admin) adds a collaborator, a portal account or a GitHub login, who may then submit releases of the mod. Audit-logged.",
    contentType: "application/json",
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    localPortalOnly: true,
    errors: ["not_found", "conflict", "rate_limit_exceeded", "not_implemented"],
    request: {
      body: "{ account: accountId } or { github: login } (exactly one)",
      headers: "x-svc-csrf",
    },
    response: { status: "200", body: "{ ownership: svc.mod-ownership.v1 }" },
  },
  {
    id: "remove_collaborator",
    method: "DELETE",
    path: "/api/v1/mods/{modId}/collaborators",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary: "An owner (or an admin) removes a collaborator. Audit-logged.",
    contentType: "application/json",
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    localPortalOnly: true,
    errors: ["not_found", "rate_limit_exceeded", "not_implemented"],
    request: {
      body: "{ account: accountId } or { github: login } (exactly one)",
      headers: "x-svc-csrf",
    },
    response: { status: "200", body: "{ ownership: svc.mod-ownership.v1 }" },
  },
  {
    id: "add_trusted_publisher",
    method: "POST",
    path: "/api/v1/mods/{modId}/trusted-publishers",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary:
      "An owner registers a GitHub Actions workflow whose OIDC token may be exchanged for an upload credential for this mod. Audit-logged.",
    contentType: "application/json",
    requiredFields: ["repository", "workflow"],
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    localPortalOnly: true,
    errors: ["not_found", "conflict", "rate_limit_exceeded", "not_implemented"],
    request: {
      body: "{ repository: { fullName: 'owner/name', id: number }, workflow: 'release.yml', environment?: string | null (default null: any) }",
      headers: "x-svc-csrf",
    },
    response: { status: "200", body: "{ ownership: svc.mod-ownership.v1 }" },
  },
  {
    id: "remove_trusted_publisher",
    method: "DELETE",
    path: "/api/v1/mods/{modId}/trusted-publishers",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary:
      "An owner removes a trusted publisher (matched by repository id, workflow and environment). Audit-logged.",
    contentType: "application/json",
    requiredFields: ["repository", "workflow"],
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    localPortalOnly: true,
    errors: ["not_found", "rate_limit_exceeded", "not_implemented"],
    request: {
      body: "{ repository: { fullName, id }, workflow, environment?: string | null } (as registered)",
      headers: "x-svc-csrf",
    },
    response: { status: "200", body: "{ ownership: svc.mod-ownership.v1 }" },
  },
  {
    id: "set_source_repository",
    method: "PUT",
    path: "/api/v1/mods/{modId}/source-repository",
    authRequired: true,
    roles: ALL_ROLES,
    status: "implemented",
    summary:
      "An owner sets the one repository release intake accepts for the mod (by id), or clears it with null. Audit-logged.",
    contentType: "application/json",
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    localPortalOnly: true,
    errors: ["not_found", "rate_limit_exceeded", "not_implemented"],
    request: { body: "{ fullName: 'owner/name', id: number } or null", headers: "x-svc-csrf" },
    response: { status: "200", body: "{ ownership: svc.mod-ownership.v1 }" },
  },
  {
    id: "transfer_mod",
    method: "POST",
    path: "/api/v1/mods/{modId}/transfer",
    authRequired: true,
    roles: ["admin"],
    status: "implemented",
    summary:
      "An admin replaces the mod's owners (also of an unclaimed mod id), with a reason kept in the record's history and the audit log.",
    contentType: "application/json",
    requiredFields: ["owners", "reason"],
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    localPortalOnly: true,
    errors: ["not_found", "rate_limit_exceeded", "not_implemented"],
    request: {
      body: "{ owners: Array<{ account } | { github }> (1-16, distinct), reason: string (1-1000) }",
      headers: "x-svc-csrf",
    },
    response: { status: "200", body: "{ ownership: svc.mod-ownership.v1 }" },
  },
  // Review and account actions for moderators (issue 25).
  {
    id: "moderation_package",
    method: "GET",
    path: "/api/v1/moderation/releases/{submissionId}/package",
    authRequired: true,
    roles: ["moderator", "admin"],
    status: "implemented",
    summary:
      "Downloads a submission's staged package for review, always as an attachment and never from site/. Audit-logged (submission.package_downloaded) before the first byte.",
    authScheme: "session",
    errors: ["not_found"],
    response: {
      status: "200",
      headers:
        "Content-Type: application/zip, Content-Disposition: attachment; filename=..., Content-Length, X-Svc-Sha256 (the upload's recorded sha256), Cache-Control: private, no-store",
      body: "the staged ZIP bytes (404 not_found once published or cancelled, or for a package named by URL; a rejected package stays staged)",
    },
  },
  {
    id: "suspend_account_uploads",
    method: "POST",
    path: "/api/v1/accounts/{accountId}/upload-suspension",
    authRequired: true,
    roles: ["moderator", "admin"],
    status: "implemented",
    summary:
      "Suspends an account's uploads with a reason: create_upload and the trusted-publishing exchange then refuse it with account_suspended until an admin lifts the suspension. Only an admin suspends a moderator's or admin's uploads. Audit-logged.",
    contentType: "application/json",
    requiredFields: ["reason"],
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    errors: ["not_found", "conflict", "rate_limit_exceeded"],
    request: {
      body: "{ reason: string (1-1000, one line), submissionId?: the submission the suspension is made from }",
      headers: "x-svc-csrf",
    },
    response: {
      status: "201",
      body: "{ suspension: { id, accountId, reason, suspendedBy, suspendedAt, submissionId, liftedBy: null, liftedAt: null, liftReason: null } } (409 conflict while one is in force)",
    },
  },
  {
    id: "lift_account_upload_suspension",
    method: "DELETE",
    path: "/api/v1/accounts/{accountId}/upload-suspension",
    authRequired: true,
    roles: ["admin"],
    status: "implemented",
    summary: "An admin lifts the suspension in force on an account's uploads, with a reason. Audit-logged.",
    contentType: "application/json",
    requiredFields: ["reason"],
    rateLimit: { scope: "account", bucket: "authenticatedMutation" },
    csrf: true,
    authScheme: "session",
    errors: ["not_found", "conflict", "rate_limit_exceeded"],
    request: { body: "{ reason: string (1-1000, one line) }", headers: "x-svc-csrf" },
    response: {
      status: "200",
      body: "{ suspension } with liftedBy, liftedAt and liftReason set (409 conflict when none is in force)",
    },
  },
];

export function endpointById(id: string): EndpointDefinition {
  const endpoint = ENDPOINTS.find((e) => e.id === id);
  if (!endpoint) throw new Error(`unknown endpoint ${id}`);
  return endpoint;
}

export interface RouteMatch {
  endpoint: EndpointDefinition;
  params: Record<string, string>;
}

const compiled = ENDPOINTS.map((endpoint) => {
  const names: string[] = [];
  const source = endpoint.path
    .split("/")
    .map((segment) => {
      const m = /^\{(\w+)\}$/.exec(segment);
      if (!m) return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
      names.push(m[1]!);
      return "([^/]+)";
    })
    .join("/");
  return { endpoint, names, pattern: new RegExp(`^${source}$`) };
});

/**
 * Matches a decoded-once pathname against the table. Parameters are percent-decoded once; a
 * parameter that decodes to something with a slash, a NUL or a dot-segment never matches.
 */
export function matchEndpoint(
  method: string,
  pathname: string,
): RouteMatch | { methodNotAllowed: string[] } | null {
  const allowed: string[] = [];
  for (const { endpoint, names, pattern } of compiled) {
    const m = pattern.exec(pathname);
    if (!m) continue;
    const params: Record<string, string> = {};
    let valid = true;
    names.forEach((name, i) => {
      let value: string;
      try {
        value = decodeURIComponent(m[i + 1]!);
      } catch {
        valid = false;
        return;
      }
      if (
        value.includes("/") ||
        value.includes("\\") ||
        value.includes("\0") ||
        value === "." ||
        value === ".."
      ) {
        valid = false;
      }
      params[name] = value;
    });
    if (!valid) continue;
    if (endpoint.method === method || (method === "HEAD" && endpoint.method === "GET"))
      return { endpoint, params };
    allowed.push(endpoint.method);
  }
  return allowed.length > 0 ? { methodNotAllowed: [...new Set(allowed)] } : null;
}
