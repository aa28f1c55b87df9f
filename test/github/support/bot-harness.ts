/**
 * Drives the real Probot app over real HTTP: webhooks are real payloads from
 * @octokit/webhooks-examples, signed like GitHub signs them, delivered to Probot's node middleware
 * (the same one api/github/webhooks.ts mounts); every call the app makes goes to GitHubApiServer.
 */
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { sign } from "@octokit/webhooks-methods";
import { createNodeMiddleware, Probot, ProbotOctokit } from "probot";
import { createSvcApp, type SvcAppOptions } from "../../../src/bot/app.ts";
import { GitHubApiServer } from "./github-api-server.ts";

const require = createRequire(import.meta.url);
const EXAMPLES = require("@octokit/webhooks-examples/api.github.com/index.json") as Array<{
  name: string;
  examples: Array<Record<string, unknown>>;
}>;

export const PORTAL = "Codertocat/Hello-World";
export const INSTALLATION_ID = 1;
export const WEBHOOK_SECRET = "test-webhook-secret-not-real";
export const BOT_LOGIN = "svc-portal[bot]";

/** A real payload for an event/action, deep-copied so a test may adjust it. */
export function examplePayload(name: string, action: string): Record<string, any> {
  const group = EXAMPLES.find((e) => e.name === name);
  const found = group?.examples.filter((e) => e.action === action) ?? [];
  const chosen = found.find((e) => e.installation) ?? found[0];
  if (!chosen) throw new Error(`no ${name}.${action} example in @octokit/webhooks-examples`);
  const copy = structuredClone(chosen) as Record<string, any>;
  // Only app deliveries carry an installation; the examples taken without one get the test's.
  copy.installation ??= { id: INSTALLATION_ID, node_id: "MDIzOkludGVncmF0aW9uSW5zdGFsbGF0aW9uMQ==" };
  return copy;
}

let privateKey: string | undefined;
function testPrivateKey(): string {
  privateKey ??= generateKeyPairSync("rsa", { modulusLength: 2048 })
    .privateKey.export({ type: "pkcs1", format: "pem" })
    .toString();
  return privateKey;
}

export interface BotHarness {
  github: GitHubApiServer;
  webhookUrl: string;
  deliver(
    name: string,
    payload: unknown,
    options?: { signature?: string },
  ): Promise<{ status: number; text: string }>;
  stop(): Promise<void>;
}

export async function startBot(overrides: Partial<SvcAppOptions> = {}): Promise<BotHarness> {
  const github = await new GitHubApiServer().start();
  // Installation tokens are fetched whenever Probot needs one; they are background calls.
  github.allow("POST /app/installations/{installation_id}/access_tokens", (req) => ({
    status: 201,
    body: {
      token: `ghs_test_${req.params.installation_id}`,
      expires_at: "2099-01-01T00:00:00Z",
      permissions: {},
      repository_selection: "all",
    },
  }));
  const probot = new Probot({
    appId: 1,
    privateKey: testPrivateKey(),
    secret: WEBHOOK_SECRET,
    baseUrl: github.url,
    logLevel: "fatal",
    // The secondary-rate-limit throttle spaces writes a second apart: right for GitHub, slow on loopback.
    Octokit: ProbotOctokit.defaults((options: Record<string, unknown>) => ({
      ...options,
      retry: { enabled: false },
      throttle: { enabled: false },
    })) as typeof ProbotOctokit,
  });
  const middleware = await createNodeMiddleware(
    createSvcApp({
      portalRepository: PORTAL,
      botLogins: [BOT_LOGIN],
      maxPackageBytes: 104857600,
      allowHttp: true,
      ...overrides,
    }),
    { probot, webhooksPath: "/api/github/webhooks" },
  );
  const server: Server = createServer((req, res) => {
    void middleware(req, res, () => res.writeHead(404).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const webhookUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/github/webhooks`;
  return {
    github,
    webhookUrl,
    async deliver(name, payload, options = {}) {
      const body = JSON.stringify(payload);
      const signature = options.signature ?? (await sign(WEBHOOK_SECRET, body));
      const response = await fetch(webhookUrl, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-github-event": name,
          "x-github-delivery": randomUUID(),
          "x-hub-signature-256": signature,
        },
        body,
      });
      return { status: response.status, text: await response.text() };
    },
    async stop() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await github.stop();
    },
  };
}
