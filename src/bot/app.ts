/**
 * The Probot app: one function, mounted by a few-line adapter on Vercel (api/github/webhooks.ts),
 * run inside Actions (actions/report) and driven by tests. Handlers only translate payloads into
 * calls of src/bot/handle.ts; Probot verifies x-hub-signature-256 on the raw body before any of
 * them runs.
 */
import type { ApplicationFunction, Context, Probot } from "probot";
import type { GitHubApi, RepoRef } from "../github/api.ts";
import { splitRepository } from "../github/api.ts";
import type { FetchLike } from "../github/download.ts";
import {
  type BotOptions,
  handleSubmissionEvent,
  handleValidationRun,
  VALIDATE_WORKFLOW_PATH,
} from "./handle.ts";
import { intakeRelease } from "./release-intake.ts";

export interface SvcAppOptions {
  /** owner/name of the portal repository; pull request events from any other repository are ignored. */
  portalRepository: string;
  /** Trusted bot logins; resolved from GET /app (`slug[bot]`) when omitted. */
  botLogins?: string[];
  maxPackageBytes: number;
  dryRun?: boolean;
  fetch?: FetchLike;
  allowHttp?: boolean;
  validateWorkflowPath?: string;
}

const api = (context: Context): GitHubApi => context.octokit as unknown as GitHubApi;

export function createSvcApp(options: SvcAppOptions): ApplicationFunction {
  const portal = splitRepository(options.portalRepository);
  const isPortal = (fullName: string) => fullName.toLowerCase() === options.portalRepository.toLowerCase();

  return (app: Probot) => {
    let botLogins = options.botLogins;
    const botOptions = async (): Promise<BotOptions> => {
      if (!botLogins) {
        const appApi = (await app.auth()) as unknown as GitHubApi;
        const { data } = await appApi.rest.apps.getAuthenticated();
        botLogins = [`${data?.slug ?? "svc"}[bot]`];
      }
      return {
        botLogins,
        validateWorkflowPath: options.validateWorkflowPath ?? VALIDATE_WORKFLOW_PATH,
        log: (message) => app.log.info(message),
        ...(options.dryRun !== undefined ? { dryRun: options.dryRun } : {}),
      };
    };
    const repoOf = (context: { payload: { repository?: { full_name: string } } }): RepoRef | null => {
      const fullName = context.payload.repository?.full_name;
      return fullName && isPortal(fullName) ? portal : null;
    };

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

    app.on("workflow_run.completed", async (context) => {
      const repo = repoOf(context);
      if (!repo) return;
      const run = context.payload.workflow_run;
      await handleValidationRun(
        api(context),
        repo,
        {
          id: run.id,
          path: run.path,
          event: run.event,
          conclusion: run.conclusion,
          headSha: run.head_sha,
          htmlUrl: run.html_url,
        },
        await botOptions(),
      );
    });

    app.on("release.published", async (context) => {
      const fullName = context.payload.repository.full_name;
      if (isPortal(fullName)) return;
      const release = context.payload.release;
      // The mod repository's installation cannot write to the portal: act as the portal's installation.
      const appApi = (await app.auth()) as unknown as GitHubApi;
      const { data: installation } = await appApi.rest.apps.getRepoInstallation({ ...portal });
      const portalApi = (await app.auth(installation.id)) as unknown as GitHubApi;
      const result = await intakeRelease(
        portalApi,
        portal,
        {
          sourceRepository: fullName,
          htmlUrl: release.html_url,
          tagName: release.tag_name,
          body: release.body ?? "",
          authorLogin: release.author?.login ?? "",
          draft: release.draft,
          prerelease: release.prerelease,
          assets: release.assets.flatMap((a) =>
            a ? [{ name: a.name, browserDownloadUrl: a.browser_download_url, size: a.size }] : [],
          ),
        },
        {
          maxPackageBytes: options.maxPackageBytes,
          ...(options.fetch ? { fetch: options.fetch } : {}),
          ...(options.allowHttp ? { allowHttp: true } : {}),
          ...(options.dryRun !== undefined ? { dryRun: options.dryRun } : {}),
        },
      );
      if (result.ok)
        app.log.info(
          `release ${fullName}@${release.tag_name}: submission PR #${result.pullRequest ?? "(dry run)"}`,
        );
      else
        app.log.warn(
          `release ${fullName}@${release.tag_name} not submitted: ${result.code}: ${result.message}`,
        );
    });
  };
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
