import { SvcError } from "../errors.ts";

/**
 * Process settings from the environment, parsed once at the edge (CLI, Vercel function) and passed
 * down as a typed object; core modules never read process.env.
 */
export interface RuntimeSettings {
  /** SVC_LIVE_UPLOADS=1 opens uploads; anything else answers uploads_disabled. */
  liveUploads: boolean;
  /** Developer email modes: return-token puts tokens in responses; auto-verify verifies at creation. */
  devEmail: "off" | "return-token" | "auto-verify";
  emailWebhookUrl: string | null;
  emailWebhookSecret: string | null;
  bootstrapAdminEmails: string[];
  dataDir: string;
  databaseUrl: string | null;
  /**
   * SVC_PG_POOL_MAX: the most PostgreSQL connections one process holds. Every serverless instance
   * has its own pool, so the Vercel edge defaults to 2 (docs/api.md, "Deploying on Vercel").
   */
  databasePoolMax: number;
  /** The antivirus scanner: a clamd socket (SVC_CLAMD: path, unix:/path or host:port) or clamscan (SVC_CLAMSCAN). */
  antivirus: { clamd: string | null; clamscan: string | null; database: string | null };
  /**
   * GitHub-backed submissions: set when the portal repository and the GitHub App's credentials are
   * all given. Uploads then open a submission pull request through the app, and the API reads and
   * writes the PR-backed state (docs/github.md, "Uploads through the API").
   */
  github: GitHubSettings | null;
  /**
   * SVC_ACCEL_REDIRECT (e.g. /internal-downloads/): behind nginx, an authorized fast-lane download
   * answers with an empty body and `X-Accel-Redirect: {prefix}{site path}`, and nginx sends the bytes
   * from an `internal` location (docs/api.md, "Behind nginx"). Null: the portal sends the bytes.
   */
  accelRedirect: string | null;
}

export interface GitHubSettings {
  /** owner/name of the portal repository. */
  repository: string;
  appId: string;
  privateKey: string;
  /** https://api.github.com, or a GitHub Enterprise / test server. */
  apiUrl: string;
  /** Trusted bot logins (the app's `slug[bot]`); resolved from GET /app when empty. */
  botLogins: string[];
}

const REPOSITORY = /^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/;

/** SVC_PORTAL_REPOSITORY with the app's id and key (SVC_GITHUB_* or Probot's APP_ID / PRIVATE_KEY). */
export function parseGitHubSettings(env: Record<string, string | undefined>): GitHubSettings | null {
  const repository = env.SVC_PORTAL_REPOSITORY?.trim();
  if (!repository) return null;
  if (!REPOSITORY.test(repository))
    throw new SvcError("config_invalid", `SVC_PORTAL_REPOSITORY must be owner/name (got '${repository}')`);
  const appId = (env.SVC_GITHUB_APP_ID ?? env.APP_ID)?.trim();
  if (!appId || !/^\d+$/.test(appId))
    throw new SvcError(
      "config_invalid",
      "SVC_PORTAL_REPOSITORY is set but SVC_GITHUB_APP_ID (or APP_ID) is missing or not a number",
    );
  // Environment stores often flatten a PEM's newlines to \n.
  const privateKey = (env.SVC_GITHUB_PRIVATE_KEY ?? env.PRIVATE_KEY)?.trim().replace(/\\n/g, "\n");
  if (!privateKey?.includes("PRIVATE KEY"))
    throw new SvcError(
      "config_invalid",
      "SVC_PORTAL_REPOSITORY is set but SVC_GITHUB_PRIVATE_KEY (or PRIVATE_KEY) is missing or not a PEM key",
    );
  const apiUrl =
    (env.SVC_GITHUB_API_URL ?? env.GITHUB_API_URL)?.trim().replace(/\/+$/, "") || "https://api.github.com";
  if (!/^https:\/\/|^http:\/\/127\.0\.0\.1(:\d+)?$/.test(apiUrl))
    throw new SvcError("config_invalid", "SVC_GITHUB_API_URL must be an https URL (http only on loopback)");
  return {
    repository,
    appId,
    privateKey,
    apiUrl,
    botLogins: (env.SVC_BOT_LOGINS ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  };
}

/** A long-running server shares one pool between all its requests. */
export const DEFAULT_DATABASE_POOL_MAX = 10;

/** SVC_PG_POOL_MAX, shared by the portal's settings and the bot's queue store. */
export function parsePoolMax(value: string | undefined, fallback: number): number {
  const text = value?.trim();
  if (!text) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > 100)
    throw new SvcError(
      "config_invalid",
      `SVC_PG_POOL_MAX must be a whole number from 1 to 100 (got '${text}')`,
    );
  return Number(text);
}

export function parseSettings(
  env: Record<string, string | undefined>,
  defaults: { dataDir: string; databasePoolMax?: number },
): RuntimeSettings {
  const devEmail = env.SVC_DEV_EMAIL ?? "off";
  if (devEmail !== "off" && devEmail !== "return-token" && devEmail !== "auto-verify") {
    throw new SvcError(
      "config_invalid",
      `SVC_DEV_EMAIL must be off, return-token or auto-verify (got '${devEmail}')`,
    );
  }
  const webhookUrl = env.SVC_EMAIL_WEBHOOK_URL?.trim() || null;
  const webhookSecret = env.SVC_EMAIL_WEBHOOK_SECRET?.trim() || null;
  if (webhookUrl && !webhookSecret) {
    throw new SvcError(
      "config_invalid",
      "SVC_EMAIL_WEBHOOK_URL is set but SVC_EMAIL_WEBHOOK_SECRET is missing",
    );
  }
  if (webhookUrl && !/^https:\/\/|^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?\//.test(webhookUrl)) {
    throw new SvcError(
      "config_invalid",
      "SVC_EMAIL_WEBHOOK_URL must be an https URL (http only on loopback)",
    );
  }
  return {
    liveUploads: env.SVC_LIVE_UPLOADS === "1",
    devEmail,
    emailWebhookUrl: webhookUrl,
    emailWebhookSecret: webhookSecret,
    bootstrapAdminEmails: (env.SVC_BOOTSTRAP_ADMIN_EMAILS ?? "")
      .split(",")
      .map((e) => e.trim().toLowerCase())
      .filter(Boolean),
    dataDir: env.SVC_DATA_DIR?.trim() || defaults.dataDir,
    databaseUrl: env.DATABASE_URL?.trim() || null,
    databasePoolMax: parsePoolMax(env.SVC_PG_POOL_MAX, defaults.databasePoolMax ?? DEFAULT_DATABASE_POOL_MAX),
    antivirus: {
      clamd: env.SVC_CLAMD?.trim() || null,
      clamscan: env.SVC_CLAMSCAN?.trim() || null,
      database: env.SVC_CLAMAV_DATABASE?.trim() || null,
    },
    github: parseGitHubSettings(env),
    accelRedirect: parseAccelRedirect(env.SVC_ACCEL_REDIRECT),
  };
}

/** SVC_ACCEL_REDIRECT: an absolute URI prefix ending in /, of plain path characters (it goes into a header). */
function parseAccelRedirect(value: string | undefined): string | null {
  const prefix = value?.trim();
  if (!prefix) return null;
  if (!/^\/([A-Za-z0-9._~-]+\/)+$/.test(prefix)) {
    throw new SvcError(
      "config_invalid",
      `SVC_ACCEL_REDIRECT must be a path like /internal-downloads/ (starts and ends with /; got '${prefix}')`,
    );
  }
  return prefix;
}
