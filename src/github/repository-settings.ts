/**
 * A repository's settings as the operator's token reads them through the REST API, as plain data:
 * the rulesets that apply to the default branch (each read in full), classic branch protection,
 * Pages, Actions variables and secrets, an environment with its branch policy, reviewers and
 * secrets, the Actions token and fork-approval settings, immutable releases, and a GitHub App's
 * description. Nothing is judged here (src/pipeline/github-doctor.ts does that); a read GitHub
 * refuses is recorded with its status, since a token without admin rights sees less.
 */
import type { GitHubApi, RepoRef } from "./api.ts";

/** A read that GitHub refused or that does not exist; `status` 404 is "not there" for most reads. */
export interface Unreadable {
  unreadable: true;
  status: number | null;
  message: string;
}

export type Read<T> = T | Unreadable;

export function isUnreadable<T>(value: Read<T>): value is Unreadable {
  return typeof value === "object" && value !== null && (value as Unreadable).unreadable === true;
}

export interface LiveRule {
  type: string;
  parameters?: Record<string, unknown>;
}

export interface LiveRuleset {
  id: number;
  name: string;
  target: string;
  enforcement: string;
  /** Repository, Organization or Enterprise. */
  sourceType: string;
  include: string[];
  exclude: string[];
  rules: LiveRule[];
  /** null when the token may not see them (only admins do). */
  bypassActors: Array<{ actorId: number | null; actorType: string; bypassMode: string }> | null;
}

export interface LiveEnvironment {
  /** all: any branch may deploy; protected: protected branches; custom: the names listed. */
  branchPolicy: "all" | "protected" | "custom";
  customBranches: string[];
  reviewers: number;
  secrets: Read<string[]>;
}

export interface LiveApp {
  id: number;
  slug: string;
  permissions: Record<string, string>;
  events: string[];
}

export interface LiveSettings {
  repository: string;
  defaultBranch: string;
  rulesets: Read<LiveRuleset[]>;
  /** Classic protection on the default branch: true, false, or unreadable. */
  classicProtection: Read<boolean>;
  pages: Read<{ buildType: string; htmlUrl: string | null } | null>;
  variables: Read<Record<string, string>>;
  secrets: Read<string[]>;
  environment: Read<LiveEnvironment | null>;
  workflowPermissions: Read<{ defaultPermissions: string; canApprovePullRequestReviews: boolean }>;
  forkApprovalPolicy: Read<string>;
  immutableReleases: Read<boolean>;
  /** Whether the default branch still holds a committed site/ (site/api/v1/catalog.json). */
  siteCommitted?: Read<boolean>;
  /** The app named by SVC_BOT_LOGINS (`<slug>[bot]`); null when no slug is known. */
  app: Read<LiveApp> | null;
}

async function read<T>(work: () => Promise<T>): Promise<Read<T>> {
  try {
    return await work();
  } catch (error) {
    const e = error as { status?: number; message?: string };
    return {
      unreadable: true,
      status: typeof e.status === "number" ? e.status : null,
      message: e.message ?? String(error),
    };
  }
}

/** 404 as a value: the setting is off (no Pages site, no environment, no protection). */
async function orNone<T>(work: () => Promise<T>, none: T): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if ((error as { status?: number }).status === 404) return none;
    throw error;
  }
}

type Raw = Record<string, unknown>;

function rulesetOf(raw: Raw): LiveRuleset {
  const refName = ((raw.conditions as Raw | undefined)?.ref_name ?? {}) as {
    include?: string[];
    exclude?: string[];
  };
  const actors = raw.bypass_actors as Array<Raw> | undefined;
  return {
    id: Number(raw.id),
    name: String(raw.name ?? ""),
    target: String(raw.target ?? "branch"),
    enforcement: String(raw.enforcement ?? ""),
    sourceType: String(raw.source_type ?? "Repository"),
    include: refName.include ?? [],
    exclude: refName.exclude ?? [],
    rules: ((raw.rules as LiveRule[] | undefined) ?? []).map((r) => ({
      type: r.type,
      ...(r.parameters ? { parameters: r.parameters } : {}),
    })),
    bypassActors: actors
      ? actors.map((a) => ({
          actorId: typeof a.actor_id === "number" ? a.actor_id : null,
          actorType: String(a.actor_type ?? ""),
          bypassMode: String(a.bypass_mode ?? "always"),
        }))
      : null,
  };
}

