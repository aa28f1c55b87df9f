import type { PortalConfig } from "../config/portal-config.ts";
import type { EndpointDefinition } from "./endpoints.ts";
import { portalUrls } from "./urls.ts";

export type ServiceId =
  | "auth_service"
  | "upload_storage"
  | "validation_worker"
  | "moderation_queue"
  | "catalog_publisher"
  | "audit_log"
  | "public_smoke_runner";

export interface ServiceDefinition {
  id: ServiceId;
  description: string;
  /** Routes that make up the service; it is implemented when every one is. */
  endpoints: string[];
  /** For services without routes of their own: whether the code for it exists. */
  implemented?: boolean;
}

export const SERVICES: readonly ServiceDefinition[] = [
  {
    id: "auth_service",
    description: "Accounts, email verification, magic-link sessions with CSRF, roles and API keys.",
    endpoints: [
      "create_account",
      "verify_account",
      "request_magic_link",
      "confirm_magic_link",
      "current_session",
      "delete_session",
      "list_accounts",
      "update_account_roles",
      "create_api_key",
      "list_api_keys",
      "revoke_api_key",
      "api_key_mod_download",
    ],
  },
  {
    id: "upload_storage",
    description: "Private staging of uploaded packages until validation and moderation approve publication.",
    endpoints: ["create_upload", "upload_status", "cancel_upload"],
  },
  {
    id: "validation_worker",
    description: "The mod-validation queue worker running every required check with durable logs.",
    endpoints: [],
    // src/submissions/worker.ts; it still needs a deployment and a smoke run to be live.
    implemented: true,
  },
  {
    id: "moderation_queue",
    description: "The moderation queue and decisions with reviewer notes.",
    endpoints: ["moderation_queue", "moderation_decision"],
  },
  {
    id: "catalog_publisher",
    description: "Atomic publication of approved releases into immutable downloads and catalog JSON.",
    endpoints: ["publish_catalog"],
  },
  {
    id: "audit_log",
    description:
      "Append-only audit events for every account, upload, validation, moderation and publish action.",
    endpoints: ["audit_events"],
  },
  {
    id: "public_smoke_runner",
    description:
      "Post-publish smoke: fetch every route, download artifacts, verify hashes, run the manager reader.",
    endpoints: [],
    // svc smoke (src/catalog/smoke.ts); live once a passing report for the public base URL is recorded.
    implemented: true,
  },
];

export interface SmokeSummary {
  passed: boolean;
  baseUrl: string;
  generatedAt: string;
  /** The smoke's TUF check (docs/distribution.md); older reports have none: not verified. */
  signature?: { state: "unsigned" | "verified" | "failed"; code?: string };
}

/** A smoke run against the deployed API layer, listing which capabilities it exercised. */
export interface BackendSmokeSummary {
  passed: boolean;
  generatedAt: string;
  covered: string[];
}

export interface ReadinessInputs {
  config: PortalConfig;
  endpoints: readonly EndpointDefinition[];
  postPublishSmoke: SmokeSummary | null;
  backendSmoke: BackendSmokeSummary | null;
  /** At least one mod release reached the public catalog through the backend and passed smoke. */
  backendVerifiedRelease: boolean;
}

export interface ServiceStatus {
  id: ServiceId;
  required: true;
  live: boolean;
  implemented: boolean;
  description: string;
  missing: string[];
}

export interface Gate {
  id: number;
  title: string;
  status: "ready" | "partial" | "blocked";
  evidence: string[];
  remaining: string[];
}

export interface Readiness {
  services: ServiceStatus[];
  liveBackend: boolean;
  gates: Gate[];
  blockers: Array<{ id: string; summary: string }>;
  goLiveChecks: Array<{ id: string; description: string; met: boolean; remaining: string[] }>;
}

function implementedIds(endpoints: readonly EndpointDefinition[]): Set<string> {
  return new Set(endpoints.filter((e) => e.status === "implemented").map((e) => e.id));
}

function covered(inputs: ReadinessInputs, capability: string): boolean {
  return Boolean(inputs.backendSmoke?.passed && inputs.backendSmoke.covered.includes(capability));
}

function catalogSignatureRemaining(smoke: SmokeSummary | null, baseUrl: string): string | null {
  if (!smoke || smoke.baseUrl !== baseUrl)
    return `No post-publish smoke for ${baseUrl} has verified the signed catalog yet (svc keys init, then svc smoke --record).`;
  const signature = smoke.signature;
  if (!signature || signature.state === "unsigned")
    return "The catalog is not signed: managers cannot verify it (svc keys init, SVC_TUF_ONLINE_KEYS; docs/distribution.md).";
  if (signature.state === "failed")
    return `The recorded smoke could not verify the signed catalog (${signature.code ?? "failed"}): re-sign with svc keys sign, deploy and smoke again.`;
  return null;
}

