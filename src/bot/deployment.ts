/**
 * The bot's HTTP edge, platform-free: the webhook endpoints (one per GitHub App) and the drain.
 *
 * A webhook is verified over its raw body (@octokit/webhooks' verify, HMAC-SHA256, constant time),
 * recorded in the delivery queue and answered 202 at once; its work runs after the response
 * (`defer`: Vercel's waitUntil, or nothing on a long-running server, where the promise simply runs).
 * Each delivery's background work drains everything due, so a delivery that failed earlier is
 * retried by the next one; the cron drain catches up when no delivery comes.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { Webhooks } from "@octokit/webhooks";
import type { Store } from "../store/store.ts";
import {
  type Delivery,
  type DeliveryApp,
  type DeliveryProcessor,
  type DrainSummary,
  describeError,
  drainDeliveries,
  enqueueDelivery,
  listDeliveries,
  type NewDelivery,
  pruneDeliveries,
  type QueueOptions,
} from "./delivery-queue.ts";

export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** A missing or invalid variable: answered 500 config_invalid (as the API does), naming the variable. */
export class BotConfigError extends Error {
  override name = "BotConfigError";
}

export interface WebhookEndpoint {
  app: DeliveryApp;
  /** The app's webhook secret; null answers 500 config_invalid naming secretVariable (fail closed). */
  secret: string | null;
  secretVariable: string;
  /** The serialisation key of an event the app acts on, or null to answer 200 and record nothing. */
  serialKey: (event: string, payload: unknown) => string | null;
}

export interface BotDeploymentOptions {
  openStore: () => Promise<Store>;
  endpoints: WebhookEndpoint[];
  process: DeliveryProcessor;
  onFailed?: (delivery: Delivery, error: string) => Promise<void>;
  /** Keeps background work alive after the response (Vercel's waitUntil). */
  defer: (work: Promise<unknown>) => void;
  /** CRON_SECRET: the drain endpoint answers only `Authorization: Bearer <it>`; null answers 500 config_invalid. */
  cronSecret: string | null;
  /**
   * How long one drain may claim work. The last delivery claimed still has to finish inside the
   * function's maxDuration (60 s), and a report takes ~20 s of GitHub calls (Octokit spaces writes
   * a second apart, as GitHub asks), so claiming stops at 30 s.
   */
  drainBudgetMs?: number;
  queue?: QueueOptions;
  clock?: () => Date;
  log?: (line: string) => void;
}

export interface BotDeployment {
  webhook(app: DeliveryApp): NodeHandler;
  drain: NodeHandler;
  /** Runs the queue now (what the background work and the cron endpoint do). */
  drainNow(): Promise<DrainSummary>;
  /** Records work derived from a delivery (the report of a validation run, for its pull request). */
  enqueue(delivery: NewDelivery): Promise<void>;
  /** The queue's store, which also holds release intake's rate-limit windows. */
  store(): Promise<Store>;
}

/** GitHub caps a webhook payload at 25 MB. */
const MAX_WEBHOOK_BYTES = 25 * 1024 * 1024;
const SIGNATURE = /^sha256=[0-9a-f]{64}$/;
const DELIVERY_ID = /^[A-Za-z0-9-]{1,100}$/;
const EVENT_NAME = /^[a-z_]{1,64}$/;
/** Done deliveries are kept this long so a redelivery is still recognised (GitHub offers three days). */
const KEEP_DONE_MS = 7 * 24 * 3600_000;

function answer(res: ServerResponse, status: number, body: Record<string, unknown>): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(text);
}