export async function readRepositorySettings(
  api: GitHubApi,
  repo: RepoRef,
  options: { environment: string; appSlug: string | null },
): Promise<LiveSettings> {
  const { data: repository } = await api.rest.repos.get({ ...repo });
  const defaultBranch = repository.default_branch;
  const rulesets = await read(async () => {
    const list = (await api.paginate("GET /repos/{owner}/{repo}/rulesets", {
      ...repo,
      includes_parents: true,
      per_page: 100,
    })) as Raw[];
    const full: LiveRuleset[] = [];
    for (const summary of list) {
      const { data } = await api.request("GET /repos/{owner}/{repo}/rulesets/{ruleset_id}", {
        ...repo,
        ruleset_id: Number(summary.id),
        includes_parents: true,
      });
      full.push(rulesetOf(data as Raw));
    }
    return full;
  });
  const classicProtection = await read(() =>
    orNone(async () => {
      await api.request("GET /repos/{owner}/{repo}/branches/{branch}/protection", {
        ...repo,
        branch: defaultBranch,
      });
      return true;
    }, false),
  );
  const pages = await read(() =>
    orNone(async () => {
      const { data } = await api.request("GET /repos/{owner}/{repo}/pages", { ...repo });
      const raw = data as Raw;
      return {
        buildType: String(raw.build_type ?? "legacy"),
        htmlUrl: typeof raw.html_url === "string" ? raw.html_url : null,
      };
    }, null),
  );
  const variables = await read(async () => {
    const list = (await api.paginate("GET /repos/{owner}/{repo}/actions/variables", {
      ...repo,
      per_page: 30,
    })) as Raw[];
    return Object.fromEntries(list.map((v) => [String(v.name), String(v.value ?? "")]));
  });
  const secrets = await read(async () => {
    const list = (await api.paginate("GET /repos/{owner}/{repo}/actions/secrets", {
      ...repo,
      per_page: 100,
    })) as Raw[];
    return list.map((s) => String(s.name));
  });
  const environment = await read(() =>
    orNone(async (): Promise<LiveEnvironment | null> => {
      const { data } = await api.request("GET /repos/{owner}/{repo}/environments/{environment_name}", {
        ...repo,
        environment_name: options.environment,
      });
      const raw = data as Raw;
      const policy = raw.deployment_branch_policy as {
        protected_branches?: boolean;
        custom_branch_policies?: boolean;
      } | null;
      const branchPolicy = !policy ? "all" : policy.protected_branches ? "protected" : "custom";
      let customBranches: string[] = [];
      if (branchPolicy === "custom") {
        const { data: policies } = await api.request(
          "GET /repos/{owner}/{repo}/environments/{environment_name}/deployment-branch-policies",
          { ...repo, environment_name: options.environment, per_page: 100 },
        );
        customBranches = ((policies as Raw).branch_policies as Raw[]).map((p) =>
          p.type === "tag" ? `tag:${String(p.name)}` : String(p.name),
        );
      }
      const rules = (raw.protection_rules as Raw[] | undefined) ?? [];
      const reviewers = rules
        .filter((r) => r.type === "required_reviewers")
        .reduce((n, r) => n + ((r.reviewers as unknown[] | undefined)?.length ?? 0), 0);
      const envSecrets = await read(async () => {
        const { data: listed } = await api.request(
          "GET /repos/{owner}/{repo}/environments/{environment_name}/secrets",
          {
            ...repo,
            environment_name: options.environment,
            per_page: 100,
          },
        );
        return ((listed as Raw).secrets as Raw[]).map((s) => String(s.name));
      });
      return { branchPolicy, customBranches, reviewers, secrets: envSecrets };
    }, null),
  );
  const workflowPermissions = await read(async () => {
    const { data } = await api.request("GET /repos/{owner}/{repo}/actions/permissions/workflow", { ...repo });
    const raw = data as Raw;
    return {
      defaultPermissions: String(raw.default_workflow_permissions),
      canApprovePullRequestReviews: raw.can_approve_pull_request_reviews === true,
    };
  });
  const forkApprovalPolicy = await read(async () => {
    const { data } = await api.request(
      "GET /repos/{owner}/{repo}/actions/permissions/fork-pr-contributor-approval",
      {
        ...repo,
      },
    );
    return String((data as Raw).approval_policy);
  });
  const immutableReleases = await read(() =>
    orNone(async () => {
      const { data } = await api.request("GET /repos/{owner}/{repo}/immutable-releases", { ...repo });
      return (data as Raw).enabled === true;
    }, false),
  );
  // site/ is a build output: the publish job refuses to push over a branch that still commits it.
  const siteCommitted = await read(() =>
    orNone(async () => {
      await api.request("GET /repos/{owner}/{repo}/contents/{path}", {
        ...repo,
        path: "site/api/v1/catalog.json",
        ref: defaultBranch,
      });
      return true;
    }, false),
  );
  const app =
    options.appSlug === null
      ? null
      : await read(async () => {
          const { data } = await api.request("GET /apps/{app_slug}", { app_slug: options.appSlug! });
          const raw = data as Raw;
          return {
            id: Number(raw.id),
            slug: String(raw.slug),
            permissions: (raw.permissions ?? {}) as Record<string, string>,
            events: (raw.events ?? []) as string[],
          };
        });
  return {
    repository: `${repo.owner}/${repo.repo}`,
    defaultBranch,
    rulesets,
    classicProtection,
    pages,
    variables,
    secrets,
    environment,
    workflowPermissions,
    forkApprovalPolicy,
    immutableReleases,
    siteCommitted,
    app,
  };
}
