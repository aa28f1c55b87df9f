/**
 * `svc github doctor`: what a live portal repository's settings lack, compared with what the portal
 * needs (docs/github.md, "First deployment"). Every finding has a stable id, the setting it is
 * about, what is wrong and what to change. Pure over what src/github/repository-settings.ts read,
 * plus the deployment's answers (probeDeployment, with an injected fetch).
 */
import {
  isUnreadable,
  type LiveRuleset,
  type LiveSettings,
  type Read,
} from "../github/repository-settings.ts";

export type Severity = "error" | "warning";

export interface Finding {
  id: string;
  severity: Severity;
  /** Where the operator changes it (Settings -> ...). */
  setting: string;
  message: string;
}

/** The portal app's permissions and events, as app.yml registers them (a test holds them equal). */
export const PORTAL_APP_PERMISSIONS: Readonly<Record<string, "read" | "write">> = {
  checks: "write",
  pull_requests: "write",
  issues: "write",
  contents: "write",
  actions: "write",
  metadata: "read",
  members: "read",
};
export const PORTAL_APP_EVENTS: readonly string[] = [
  "pull_request",
  "pull_request_review",
  "issue_comment",
  "workflow_run",
];

export const PUBLISH_ENVIRONMENT = "publish";
const REQUIRED_VARIABLES = ["SVC_APP_ID", "SVC_BOT_LOGINS"] as const;
const PRIVATE_KEY_SECRET = "SVC_APP_PRIVATE_KEY";
const FORK_APPROVAL_STRONG = new Set(["first_time_contributors", "all_external_contributors"]);

/** The shipped ruleset (.github/rulesets/default-branch.json) with the app's id where it holds 0. */
export function rulesetForApp(template: unknown, appId: number): Record<string, unknown> {
  const ruleset = structuredClone(template) as {
    rules?: Array<{ parameters?: { required_status_checks?: Array<{ integration_id?: number }> } }>;
    bypass_actors?: Array<{ actor_id?: number; actor_type?: string }>;
  };
  for (const rule of ruleset.rules ?? [])
    for (const check of rule.parameters?.required_status_checks ?? []) check.integration_id = appId;
  for (const actor of ruleset.bypass_actors ?? [])
    if (actor.actor_type === "Integration") actor.actor_id = appId;
  return ruleset as Record<string, unknown>;
}

interface TemplateRuleset {
  rules: Array<{ type: string; parameters?: Record<string, unknown> }>;
}

const DEFAULT_BRANCH_PATTERNS = new Set(["~DEFAULT_BRANCH", "~ALL"]);

function coversDefault(ruleset: LiveRuleset, defaultBranch: string): boolean {
  const matches = (patterns: string[]) =>
    patterns.some((p) => DEFAULT_BRANCH_PATTERNS.has(p) || p === `refs/heads/${defaultBranch}`);
  return ruleset.target === "branch" && matches(ruleset.include) && !matches(ruleset.exclude);
}

function unreadable(findings: Finding[], setting: string, read: Read<unknown>): boolean {
  if (!isUnreadable(read)) return false;
  findings.push({
    id: "setting_unreadable",
    severity: "error",
    setting,
    message: `could not be read (${read.status ?? "no answer"}: ${read.message}); the token needs admin read access to the repository`,
  });
  return true;
}

