/**
 * actions/publish on the bot's workflow_dispatch (`/svc hide`, `/svc unhide`), from its committed
 * bundle as a runner runs it: the dispatch is applied only when the pull request's bot-written state
 * backs it, and the change reaches the protected default branch through the same commit path as a
 * publication (the app's installation token; the loopback git remote refuses anyone else). Every
 * run reconciles visibility (publish-hide-reconcile.test.ts); the dispatch names one pull request
 * and a mismatch fails the run. The releases here are a stand-in store's: nothing is on GitHub
 * Releases to withdraw, so unhide lists the release again.
 */
import { execFile } from "node:child_process";
import { createHash, generateKeyPairSync } from "node:crypto";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { renderStoredStatus } from "../../src/bot/comments.ts";
import { deriveStatusKey } from "../../src/bot/status-seal.ts";
import type { ArtifactStore } from "../../src/catalog/artifact-store.ts";
import { publishRelease } from "../../src/catalog/publisher.ts";
import type { SubmissionState } from "../../src/workflow/machine.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { runAction } from "../support/action-runner.ts";
import { checkoutLikeActions, type GitRemote, startGitRemote } from "../support/git-remote.ts";
import { BOT_LOGIN } from "../support/github-repository.ts";
import { type GitHubServer, startGitHubServer } from "../support/github-server.ts";
import { PullRequestWorld } from "../support/pull-request-world.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { eventExample, PORTAL } from "../support/webhook-payloads.ts";
import { modRecordsPath, releaseIn } from "../support/records.ts";

const WORKFLOW_TOKEN = "ghs_workflow_token_read";
const APP_TOKEN = "ghs_app_installation_token_test";
const appKey = generateKeyPairSync("rsa", { modulusLength: 2048 })
  .privateKey.export({ type: "pkcs1", format: "pem" })
  .toString();

// Each test runs the bundle several times, as a runner would; the bound guards a hang, not speed.
const RUNS_TIMEOUT = 120_000;

let github: GitHubServer;
let remote: GitRemote;
let dir: string;
const cleanups: Array<() => void> = [];
beforeEach(async () => {
  github = await startGitHubServer();
  dir = mkdtempSync(join(tmpdir(), "svc-visibility-"));
});
afterEach(async () => {
  await github.stop();
  await remote?.stop();
  for (const c of cleanups.splice(0)) c();
  rmSync(dir, { recursive: true, force: true });
});

/** A stand-in for the GitHub Releases store, named as one: the releases are not what these tests are about. */
const releasesStandIn: ArtifactStore = {
  kind: "github-releases",
  description: "stand-in",
  urlFor: (k) => `https://github.com/${PORTAL}/releases/download/${k.modId}-v${k.version}/${k.fileName}`,
  exists: async () => false,
  promote: async (key, bytes) => ({
    key,
    url: releasesStandIn.urlFor(key),
    sha256: createHash("sha256").update(bytes).digest("hex"),
    sizeBytes: bytes.length,
    files: new Map(),
    finish: async () => {},
    abort: async () => {},
  }),
};

/** A portal where better-hud@1.0.0 is published (and no ZIP is in git): each test's first commit. */
let template: CatalogProject;
beforeAll(async () => {
  template = catalogProject();
  // The repository's own ignore rules: site/ is a build output, never committed.
  copyFileSync(join(REPO_ROOT, ".gitignore"), join(template.root, ".gitignore"));
  const { packageBytes, sidecar } = modRelease({ version: "1.0.0" });
  await publishRelease(publisherOptions(template, { store: releasesStandIn }), {
    packageBytes,
    sidecar,
    source: { kind: "pull_request", pullRequestUrl: `https://github.com/${PORTAL}/pull/7` },
  });
});
afterAll(() => template.cleanup());

async function publishedPortal(): Promise<GitRemote> {
  remote = await startGitRemote({
    repository: PORTAL,
    tree: template.root,
    tokens: {
      [WORKFLOW_TOKEN]: { login: "github-actions[bot]", write: false, bypass: false },
      [APP_TOKEN]: { login: BOT_LOGIN, write: true, bypass: true },
    },
  });
  return remote;
}

/** The app's installation token, minted by the job (background calls: any number, checked in the publish tests). */
function allowAppToken() {
  github.allow("GET /repos/{owner}/{repo}/installation", { body: { id: 4242 } });
  github.allow("POST /app/installations/{installation_id}/access_tokens", {
    status: 201,
    body: { token: APP_TOKEN, expires_at: "2099-01-01T00:00:00Z", permissions: { contents: "write" } },
  });
}

/**
 * What a run reads besides the dispatch's pull request, each once: the pull requests labelled
 * `state:hidden`, then for a decision to apply its sealed state, and for a hide the version's GitHub
 * release and tag.
 */
