/**
 * The Probot app and its deployment. Two GitHub Apps reach one deployment:
 *
 * - the portal app (app.yml), installed on the portal repository only: pull requests, reviews,
 *   `/svc` comments and validation runs become check runs, labels and the status comment;
 * - the release-intake app (app-intake.yml), public, installed by modders on their mod
 *   repositories with read-only rights: a published release opens the submission pull request on
 *   the portal, written with the portal app's installation token.
 *
 * Webhooks are acknowledged once recorded in the delivery queue (src/bot/deployment.ts); the work
 * runs afterwards, serialised per pull request (per release), through the app function below
 * (Probot's receive) or, for work derived from a delivery, straight through src/bot/handle.ts.
 */
import type { EmitterWebhookEvent } from "@octokit/webhooks";
import type { ApplicationFunction, Context, Probot } from "probot";
import type { GitHubApi, RepoRef } from "../github/api.ts";
import { splitRepository } from "../github/api.ts";
import type { FetchLike } from "../github/download.ts";
import type { Store } from "../store/store.ts";
import type { BotEvent } from "./decide.ts";
import type { Delivery, QueueOptions } from "./delivery-queue.ts";
import { parsePoolMax } from "../config/settings.ts";
import { type BotDeployment, BotConfigError, createBotDeployment, type NodeHandler } from "./deployment.ts";
import {
  type BotOptions,
  findPullRequestsOfRun,
  handleDeliveryFailure,
  handleSubmissionEvent,
  outcomeEvent,
  readValidationRun,
  VALIDATE_WORKFLOW_PATH,
  workflowRunInfo,
} from "./handle.ts";
import { processIntakeDelivery } from "./intake-delivery.ts";
import {
  intakeSerialKey,
  type Payload,
  portalSerialKey,
  pullRequestKey,
  VALIDATION_OUTCOME_EVENT,
} from "./serial-keys.ts";
import { deriveStatusKey, type StatusKey } from "./status-seal.ts";

export interface SvcAppOptions {
  /** owner/name of the portal repository; pull request events from any other repository are ignored. */
  portalRepository: string;
  /** Trusted bot logins; resolved from GET /app (`slug[bot]`) when omitted. */
  botLogins?: string[];
  /** The seal of the app's records; derived from PRIVATE_KEY when omitted. */
  statusKey?: StatusKey;
  maxPackageBytes: number;
  dryRun?: boolean;
  fetch?: FetchLike;
  allowHttp?: boolean;
  validateWorkflowPath?: string;
}

interface ValidationOutcomeJob {
  installationId: number;
  number: number;
  event: Extract<BotEvent, { kind: "report" | "validation_incomplete" | "run_awaiting_approval" }>;
}

const api = (context: Context): GitHubApi => context.octokit as unknown as GitHubApi;

/** The bot's moving parts around one Probot instance (the portal app's credentials). */
export interface SvcBot {
  appFn: ApplicationFunction;
  botOptions(): Promise<BotOptions>;
  /** An API for the portal repository: the delivery's installation, or the portal's own. */
  portalApi(installationId?: number | null): Promise<GitHubApi>;
}