/** The default branch's rulesets against the shipped template (the app's id filled in). */
function diagnoseRulesets(
  findings: Finding[],
  live: LiveSettings,
  template: TemplateRuleset,
  appId: number | null,
): void {
  const setting = "Settings -> Rules -> Rulesets";
  if (unreadable(findings, setting, live.rulesets)) return;
  const rulesets = (live.rulesets as LiveRuleset[]).filter((r) => coversDefault(r, live.defaultBranch));
  const active = rulesets.filter((r) => r.enforcement === "active");
  if (active.length === 0) {
    findings.push({
      id: rulesets.length === 0 ? "ruleset_missing" : "ruleset_not_active",
      severity: "error",
      setting,
      message:
        rulesets.length === 0
          ? "no ruleset protects the default branch: import .github/rulesets/default-branch.json (svc github ruleset --app-id <SVC_APP_ID>)"
          : `the rulesets of the default branch are not enforced (${rulesets.map((r) => `${r.name}: ${r.enforcement}`).join(", ")}): set Enforcement status to Active`,
    });
    return;
  }
  const rules = active.flatMap((r) => r.rules);
  const has = (type: string) => rules.some((r) => r.type === type);
  for (const wanted of template.rules) {
    if (wanted.type === "required_status_checks" || wanted.type === "pull_request") continue;
    if (!has(wanted.type))
      findings.push({
        id: `rule_missing_${wanted.type}`,
        severity: "error",
        setting,
        message: `the default branch's ruleset lacks the ${wanted.type} rule (${wanted.type === "non_fast_forward" ? "Block force pushes" : wanted.type === "deletion" ? "Restrict deletions" : wanted.type})`,
      });
  }
  diagnoseReviews(findings, setting, rules, template);
  diagnoseRequiredChecks(findings, setting, rules, template, appId);
  for (const ruleset of active) {
    if (ruleset.bypassActors === null) {
      findings.push({
        id: "setting_unreadable",
        severity: "error",
        setting: `${setting} -> ${ruleset.name} -> Bypass list`,
        message: "the bypass list could not be read; the token needs admin access to the repository",
      });
      continue;
    }
    const app = ruleset.bypassActors.find(
      (a) => a.actorType === "Integration" && appId !== null && a.actorId === appId,
    );
    if (app?.bypassMode !== "always")
      findings.push({
        id: "bypass_app_missing",
        severity: "error",
        setting: `${setting} -> ${ruleset.name} -> Bypass list`,
        message: `the portal app${appId === null ? "" : ` (${appId})`} is not a bypass actor with "Always allow": the publish and sync jobs' catalog commits are refused (push_protected)`,
      });
    for (const other of ruleset.bypassActors.filter((a) => a !== app))
      findings.push({
        id: "bypass_extra_actor",
        severity: "error",
        setting: `${setting} -> ${ruleset.name} -> Bypass list`,
        message: `${other.actorType}${other.actorId === null ? "" : ` ${other.actorId}`} may bypass the rules (${other.bypassMode}): only the portal app may, or unapproved submissions can be merged`,
      });
  }
}

function diagnoseReviews(
  findings: Finding[],
  setting: string,
  rules: LiveRuleset["rules"],
  template: TemplateRuleset,
): void {
  const wanted = template.rules.find((r) => r.type === "pull_request")?.parameters ?? {};
  const live = rules.filter((r) => r.type === "pull_request").map((r) => r.parameters ?? {});
  if (live.length === 0) {
    findings.push({
      id: "review_not_required",
      severity: "error",
      setting,
      message:
        "the default branch does not require a pull request: anyone with write access can push past the moderators",
    });
    return;
  }
  const count = Math.max(...live.map((p) => Number(p.required_approving_review_count ?? 0)));
  if (count < Number(wanted.required_approving_review_count ?? 1))
    findings.push({
      id: "review_not_required",
      severity: "error",
      setting,
      message: `${count} approving review(s) required; the portal needs at least ${wanted.required_approving_review_count ?? 1}`,
    });
  for (const flag of ["dismiss_stale_reviews_on_push", "require_last_push_approval"] as const) {
    if (wanted[flag] === true && !live.some((p) => p[flag] === true))
      findings.push({
        id: flag === "dismiss_stale_reviews_on_push" ? "stale_reviews_kept" : "last_push_approval_off",
        severity: flag === "dismiss_stale_reviews_on_push" ? "error" : "warning",
        setting,
        message:
          flag === "dismiss_stale_reviews_on_push"
            ? "Dismiss stale pull request approvals when new commits are pushed is off: an approval would survive a push"
            : "Require approval of the most recent reviewable push is off",
      });
  }
}

function diagnoseRequiredChecks(
  findings: Finding[],
  setting: string,
  rules: LiveRuleset["rules"],
  template: TemplateRuleset,
  appId: number | null,
): void {
  const wanted = template.rules
    .filter((r) => r.type === "required_status_checks")
    .flatMap((r) => (r.parameters?.required_status_checks ?? []) as Array<{ context: string }>)
    .map((c) => c.context);
  const live = rules
    .filter((r) => r.type === "required_status_checks")
    .flatMap(
      (r) =>
        (r.parameters?.required_status_checks ?? []) as Array<{ context: string; integration_id?: number }>,
    );
  for (const context of wanted) {
    const found = live.filter((c) => c.context === context);
    if (found.length === 0)
      findings.push({
        id: "gate_not_required",
        severity: "error",
        setting,
        message: `the required status checks do not include "${context}": submissions could be merged unapproved`,
      });
    else if (!found.some((c) => appId !== null && c.integration_id === appId))
      findings.push({
        id: "gate_not_pinned",
        severity: "error",
        setting,
        message: `"${context}" is required from ${found.map((c) => (c.integration_id === undefined ? "any source" : `app ${c.integration_id}`)).join(", ")}, not the portal app${appId === null ? "" : ` (${appId})`}: a workflow job of that name in a pull request would satisfy it`,
      });
  }
  for (const extra of live.filter((c) => !wanted.includes(c.context))) {
    const never = extra.context.includes("*") || extra.context.startsWith("svc / ");
    findings.push({
      id: never ? "required_check_never_reported" : "required_check_extra",
      severity: never ? "error" : "warning",
      setting,
      message: never
        ? `"${extra.context}" is required, and nothing reports that exact context on every pull request (rulesets match no wildcard; svc's per-check runs exist only once a submission's validation reported): pull requests wait for it forever`
        : `"${extra.context}" is required too: make sure it reports on every pull request, submissions included, or they wait for it forever`,
    });
  }
}

