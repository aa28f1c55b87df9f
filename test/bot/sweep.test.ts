/**
 * The scheduled sweep (actions/sweep's step, run in-process against the fake GitHub, minting the
 * app's token as the action does) re-derives every open pull request: a missed push, a report whose
 * delivery was lost, a run held for approval, a maintainer's pull request without its gate, a
 * submission left waiting for changes (reminded, then closed), an approved one with every check green
 * (merged with autoMerge). A second sweep writes nothing. The budget: the sweep stops while the
 * reserve is left and names what it deferred, and waits out a secondary rate limit.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { REMINDER_MARKER, renderStoredStatus } from "../../src/bot/comments.ts";
import { sealStatus } from "../../src/bot/status-seal.ts";
import { DEFAULT_SWEEP_SETTINGS } from "../../src/bot/decide-sweep.ts";
import { sweepPullRequests } from "../../src/bot/sweep.ts";
import { octokitFor } from "../../src/github/octokit.ts";
import { type ActionContext, StepEnv } from "../../src/pipeline/action-step.ts";
import { sweepStep } from "../../src/pipeline/sweep-step.ts";
import type { SubmissionState } from "../../src/workflow/machine.ts";
import { testPrivateKey, testStatusKey } from "../support/bot-harness.ts";
import { BOT_LOGIN, GitHubRepository, type PullRequestState } from "../support/github-repository.ts";
import { type GitHubServer, startGitHubServer } from "../support/github-server.ts";
import { uploadReportAsWorkflow } from "../support/report-upload.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { sidecar, submissionReport } from "../support/submission-fixtures.ts";
import { PORTAL } from "../support/webhook-payloads.ts";

const DAY = 24 * 3600_000;
const [owner, repo] = PORTAL.split("/") as [string, string];

let github: GitHubServer;
let portal: GitHubRepository;
/** Validation runs by head commit: GET /actions/workflows/{id}/runs answers from here. */
let runs: Map<string, { id: number; status: string; conclusion: string | null }>;

beforeEach(async () => {
  github = await startGitHubServer();
  portal = new GitHubRepository(github, PORTAL, { installationId: 4242 });
  portal.statusKey = testStatusKey();
  portal.branchFiles.set("portal.config.json", { moderators: { logins: ["moderator-mia"], team: null } });
  portal.serveReads().serveBotWrites().serveSettings().serveAppTokens();
  for (const route of [
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts",
    "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}",
  ])
    github.allow(route, portal.reply(route));
  github.allow("PATCH /repos/{owner}/{repo}/pulls/{pull_number}", (req) => {
    const pr = portal.pulls.get(Number(req.params.pull_number))!;
    if ((req.body as { state?: string }).state === "closed") pr.state = "closed";
    return { body: { number: pr.number, state: pr.state } };
  });
  runs = new Map();
  github.allow("GET /repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs", (req) => {
    const run = runs.get(req.query.get("head_sha") ?? "");
    return {
      body: {
        total_count: run ? 1 : 0,
        workflow_runs: run
          ? [
              {
                ...run,
                path: ".github/workflows/validate-submission.yml",
                event: "pull_request",
                head_sha: req.query.get("head_sha"),
                run_attempt: 1,
                pull_requests: [],
                html_url: `https://github.com/${PORTAL}/actions/runs/${run.id}`,
              },
            ]
          : [],
      },
    };
  });
});
afterEach(async () => {
  await github.stop();
});

/** A submission pull request adding its sidecar. */
function submission(number: number, author = "modder-mo"): PullRequestState {
  const version = `1.${number}.0`;
  return portal.openPullRequest(
    number,
    { [`submissions/better-hud/${version}.json`]: JSON.stringify(sidecar({ version })) },
    author,
  );
}

