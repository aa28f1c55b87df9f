/**
 * A repository's settings, as part of the one state model (github-repository.ts holds one of these):
 * its rulesets and what they enforce on a merge, classic branch protection, Pages, Actions
 * variables, environments with their secrets, the Actions token and fork-approval settings,
 * immutable releases, the GitHub Apps the API describes, and the rate-limit budget. The answers
 * of these routes read and write this state; the server completes them from GitHub's examples and
 * checks them against GitHub's OpenAPI description.
 *
 * What GitHub enforces is modelled, not assumed: a required status check is an exact context,
 * optionally pinned to an app (integration_id); a context that never reports keeps the merge
 * refused; a bypass actor skips the ruleset's rules.
 */
import { randomBytes } from "node:crypto";
import type { GitHubRepository, PullRequestState } from "./github-repository.ts";
import type { RecordedRequest, Reply, ReplyFunction } from "./github-server.ts";

/** A ruleset as GitHub stores it (the create body, plus its id). */
export interface RulesetState {
  id: number;
  name: string;
  target: "branch" | "tag" | "push";
  enforcement: "active" | "evaluate" | "disabled";
  conditions?: { ref_name?: { include?: string[]; exclude?: string[] } };
  rules?: Array<{ type: string; parameters?: Record<string, any> }>;
  bypass_actors?: Array<{ actor_id: number | null; actor_type: string; bypass_mode?: string }>;
}

/** A GitHub App as GET /apps/{app_slug} describes it. */
export interface AppState {
  id: number;
  slug: string;
  permissions: Record<string, string>;
  events: string[];
}

export interface EnvironmentState {
  /** all: any branch; protected: protected branches; a list: those branch names only. */
  branches: "all" | "protected" | string[];
  /** Required reviewers: a job waits for one of them. */
  reviewers: string[];
  secrets: string[];
}

export class RepositorySettings {
  rulesets: RulesetState[] = [];
  /** Classic branch protection on the default branch. */
  classicProtection = false;
  /** GitHub Pages, or null when it is off. */
  pages: { buildType: "workflow" | "legacy"; htmlUrl: string } | null = null;
  readonly variables = new Map<string, string>();
  readonly secrets: string[] = [];
  readonly environments = new Map<string, EnvironmentState>();
  workflowPermissions: { defaultPermissions: "read" | "write"; canApprovePullRequestReviews: boolean } = {
    defaultPermissions: "read",
    canApprovePullRequestReviews: false,
  };
  forkApprovalPolicy:
    | "first_time_contributors_new_to_github"
    | "first_time_contributors"
    | "all_external_contributors" = "first_time_contributors";
  immutableReleases = false;
  /** GitHub Apps by slug (GET /apps/{app_slug}). */
  readonly apps = new Map<string, AppState>();
  /** The core REST budget GET /rate_limit reports; every other API request spends one. */
  rateLimit = { limit: 5000, remaining: 5000 };
}

const PASSING = new Set(["success", "neutral", "skipped"]);

/** Whether a ruleset applies to the default branch (main here). */
function coversDefaultBranch(ruleset: RulesetState): boolean {
  const include = ruleset.conditions?.ref_name?.include ?? [];
  const exclude = ruleset.conditions?.ref_name?.exclude ?? [];
  const matches = (patterns: string[]) =>
    patterns.some((p) => p === "~DEFAULT_BRANCH" || p === "~ALL" || p === "refs/heads/main");
  return ruleset.target === "branch" && matches(include) && !matches(exclude);
}

/** Who a request is: an installation token (`ghs_`) is the portal app, anything else a person. */
export function requestActor(repo: GitHubRepository, req: RecordedRequest): { app: number | null } {
  const auth = String(req.headers.authorization ?? "");
  return { app: /\bghs_/.test(auth) ? repo.appId : null };
}

/**
 * Why the rulesets refuse to merge `pr` for this actor, in GitHub's words; empty when it may merge.
 * A bypass actor skips a ruleset entirely.
 */