export interface DoctorInput {
  live: LiveSettings;
  /** The parsed .github/rulesets/default-branch.json. */
  rulesetTemplate: unknown;
  /** portal.config.json's deployment.pagesUrl. */
  pagesUrl: string | null;
  /** What probeDeployment found, or null when it was not probed. */
  deployment: Finding[] | null;
}

export function diagnose(input: DoctorInput): Finding[] {
  const { live } = input;
  const findings: Finding[] = [];
  const variablesSetting = "Settings -> Secrets and variables -> Actions -> Variables";
  let appId: number | null = null;
  let slug: string | null = null;
  if (!unreadable(findings, variablesSetting, live.variables)) {
    const variables = live.variables as Record<string, string>;
    for (const name of REQUIRED_VARIABLES)
      if (!variables[name]?.trim())
        findings.push({
          id: "variable_missing",
          severity: "error",
          setting: variablesSetting,
          message: `${name} is not set`,
        });
    if (variables.SVC_APP_ID && !/^[1-9][0-9]*$/.test(variables.SVC_APP_ID.trim()))
      findings.push({
        id: "variable_invalid",
        severity: "error",
        setting: variablesSetting,
        message: "SVC_APP_ID is not the app's numeric id",
      });
    else if (variables.SVC_APP_ID) appId = Number(variables.SVC_APP_ID.trim());
    const logins = (variables.SVC_BOT_LOGINS ?? "")
      .split(",")
      .map((l) => l.trim())
      .filter(Boolean);
    slug = logins.map((l) => /^(.+)\[bot\]$/.exec(l)?.[1]).find(Boolean) ?? null;
    if (logins.length > 0 && !slug)
      findings.push({
        id: "variable_invalid",
        severity: "error",
        setting: variablesSetting,
        message: "SVC_BOT_LOGINS names no `<app-slug>[bot]` login",
      });
    if (variables.SVC_REPORTER === "actions")
      findings.push({
        id: "reporter_actions",
        severity: "warning",
        setting: variablesSetting,
        message:
          "SVC_REPORTER=actions: report-submission.yml applies reports beside the app, and two writers race; unset it when the app is installed",
      });
  }
  diagnoseApp(findings, live, appId, slug);
  diagnoseRulesets(findings, live, input.rulesetTemplate as TemplateRuleset, appId);
  const branchSetting = `Settings -> Branches (${live.defaultBranch})`;
  if (!unreadable(findings, branchSetting, live.classicProtection) && live.classicProtection === true)
    findings.push({
      id: "classic_protection",
      severity: "error",
      setting: branchSetting,
      message:
        "classic branch protection guards the default branch: it exempts no app from required checks, so the catalog commits are refused; delete it and keep the ruleset",
    });
  diagnoseSecrets(findings, live);
  diagnoseActions(findings, live);
  diagnosePages(findings, live, input.pagesUrl);
  if (input.deployment) findings.push(...input.deployment);
  return findings;
}

function diagnoseApp(
  findings: Finding[],
  live: LiveSettings,
  appId: number | null,
  slug: string | null,
): void {
  const setting = "Settings -> Developer settings -> GitHub Apps -> the portal app";
  if (live.app === null) return;
  if (isUnreadable(live.app)) {
    findings.push({
      id: "app_unreadable",
      severity: "error",
      setting,
      message: `GET /apps/${slug ?? "?"} answered ${live.app.status ?? "nothing"}: SVC_BOT_LOGINS must be \`<app-slug>[bot]\` of the portal app (a private app is visible to its owner's token)`,
    });
    return;
  }
  const app = live.app;
  if (appId !== null && app.id !== appId)
    findings.push({
      id: "app_id_mismatch",
      severity: "error",
      setting,
      message: `SVC_APP_ID is ${appId}, the app ${app.slug} is ${app.id}`,
    });
  for (const [name, level] of Object.entries(PORTAL_APP_PERMISSIONS)) {
    const has = app.permissions[name];
    if (has !== level && !(level === "read" && has === "write"))
      findings.push({
        id: "app_permission_missing",
        severity: "error",
        setting: `${setting} -> Permissions`,
        message: `${name}: ${has ?? "none"}, the bot needs ${level} (app.yml)`,
      });
  }
  for (const event of PORTAL_APP_EVENTS)
    if (!app.events.includes(event))
      findings.push({
        id: "app_event_missing",
        severity: "error",
        setting: `${setting} -> Subscribe to events`,
        message: `${event} is not subscribed (app.yml)`,
      });
}