/** The app's status comment with a state written `ago` ms before now, sealed as the app seals it. */
function setState(pr: PullRequestState, state: SubmissionState, ago: number): void {
  const stored = sealStatus(
    testStatusKey(),
    { repository: PORTAL, pullRequest: pr.number },
    { state, headSha: pr.headSha },
    new Date(Date.now() - ago),
  );
  pr.comments = [
    {
      id: portal.newId(),
      body: `${renderStoredStatus(stored)}\n### svc submission`,
      user: { login: BOT_LOGIN, type: "Bot" },
    },
  ];
  pr.labels = [`state:${state}`];
}

/** The app's gate on the head, as it would have written it. */
function gate(pr: PullRequestState, conclusion: "success" | "failure" | null) {
  portal.checkRuns.push({
    id: portal.checkRuns.length + 1,
    name: "svc / gate",
    head_sha: pr.headSha,
    status: conclusion === null ? "in_progress" : "completed",
    ...(conclusion ? { conclusion } : {}),
    appId: portal.appId,
  });
}

function stateOf(pr: PullRequestState): string | undefined {
  const status = pr.comments.find((c) => c.user.login === BOT_LOGIN && c.body.startsWith("<!-- svc:status"));
  return status ? JSON.parse(/<!-- svc:status (\{.*?\}) -->/.exec(status.body)![1]!).state : undefined;
}

function latestGate(pr: PullRequestState) {
  return portal.checkRuns.filter((r) => r.name === "svc / gate" && r.head_sha === pr.headSha).at(-1);
}

/** Runs actions/sweep's step as the runner would, with portal.config.json's `sweep` set to `sweep`. */
async function runSweep(sweep: Record<string, unknown>) {
  const workspace = mkdtempSync(join(tmpdir(), "svc-sweep-"));
  const config = JSON.parse(readFileSync(join(REPO_ROOT, "portal.config.json"), "utf8"));
  writeFileSync(join(workspace, "portal.config.json"), JSON.stringify({ ...config, sweep }));
  const context: ActionContext = {
    eventName: "schedule",
    payload: {},
    ref: "refs/heads/main",
    sha: "9".repeat(40),
    repo: { owner, repo },
    apiUrl: github.url,
    serverUrl: "https://github.com",
    workspace,
  };
  const inputs: Record<string, string> = {
    "app-id": String(portal.appId),
    "app-private-key": testPrivateKey(),
    "bot-logins": BOT_LOGIN,
  };
  const log: string[] = [];
  const env = new StepEnv(context, {
    input: (name) => inputs[name] ?? "",
    info: (line) => log.push(line),
    debug: () => {},
    warning: (line) => log.push(`warning: ${line}`),
    setSecret: () => {},
    idToken: async () => {
      throw new Error("no OIDC here");
    },
  });
  return { result: await sweepStep(env), log };
}

const writes = () => github.recorded.filter((r) => r.method !== "GET" && !r.route.startsWith("/app/")).length;

