/**
 * Drives the real bot deployment over real HTTP: the same functions api/_entries/github/*.ts export
 * (createBotFunctions: signature check on the raw body, the delivery queue in a real store, 202,
 * then the drain through the Probot app), mounted on a loopback server. Webhooks are real payloads
 * from @octokit/webhooks-examples, signed like GitHub signs them; every call the bot makes goes to
 * the fake GitHub (github-server.ts), which checks it against GitHub's OpenAPI description.
 */
import { generateKeyPairSync, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { sign } from "@octokit/webhooks-methods";
import { Probot, ProbotOctokit } from "probot";
import { type BotFunctions, createBotFunctions, type SvcAppOptions } from "../../src/bot/app.ts";
import { deriveStatusKey, type StatusKey } from "../../src/bot/status-seal.ts";
import type { QueueOptions } from "../../src/bot/delivery-queue.ts";
import type { NodeHandler } from "../../src/bot/deployment.ts";
import { createPgliteStore, migrate, type Store } from "../../src/store/index.ts";
import { BOT_LOGIN } from "./github-repository.ts";
import { type GitHubServer, startGitHubServer } from "./github-server.ts";
import { PORTAL } from "./webhook-payloads.ts";

export const WEBHOOK_SECRET = "test-webhook-secret-not-real";
export const INTAKE_WEBHOOK_SECRET = "test-intake-secret-not-real";
export const CRON_SECRET = "test-cron-secret-not-real-0123456789";
let privateKey: string | undefined;
export function testPrivateKey(): string {
  privateKey ??= generateKeyPairSync("rsa", { modulusLength: 2048 })
    .privateKey.export({ type: "pkcs1", format: "pem" })
    .toString();
  return privateKey;
}

/** The seal key the bot derives from testPrivateKey(): what the app's sealed records verify with. */
export function testStatusKey(): StatusKey {
  return deriveStatusKey(testPrivateKey());
}

let sharedStore: Promise<Store> | undefined;
/**
 * One migrated PGlite per test file (starting PGlite costs seconds); each bot started on it begins
 * with an empty queue.
 */
export async function testStore(): Promise<Store> {
  sharedStore ??= createPgliteStore(null).then(async (store) => {
    await migrate(store);
    return store;
  });
  const store = await sharedStore;
  await store.exec(
    "DELETE FROM github_deliveries; DELETE FROM github_delivery_keys; DELETE FROM rate_limit_buckets;",
  );
  return store;
}

/** Probot pointed at the loopback GitHub, as api/_entries/github/*.ts build it from APP_ID and PRIVATE_KEY. */
export function testProbot(github: GitHubServer): Probot {
  return new Probot({
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
}

export interface Delivered {
  status: number;
  text: string;
  /** From sending the request to the response: the webhook's acknowledgement. */
  ackMs: number;
  id: string;
}

export interface BotHarness {
  github: GitHubServer;
  store: Store;
  functions: BotFunctions;
  origin: string;
  webhookUrl: string;
  logs: string[];
  /**
   * Signs and posts a delivery (to the portal app's route, or the intake app's) and, unless
   * settle is false, waits for the background work it started.
   */
  deliver(
    name: string,
    payload: unknown,
    options?: { signature?: string; settle?: boolean; id?: string; app?: "portal" | "intake" },
  ): Promise<Delivered>;
  /** Waits until the background work of every delivery so far has finished. */
  settle(): Promise<void>;
  stop(): Promise<void>;
}

export interface BotHarnessOptions extends Partial<SvcAppOptions> {
  /** Another instance's GitHub and store: two harnesses on one store are two serverless instances. */
  github?: GitHubServer;
  store?: Store;
  /** Opens the store at the first request, as a cold instance does (default: the shared one, open). */
  openStore?: () => Promise<Store>;
  queue?: QueueOptions;
  /** The deployment's clock (the queue, release intake's rate-limit windows). */
  clock?: () => Date;
}

export async function startBot(overrides: BotHarnessOptions = {}): Promise<BotHarness> {
  const { github: givenGitHub, store: givenStore, openStore, queue, clock, ...appOptions } = overrides;
  const github = givenGitHub ?? (await startGitHubServer());
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
  let store: Store | null = givenStore ?? (openStore ? null : await testStore());
  const open = async (): Promise<Store> => {
    store ??= await openStore!();
    return store;
  };
  const pending: Array<Promise<unknown>> = [];
  const logs: string[] = [];
  const functions = createBotFunctions(
    {
      WEBHOOK_SECRET,
      INTAKE_WEBHOOK_SECRET,
      CRON_SECRET,
      SVC_PORTAL_REPOSITORY: PORTAL,
      PRIVATE_KEY: testPrivateKey(),
    },
    {
      defer: (work) => pending.push(work),
      openStore: open,
      probot: testProbot(github),
      appOptions: { botLogins: [BOT_LOGIN], allowHttp: true, ...appOptions },
      queue: { backoffMs: () => 0, ...queue },
      ...(clock ? { clock } : {}),
      log: (line) => logs.push(line),
    },
  );
  const routes: Record<string, NodeHandler> = {
    "/api/github/webhooks": functions.portalWebhook,
    "/api/github/intake": functions.intakeWebhook,
    "/api/github/drain": functions.drain,
  };
  const server: Server = createServer((req, res) => {
    const route = routes[new URL(req.url ?? "/", "http://x").pathname];
    if (!route) return void res.writeHead(404).end();
    void route(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const settle = async () => {
    while (pending.length > 0) await Promise.all(pending.splice(0));
  };
  return {
    github,
    get store(): Store {
      if (!store) throw new Error("the store opens at the first request");
      return store;
    },
    functions,
    origin,
    webhookUrl: `${origin}/api/github/webhooks`,
    logs,
    async deliver(name, payload, options = {}) {
      const body = JSON.stringify(payload);
      const secret = options.app === "intake" ? INTAKE_WEBHOOK_SECRET : WEBHOOK_SECRET;
      const signature = options.signature ?? (await sign(secret, body));
      const id = options.id ?? randomUUID();
      const started = performance.now();
      const response = await fetch(
        `${origin}/api/github/${options.app === "intake" ? "intake" : "webhooks"}`,
        {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "x-github-event": name,
            "x-github-delivery": id,
            "x-hub-signature-256": signature,
          },
          body,
        },
      );
      const ackMs = performance.now() - started;
      const text = await response.text();
      if (options.settle ?? true) await settle();
      return { status: response.status, text, ackMs, id };
    },
    settle,
    async stop() {
      await settle();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (!givenGitHub) await github.stop();
    },
  };
}