export function mergeViolations(
  repo: GitHubRepository,
  pr: PullRequestState,
  actor: { app: number | null },
): string[] {
  const violations: string[] = [];
  for (const ruleset of repo.settings.rulesets) {
    if (ruleset.enforcement !== "active" || !coversDefaultBranch(ruleset)) continue;
    const bypass = (ruleset.bypass_actors ?? []).some(
      (a) => a.actor_type === "Integration" && actor.app !== null && a.actor_id === actor.app,
    );
    if (bypass) continue;
    for (const rule of ruleset.rules ?? []) {
      if (rule.type === "required_status_checks") {
        for (const required of rule.parameters?.required_status_checks ?? []) {
          // The newest run of that exact name on the head commit, from the pinned app when there is one.
          const run = [...repo.checkRuns]
            .reverse()
            .find(
              (r) =>
                r.head_sha === pr.headSha &&
                r.name === required.context &&
                (required.integration_id === undefined || r.appId === required.integration_id),
            );
          if (!run) violations.push(`Required status check "${required.context}" is expected.`);
          else if (run.status !== "completed")
            violations.push(`Required status check "${required.context}" is in progress.`);
          else if (!PASSING.has(run.conclusion))
            violations.push(`Required status check "${required.context}" has failed.`);
        }
      }
      if (rule.type === "pull_request") {
        const needed = Number(rule.parameters?.required_approving_review_count ?? 0);
        const latest = new Map<string, { state: string; commit_id: string }>();
        for (const review of pr.reviews) latest.set(review.user.login.toLowerCase(), review);
        const approvals = [...latest.values()].filter(
          (r) =>
            r.state === "APPROVED" &&
            (!rule.parameters?.dismiss_stale_reviews_on_push || r.commit_id === pr.headSha),
        ).length;
        if (approvals < needed)
          violations.push(
            `At least ${needed} approving review${needed === 1 ? " is" : "s are"} required by reviewers with write access.`,
          );
      }
    }
  }
  return violations;
}

const NOT_FOUND: Reply = { status: 404, body: { message: "Not Found" } };