export function createSvcBot(
  options: SvcAppOptions,
  probot: Pick<Probot, "auth">,
  followUps: Pick<BotDeployment, "enqueue">,
  log: (line: string) => void = () => {},
): SvcBot {
  const portal = splitRepository(options.portalRepository);
  const isPortal = (fullName: string) => fullName.toLowerCase() === options.portalRepository.toLowerCase();
  let botLogins = options.botLogins;
  const botOptions = async (): Promise<BotOptions> => {
    if (!botLogins) {
      const appApi = (await probot.auth()) as unknown as GitHubApi;
      const { data } = await appApi.rest.apps.getAuthenticated();
      botLogins = [`${data?.slug ?? "svc"}[bot]`];
    }
    if (!options.statusKey) throw new BotConfigError("the status seal key is missing (PRIVATE_KEY)");
    return {
      botLogins,
      statusKey: options.statusKey,
      validateWorkflowPath: options.validateWorkflowPath ?? VALIDATE_WORKFLOW_PATH,
      log,
      ...(options.dryRun !== undefined ? { dryRun: options.dryRun } : {}),
    };
  };
  let portalInstallation: number | null = null;
  const portalApi = async (installationId?: number | null): Promise<GitHubApi> => {
    if (installationId) return (await probot.auth(installationId)) as unknown as GitHubApi;
    if (!portalInstallation) {
      const appApi = (await probot.auth()) as unknown as GitHubApi;
      const { data: installation } = await appApi.rest.apps.getRepoInstallation({ ...portal });
      portalInstallation = installation.id;
    }
    return (await probot.auth(portalInstallation)) as unknown as GitHubApi;
  };
  const repoOf = (context: { payload: { repository?: { full_name: string } } }): RepoRef | null => {
    const fullName = context.payload.repository?.full_name;
    return fullName && isPortal(fullName) ? portal : null;
  };

  const appFn: ApplicationFunction = (app) => {
    app.on(["pull_request.opened", "pull_request.reopened", "pull_request.synchronize"], async (context) => {
      const repo = repoOf(context);
      if (!repo) return;
      const action = context.payload.action as "opened" | "reopened" | "synchronize";
      await handleSubmissionEvent(
        api(context),
        repo,
        context.payload.pull_request.number,
        { kind: "pushed", action },
        await botOptions(),
      );
    });

    app.on("pull_request.closed", async (context) => {
      const repo = repoOf(context);
      if (!repo) return;
      const merged = context.payload.pull_request.merged === true;
      await handleSubmissionEvent(
        api(context),
        repo,
        context.payload.pull_request.number,
        { kind: "closed", merged },
        await botOptions(),
      );
    });

    app.on("pull_request_review.submitted", async (context) => {
      const repo = repoOf(context);
      if (!repo) return;
      const review = context.payload.review;
      await handleSubmissionEvent(
        api(context),
        repo,
        context.payload.pull_request.number,
        {
          kind: "review_pending",
          reviewer: review.user?.login ?? "",
          verdict: review.state,
          commitId: review.commit_id ?? null,
          body: review.body ?? "",
        },
        await botOptions(),
      );
    });

    app.on("issue_comment.edited", async (context) => {
      const repo = repoOf(context);
      if (!repo || !context.payload.issue.pull_request) return;
      await handleSubmissionEvent(
        api(context),
        repo,
        context.payload.issue.number,
        {
          kind: "status_edit_pending",
          editor: context.payload.sender.login,
          commentId: context.payload.comment.id,
          previousBody: context.payload.changes.body?.from ?? null,
        },
        await botOptions(),
      );
    });

    app.on("issue_comment.created", async (context) => {
      const repo = repoOf(context);
      if (!repo || !context.payload.issue.pull_request) return;
      const body = context.payload.comment.body;
      if (!body.trimStart().startsWith("/svc")) return;
      await handleSubmissionEvent(
        api(context),
        repo,
        context.payload.issue.number,
        {
          kind: "comment_pending",
          commenter: context.payload.comment.user?.login ?? "",
          body: body.trimStart(),
        },
        await botOptions(),
      );
    });

    // The report is read (and re-validated) here; what it means for its pull request is queued
    // under that pull request's key, so it never runs beside another event of the same PR.
    app.on("workflow_run.completed", async (context) => {
      const repo = repoOf(context);
      if (!repo) return;
      const outcome = await readValidationRun(
        api(context),
        repo,
        workflowRunInfo(context.payload.workflow_run),
        await botOptions(),
      );
      if (outcome.kind === "ignored") {
        log(outcome.why);
        return;
      }
      const installationId = context.payload.installation?.id ?? 0;
      const jobs: ValidationOutcomeJob[] =
        outcome.kind === "report"
          ? [
              {
                installationId,
                number: outcome.number,
                event: { kind: "report", report: outcome.report, runUrl: outcome.runUrl },
              },
            ]
          : outcome.numbers.map((number) => ({ installationId, number, event: outcomeEvent(outcome) }));
      for (const job of jobs) {
        await followUps.enqueue({
          id: `${context.id}:pr-${job.number}`,
          app: "portal",
          event: VALIDATION_OUTCOME_EVENT,
          serialKey: pullRequestKey(options.portalRepository, job.number),
          payload: job,
        });
      }
    });
  };

  return { appFn, botOptions, portalApi };
}

export interface BotFunctionsOverrides {
  defer: (work: Promise<unknown>) => void;
  /** The migrated store; default: PostgreSQL at DATABASE_URL (a serverless instance has no disk to keep). */
  openStore?: () => Promise<Store>;
  /** Tests: a Probot pointed at a loopback GitHub. */
  probot?: Probot;
  appOptions?: Partial<SvcAppOptions>;
  queue?: QueueOptions;
  drainBudgetMs?: number;
  clock?: () => Date;
  log?: (line: string) => void;
}

export interface BotFunctions {
  /** POST /api/github/webhooks: the portal app. */
  portalWebhook: NodeHandler;
  /** POST /api/github/intake: the release-intake app. */
  intakeWebhook: NodeHandler;
  /** GET /api/github/drain: Vercel cron, `Authorization: Bearer $CRON_SECRET`. */
  drain: NodeHandler;
  deployment: BotDeployment;
}

