import { timingSafeEqual } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { EmailMessage } from "../../src/accounts/email.ts";
import { EMAIL_SIGNATURE_HEADER, signWebhookBody } from "../../src/accounts/email.ts";
import { listen } from "../../src/http/server.ts";

/**
 * The mail system at the other end of SVC_EMAIL_WEBHOOK_URL, on loopback: it checks each POST's
 * signature over the raw body (a bad one is answered 401 and kept out of the inbox) and keeps the
 * messages, so a test can open the link a person would click.
 */
export interface Mailbox {
  /** The webhook URL to configure. */
  url: string;
  readonly secret: string;
  readonly inbox: EmailMessage[];
  /** The newest message of this type to this address, waiting for it up to timeoutMs. */
  waitFor(type: EmailMessage["type"], to: string, timeoutMs?: number): Promise<EmailMessage>;
  close(): Promise<void>;
}

export async function startMailbox(secret = "mailbox-secret"): Promise<Mailbox> {
  const inbox: EmailMessage[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const expected = Buffer.from(signWebhookBody(raw, secret));
      const given = Buffer.from(String(req.headers[EMAIL_SIGNATURE_HEADER] ?? ""));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        res.writeHead(401).end();
        return;
      }
      inbox.push(JSON.parse(raw.toString("utf8")) as EmailMessage);
      res.writeHead(204).end();
    });
  });
  const { port } = await listen(server, 0, "127.0.0.1");
  return {
    url: `http://127.0.0.1:${port}/mail`,
    secret,
    inbox,
    async waitFor(type, to, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = inbox.filter((m) => m.type === type && m.to === to).at(-1);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no ${type} mail to ${to} arrived`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