/** Everything readiness says is derived here from code, configuration and smoke reports. */
export function computeReadiness(inputs: ReadinessInputs): Readiness {
  const { config } = inputs;
  const done = implementedIds(inputs.endpoints);
  const deployed = config.deployment.apiBaseUrl !== null;
  const durable = config.deployment.durableStorage === "postgresql";
  const email = config.deployment.emailDelivery === "webhook";
  const publicSmokeOk = Boolean(
    inputs.postPublishSmoke?.passed && inputs.postPublishSmoke.baseUrl === config.baseUrl,
  );

  const services: ServiceStatus[] = SERVICES.map((service) => {
    const missingRoutes = service.endpoints.filter((id) => !done.has(id));
    const implemented =
      service.endpoints.length > 0 ? missingRoutes.length === 0 : service.implemented === true;
    const missing: string[] = [];
    if (missingRoutes.length > 0) missing.push(`routes not implemented: ${missingRoutes.join(", ")}`);
    if (!implemented && service.endpoints.length === 0) missing.push("not implemented");
    if (service.id === "public_smoke_runner") {
      if (!publicSmokeOk) missing.push(`no passing post-publish smoke report for ${config.baseUrl}`);
    } else {
      if (!deployed) missing.push("API layer not deployed (deployment.apiBaseUrl is null)");
      if (!durable) missing.push("durable storage not configured (deployment.durableStorage)");
      if (!covered(inputs, service.id)) missing.push("not covered by a passing deployment smoke run");
    }
    if (service.id === "auth_service" && !email)
      missing.push("verification email delivery not configured (deployment.emailDelivery)");
    if (service.id === "upload_storage" && !config.deployment.liveUploads)
      missing.push(
        "the deployment takes no uploads (portal.config.json deployment.liveUploads is false: the deployed API does not run with SVC_LIVE_UPLOADS=1)",
      );
    return {
      id: service.id,
      required: true,
      live: implemented && missing.length === 0,
      implemented,
      description: service.description,
      missing,
    };
  });
  const liveBackend = services.every((s) => s.live);
  const byId = (id: ServiceId) => services.find((s) => s.id === id)!;
  const urls = portalUrls(config.baseUrl);

  const gateFrom = (
    id: number,
    title: string,
    parts: ServiceStatus[],
    extra: string[] = [],
    evidence: string[] = [],
  ): Gate => {
    const remaining = [...parts.flatMap((s) => s.missing.map((m) => `${s.id}: ${m}`)), ...extra];
    const anyImplemented = parts.some((s) => s.implemented);
    const status = remaining.length === 0 ? "ready" : anyImplemented ? "partial" : "blocked";
    return {
      id,
      title,
      status,
      evidence: [...parts.filter((s) => s.implemented).map((s) => `${s.id} implemented`), ...evidence],
      remaining,
    };
  };

  const apiKeyRoutes = ["create_api_key", "list_api_keys", "revoke_api_key", "api_key_mod_download"];
  const gates: Gate[] = [
    {
      id: 1,
      title: "Static contracts are generated, schema-valid and drift-free",
      status: "ready",
      evidence: [urls.catalog, urls.workflow, urls.backendContract, "svc check passes in CI"],
      remaining: [],
    },
    gateFrom(2, "Accounts, email verification and magic-link sessions", [byId("auth_service")]),
    gateFrom(
      3,
      "API keys and the manager fast-download lane",
      [],
      [
        ...apiKeyRoutes.filter((id) => !done.has(id)).map((id) => `route not implemented: ${id}`),
        ...(covered(inputs, "api_key_lifecycle")
          ? []
          : ["API-key create, list, revoke and revoked-key rejection not covered by deployment smoke"]),
      ],
      apiKeyRoutes.filter((id) => done.has(id)).map((id) => `${id} implemented`),
    ),
    gateFrom(4, "Uploads with private staging behind the live-upload gate", [byId("upload_storage")]),
    gateFrom(5, "Validation worker with antivirus, file-signature and content-policy checks", [
      byId("validation_worker"),
    ]),
    gateFrom(6, "Moderation queue and decisions", [byId("moderation_queue")]),
    gateFrom(7, "Atomic catalog publisher", [byId("catalog_publisher")]),
    gateFrom(8, "Append-only audit log", [byId("audit_log")]),
    gateFrom(
      9,
      "Rate limits answer rate_limit_exceeded with Retry-After",
      [],
      covered(inputs, "rate_limit_exceeded") ? [] : ["rate_limit_exceeded not covered by deployment smoke"],
    ),
    gateFrom(10, "Public smoke after publication", [byId("public_smoke_runner")]),
  ];
  // A gate with nothing implemented but only smoke work left is partial, not blocked.
  for (const gate of gates)
    if (gate.status === "blocked" && gate.evidence.length > 0) gate.status = "partial";

  const blockerIds: Record<number, string> = {
    2: "auth_not_live",
    3: "api_key_downloads_not_live",
    4: "uploads_not_live",
    5: "validation_worker_not_live",
    6: "moderation_not_live",
    7: "catalog_publisher_not_live",
    8: "audit_log_not_live",
    9: "rate_limits_not_smoke_tested",
    10: "public_smoke_not_passed",
  };
  const blockers = gates
    .filter((g) => g.status !== "ready")
    .map((g) => ({
      id: blockerIds[g.id] ?? `gate_${g.id}_not_ready`,
      summary: `${g.title}: ${g.remaining[0]}${g.remaining.length > 1 ? ` (+${g.remaining.length - 1} more)` : ""}`,
    }));
  // From the recorded smoke, not the site's clock: readiness is a generated document and must not
  // depend on when it is built. The smoke verified the deployed metadata through the manager client,
  // so "verified" means signed, matching the published tree and unexpired at that run; the scheduled
  // re-sign and smoke keep it true. A report for another base URL says nothing about this one.
  const signatureRemaining = catalogSignatureRemaining(inputs.postPublishSmoke, config.baseUrl);
  if (signatureRemaining) blockers.push({ id: "catalog_not_signed", summary: signatureRemaining });
  if (!inputs.backendVerifiedRelease) {
    blockers.push({
      id: "manual_fallback_active",
      summary:
        "No mod release has reached the public catalog through the backend import path yet; the manual importer stays the publishing path.",
    });
  }

  const rule = (id: string, description: string, remaining: string[]) => ({
    id,
    description,
    met: remaining.length === 0,
    remaining,
  });
  const goLiveChecks = [
    rule(
      "https_session_csrf",
      "All backend endpoints are implemented behind HTTPS with session and CSRF protection where authRequired is true.",
      [
        ...inputs.endpoints.filter((e) => e.status !== "implemented").map((e) => `${e.id} not implemented`),
        ...(deployed ? [] : ["API layer not deployed over HTTPS"]),
      ],
    ),
    rule(
      "email_fail_closed",
      "Account creation fails closed with email_delivery_unavailable when verification email delivery is missing.",
      done.has("create_account") ? [] : ["create_account not implemented"],
    ),
    rule(
      "rate_limits",
      "Write routes answer rate_limit_exceeded with Retry-After.",
      covered(inputs, "rate_limit_exceeded") ? [] : ["not covered by deployment smoke"],
    ),
    rule(
      "private_uploads",
      "Uploads are stored privately until validation and moderation approve publication.",
      byId("upload_storage").implemented ? [] : ["upload_storage not implemented"],
    ),
    rule(
      "live_upload_gate",
      "With SVC_LIVE_UPLOADS not 1, upload creation is rejected before package bytes are accepted.",
      done.has("create_upload") ? [] : ["create_upload not implemented"],
    ),
    rule(
      "validation_worker",
      "The validation worker runs every required check and records durable logs.",
      byId("validation_worker").missing,
    ),
    rule(
      "publisher_immutable",
      "The catalog publisher hashes the exact public artifact and never replaces an artifact URL.",
      byId("catalog_publisher").implemented ? [] : ["catalog_publisher not implemented"],
    ),
    rule(
      "audit_everything",
      "The audit log records every account, magic-link, API-key, upload, validation, moderation and publish action.",
      byId("audit_log").missing,
    ),
    rule("public_smoke", "A public smoke run passes after publication.", byId("public_smoke_runner").missing),
    rule(
      "live_backend",
      "liveBackend is true only when every required service is live.",
      services.filter((s) => !s.live).map((s) => `${s.id} not live`),
    ),
  ];
  return { services, liveBackend, gates, blockers, goLiveChecks };
}