/**
 * The three bot functions from the environment. Nothing is read until a request arrives, and a
 * missing variable is answered (500 config_invalid, naming it) instead of failing the function's import; the
 * webhook secret alone decides a signature, so a bad one is answered 400 even then.
 */
export function createBotFunctions(
  env: Record<string, string | undefined>,
  overrides: BotFunctionsOverrides,
): BotFunctions {
  const log = overrides.log ?? ((line: string) => console.error(line));
  let bot: SvcBot | null = null;
  let options: SvcAppOptions | null = null;
  const appOptions = (): SvcAppOptions => {
    if (!options) {
      try {
        options = { ...svcAppOptionsFromEnv(env), ...overrides.appOptions };
      } catch (error) {
        throw new BotConfigError((error as Error).message);
      }
    }
    return options;
  };
  // Derived with the first piece of work, like Probot: a webhook is acknowledged without it.
  const withStatusKey = (o: SvcAppOptions): SvcAppOptions => {
    if (o.statusKey) return o;
    const pem = env.PRIVATE_KEY?.trim();
    if (!pem?.includes("PRIVATE KEY"))
      throw new BotConfigError("PRIVATE_KEY is not set (the portal app's private key, PEM)");
    o.statusKey = deriveStatusKey(pem);
    return o;
  };
  const svcBot = async (): Promise<{ bot: SvcBot; probot: Probot }> => {
    const probot = overrides.probot ?? (await probotFromEnv(env));
    if (!bot) {
      bot = createSvcBot(withStatusKey(appOptions()), probot, deployment, log);
      await probot.load(bot.appFn, { cwd: process.cwd(), addHandler: () => {} });
    }
    return { bot, probot };
  };
  let probotInstance: Probot | null = null;
  // Probot is loaded with the first piece of work, never on the acknowledgement's path.
  const probotFromEnv = async (e: Record<string, string | undefined>): Promise<Probot> => {
    if (probotInstance) return probotInstance;
    const appId = e.APP_ID?.trim();
    const privateKey = e.PRIVATE_KEY?.trim().replace(/\\n/g, "\n");
    if (!appId || !/^\d+$/.test(appId)) throw new BotConfigError("APP_ID is not set (the portal app's id)");
    if (!privateKey?.includes("PRIVATE KEY"))
      throw new BotConfigError("PRIVATE_KEY is not set (the portal app's private key, PEM)");
    const { Probot, ProbotOctokit } = await import("probot");
    probotInstance = new Probot({
      appId,
      privateKey,
      secret: e.WEBHOOK_SECRET ?? "",
      ...(e.SVC_GITHUB_API_URL ? { baseUrl: e.SVC_GITHUB_API_URL } : {}),
      Octokit: ProbotOctokit,
      logLevel: "warn",
    });
    return probotInstance;
  };

  const processDelivery = async (delivery: Delivery): Promise<string | null> => {
    const { bot: svc, probot } = await svcBot();
    if (delivery.app === "intake") return processIntake(svc, delivery);
    if (delivery.event === VALIDATION_OUTCOME_EVENT) {
      const job = delivery.payload as ValidationOutcomeJob;
      const handled = await handleSubmissionEvent(
        await svc.portalApi(job.installationId),
        splitRepository(appOptions().portalRepository),
        job.number,
        job.event,
        await svc.botOptions(),
      );
      return handled.plan ? `${handled.plan.from} -> ${handled.plan.to}` : handled.log.join("; ");
    }
    await probot.receive({
      id: delivery.id,
      name: delivery.event,
      payload: delivery.payload,
    } as EmitterWebhookEvent);
    return null;
  };

  const processIntake = async (svc: SvcBot, delivery: Delivery): Promise<string> => {
    const o = appOptions();
    const bot = await svc.botOptions();
    return processIntakeDelivery(delivery, {
      portal: splitRepository(o.portalRepository),
      portalApi: await svc.portalApi(),
      botLogins: bot.botLogins,
      statusKey: bot.statusKey!,
      db: () => deployment.store(),
      maxPackageBytes: o.maxPackageBytes,
      log,
      ...(overrides.clock ? { clock: overrides.clock } : {}),
      ...(o.fetch ? { fetch: o.fetch } : {}),
      ...(o.allowHttp ? { allowHttp: true } : {}),
      ...(o.dryRun !== undefined ? { dryRun: o.dryRun } : {}),
    });
  };

  /** After the last retry: the pull requests the delivery was about say the bot could not update them. */
  const onFailed = async (delivery: Delivery, error: string): Promise<void> => {
    log(`delivery ${delivery.id} (${delivery.event}) failed after ${delivery.attempts} attempts: ${error}`);
    if (delivery.app !== "portal") return;
    const { bot: svc } = await svcBot();
    const o = appOptions();
    const repo = splitRepository(o.portalRepository);
    const payload = delivery.payload as Payload;
    const githubApi = await svc.portalApi(payload.installationId ?? payload.installation?.id ?? null);
    const key = /#(\d+)$/.exec(delivery.serialKey);
    const numbers = delivery.serialKey.startsWith("pr:")
      ? [Number(key?.[1])]
      : delivery.event === "workflow_run" && payload.workflow_run
        ? await findPullRequestsOfRun(githubApi, repo, workflowRunInfo(payload.workflow_run))
        : [];
    for (const number of numbers) {
      await handleDeliveryFailure(
        githubApi,
        repo,
        number,
        { event: delivery.event, deliveryId: delivery.id, attempts: delivery.attempts, error },
        await svc.botOptions(),
      );
    }
  };

  const guarded =
    (key: (o: SvcAppOptions) => (event: string, payload: unknown) => string | null) =>
    (event: string, payload: unknown) =>
      key(appOptions())(event, payload);

  const deployment = createBotDeployment({
    openStore: overrides.openStore ?? (() => openStoreFromEnv(env)),
    endpoints: [
      {
        app: "portal",
        secret: env.WEBHOOK_SECRET?.trim() || null,
        secretVariable: "WEBHOOK_SECRET",
        serialKey: guarded((o) => portalSerialKey(o.portalRepository)),
      },
      {
        app: "intake",
        secret: env.INTAKE_WEBHOOK_SECRET?.trim() || null,
        secretVariable: "INTAKE_WEBHOOK_SECRET",
        serialKey: guarded((o) => intakeSerialKey(o.portalRepository)),
      },
    ],
    process: processDelivery,
    onFailed,
    defer: overrides.defer,
    cronSecret: env.CRON_SECRET?.trim() || null,
    drainBudgetMs: overrides.drainBudgetMs ?? drainSeconds(env.SVC_BOT_DRAIN_SECONDS) * 1000,
    ...(overrides.queue ? { queue: overrides.queue } : {}),
    ...(overrides.clock ? { clock: overrides.clock } : {}),
    log,
  });
  return {
    portalWebhook: deployment.webhook("portal"),
    intakeWebhook: deployment.webhook("intake"),
    drain: deployment.drain,
    deployment,
  };
}