function expectReconcile(world: PullRequestWorld, decision: "hide" | "unhide" | null) {
  const routes = [
    "GET /repos/{owner}/{repo}/issues",
    ...(decision ? ["GET /repos/{owner}/{repo}/issues/{issue_number}/comments"] : []),
    ...(decision === "hide"
      ? ["GET /repos/{owner}/{repo}/releases/tags/{tag}", "GET /repos/{owner}/{repo}/git/ref/{ref}"]
      : []),
  ];
  for (const route of routes) github.expect(route, world.reply(route));
}

/** A merged submission pull request whose status comment the bot wrote in `state`. */
function mergedWorld(state: SubmissionState, version = "1.0.0", number = 7): PullRequestWorld {
  const world = new PullRequestWorld(github);
  // Sealed as the app does, with the key the publish job holds.
  world.statusKey = deriveStatusKey(appKey);
  world.number = number;
  world.merged = true;
  world.state = "closed";
  world.files = [{ filename: `submissions/better-hud/${version}.json`, status: "added" }];
  world.sidecar = { ...modRelease({ version }).sidecar };
  world.labels = [`state:${state}`];
  world.comments = [
    {
      id: 500,
      body: `${renderStoredStatus(world.stored(number, state, world.headSha))}\n### svc submission`,
      user: { login: BOT_LOGIN, type: "Bot" },
    },
  ];
  return world;
}

/** The site the last run built or published onto: what its job uploads to Pages. */
let deployedSite = "";

async function runDispatch(inputs: Record<string, string>, options: { ref?: string } = {}) {
  const workspace = await checkoutLikeActions(remote, { token: WORKFLOW_TOKEN, persistCredentials: false });
  deployedSite = join(workspace, "site");
  cleanups.push(() => rmSync(workspace, { recursive: true, force: true }));
  const event = eventExample("workflow_dispatch");
  event.inputs = inputs;
  const receipts = join(dir, `receipts-${Math.random().toString(16).slice(2)}.json`);
  const head = (await promisify(execFile)("git", ["rev-parse", "HEAD"], { cwd: workspace })).stdout.trim();
  const result = await runAction("publish", {
    workspace,
    event,
    eventName: "workflow_dispatch",
    env: {
      HOME: dir,
      GITHUB_REPOSITORY: PORTAL,
      GITHUB_API_URL: github.url,
      GITHUB_REF: options.ref ?? "refs/heads/main",
      GITHUB_SHA: head,
    },
    inputs: {
      "github-token": WORKFLOW_TOKEN,
      "app-id": "4242",
      "app-private-key": appKey,
      "receipts-path": receipts,
      scanner: "none",
      "bot-logins": BOT_LOGIN,
    },
  });
  return {
    ...result,
    receipts,
    receiptEntries: existsSync(receipts) ? JSON.parse(readFileSync(receipts, "utf8")) : null,
  };
}

const HIDE = { visibility: "hide", modId: "better-hud", version: "1.0.0", pullRequest: "7" };
/** better-hud@1.0.0's record, from its mod's records file on the default branch. */
const record = () => releaseIn(remote.show(modRecordsPath("better-hud")), "1.0.0")!;
const catalogIds = () =>
  (
    JSON.parse(readFileSync(join(deployedSite, "api/v1/catalog.json"), "utf8")).mods as Array<{
      id?: string;
      modId?: string;
    }>
  ).map((m) => m.id ?? m.modId);