function diagnoseSecrets(findings: Finding[], live: LiveSettings): void {
  const envSetting = `Settings -> Environments -> ${PUBLISH_ENVIRONMENT}`;
  if (!isUnreadable(live.secrets) && live.secrets.includes(PRIVATE_KEY_SECRET))
    findings.push({
      id: "private_key_repository_secret",
      severity: "error",
      setting: "Settings -> Secrets and variables -> Actions -> Repository secrets",
      message: `${PRIVATE_KEY_SECRET} is a repository secret: any branch's workflow can read it and mint the token that bypasses the ruleset; keep it only in the ${PUBLISH_ENVIRONMENT} environment`,
    });
  if (unreadable(findings, envSetting, live.environment)) return;
  const env = live.environment as Exclude<LiveSettings["environment"], { unreadable: true }>;
  if (env === null) {
    findings.push({
      id: "environment_missing",
      severity: "error",
      setting: "Settings -> Environments",
      message: `no ${PUBLISH_ENVIRONMENT} environment: the publish, sync and sweep jobs cannot start`,
    });
    return;
  }
  if (
    env.branchPolicy !== "custom" ||
    env.customBranches.length !== 1 ||
    env.customBranches[0] !== live.defaultBranch
  )
    findings.push({
      id: "environment_branches",
      severity: "error",
      setting: `${envSetting} -> Deployment branches and tags`,
      message: `${env.branchPolicy === "all" ? "any branch" : env.branchPolicy === "protected" ? "protected branches" : env.customBranches.join(", ") || "no branch"} may use the environment; only ${live.defaultBranch} may (its secret mints the token that bypasses the ruleset)`,
    });
  if (env.reviewers > 0)
    findings.push({
      id: "environment_reviewers",
      severity: "warning",
      setting: `${envSetting} -> Required reviewers`,
      message:
        "required reviewers hold every scheduled publish, sync and sweep run until someone approves it",
    });
  if (
    !unreadable(findings, `${envSetting} -> Environment secrets`, env.secrets) &&
    !(env.secrets as string[]).includes(PRIVATE_KEY_SECRET)
  )
    findings.push({
      id: "secret_missing",
      severity: "error",
      setting: `${envSetting} -> Environment secrets`,
      message: `${PRIVATE_KEY_SECRET} is not set`,
    });
}

function diagnoseActions(findings: Finding[], live: LiveSettings): void {
  const setting = "Settings -> Actions -> General";
  if (!unreadable(findings, `${setting} -> Workflow permissions`, live.workflowPermissions)) {
    const p = live.workflowPermissions as {
      defaultPermissions: string;
      canApprovePullRequestReviews: boolean;
    };
    if (p.defaultPermissions !== "read")
      findings.push({
        id: "workflow_token_write",
        severity: "error",
        setting: `${setting} -> Workflow permissions`,
        message:
          "the default GITHUB_TOKEN can write: choose Read repository contents and packages permissions",
      });
    if (p.canApprovePullRequestReviews)
      findings.push({
        id: "workflow_token_approves",
        severity: "error",
        setting: `${setting} -> Workflow permissions`,
        message: "Allow GitHub Actions to create and approve pull requests is on: turn it off",
      });
  }
  if (
    !unreadable(
      findings,
      `${setting} -> Approval for running fork pull request workflows`,
      live.forkApprovalPolicy,
    ) &&
    !FORK_APPROVAL_STRONG.has(live.forkApprovalPolicy as string)
  )
    findings.push({
      id: "fork_approval_weak",
      severity: "warning",
      setting: `${setting} -> Approval for running fork pull request workflows from contributors`,
      message: `${String(live.forkApprovalPolicy)}: require approval for first-time contributors (or all outside contributors)`,
    });
  if (
    !unreadable(findings, "Settings -> General -> Releases", live.immutableReleases) &&
    live.immutableReleases !== true
  )
    findings.push({
      id: "immutable_releases_off",
      severity: "error",
      setting: "Settings -> General -> Releases",
      message: "release immutability is off: a published package could be replaced or deleted",
    });
  const branch = `the default branch (${live.defaultBranch})`;
  if (
    live.siteCommitted !== undefined &&
    !unreadable(findings, branch, live.siteCommitted) &&
    live.siteCommitted
  )
    findings.push({
      id: "site_committed",
      severity: "error",
      setting: branch,
      message:
        "site/ is committed: it is a build output the publish job builds, caches and deploys, and it refuses to push over a committed one (site_staged); git rm -r --cached site, add /site/ to .gitignore, commit",
    });
}

