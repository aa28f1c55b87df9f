import { createHmac } from "node:crypto";

/**
 * What the portal asks the mail system to send. "account_exists" and "sign_in_unavailable" exist so
 * that sign-up and magic-link requests do the same work (and take the same time) whether or not the
 * address has an account. "account_exists" has the fields of "verify_email" (token, expiresAt,
 * linkPath to the owner's own verify page: "you already have an account; confirm your address
 * here"); "sign_in_unavailable" carries no token and means "no account can sign in with this
 * address". The receiver may send a short note for either, or drop them.
 */
export type EmailType = "verify_email" | "magic_link" | "account_exists" | "sign_in_unavailable";

export interface EmailMessage {
  type: EmailType;
  to: string;
  displayName?: string;
  accountId?: string;
  /** The one-time token (verify_email, magic_link). */
  token?: string;
  expiresAt?: string;
  /**
   * The page the mail links to, below the portal's baseUrl, with the values in its query (e.g.
   * `/account/confirm/?token=…`): the page posts the token to the API. The link goes to a page and
   * never to an API route because the routes only take POST, which a mail client cannot send.
   */
  linkPath?: string;
}

/** The verification email's link: the verify page reads `account` and `token` and posts them. */
export function verifyEmailLinkPath(accountId: string, token: string): string {
  return `/account/verify/?account=${encodeURIComponent(accountId)}&token=${encodeURIComponent(token)}`;
}

/** The magic link: the confirm page reads `token` and exchanges it for a session. */
export function magicLinkPath(token: string): string {
  return `/account/confirm/?token=${encodeURIComponent(token)}`;
}

export interface EmailDelivery {
  /** "webhook" delivers for real; the dev modes print tokens to the console. */
  readonly mode: "webhook" | "return-token" | "auto-verify";
  send(message: EmailMessage): Promise<void>;
}

export class EmailDeliveryError extends Error {
  override readonly name = "EmailDeliveryError";
}

export const EMAIL_WEBHOOK_SCHEMA = "svc.email-webhook.v1";
export const EMAIL_SIGNATURE_HEADER = "x-svc-signature";

/** sha256=<hex HMAC-SHA256 of the exact bytes sent>; receivers verify it over the raw body. */
export function signWebhookBody(body: string | Buffer, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

export interface WebhookDeliveryOptions {
  url: string;
  secret: string;
  fetch?: typeof fetch;
  timeoutMs?: number;
  now?: () => Date;
  newId: () => string;
}

/** POSTs one signed JSON document per message; non-2xx, network errors and timeouts throw. */
export function createWebhookDelivery(options: WebhookDeliveryOptions): EmailDelivery {
  const doFetch = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? 5000;
  const now = options.now ?? (() => new Date());
  return {
    mode: "webhook",
    async send(message) {
      const body = JSON.stringify({
        schema: EMAIL_WEBHOOK_SCHEMA,
        id: options.newId(),
        createdAt: now().toISOString(),
        ...message,
      });
      let response: Response;
      try {
        response = await doFetch(options.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            [EMAIL_SIGNATURE_HEADER]: signWebhookBody(body, options.secret),
          },
          body,
          redirect: "error",
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        throw new EmailDeliveryError(`email webhook unreachable: ${(error as Error).message}`);
      }
      // Drain the body so the connection can be reused.
      await response.arrayBuffer().catch(() => undefined);
      if (!response.ok) throw new EmailDeliveryError(`email webhook answered HTTP ${response.status}`);
    },
  };
}

/** Developer delivery: prints what would be mailed. Explicit, and announced at start-up. */
export function createDevDelivery(
  mode: "return-token" | "auto-verify",
  log: (line: string) => void,
): EmailDelivery {
  return {
    mode,
    async send(message) {
      const who = `${message.to}${message.accountId ? ` (${message.accountId})` : ""}`;
      if (message.token) {
        const link = message.linkPath ? `, link ${message.linkPath}` : "";
        log(
          `[dev email] ${message.type} for ${who}: token ${message.token} (expires ${message.expiresAt})${link}`,
        );
      } else {
        log(`[dev email] ${message.type} for ${who}`);
      }
    },
  };
}