/** The answers of the settings routes (merged into the repository's routes). */
export function settingsRoutes(repo: GitHubRepository): Record<string, ReplyFunction> {
  const settings = repo.settings;
  const rulesetBody = (r: RulesetState) => ({
    ...r,
    source_type: "Repository",
    source: repo.fullName,
    node_id: `RRS_${r.id}`,
    current_user_can_bypass: "never",
  });
  const environment = (req: RecordedRequest) => settings.environments.get(req.params.environment_name!);
  return {
    "GET /repos/{owner}/{repo}/rulesets": () => ({
      body: settings.rulesets.map((r) => ({
        id: r.id,
        name: r.name,
        target: r.target,
        enforcement: r.enforcement,
        source_type: "Repository",
        source: repo.fullName,
      })),
    }),
    "GET /repos/{owner}/{repo}/rulesets/{ruleset_id}": (req) => {
      const found = settings.rulesets.find((r) => r.id === Number(req.params.ruleset_id));
      return found ? { body: rulesetBody(found) } : NOT_FOUND;
    },
    "POST /repos/{owner}/{repo}/rulesets": (req) => {
      const ruleset = { ...(req.body as Omit<RulesetState, "id">), id: repo.newId() } as RulesetState;
      settings.rulesets.push(ruleset);
      return { status: 201, body: rulesetBody(ruleset) };
    },
    "GET /repos/{owner}/{repo}/branches/{branch}/protection": () =>
      settings.classicProtection
        ? { body: { url: `https://api.github.com/repos/${repo.fullName}/branches/main/protection` } }
        : { status: 404, body: { message: "Branch not protected" } },
    "PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge": (req) => {
      const pr = repo.pulls.get(Number(req.params.pull_number));
      if (!pr) return NOT_FOUND;
      if (pr.state !== "open" || pr.merged)
        return { status: 405, body: { message: "Pull Request is not mergeable" } };
      const sha = (req.body as { sha?: string } | undefined)?.sha;
      if (sha && sha !== pr.headSha)
        return {
          status: 409,
          body: { message: "Head branch was modified. Review and try the merge again." },
        };
      const violations = mergeViolations(repo, pr, requestActor(repo, req));
      if (violations.length > 0)
        return {
          status: 405,
          body: {
            message: `Repository rule violations found\n\n${violations.join("\n\n")}\n\n`,
            documentation_url:
              "https://docs.github.com/repositories/configuring-branches-and-merges-in-your-repository/managing-rulesets/about-rulesets",
          },
        };
      pr.merged = true;
      pr.state = "closed";
      pr.mergedAt = "2026-11-21T10:00:00Z";
      return {
        body: {
          sha: randomBytes(20).toString("hex"),
          merged: true,
          message: "Pull Request successfully merged",
        },
      };
    },
    // A dismissed review no longer counts for the pull_request rule.
    "PUT /repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}/dismissals": (req) => {
      const pr = repo.pulls.get(Number(req.params.pull_number));
      const review = pr?.reviews.find((r) => r.id === Number(req.params.review_id));
      if (!pr || !review) return NOT_FOUND;
      review.state = "DISMISSED";
      return {
        body: {
          id: review.id,
          state: "DISMISSED",
          user: { login: review.user.login, id: 1 },
          commit_id: review.commit_id,
        },
      };
    },
    "GET /repos/{owner}/{repo}/commits/{ref}/check-runs": (req) => {
      const name = req.query.get("check_name");
      const app = req.query.get("app_id");
      const runs = repo.checkRuns.filter(
        (r) =>
          r.head_sha === req.params.ref && (!name || r.name === name) && (!app || String(r.appId) === app),
      );
      // filter=latest (the default): the newest run of each name.
      const latest =
        req.query.get("filter") === "all"
          ? runs
          : runs.filter((r, i) => !runs.slice(i + 1).some((later) => later.name === r.name));
      return {
        body: {
          total_count: latest.length,
          check_runs: latest.map((r) => ({
            id: r.id,
            name: r.name,
            head_sha: r.head_sha,
            status: r.status,
            conclusion: r.conclusion ?? null,
            app: { id: r.appId, slug: `app-${r.appId}` },
          })),
        },
      };
    },
    "GET /repos/{owner}/{repo}/pages": () =>
      settings.pages
        ? {
            body: {
              url: `https://api.github.com/repos/${repo.fullName}/pages`,
              status: "built",
              cname: null,
              custom_404: false,
              html_url: settings.pages.htmlUrl,
              build_type: settings.pages.buildType,
              public: true,
              https_enforced: true,
            },
          }
        : NOT_FOUND,
    "GET /repos/{owner}/{repo}/actions/variables": () => ({
      body: {
        total_count: settings.variables.size,
        variables: [...settings.variables].map(([name, value]) => ({
          name,
          value,
          created_at: "2026-11-01T10:00:00Z",
          updated_at: "2026-11-01T10:00:00Z",
        })),
      },
    }),
    "GET /repos/{owner}/{repo}/actions/secrets": () => ({
      body: {
        total_count: settings.secrets.length,
        secrets: settings.secrets.map((name) => ({
          name,
          created_at: "2026-11-01T10:00:00Z",
          updated_at: "2026-11-01T10:00:00Z",
        })),
      },
    }),
    "GET /repos/{owner}/{repo}/environments/{environment_name}": (req) => {
      const env = environment(req);
      if (!env) return NOT_FOUND;
      const name = req.params.environment_name!;
      return {
        body: {
          id: 1,
          node_id: "EN_1",
          name,
          url: `https://api.github.com/repos/${repo.fullName}/environments/${name}`,
          html_url: `https://github.com/${repo.fullName}/deployments/activity_log?environments_filter=${name}`,
          created_at: "2026-11-01T10:00:00Z",
          updated_at: "2026-11-01T10:00:00Z",
          protection_rules:
            env.reviewers.length > 0
              ? [
                  {
                    id: 2,
                    node_id: "PR_2",
                    type: "required_reviewers",
                    reviewers: env.reviewers.map((login) => ({ type: "User", reviewer: { login, id: 3 } })),
                  },
                ]
              : [],
          deployment_branch_policy:
            env.branches === "all"
              ? null
              : {
                  protected_branches: env.branches === "protected",
                  custom_branch_policies: env.branches !== "protected",
                },
        },
      };
    },
    "GET /repos/{owner}/{repo}/environments/{environment_name}/deployment-branch-policies": (req) => {
      const env = environment(req);
      if (!env) return NOT_FOUND;
      const names = Array.isArray(env.branches) ? env.branches : [];
      return {
        body: {
          total_count: names.length,
          branch_policies: names.map((name, i) => ({ id: i + 1, node_id: `BP_${i}`, name, type: "branch" })),
        },
      };
    },
    "GET /repos/{owner}/{repo}/environments/{environment_name}/secrets": (req) => {
      const env = environment(req);
      if (!env) return NOT_FOUND;
      return {
        body: {
          total_count: env.secrets.length,
          secrets: env.secrets.map((name) => ({
            name,
            created_at: "2026-11-01T10:00:00Z",
            updated_at: "2026-11-01T10:00:00Z",
          })),
        },
      };
    },
    "GET /repos/{owner}/{repo}/actions/permissions/workflow": () => ({
      body: {
        default_workflow_permissions: settings.workflowPermissions.defaultPermissions,
        can_approve_pull_request_reviews: settings.workflowPermissions.canApprovePullRequestReviews,
      },
    }),
    "GET /repos/{owner}/{repo}/actions/permissions/fork-pr-contributor-approval": () => ({
      body: { approval_policy: settings.forkApprovalPolicy },
    }),
    "GET /repos/{owner}/{repo}/immutable-releases": () => ({
      body: { enabled: settings.immutableReleases, enforced_by_owner: false },
    }),
    "GET /apps/{app_slug}": (req) => {
      const app = settings.apps.get(req.params.app_slug!);
      if (!app) return NOT_FOUND;
      return {
        body: {
          id: app.id,
          slug: app.slug,
          node_id: `A_${app.id}`,
          client_id: `Iv1.${app.id}`,
          name: app.slug,
          permissions: app.permissions,
          events: app.events,
        },
      };
    },
    "GET /rate_limit": () => {
      const core = {
        ...settings.rateLimit,
        used: settings.rateLimit.limit - settings.rateLimit.remaining,
        reset: 4102444800,
      };
      return { body: { resources: { core }, rate: core } };
    },
  };
}
