import { AccountService } from "../accounts/account-service.ts";
import { createDevDelivery, createWebhookDelivery, type EmailDelivery } from "../accounts/email.ts";
import { defaultRandomBytes, newId, type RandomBytes } from "../accounts/secrets.ts";
import type { PortalConfig } from "../config/portal-config.ts";
import type { RuntimeSettings } from "../config/settings.ts";
import { createStore, type Store } from "../store/index.ts";
import type { AppContext } from "./context.ts";

export interface AppContextInput {
  config: PortalConfig;
  settings: RuntimeSettings;
  siteDir: string;
  recordsDir?: string;
  log: (line: string) => void;
  /** A store to use instead of the one the settings name (tests pass an in-memory PGlite). */
  store?: Store;
  now?: () => Date;
  random?: RandomBytes;
  fetch?: typeof fetch;
  clientIp?: AppContext["clientIp"];
  assumeHttps?: boolean;
  /** A development portal names how to reset rate limits in every rate_limit_exceeded. */
  rateLimitResetHint?: string;
}

/**
 * Email delivery as configured: the webhook when SVC_EMAIL_WEBHOOK_URL is set (real mail wins over
 * developer modes), else the explicit developer mode, else none (sign-up fails closed).
 */
export function emailDeliveryFor(
  settings: RuntimeSettings,
  deps: { log: (line: string) => void; random: RandomBytes; now: () => Date; fetch?: typeof fetch },
): EmailDelivery | null {
  if (settings.emailWebhookUrl && settings.emailWebhookSecret) {
    return createWebhookDelivery({
      url: settings.emailWebhookUrl,
      secret: settings.emailWebhookSecret,
      now: deps.now,
      newId: () => newId("mail", deps.random),
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
    });
  }
  if (settings.devEmail !== "off") return createDevDelivery(settings.devEmail, deps.log);
  return null;
}

export function describeEmailMode(settings: RuntimeSettings): string {
  if (settings.emailWebhookUrl) return "webhook";
  return settings.devEmail === "off" ? "unavailable" : `dev:${settings.devEmail}`;
}

/** The one place an AppContext is assembled: the local server, the Vercel adapter and the tests. */
export async function createAppContext(input: AppContextInput): Promise<AppContext> {
  const now = input.now ?? (() => new Date());
  const random = input.random ?? defaultRandomBytes;
  const store = input.store ?? (await createStore(input.settings));
  const email = emailDeliveryFor(input.settings, {
    log: input.log,
    random,
    now,
    ...(input.fetch ? { fetch: input.fetch } : {}),
  });
  const accounts = new AccountService({
    store,
    email,
    bootstrapAdminEmails: input.settings.bootstrapAdminEmails,
    rateLimits: input.config.limits.rateLimits,
    ...(input.rateLimitResetHint ? { rateLimitResetHint: input.rateLimitResetHint } : {}),
    now,
    random,
    log: input.log,
  });
  return {
    config: input.config,
    settings: input.settings,
    siteDir: input.siteDir,
    ...(input.recordsDir ? { recordsDir: input.recordsDir } : {}),
    startedAt: now(),
    now,
    log: input.log,
    store,
    accounts,
    ...(input.clientIp ? { clientIp: input.clientIp } : {}),
    ...(input.assumeHttps ? { assumeHttps: true } : {}),
  };
}