function fail(res: ServerResponse, status: number, code: string, message: string): void {
  answer(res, status, { code, message });
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of req) {
    total += (chunk as Buffer).length;
    if (total > max) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function header(req: IncomingMessage, name: string): string | null {
  const value = req.headers[name];
  return typeof value === "string" && value.length > 0 ? value : null;
}

/** Compares digests, so neither the length nor the content of the secret leaks through timing. */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

export function createBotDeployment(options: BotDeploymentOptions): BotDeployment {
  const clock = options.clock ?? (() => new Date());
  const budget = options.drainBudgetMs ?? 30_000;
  let storePromise: Promise<Store> | null = null;
  const store = async () => {
    storePromise ??= options.openStore().catch((error: unknown) => {
      // Not cached: a database that comes back (or a fixed variable) is picked up by the next request.
      storePromise = null;
      throw error;
    });
    return storePromise;
  };
  const verifiers = new Map<DeliveryApp, Webhooks>();
  for (const endpoint of options.endpoints)
    if (endpoint.secret) verifiers.set(endpoint.app, new Webhooks({ secret: endpoint.secret }));

  const drainNow = async (): Promise<DrainSummary> => {
    const db = await store();
    const summary = await drainDeliveries(db, options.process, {
      ...options.queue,
      clock,
      deadline: new Date(clock().getTime() + budget),
      ...(options.onFailed ? { onFailed: options.onFailed } : {}),
      ...(options.log ? { log: options.log } : {}),
    });
    await pruneDeliveries(db, new Date(clock().getTime() - KEEP_DONE_MS));
    return summary;
  };
  const drainInBackground = () => {
    options.defer(
      drainNow().catch((error: unknown) => options.log?.(`drain failed: ${describeError(error)}`)),
    );
  };

  const webhook = (app: DeliveryApp): NodeHandler => {
    const endpoint = options.endpoints.find((e) => e.app === app);
    if (!endpoint) throw new Error(`no webhook endpoint for the ${app} app`);
    return async (req, res) => {
      if (req.method !== "POST") {
        res.setHeader("allow", "POST");
        return fail(res, 405, "method_not_allowed", "GitHub delivers webhooks with POST");
      }
      const verifier = verifiers.get(app);
      if (!verifier)
        return fail(
          res,
          500,
          "config_invalid",
          `${endpoint.secretVariable} is not set: webhooks cannot be verified`,
        );
      const id = header(req, "x-github-delivery");
      const event = header(req, "x-github-event");
      const signature = header(req, "x-hub-signature-256");
      if (!id || !DELIVERY_ID.test(id) || !event || !EVENT_NAME.test(event) || !signature)
        return fail(
          res,
          400,
          "webhook_headers_invalid",
          "X-GitHub-Delivery, X-GitHub-Event and X-Hub-Signature-256 are required",
        );
      // Refused before a byte of the body is read: a signature that cannot be an HMAC-SHA256, or a
      // declared length over GitHub's cap. Only a plausible delivery costs reading up to 25 MB.
      if (!SIGNATURE.test(signature))
        return fail(res, 400, "signature_invalid", "x-hub-signature-256 is not sha256=<64 hex digits>");
      if (Number(req.headers["content-length"] ?? 0) > MAX_WEBHOOK_BYTES)
        return fail(res, 413, "payload_too_large", "a webhook payload is at most 25 MB");
      const body = await readBody(req, MAX_WEBHOOK_BYTES);
      if (!body) return fail(res, 413, "payload_too_large", "a webhook payload is at most 25 MB");
      // Over the bytes as received: a body re-serialised by anyone on the way no longer verifies.
      const text = body.toString("utf8");
      if (!(await verifier.verify(text, signature).catch(() => false)))
        return fail(res, 400, "signature_invalid", "x-hub-signature-256 does not match the body");
      let payload: unknown;
      try {
        payload = JSON.parse(text);
      } catch {
        return fail(res, 400, "payload_invalid", "the webhook body is not JSON");
      }
      if (event === "ping") return answer(res, 200, { delivery: id, status: "pong" });
      let status: Awaited<ReturnType<typeof enqueueDelivery>>;
      try {
        const serialKey = endpoint.serialKey(event, payload);
        if (!serialKey) return answer(res, 200, { delivery: id, status: "ignored" });
        const payloadSha256 = createHash("sha256").update(body).digest("hex");
        status = await enqueueDelivery(
          await store(),
          { id, app, event, payload, serialKey, payloadSha256 },
          clock(),
        );
      } catch (error) {
        // Not acknowledged: GitHub marks the delivery failed, and it can be redelivered.
        options.log?.(`delivery ${id} not recorded: ${describeError(error)}`);
        if (error instanceof BotConfigError) return fail(res, 500, "config_invalid", error.message);
        return fail(res, 500, "delivery_not_recorded", describeError(error));
      }
      answer(res, status === "duplicate" ? 200 : 202, { delivery: id, status });
      drainInBackground();
    };
  };

  const drain: NodeHandler = async (req, res) => {
    if (req.method !== "GET" && req.method !== "POST") {
      res.setHeader("allow", "GET, POST");
      return fail(res, 405, "method_not_allowed", "the drain answers GET (Vercel cron) and POST");
    }
    if (!options.cronSecret)
      return fail(res, 500, "config_invalid", "CRON_SECRET is not set: the drain endpoint is closed");
    const given = header(req, "authorization") ?? "";
    if (!sameSecret(given, `Bearer ${options.cronSecret}`))
      return fail(res, 401, "unauthorized", "Authorization: Bearer <CRON_SECRET> is required");
    try {
      const summary = await drainNow();
      const failed = (await listDeliveries(await store(), "failed")).map((d) => ({
        id: d.id,
        app: d.app,
        event: d.event,
        serialKey: d.serialKey,
        attempts: d.attempts,
        receivedAt: d.receivedAt.toISOString(),
        lastError: d.lastError,
      }));
      answer(res, 200, { ...summary, failedDeliveries: failed });
    } catch (error) {
      if (error instanceof BotConfigError) return fail(res, 500, "config_invalid", error.message);
      fail(res, 500, "drain_failed", describeError(error));
    }
  };

  return {
    webhook,
    drain,
    drainNow,
    async enqueue(delivery) {
      await enqueueDelivery(await store(), delivery, clock());
    },
    store,
  };
}
