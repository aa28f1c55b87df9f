import type { PortalConfig } from "../config/portal-config.ts";
import { STATES, TRANSITIONS } from "../workflow/machine.ts";
import type { CheckDefinition } from "./checks.ts";
import type { Readiness } from "./readiness.ts";
import { portalUrls } from "./urls.ts";

export const PUBLICATION_OUTPUTS = [
  "/downloads/mods/{modId}/{version}/{fileName}",
  "/api/v1/catalog.json",
  "/api/v1/mods/index.json",
  "/api/v1/mods/{modId}/index.json",
  "/api/v1/mods/{modId}/versions.json",
  "/api/v1/changes/head.json",
  "/api/v1/changes/{page}.json",
];

/** The real manual importer of this project (the contract's Import-ModRelease.ps1 parameters are accepted too). */
export const MANUAL_FALLBACK = {
  tool: "svc import",
  runbook: "docs/runbooks/manual-publishing.md",
  sidecarExample: "pulls-template/release.example.json",
  command: "npx svc import --package <MyMod-1.2.0.zip> --metadata <release.json>",
};

export function buildWorkflowDocument(
  config: PortalConfig,
  readiness: Readiness,
  checks: readonly CheckDefinition[],
  generatedAt: string,
) {
  const urls = portalUrls(config.baseUrl);
  const auth = readiness.services.find((s) => s.id === "auth_service")!;
  const uploads = readiness.services.find((s) => s.id === "upload_storage")!;
  return {
    schema: "svc.publishing-workflow.v1" as const,
    generatedAt,
    status: readiness.liveBackend ? ("live-backend" as const) : ("planned-static-contract" as const),
    liveBackend: readiness.liveBackend,
    summary:
      "Modders submit a release (upload, submission PR or release upload); the mod-validation worker runs every required check; moderators approve, request changes, reject, hide or unhide; publication promotes the exact bytes to an immutable public path and regenerates the catalog atomically.",
    auth: {
      live: auth.live,
      accountRequired: true,
      sessionRequired: true,
      roles: ["player", "modder", "moderator", "admin"],
      plannedCapabilities: [
        "free accounts with verified email",
        "passwordless magic-link sign-in",
        "svc_session cookie with x-svc-csrf header",
        "account-scoped API keys for manager fast downloads",
        "admin role management with last-admin protection",
      ],
    },
    upload: {
      live: uploads.live,
      plannedEndpoint: { method: "POST" as const, path: "/api/v1/uploads" as const },
      statusEndpointTemplate: "/api/v1/uploads/{submissionId}" as const,
      acceptedContentTypes: ["application/zip", "application/x-zip-compressed"],
      requiredSidecarSchema: "svc.mod-release-submission.v1" as const,
      sidecarSchemaUrl: urls.sidecarSchema,
      maxPackageBytes: config.limits.maxPackageBytes,
      stagingPathTemplate: "uploads/staging/{submissionId}/{fileName}" as const,
      artifactPathTemplate: "downloads/mods/{modId}/{version}/{fileName}" as const,
      immutableArtifacts: true as const,
      liveUploadGate: {
        env: "SVC_LIVE_UPLOADS" as const,
        requiredValue: "1" as const,
        enabled: config.deployment.liveUploads,
      },
    },
    backendRequirements: {
      requiredServices: readiness.services.map((s) => ({
        id: s.id,
        required: true,
        live: s.live,
        description: s.description,
      })),
    },
    states: STATES.map((s) => ({ ...s })),
    transitions: TRANSITIONS.map((t) => ({
      from: t.from,
      to: t.to,
      actor: t.actor,
      condition: t.condition,
      ...(isDecision(t.action) ? { decision: t.action } : {}),
      effect: t.effect,
      source: t.source,
    })),
    validationChecks: checks.map((c) => ({
      id: c.id,
      required: c.required,
      description: c.description,
      scope: c.scope,
    })),
    publicationOutputs: PUBLICATION_OUTPUTS,
    manualFallback: {
      active: true,
      tool: MANUAL_FALLBACK.tool,
      runbook: MANUAL_FALLBACK.runbook,
      sidecarSchema: "svc.mod-release-submission.v1" as const,
      sidecarExample: MANUAL_FALLBACK.sidecarExample,
      command: MANUAL_FALLBACK.command,
    },
  };
}

function isDecision(action: string): action is "approve" | "reject" | "request_changes" | "hide" | "unhide" {
  return ["approve", "reject", "request_changes", "hide", "unhide"].includes(action);
}
