/**
 * execute: performs a plan against GitHub. With dryRun it performs nothing and returns what it
 * would have sent, so a plan can be previewed (and an Actions run can be rehearsed).
 */
import type { GitHubApi, RepoRef } from "../github/api.ts";
import type { BotAction, Plan } from "./decide.ts";

export interface ExecuteOptions {
  dryRun?: boolean;
  /** The workflow file that applies hide/unhide to the catalog (publish.yml). */
  visibilityWorkflow?: string;
  defaultBranch?: string;
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
      for (const name of action.remove) {
        await api.rest.issues
          .removeLabel({ ...repo, issue_number: number, name })
          .catch((error: { status?: number }) => {
            if (error.status !== 404) throw error;
          });
      }
      await api.rest.issues.addLabels({ ...repo, issue_number: number, labels: [action.add] });
      return;
    case "upsert_status_comment":
      if (action.commentId === null)
        await api.rest.issues.createComment({ ...repo, issue_number: number, body: action.body });
      else await api.rest.issues.updateComment({ ...repo, comment_id: action.commentId, body: action.body });
      return;
    case "create_check_run":
      await api.rest.checks.create({
        ...repo,
        name: action.name,
        head_sha: action.headSha,
        status: "completed",
        conclusion: action.conclusion,
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
