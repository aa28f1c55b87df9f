/**
 * One release-intake delivery, from the intake app's webhook payload to the delivery's result:
 * the release intake (release-intake.ts) with its rate limits counted in the store
 * (intake-limits.ts), and the note a refused modder gets. The app's deployment (app.ts) calls it
 * from the queue.
 */
import type { EmitterWebhookEvent } from "@octokit/webhooks";
import type { GitHubApi, RepoRef } from "../github/api.ts";
import type { FetchLike } from "../github/download.ts";
import type { SqlExecutor } from "../store/store.ts";
import type { Delivery } from "./delivery-queue.ts";
import { intakeLimiter, leaveIntakeNote, readIntakeLimits } from "./intake-limits.ts";
import { intakeRelease, type PublishedRelease } from "./release-intake.ts";
import type { StatusKey } from "./status-seal.ts";

/** A published release in a mod repository, from the intake app's typed payload. */
export function publishedRelease(
  payload: EmitterWebhookEvent<"release.published">["payload"],
): PublishedRelease {
  const release = payload.release;
  return {
    sourceRepository: payload.repository.full_name,
    repositoryId: payload.repository.id,
    ownerLogin: payload.repository.owner.login,
    ownerId: payload.repository.owner.id,
    repositoryPrivate: payload.repository.private,
    htmlUrl: release.html_url,
    tagName: release.tag_name,
    body: release.body ?? "",
    // Not release.author: a workflow's release is authored by github-actions[bot] or the app it used.
    sender: { login: payload.sender?.login ?? "", type: payload.sender?.type ?? "" },
    publishedAt: release.published_at ?? null,
    draft: release.draft,
    prerelease: release.prerelease,
    assets: release.assets.flatMap((a) =>
      a ? [{ name: a.name, browserDownloadUrl: a.browser_download_url, size: a.size }] : [],
    ),
  };
}

export interface IntakeDeliveryOptions {
  portal: RepoRef;
  portalApi: GitHubApi;
  botLogins: readonly string[];
  statusKey: StatusKey;
  /** The queue's store: it holds the rate-limit windows too. */
  db: () => Promise<SqlExecutor>;
  maxPackageBytes: number;
  clock?: () => Date;
  fetch?: FetchLike;
  allowHttp?: boolean;
  dryRun?: boolean;
  log: (line: string) => void;
}

/**
 * The delivery's result line (kept in github_deliveries), or a throw when the queue should retry:
 * a download can fail for a moment; anything else is the release itself, answered once.
 */
export async function processIntakeDelivery(
  delivery: Delivery,
  options: IntakeDeliveryOptions,
): Promise<string> {
  const release = publishedRelease(delivery.payload as EmitterWebhookEvent<"release.published">["payload"]);
  const { portal, portalApi, db } = options;
  const clock = options.clock ?? (() => new Date());
  const result = await intakeRelease(portalApi, portal, release, {
    maxPackageBytes: options.maxPackageBytes,
    statusKey: options.statusKey,
    // Counted once per delivery: a retry of an admitted release is not another release.
    limiter:
      delivery.attempts > 1
        ? null
        : intakeLimiter({ db, rules: () => readIntakeLimits(portalApi, portal), clock }),
    clock,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.allowHttp ? { allowHttp: true } : {}),
    ...(options.dryRun !== undefined ? { dryRun: options.dryRun } : {}),
  });
  if (result.ok)
    return `submission pull request #${result.pullRequest ?? "(dry run)"} by ${result.submitter}${result.claim ? " (claims the mod id)" : ""}`;
  if (result.code === "download_failed") throw new Error(`${result.code}: ${result.message}`);
  options.log(
    `release ${release.sourceRepository}@${release.tagName} not submitted: ${result.code}: ${result.message}`,
  );
  if (!result.limited || !result.submitter) return `${result.code}: ${result.message}`;
  const noted = await leaveIntakeNote(
    portalApi,
    portal,
    {
      submitter: result.submitter,
      release: {
        fullName: release.sourceRepository,
        tagName: release.tagName,
        htmlUrl: release.htmlUrl,
        repositoryId: release.repositoryId,
        ownerLogin: release.ownerLogin,
        ownerId: release.ownerId,
      },
      refusal: result.limited,
    },
    { db, clock, botLogins: options.botLogins },
  );
  return `${result.code}: ${result.message}${noted ? ` (noted on #${noted})` : ""}`;
}