function diagnosePages(findings: Finding[], live: LiveSettings, pagesUrl: string | null): void {
  const setting = "Settings -> Pages";
  if (unreadable(findings, setting, live.pages)) return;
  const pages = live.pages as { buildType: string; htmlUrl: string | null } | null;
  if (pages === null) {
    findings.push({
      id: "pages_off",
      severity: "error",
      setting,
      message: "GitHub Pages is off: set Source to GitHub Actions",
    });
    return;
  }
  if (pages.buildType !== "workflow")
    findings.push({
      id: "pages_source",
      severity: "error",
      setting,
      message: `Source is ${pages.buildType === "legacy" ? "Deploy from a branch" : pages.buildType}: set it to GitHub Actions (publish.yml deploys)`,
    });
  const trim = (u: string) => u.replace(/\/+$/, "");
  if (pagesUrl && pages.htmlUrl && trim(pages.htmlUrl) !== trim(pagesUrl))
    findings.push({
      id: "pages_url_mismatch",
      severity: "error",
      setting: "portal.config.json deployment.pagesUrl",
      message: `is ${pagesUrl}, Pages serves ${pages.htmlUrl}`,
    });
}

/** The fetch the probes use (globalThis.fetch in the CLI). */
export type ProbeFetch = (
  url: string,
  init: { method: string; redirect: "manual"; signal: AbortSignal },
) => Promise<Response>;

/** What a route of the deployment answers a request that carries nothing. */
const PROBES = [
  {
    path: "/api/github/webhooks",
    method: "POST",
    expect: 400,
    code: "webhook_headers_invalid",
    variable: "WEBHOOK_SECRET",
  },
  {
    path: "/api/github/intake",
    method: "POST",
    expect: 400,
    code: "webhook_headers_invalid",
    variable: "INTAKE_WEBHOOK_SECRET",
  },
  { path: "/api/github/drain", method: "GET", expect: 401, code: "unauthorized", variable: "CRON_SECRET" },
] as const;

/**
 * The Vercel deployment answering: each bot function asked without credentials must refuse as a
 * configured one does (a missing secret answers 500 config_invalid naming it; nothing deployed,
 * 404). Nothing is stored: the refusal comes before the body is read.
 */
export async function probeDeployment(
  apiBaseUrl: string | null,
  fetchImpl: ProbeFetch,
  timeoutMs = 10_000,
): Promise<Finding[]> {
  const setting = "Vercel -> the portal's project";
  if (!apiBaseUrl)
    return [
      {
        id: "deployment_url_missing",
        severity: "error",
        setting: "portal.config.json deployment.apiBaseUrl",
        message: "is null: set it to the Vercel deployment's production URL (docs/github.md, section 4)",
      },
    ];
  const findings: Finding[] = [];
  for (const probe of PROBES) {
    const url = `${apiBaseUrl.replace(/\/+$/, "")}${probe.path}`;
    let status: number;
    let body: { code?: string; message?: string } = {};
    try {
      const response = await fetchImpl(url, {
        method: probe.method,
        redirect: "manual",
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = response.status;
      body = (await response.json().catch(() => ({}))) as typeof body;
    } catch (error) {
      findings.push({
        id: "deployment_unreachable",
        severity: "error",
        setting,
        message: `${probe.method} ${url}: ${(error as Error).message}`,
      });
      continue;
    }
    if (status === probe.expect && body.code === probe.code) continue;
    findings.push(
      status === 500 && body.code === "config_invalid"
        ? {
            id: "deployment_variable_missing",
            severity: "error",
            setting: `${setting} -> Environment Variables`,
            message: `${probe.method} ${url}: ${body.message ?? `config_invalid (${probe.variable})`}`,
          }
        : {
            id: "deployment_route_missing",
            severity: "error",
            setting,
            message: `${probe.method} ${url} answered ${status}${body.code ? ` ${body.code}` : ""}, not the bot function's ${probe.expect} ${probe.code}`,
          },
    );
  }
  return findings;
}