export function buildReadinessDocument(inputs: ReadinessInputs, readiness: Readiness, generatedAt: string) {
  const urls = portalUrls(inputs.config.baseUrl);
  const ready = readiness.blockers.length === 0;
  const readyGates = readiness.gates.filter((g) => g.status === "ready").length;
  return {
    schema: "svc.production-readiness.v1" as const,
    generatedAt,
    overallStatus: ready ? ("release_ready" as const) : ("not_release_ready" as const),
    liveBackend: readiness.liveBackend,
    summary: ready
      ? "Every go-live gate is ready: the backend is live and smoke-tested."
      : `Not release ready: ${readyGates} of ${readiness.gates.length} gates ready, ${readiness.blockers.length} blocker(s). Static catalog contracts are live; mods are published through the manual importer.`,
    releaseBlockers: readiness.blockers,
    evidence: {
      catalogUrl: urls.catalog,
      runtimeUrl: urls.runtime,
      frameworkUrl: urls.framework,
      managerUrl: urls.manager,
      publishingWorkflowUrl: urls.workflow,
      publishingBackendContractUrl: urls.backendContract,
      manualPublishingRunbook: "docs/runbooks/manual-publishing.md",
      deploymentRunbook: "docs/runbooks/deployment.md",
    },
    gates: readiness.gates,
  };
}