describe("actions/publish from its bundle: /svc hide and /svc unhide (workflow_dispatch)", {
  timeout: RUNS_TIMEOUT,
}, () => {
  it("hides a release whose pull request the bot moved to hidden, pushed by the app; then unhides it", async () => {
    await publishedPortal();
    expect(record().status).toBe("published");
    allowAppToken();
    const world = mergedWorld("hidden");
    world.expectFetch();
    expectReconcile(world, "hide");
    const hidden = await runDispatch(HIDE);
    expect(hidden.code, hidden.stdout).toBe(0);
    github.assertDone();
    expect(hidden.outputs).toMatchObject({
      published: "0",
      visibility: "hide",
      commit: remote.head(),
      deploy: "true",
    });
    expect(record()).toMatchObject({
      status: "hidden",
      statusBeforeHidden: "published",
    });
    expect(catalogIds()).not.toContain("better-hud");
    expect(remote.accepted().map((p) => p.login)).toEqual([BOT_LOGIN]);
    expect(
      (
        await promisify(execFile)("git", ["log", "-1", "--format=%s", "main"], { cwd: remote.bare })
      ).stdout.trim(),
    ).toBe("Hide better-hud@1.0.0 (#7)");
    expect(hidden.receiptEntries).toEqual([
      {
        path: "submissions/better-hud/1.0.0.json",
        pullRequest: 7,
        visibility: "hide",
        status: "hidden",
        withdrawal: "never_stored",
        receipt: expect.objectContaining({ ok: true, modId: "better-hud", version: "1.0.0" }),
      },
    ]);
    expect(hidden.summary).toContain(
      "| `submissions/better-hud/1.0.0.json` | #7 | :white_check_mark: hide: hidden |",
    );
    // Only reads and the token: the bot has already written the state; the receipts job posts the comment.
    expect(github.recorded.filter((r) => r.method !== "GET").map((r) => r.route)).toEqual([
      "/app/installations/{installation_id}/access_tokens",
    ]);

    world.comments[0]!.body = renderStoredStatus(world.stored(7, "published", world.headSha));
    world.labels = ["state:published"];
    world.expectFetch();
    expectReconcile(world, "unhide");
    const unhidden = await runDispatch({ ...HIDE, visibility: "unhide" });
    expect(unhidden.code, unhidden.stdout).toBe(0);
    github.assertDone();
    expect(unhidden.outputs).toMatchObject({ visibility: "unhide", commit: remote.head() });
    expect(record().status).toBe("published");
    expect(record().statusBeforeHidden).toBeUndefined();
    expect(catalogIds()).toContain("better-hud");
  });

  const forged: Array<[string, () => PullRequestWorld, Record<string, string>, string]> = [
    [
      "the pull request is still published",
      () => mergedWorld("published"),
      HIDE,
      "visibility_state_mismatch",
    ],
    [
      "the hidden marker was typed by someone other than the bot",
      () => {
        const world = mergedWorld("published");
        world.comments = [
          {
            id: 501,
            body: renderStoredStatus({ state: "hidden", headSha: world.headSha }),
            user: { login: "Codertocat", type: "User" },
          },
        ];
        return world;
      },
      HIDE,
      "visibility_state_mismatch",
    ],
    [
      "the app's own status comment, edited by someone with write access to say hidden",
      () => {
        const world = mergedWorld("published");
        world.comments[0]!.body = world.comments[0]!.body.replace('"state":"published"', '"state":"hidden"');
        return world;
      },
      HIDE,
      "visibility_state_mismatch",
    ],
    [
      "the pull request submitted another release",
      () => mergedWorld("hidden", "0.9.0"),
      HIDE,
      "visibility_release_mismatch",
    ],
    [
      "the pull request was never merged",
      () => {
        const world = mergedWorld("hidden");
        world.merged = false;
        return world;
      },
      HIDE,
      "visibility_not_a_release",
    ],
    [
      "unhide while the pull request is still hidden",
      () => mergedWorld("hidden"),
      { ...HIDE, visibility: "unhide" },
      "visibility_state_mismatch",
    ],
  ];
  it("refuses forged dispatches with their codes: nothing pushed, no receipt", async () => {
    await publishedPortal();
    allowAppToken();
    const head = remote.head();
    for (const [name, makeWorld, inputs, code] of forged) {
      makeWorld().expectFetch();
      const result = await runDispatch(inputs);
      expect(result.code, name).toBe(1);
      expect(result.stdout, name).toContain(`::error::${code}: #7 `);
      github.assertDone();
      expect(result.receiptEntries, name).toBeNull();
    }
    expect(github.recorded.filter((r) => r.method !== "GET" && !r.route.startsWith("/app/"))).toEqual([]);
    expect(remote.head()).toBe(head);
  });

  const invalid: Array<[string, Record<string, string>]> = [
    ["a path in modId", { ...HIDE, modId: "../records" }],
    ["build metadata in version", { ...HIDE, version: "1.0.0+evil" }],
    ["an unknown visibility", { ...HIDE, visibility: "delete" }],
    ["a pull request that is not a number", { ...HIDE, pullRequest: "7; rm -rf /" }],
    ["a pull request without a visibility", { pullRequest: "7" }],
  ];
  it("refuses invalid inputs before any GitHub call (the token is not even minted): visibility_input_invalid", async () => {
    await publishedPortal();
    const head = remote.head();
    for (const [name, inputs] of invalid) {
      const result = await runDispatch(inputs);
      expect(result.code, name).toBe(1);
      expect(result.stdout, name).toContain("::error::visibility_input_invalid: ");
    }
    expect(github.recorded).toEqual([]);
    expect(remote.head()).toBe(head);
  });

  it("refuses a dispatch on another branch before any GitHub call: not_default_branch", async () => {
    await publishedPortal();
    const result = await runDispatch(HIDE, { ref: "refs/heads/feature" });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("::error::not_default_branch: publish runs on main only");
    expect(github.recorded).toEqual([]);
  });

  it("answers a verified dispatch for a release that is not in records/ with unknown_release: a failed receipt, nothing pushed", async () => {
    await publishedPortal();
    allowAppToken();
    const world = mergedWorld("hidden", "2.0.0", 8);
    world.expectFetch();
    expectReconcile(world, null);
    const head = remote.head();
    const result = await runDispatch({ ...HIDE, version: "2.0.0", pullRequest: "8" });
    expect(result.code, result.stdout).toBe(0);
    github.assertDone();
    expect(remote.head()).toBe(head);
    expect(result.outputs).toMatchObject({ visibility: "", published: "0", commit: "" });
    expect(result.receiptEntries[0]).toMatchObject({
      visibility: "hide",
      status: null,
      receipt: { ok: false, error: { code: "unknown_release" } },
    });
    expect(result.stdout).toContain("::warning::submissions/better-hud/2.0.0.json: unknown_release");
    expect(result.summary).toContain("`unknown_release`");
  });
});
