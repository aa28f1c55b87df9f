/**
 * `svc github doctor` reads a live repository's settings through the API with the operator's token
 * (the fake GitHub, OpenAPI-checked: rulesets, classic protection, Pages, variables, secrets, the
 * publish environment, Actions settings, immutable releases, the app) and probes the Vercel
 * deployment (the real bot functions on loopback), and names every setting that differs from what
 * the portal needs. `svc github ruleset` writes the shipped ruleset with the app's id, which GitHub's
 * API takes as a ruleset.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Octokit } from "@octokit/rest";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createBotFunctions } from "../../src/bot/app.ts";
import { PORTAL_APP_EVENTS, PORTAL_APP_PERMISSIONS } from "../../src/pipeline/github-doctor.ts";
import { type BotHarness, startBot } from "../support/bot-harness.ts";
import { GitHubRepository } from "../support/github-repository.ts";
import { type GitHubServer, startGitHubServer } from "../support/github-server.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { runCli } from "../support/run-cli.ts";

const REPOSITORY = "acme/mods";
const APP_ID = 4711;
const PAGES = "https://acme.github.io/mods";
const manifest = parse(readFileSync(join(REPO_ROOT, "app.yml"), "utf8")) as {
  default_permissions: Record<string, string>;
  default_events: string[];
};

let github: GitHubServer;
let portal: GitHubRepository;
let deployment: BotHarness;
let workspace: string;
/** Where the probed deployment answers (loopback; portal.config.json names its https URL). */
let deploymentUrl: string;
const servers: Server[] = [];

beforeEach(async () => {
  github = await startGitHubServer();
  portal = new GitHubRepository(github, REPOSITORY);
  portal.serveSettings();
  github.allow("GET /repos/{owner}/{repo}", portal.reply("GET /repos/{owner}/{repo}"));
  // The real bot functions, with every secret: the deployment the doctor probes. It never needs its store.
  deployment = await startBot({
    github,
    openStore: () => Promise.reject(new Error("the probes never reach the store")),
  });
  workspace = mkdtempSync(join(tmpdir(), "svc-doctor-"));
  deploymentUrl = deployment.origin;
  const config = JSON.parse(readFileSync(join(REPO_ROOT, "portal.config.json"), "utf8"));
  config.portal.repository = REPOSITORY;
  config.deployment.apiBaseUrl = "https://acme-portal.vercel.app";
  config.deployment.pagesUrl = PAGES;
  writeFileSync(join(workspace, "portal.config.json"), JSON.stringify(config));
  mkdirSync(join(workspace, ".github/rulesets"), { recursive: true });
  writeFileSync(
    join(workspace, ".github/rulesets/default-branch.json"),
    readFileSync(join(REPO_ROOT, ".github/rulesets/default-branch.json")),
  );
});
afterEach(async () => {
  await deployment.stop();
  for (const server of servers.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()));
  await github.stop();
});

const env = () => ({ GITHUB_TOKEN: "ghp_operator_token_test", SVC_GITHUB_API_URL: github.url });

/** Every setting as docs/github.md's first deployment leaves it; the ruleset imported through the API. */
async function rightSettings(): Promise<void> {
  const ruleset = await runCli(["github", "ruleset", "--app-id", String(APP_ID)], workspace);
  expect(ruleset.code, ruleset.stderr).toBe(0);
  const [owner, repo] = REPOSITORY.split("/") as [string, string];
  await new Octokit({ auth: "ghp_operator_token_test", baseUrl: github.url }).request(
    "POST /repos/{owner}/{repo}/rulesets",
    { owner, repo, ...JSON.parse(ruleset.stdout) },
  );
  const s = portal.settings;
  s.pages = { buildType: "workflow", htmlUrl: PAGES };
  s.variables.set("SVC_APP_ID", String(APP_ID));
  s.variables.set("SVC_BOT_LOGINS", "acme-portal[bot]");
  s.environments.set("publish", { branches: ["main"], reviewers: [], secrets: ["SVC_APP_PRIVATE_KEY"] });
  s.immutableReleases = true;
  s.apps.set("acme-portal", {
    id: APP_ID,
    slug: "acme-portal",
    permissions: { ...manifest.default_permissions },
    events: [...manifest.default_events],
  });
}

async function doctor(...extra: string[]) {
  const result = await runCli(
    ["github", "doctor", "--json", "--deployment-url", deploymentUrl, ...extra],
    workspace,
    env(),
  );
  const parsed = result.stdout
    ? (JSON.parse(result.stdout) as { findings: Array<{ id: string; severity: string; message: string }> })
    : null;
  return { ...result, findings: parsed?.findings ?? [] };
}

