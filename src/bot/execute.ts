/**
 * execute: performs a plan against GitHub. With dryRun it performs nothing and returns what it
 * would have sent, so a plan can be previewed (and an Actions run can be rehearsed).
 */
import type { GitHubApi, RepoRef } from "../github/api.ts";
import { replaceStoredStatus, STATE_LABEL_PREFIX, STATUS_MARKER } from "./comments.ts";
import type { BotAction, Plan } from "./decide.ts";
import { isBot } from "./derive.ts";
import { type StatusKey, sealStatus } from "./status-seal.ts";

export interface ExecuteOptions {
  dryRun?: boolean;
  /** The workflow file that applies hide/unhide to the catalog (publish.yml). */
  visibilityWorkflow?: string;
  defaultBranch?: string;
  /** Whose status comments count when duplicates are cleaned up after a create. */
  botLogins?: readonly string[];
  /** Seals the stored state as it is written; null writes it unsealed (the Actions reporter without the app's key). */
  statusKey?: StatusKey | null;
  clock?: () => Date;
}

/** The status comment's body as it is written: the stored state sealed for this pull request, now. */
function statusBody(
  action: Extract<BotAction, { type: "upsert_status_comment" }>,
  repo: RepoRef,
  number: number,
  options: ExecuteOptions,
): string {
  if (!options.statusKey) return replaceStoredStatus(action.body, action.stored);
  const scope = { repository: `${repo.owner}/${repo.repo}`, pullRequest: number };
  const now = (options.clock ?? (() => new Date()))();
  return replaceStoredStatus(action.body, sealStatus(options.statusKey, scope, action.stored, now));
}

export interface ExecutedAction {
  action: BotAction;
  performed: boolean;
}

export async function executePlan(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
  plan: Plan,
  options: ExecuteOptions = {},
): Promise<ExecutedAction[]> {
  const done: ExecutedAction[] = [];
  for (const action of plan.actions) {
    if (!options.dryRun) await perform(api, repo, number, action, options);
    done.push({ action, performed: !options.dryRun });
  }
  return done;
}

async function perform(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
  action: BotAction,
  options: ExecuteOptions,
) {
  switch (action.type) {
    case "set_state_label":
      for (const name of action.remove) await removeLabel(api, repo, number, name);
      {
        const { data: labels } = await api.rest.issues.addLabels({
          ...repo,
          issue_number: number,
          labels: [action.add],
        });
        // A state label another writer added meanwhile: the label mirrors the one state just written.
        for (const stale of labels.filter(
          (l) => l.name.startsWith(STATE_LABEL_PREFIX) && l.name !== action.add,
        ))
          await removeLabel(api, repo, number, stale.name);
      }
      return;
    case "upsert_status_comment": {
      const body = statusBody(action, repo, number, options);
      if (action.commentId === null) {
        const { data: created } = await api.rest.issues.createComment({
          ...repo,
          issue_number: number,
          body,
        });
        await keepOneStatusComment(api, repo, number, created.id, body, options.botLogins ?? []);
      } else await api.rest.issues.updateComment({ ...repo, comment_id: action.commentId, body });
      return;
    }
    case "add_label":
      await api.rest.issues.addLabels({ ...repo, issue_number: number, labels: [action.name] });
      return;
    case "remove_label":
      await removeLabel(api, repo, number, action.name);
      return;
    case "close_pull_request":
      await api.rest.pulls.update({ ...repo, pull_number: number, state: "closed" });
      return;
    case "delete_branch":
      await deleteBranch(api, repo, action.ref);
      return;
    case "merge_pull_request":
      await api.rest.pulls.merge({ ...repo, pull_number: number, sha: action.sha });
      return;
    case "rerun_validation":
      await api.rest.actions.reRunWorkflow({ ...repo, run_id: action.runId });
      return;
    case "create_check_run":
      await api.rest.checks.create({
        ...repo,
        name: action.name,
        head_sha: action.headSha,
        ...(action.conclusion === null
          ? { status: "in_progress" as const }
          : { status: "completed" as const, conclusion: action.conclusion }),
        output: {
          title: action.title,
          summary: action.summary,
          ...(action.text ? { text: action.text } : {}),
          ...(action.annotations.length > 0 ? { annotations: action.annotations } : {}),
        },
      });
      return;
    case "dismiss_review":
      await api.rest.pulls.dismissReview({
        ...repo,
        pull_number: number,
        review_id: action.reviewId,
        message: action.message,
      });
      return;
    case "reply":
      await api.rest.issues.createComment({ ...repo, issue_number: number, body: action.body });
      return;
    case "dispatch_visibility":
      await api.rest.actions.createWorkflowDispatch({
        ...repo,
        workflow_id: options.visibilityWorkflow ?? "publish.yml",
        ref: options.defaultBranch ?? "main",
        inputs: {
          visibility: action.action,
          modId: action.modId,
          version: action.version,
          pullRequest: String(number),
        },
      });
      return;
  }
}

/**
 * Deletes refs/heads/{ref}. GitHub answers 422 "Reference does not exist" (or 404) for a branch
 * already gone (deleted by hand, by "Automatically delete head branches", or by an earlier delivery
 * of the same event): the branch is gone, which is what was asked.
 */
async function deleteBranch(api: GitHubApi, repo: RepoRef, ref: string): Promise<void> {
  await api.rest.git.deleteRef({ ...repo, ref: `heads/${ref}` }).catch((error: { status?: number }) => {
    if (error.status !== 404 && error.status !== 422) throw error;
  });
}

async function removeLabel(api: GitHubApi, repo: RepoRef, number: number, name: string): Promise<void> {
  await api.rest.issues
    .removeLabel({ ...repo, issue_number: number, name })
    .catch((error: { status?: number }) => {
      if (error.status !== 404) throw error;
    });
}

/**
 * Convergence after creating a status comment: two writers that both found none (an API decision
 * beside a webhook, or an instance whose lease expired) each created one. Every writer re-lists,
 * keeps the oldest and deletes the rest, so the pull request ends with one; a writer whose own
 * comment was the newer one moves its text into the survivor, since it wrote last.
 */
async function keepOneStatusComment(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
  createdId: number,
  body: string,
  botLogins: readonly string[],
): Promise<void> {
  const comments = await api.paginate(api.rest.issues.listComments, {
    ...repo,
    issue_number: number,
    per_page: 100,
  });
  const status = comments
    .filter(
      (c) =>
        (c.id === createdId || isBot(c.user?.login ?? "", botLogins)) &&
        (c.body ?? "").startsWith(STATUS_MARKER),
    )
    .sort((a, b) => a.id - b.id);
  const survivor = status[0];
  if (!survivor || status.length < 2) return;
  for (const extra of status.slice(1)) {
    await api.rest.issues
      .deleteComment({ ...repo, comment_id: extra.id })
      .catch((error: { status?: number }) => {
        if (error.status !== 404) throw error;
      });
  }
  if (survivor.id !== createdId)
    await api.rest.issues.updateComment({ ...repo, comment_id: survivor.id, body });
}
