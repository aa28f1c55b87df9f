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
  /** The antivirus scanner: a clamd socket (SVC_CLAMD: path, unix:/path or host:port) or clamscan (SVC_CLAMSCAN). */
  antivirus: { clamd: string | null; clamscan: string | null; database: string | null };
}

export function parseSettings(
  env: Record<string, string | undefined>,
  defaults: { dataDir: string },
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
    antivirus: {
      clamd: env.SVC_CLAMD?.trim() || null,
      clamscan: env.SVC_CLAMSCAN?.trim() || null,
      database: env.SVC_CLAMAV_DATABASE?.trim() || null,
    },
  };
}