/** A deployment whose functions run without some secrets (the real functions, answering config_invalid). */
async function deploymentWithout(missing: string[]): Promise<string> {
  const all: Record<string, string> = {
    WEBHOOK_SECRET: "w",
    INTAKE_WEBHOOK_SECRET: "i",
    CRON_SECRET: "c",
    SVC_PORTAL_REPOSITORY: REPOSITORY,
  };
  for (const name of missing) delete all[name];
  const functions = createBotFunctions(all, {
    defer: () => {},
    openStore: () => Promise.reject(new Error("never reached")),
  });
  const routes: Record<string, (req: any, res: any) => Promise<void>> = {
    "/api/github/webhooks": functions.portalWebhook,
    "/api/github/intake": functions.intakeWebhook,
    "/api/github/drain": functions.drain,
  };
  const server = createServer((req, res) => {
    const route = routes[new URL(req.url ?? "/", "http://x").pathname];
    if (!route) return void res.writeHead(404).end();
    void route(req, res);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("svc github doctor", () => {
  it("finds nothing to change on a repository set up as docs/github.md says", async () => {
    await rightSettings();
    const text = await runCli(["github", "doctor", "--deployment-url", deploymentUrl], workspace, env());
    github.assertDone();
    expect(text.stderr).toBe("");
    expect(text.stdout).toContain("every setting the portal needs is in place");
    expect(text.code).toBe(0);
  });

  it("names every setting that differs, and fails", async () => {
    await rightSettings();
    const s = portal.settings;
    // The ruleset the old docs described: `svc / *` (no wildcard exists), no app pinned, admins bypass.
    s.rulesets[0] = {
      id: s.rulesets[0]!.id,
      name: "main",
      target: "branch",
      enforcement: "active",
      conditions: { ref_name: { include: ["~DEFAULT_BRANCH"], exclude: [] } },
      rules: [
        {
          type: "pull_request",
          parameters: {
            required_approving_review_count: 1,
            dismiss_stale_reviews_on_push: false,
            require_code_owner_review: false,
            require_last_push_approval: false,
            required_review_thread_resolution: false,
          },
        },
        {
          type: "required_status_checks",
          parameters: {
            strict_required_status_checks_policy: false,
            required_status_checks: [
              { context: "validate-submission / validate" },
              { context: "svc / *" },
              { context: "svc / gate" },
            ],
          },
        },
      ],
      bypass_actors: [{ actor_id: 5, actor_type: "RepositoryRole", bypass_mode: "always" }],
    };
    s.classicProtection = true;
    s.pages = { buildType: "legacy", htmlUrl: PAGES };
    s.variables.set("SVC_APP_ID", "1234");
    s.variables.set("SVC_REPORTER", "actions");
    s.secrets.push("SVC_APP_PRIVATE_KEY");
    s.environments.set("publish", { branches: "all", reviewers: ["alice"], secrets: [] });
    s.workflowPermissions = { defaultPermissions: "write", canApprovePullRequestReviews: true };
    s.forkApprovalPolicy = "first_time_contributors_new_to_github";
    s.immutableReleases = false;
    // A portal from before site/ became a build output: its default branch still commits the site.
    portal.branchFiles.set("site/api/v1/catalog.json", { mods: [] });
    const app = s.apps.get("acme-portal")!;
    app.permissions.checks = "read";
    app.events = app.events.filter((e) => e !== "workflow_run");
    deploymentUrl = await deploymentWithout(["INTAKE_WEBHOOK_SECRET", "CRON_SECRET"]);

    const result = await doctor();
    github.assertDone();
    expect(result.code).toBe(1);
    expect(result.findings.map((f) => `${f.severity} ${f.id}`).sort()).toEqual(
      [
        "warning reporter_actions",
        "error app_id_mismatch",
        "error app_permission_missing",
        "error app_event_missing",
        "error rule_missing_deletion",
        "error rule_missing_non_fast_forward",
        "error stale_reviews_kept",
        "warning last_push_approval_off",
        "error gate_not_pinned",
        "warning required_check_extra",
        "error required_check_never_reported",
        "error bypass_app_missing",
        "error bypass_extra_actor",
        "error classic_protection",
        "error private_key_repository_secret",
        "error environment_branches",
        "warning environment_reviewers",
        "error secret_missing",
        "error workflow_token_write",
        "error workflow_token_approves",
        "warning fork_approval_weak",
        "error immutable_releases_off",
        "error site_committed",
        "error pages_source",
        "error deployment_variable_missing",
        "error deployment_variable_missing",
      ].sort(),
    );
    const messages = result.findings.map((f) => f.message).join("\n");
    expect(messages).toContain('"svc / *" is required');
    expect(messages).toContain("INTAKE_WEBHOOK_SECRET");
    expect(messages).toContain("CRON_SECRET");
  });

  it("names what is missing altogether: no ruleset, no Pages, no variables, no environment, no deployment", async () => {
    const nothing = createServer((_req, res) => res.writeHead(404).end());
    servers.push(nothing);
    await new Promise<void>((resolve) => nothing.listen(0, "127.0.0.1", resolve));
    deploymentUrl = `http://127.0.0.1:${(nothing.address() as AddressInfo).port}`;
    const result = await doctor();
    github.assertDone();
    expect(result.code).toBe(1);
    expect([...new Set(result.findings.map((f) => f.id))].sort()).toEqual(
      [
        "variable_missing",
        "ruleset_missing",
        "environment_missing",
        "immutable_releases_off",
        "pages_off",
        "deployment_route_missing",
      ].sort(),
    );
  });

  it("needs the operator's token, and says so", async () => {
    const result = await runCli(["github", "doctor"], workspace, { SVC_GITHUB_API_URL: github.url });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("config_invalid: GITHUB_TOKEN (or GH_TOKEN) is not set");
  });
});

describe("what the portal app needs", () => {
  it("is what app.yml registers", () => {
    expect(PORTAL_APP_PERMISSIONS).toEqual(manifest.default_permissions);
    expect([...PORTAL_APP_EVENTS].sort()).toEqual([...manifest.default_events].sort());
  });
});
