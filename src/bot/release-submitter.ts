/**
 * The person behind a release, who becomes the submitter: never a bot account. A release published
 * by hand is its webhook `sender`'s. One published from a workflow (with its GITHUB_TOKEN, or an app
 * token minted there) is sent by a bot account, github-actions[bot] or `<app>[bot]`; the person is
 * then the `triggering_actor` of the workflow run that was running in the mod's repository when the
 * release was published: the account that started that run, or re-ran it. (`actor` would be whoever
 * started the first attempt, and a scheduled run's is the last editor of the workflow file.)
 *
 * The release webhook does not name the run, so it is found by time: the runs of the repository
 * created in the six hours before the release (a job on GitHub's runners ends by then) that had not
 * finished when it was published. Every one of them must have the same human triggering actor;
 * otherwise nobody can tell who published it, and the release is refused.
 */
import type { GitHubApi } from "../github/api.ts";
import { isBotAccount } from "./derive.ts";

export interface ReleaseSender {
  login: string;
  type: string;
}

export type SubmitterResolution =
  | { ok: true; login: string; via: "sender" | "workflow_run"; runIds: number[] }
  | { ok: false; code: "release_submitter_unknown" | "release_submitter_bot"; message: string };

const RUN_WINDOW_MS = 6 * 3600_000;

export async function resolveReleaseSubmitter(
  api: GitHubApi,
  release: { sourceRepository: string; sender: ReleaseSender; publishedAt: string | null },
  now: Date,
): Promise<SubmitterResolution> {
  const { sender } = release;
  if (sender.login && !isBotAccount(sender.login, sender.type))
    return { ok: true, login: sender.login, via: "sender", runIds: [] };
  const [owner, repo] = release.sourceRepository.split("/") as [string, string];
  const published = release.publishedAt ? new Date(release.publishedAt) : now;
  const from = new Date(published.getTime() - RUN_WINDOW_MS);
  // A public repository's runs are public: the portal app's token reads them without an installation
  // there. GitHub lists the newest first; a mod repository does not start a hundred runs in the
  // minutes between a release and its intake. (The `created` filter's range syntax is not in
  // GitHub's OpenAPI description, whose format is a single date-time, so it is not used.)
  const { data } = await api.rest.actions.listWorkflowRunsForRepo({
    owner,
    repo,
    exclude_pull_requests: true,
    per_page: 100,
  });
  const running = data.workflow_runs.filter((run) => {
    const created = new Date(run.created_at);
    return (
      created >= from &&
      created <= published &&
      (run.status !== "completed" || new Date(run.updated_at) >= published)
    );
  });
  const actors = new Map<string, { login: string; type: string }>();
  for (const run of running) {
    const actor = run.triggering_actor ?? run.actor;
    if (actor) actors.set(actor.login.toLowerCase(), { login: actor.login, type: actor.type });
  }
  const who = `${release.sourceRepository}'s release was published by ${sender.login || "an unknown account"}, a bot account`;
  if (actors.size !== 1)
    return {
      ok: false,
      code: "release_submitter_unknown",
      message: `${who}, and ${
        actors.size === 0
          ? "no workflow run of the repository was running when it was published"
          : `the workflow runs running when it was published were started by ${actors.size} different accounts`
      }: the person behind it cannot be told, so it is not submitted. Publish the release yourself, or from a workflow run only you started.`,
    };
  const [actor] = [...actors.values()] as [{ login: string; type: string }];
  if (isBotAccount(actor.login, actor.type))
    return {
      ok: false,
      code: "release_submitter_bot",
      message: `${who}, from a workflow run started by ${actor.login}, another bot account: a submitter is always a person. Start the release workflow yourself.`,
    };
  return { ok: true, login: actor.login, via: "workflow_run", runIds: running.map((r) => r.id) };
}
