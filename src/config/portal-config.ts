export type Role = "player" | "modder" | "moderator" | "admin";
export type RateLimitBucket =
  | "accountCreation"
  | "emailVerification"
  | "magicLinkRequest"
  | "sessionCreation"
  | "apiKeyLifecycle"
  | "uploadCreation"
  | "authenticatedMutation"
  | "trustedPublishingRepository"
  | "trustedPublishingOwner"
  | "releaseIntakeRepository"
  | "releaseIntakeOwner";

export interface GameBuildEntry {
  buildId: string;
  manifestIds: string[];
  validationStatus: "validated" | "unvalidated" | "incompatible";
  validatedAt?: string;
  label?: string;
  notes?: string;
}

export interface PortalConfig {
  schema: "svc.portal-config.v1";
  baseUrl: string;
  portal: { name: string; repository: string; defaultBranch?: string };
  game: { name: string; storeAppId: string };
  runtime: {
    name: string;
    repo: string;
    tag: string;
    asset: { name: string; url: string; sha256: string; sizeBytes: number } | null;
    layout: { installPath: string; modsPath: string; files: string[] };
  };
  framework: { name: string; repo: string; assetPattern?: string };
  manager: { repo: string; assetPattern?: string };
  gameBuilds: GameBuildEntry[];
  moderators: { logins: string[]; team?: string | null };
  limits: {
    maxPackageBytes: number;
    rateLimits: Record<RateLimitBucket, { limit: number; windowSeconds: number }>;
  };
  deployment: {
    apiBaseUrl: string | null;
    /** Where GitHub Pages serves site/; the Vercel functions' API-key lane reads versions.json there. */
    pagesUrl?: string | null;
    emailDelivery: "none" | "webhook";
    liveUploads: boolean;
    durableStorage: "none" | "postgresql";
    trustedProxies: string[];
  };
  /** GitHub Actions OIDC tokens exchanged for upload credentials (src/config/trusted-publishing.ts). */
  trustedPublishing?: {
    issuer?: string;
    audience?: string | null;
    clockToleranceSeconds?: number;
    credentialLifetimeSeconds?: number;
  };
}

const LOOPBACK_HOSTNAMES = new Set(["127.0.0.1", "localhost", "[::1]"]);
const WILDCARD_HOSTS = new Set(["", "0.0.0.0", "::", "[::]"]);

/** An http(s) base on this machine: a development portal, never a public one. */
export function isLoopbackBaseUrl(baseUrl: string): boolean {
  try {
    const url = new URL(baseUrl);
    return (url.protocol === "http:" || url.protocol === "https:") && LOOPBACK_HOSTNAMES.has(url.hostname);
  } catch {
    return false;
  }
}

/**
 * The base URL a development portal serves when it listens at host:port. A loopback baseUrl follows
 * the listening origin (a newcomer's `PORT=8799 npm start` must link to 8799, not to the configured
 * port where nothing answers); the path prefix is kept. A public baseUrl, or a listening address
 * other machines use, is returned unchanged: those links are the operator's to choose.
 */
export function listeningBaseUrl(baseUrl: string, listening: { host: string; port: number }): string {
  if (!isLoopbackBaseUrl(baseUrl)) return baseUrl;
  const url = new URL(baseUrl);
  const host =
    listening.host.includes(":") && !listening.host.startsWith("[") ? `[${listening.host}]` : listening.host;
  if (!WILDCARD_HOSTS.has(host)) {
    if (!LOOPBACK_HOSTNAMES.has(host)) return baseUrl;
    url.hostname = host;
  }
  url.port = String(listening.port);
  // URL keeps a lone "/" path; baseUrl never ends in a slash.
  return url.toString().replace(/\/+$/, "");
}