describe("the sweep", () => {
  it("catches every open pull request up, and a second sweep writes nothing", async () => {
    const missedPush = submission(1);
    const lostReport = submission(2);
    setState(lostReport, "validating", 2 * 3600_000);
    gate(lostReport, null);
    runs.set(lostReport.headSha, { id: 700, status: "completed", conclusion: "success" });
    uploadReportAsWorkflow(
      portal,
      { id: 700, attempt: 1 },
      submissionReport(lostReport.headSha, { number: 2 }),
    );
    const held = submission(3, "first-timer");
    setState(held, "validating", 2 * 3600_000);
    gate(held, null);
    runs.set(held.headSha, { id: 701, status: "completed", conclusion: "action_required" });
    const maintainers = portal.openPullRequest(4, { "docs/modders.md": "better words" }, "maintainer-max");
    const waiting = submission(5);
    setState(waiting, "changes_requested", 15 * DAY);
    gate(waiting, "failure");
    const reminded = submission(6);
    setState(reminded, "changes_requested", 30 * DAY);
    gate(reminded, "failure");
    reminded.comments.push({
      id: portal.newId(),
      body: `${REMINDER_MARKER} ${JSON.stringify({ headSha: reminded.headSha, at: new Date(Date.now() - 15 * DAY).toISOString() })} -->\nreminder`,
      user: { login: BOT_LOGIN, type: "Bot" },
    });
    // Approved before the gate existed (an upgrade): the gate is written, then it merges.
    const approved = submission(7);
    setState(approved, "approved", 3600_000);

    const { result } = await runSweep({ autoMerge: true });
    github.assertDone();
    expect(result.failure).toBeNull();
    expect(result.outputs).toMatchObject({ swept: "7", deferred: "", "awaiting-run-approval": "3" });

    expect(stateOf(missedPush)).toBe("validating");
    expect(latestGate(missedPush)).toMatchObject({ status: "in_progress" });
    expect(stateOf(lostReport)).toBe("pending_review");
    expect(lostReport.labels).toEqual(["state:pending_review"]);
    expect(held.labels).toEqual(["state:validating", "svc:awaiting-run-approval"]);
    expect(held.comments[0]!.body).toContain("a maintainer must approve the first run");
    expect(latestGate(maintainers)).toMatchObject({ status: "completed", conclusion: "success" });
    expect(waiting.comments.at(-1)!.body).toContain(REMINDER_MARKER);
    expect(waiting.comments.at(-1)!.body).toContain("@modder-mo");
    expect(waiting.state).toBe("open");
    expect(reminded.state).toBe("closed");
    expect(stateOf(reminded)).toBe("cancelled");
    expect(latestGate(approved)).toMatchObject({ conclusion: "success" });
    expect(approved.merged).toBe(true);
    expect(result.summary).toContain("#7 | gate: success; merged (approved, every check passed)");

    const before = writes();
    const again = await runSweep({ autoMerge: true });
    github.assertDone();
    expect(writes()).toBe(before);
    expect(again.result.outputs.changed).toBe("");
  });

  it("never merges without autoMerge, nor past a check that did not pass", async () => {
    const approved = submission(1);
    setState(approved, "approved", 3600_000);
    gate(approved, "success");
    await runSweep({});
    expect(approved.merged).toBe(false);

    portal.checkRuns.push({
      id: 99,
      name: "test",
      head_sha: approved.headSha,
      status: "completed",
      conclusion: "failure",
      appId: 15368,
    });
    const { result } = await runSweep({ autoMerge: true });
    github.assertDone();
    expect(approved.merged).toBe(false);
    expect(result.summary).toContain("not merged: test did not pass");
  });

  it("stops while the reserve is left, names what it deferred, and waits out a secondary rate limit", async () => {
    for (const n of [1, 2, 3]) portal.openPullRequest(n, { [`docs/page-${n}.md`]: "x" }, "maintainer-max");
    // Enough for the first pull request only (the reserve, plus one pull request's worth).
    portal.settings.rateLimit.remaining = 100 + 40 + 10;
    // GitHub refuses one request as too fast: the client waits retry-after and sends it again.
    github.limitNext({
      kind: "secondary",
      retryAfterSeconds: 1,
      route: "GET /repos/{owner}/{repo}/pulls/{pull_number}/files",
    });
    const api = octokitFor("ghs_app_installation_token_test", { baseUrl: github.url, throttle: true });
    const result = await sweepPullRequests(
      api,
      { owner, repo },
      {
        botLogins: [BOT_LOGIN],
        statusKey: testStatusKey(),
        appId: portal.appId,
        settings: DEFAULT_SWEEP_SETTINGS,
        reserve: 100,
      },
    );
    github.assertDone();
    expect(result.swept.map((p) => p.number)).toEqual([1]);
    expect(result.deferred).toEqual([2, 3]);
    expect(result.failed).toEqual([]);
    expect(github.recorded.filter((r) => r.rateLimited)).toHaveLength(1);
    expect(latestGate(portal.pulls.get(1)!)).toMatchObject({ conclusion: "success" });
  });
});