/** SVC_BOT_DRAIN_SECONDS: 1..800 (Vercel's longest maxDuration); anything else is the default. */
function drainSeconds(value: string | undefined): number {
  const seconds = Number(value ?? 30);
  return Number.isFinite(seconds) && seconds >= 1 && seconds <= 800 ? seconds : 30;
}

/**
 * The queue must outlive an instance and be shared by all of them: PostgreSQL only. Two
 * connections per instance (SVC_PG_POOL_MAX) are plenty for one webhook at a time.
 */
async function openStoreFromEnv(env: Record<string, string | undefined>): Promise<Store> {
  const url = env.DATABASE_URL?.trim();
  if (!url)
    throw new BotConfigError(
      "DATABASE_URL is not set: the bot records every webhook in PostgreSQL before answering, so no delivery is lost",
    );
  const { createStore } = await import("../store/index.ts");
  let max: number;
  try {
    max = parsePoolMax(env.SVC_PG_POOL_MAX, 2);
  } catch (error) {
    throw new BotConfigError((error as Error).message);
  }
  // With a database URL the data folder is never used: no PGlite is loaded.
  return createStore({ databaseUrl: url, databasePoolMax: max, dataDir: "" });
}

/** Parses the adapter's environment once; a missing variable fails closed with its name. */
export function svcAppOptionsFromEnv(env: Record<string, string | undefined>): SvcAppOptions {
  const portalRepository = env.SVC_PORTAL_REPOSITORY ?? env.GITHUB_REPOSITORY;
  if (!portalRepository)
    throw new Error("SVC_PORTAL_REPOSITORY is not set (owner/name of the portal repository)");
  const max = Number(env.SVC_MAX_PACKAGE_BYTES ?? 104857600);
  if (!Number.isInteger(max) || max < 1 || max > 104857600)
    throw new Error("SVC_MAX_PACKAGE_BYTES must be an integer in 1..104857600");
  return {
    portalRepository,
    maxPackageBytes: max,
    ...(env.SVC_BOT_LOGINS
      ? {
          botLogins: env.SVC_BOT_LOGINS.split(",")
            .map((s) => s.trim())
            .filter(Boolean),
        }
      : {}),
    ...(env.SVC_DRY_RUN === "1" ? { dryRun: true } : {}),
  };
}
