import type { PortalConfig } from "../config/portal-config.ts";
import { ERROR_STATUS } from "../errors.ts";
import { STATES } from "../workflow/machine.ts";
import { type CheckDefinition, requiredPackageCheckIds } from "./checks.ts";
import type { EndpointDefinition } from "./endpoints.ts";
import type { Readiness } from "./readiness.ts";
import { portalUrls } from "./urls.ts";
import { MANUAL_FALLBACK, PUBLICATION_OUTPUTS } from "./workflow.ts";

export const UPLOAD_SUBMISSION_REQUIRED_FIELDS = [
  "submissionId",
  "ownerAccountId",
  "modId",
  "version",
  "state",
  "packageSha256",
  "validationChecks",
  "review",
  "createdAt",
  "updatedAt",
];

export function buildBackendContract(
  config: PortalConfig,
  endpoints: readonly EndpointDefinition[],
  readiness: Readiness,
  checks: readonly CheckDefinition[],
  generatedAt: string,
) {
  const urls = portalUrls(config.baseUrl);
  return {
    schema: "svc.publishing-backend-contract.v1" as const,
    schemaUrl: urls.backendContractSchema,
    generatedAt,
    status: readiness.liveBackend ? ("live-backend" as const) : ("planned-static-contract" as const),
    live: readiness.liveBackend,
    baseUrl: config.baseUrl,
    summary:
      "Accounts with magic-link sessions and API keys, private uploads validated on the mod-validation queue, moderation, atomic catalog publication and an append-only audit log. Routes stay gated until deployed and smoke-tested.",
    security: {
      requiresHttps: true as const,
      sessionCookie:
        "svc_session (HttpOnly, SameSite=Lax, Secure except on plain-HTTP loopback; a new id at every sign-in; invalidated server-side at logout)",
      csrfHeader: "x-svc-csrf",
      authenticationPolicy:
        "Free accounts, verified email, passwordless one-time magic links (random, stored as SHA-256 hashes, single use, 15 minutes). API keys (prefix svc_, with a checksum, stored hashed, shown once) are accepted only on api_key_mod_download, in the header 'Authorization: Bearer <key>'; never in a query string.",
      emailDeliveryPolicy:
        "Verification and magic-link email go through the webhook SVC_EMAIL_WEBHOOK_URL, signed with HMAC-SHA256 over the raw body using SVC_EMAIL_WEBHOOK_SECRET. With no webhook and no explicit developer mode (SVC_DEV_EMAIL=return-token or auto-verify), create_account and request_magic_link answer email_delivery_unavailable before anything is created.",
      adminBootstrapPolicy:
        "SVC_BOOTSTRAP_ADMIN_EMAILS (comma-separated, case-insensitive) grants admin to matching accounts at creation, effective once verified; after that admins manage roles through update_account_roles, which never removes the last verified admin.",
      rateLimitPolicy: `Fixed windows kept in the store. Per IP: account creation ${describe(config, "accountCreation")}, email verification ${describe(config, "emailVerification")}, magic-link requests ${describe(config, "magicLinkRequest")}, session creation ${describe(config, "sessionCreation")}. Per account: API-key lifecycle ${describe(config, "apiKeyLifecycle")}, uploads ${describe(config, "uploadCreation")}, other authenticated mutations ${describe(config, "authenticatedMutation")}. Over the limit: 429 rate_limit_exceeded with Retry-After in seconds.`,
    },
    roles: ["player", "modder", "moderator", "admin"],
    endpoints: endpoints.map((e) => {
      const { status, ...rest } = e;
      return { ...rest, status };
    }),
    dataContracts: {
      account: { requiredFields: ["id", "email", "displayName", "roles", "createdAt", "verifiedAt"] },
      uploadSubmission: {
        schema: "svc.upload-submission.v1" as const,
        schemaUrl: urls.uploadSubmissionSchema,
        requiredFields: UPLOAD_SUBMISSION_REQUIRED_FIELDS,
        states: STATES.map((s) => s.id),
      },
      auditEvent: {
        requiredFields: ["id", "actorAccountId", "action", "targetType", "targetId", "createdAt", "metadata"],
      },
      errorBody: {
        requiredFields: ["code", "message"],
        optionalFields: ["details"],
        statusByCode: { ...ERROR_STATUS },
      },
    },
    storage: {
      stagingPathTemplate: "uploads/staging/{submissionId}/{fileName}" as const,
      publicArtifactPathTemplate: "downloads/mods/{modId}/{version}/{fileName}" as const,
      immutablePublicArtifacts: true as const,
      maxPackageBytes: config.limits.maxPackageBytes,
      liveUploadGate: {
        env: "SVC_LIVE_UPLOADS" as const,
        requiredValue: "1" as const,
        enabled: config.deployment.liveUploads,
      },
    },
    validationWorker: {
      queue: "mod-validation" as const,
      frameworkValidationContractUrl: urls.validationContract,
      frameworkValidationContractSchemaUrl: urls.validationContractSchema,
      requiredChecks: requiredPackageCheckIds(checks),
    },
    catalogPublisher: {
      outputs: PUBLICATION_OUTPUTS,
      atomicPublication: true as const,
      postPublishSmokeRequired: true as const,
    },
    goLiveChecks: readiness.goLiveChecks,
    manualFallback: {
      active: true as const,
      workflowUrl: urls.workflow,
      runbook: MANUAL_FALLBACK.runbook,
      tool: MANUAL_FALLBACK.tool,
    },
  };
}

function describe(config: PortalConfig, bucket: keyof PortalConfig["limits"]["rateLimits"]): string {
  const { limit, windowSeconds } = config.limits.rateLimits[bucket];
  return `${limit} per ${windowSeconds} s`;
}
