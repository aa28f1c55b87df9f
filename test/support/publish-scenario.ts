/**
 * One portal repository for the publish job, with every part real except GitHub itself: the
 * committed actions/publish bundle run as a runner runs it, a workspace made as actions/checkout
 * makes it, the loopback git remote that enforces branch protection (git-remote.ts), the stateful
 * OpenAPI-checked GitHub with the repository's state (github-repository.ts), package downloads over
 * https, and clamscan with a signature database made at test time.
 */
import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { copyFileSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { deriveStatusKey } from "../../src/bot/status-seal.ts";
import { makeSignatureDatabase } from "../validation/clamav.ts";
import { type ActionRun, runAction } from "./action-runner.ts";
import { type CatalogProject, catalogProject, modRelease } from "./catalog-project.ts";
import { checkoutLikeActions, type GitRemote, startGitRemote } from "./git-remote.ts";
import { APP_TOKEN, BOT_LOGIN, GitHubRepository, type PullRequestState } from "./github-repository.ts";
import { type GitHubServer, startGitHubServer } from "./github-server.ts";
import { REPO_ROOT } from "./repo-root.ts";
import { startTlsServer, type TlsServer } from "./tls-server.ts";
import { eventExample } from "./webhook-payloads.ts";

export const REPOSITORY = "svc-portal/mods";
/** The workflow's GITHUB_TOKEN in the new publish job: contents read. */
export const WORKFLOW_TOKEN = "ghs_workflow_token_read";
/** The GITHUB_TOKEN the old publish job had: contents write, but not a bypass actor. */
export const OLD_WORKFLOW_TOKEN = "ghs_workflow_token_write";

let appKey: string | undefined;
function appPrivateKey(): string {
  appKey ??= generateKeyPairSync("rsa", { modulusLength: 2048 })
    .privateKey.export({ type: "pkcs1", format: "pem" })
    .toString();
  return appKey;
}

export interface Submission {
  pr: PullRequestState;
  path: string;
  text: string;
  packageBytes: Buffer;
  modId: string;
  version: string;
}

export interface PublishScenario {
  project: CatalogProject;
  remote: GitRemote;
  github: GitHubServer;
  /** The portal repository on the fake GitHub: every read, the release store's writes, app tokens. */
  world: GitHubRepository;
  tls: TlsServer;
  /** What the https server serves, by path: a test can replace or remove a package (a dead URL). */
  packages: Record<string, Buffer>;
  dir: string;
  /** The portal app's private key, as the publish environment holds it. */
  appPrivateKey: string;
  /** A sidecar (and its package, served over https) in a new pull request; nothing merged yet. */
  submission(number: number, modId: string, version: string): Submission;
  /**
   * A workspace checked out from the remote's default branch, as actions/checkout does, with the
   * newest saved site restored into it as publish.yml's cache step does (`restoreSite: false`: none,
   * as on a cold cache; the publish action then builds the site from the records).
   */
  checkout(options?: {
    persistCredentials?: boolean;
    token?: string;
    restoreSite?: boolean;
  }): Promise<string>;
  /** The site the newest run that deployed saved (publish.yml's cache), null before any. */
  savedSite(): string | null;
  run(
    workspace: string,
    event: { name: string; payload: Record<string, unknown> },
    options?: {
      inputs?: Record<string, string>;
      onSpawn?: Parameters<typeof runAction>[1]["onSpawn"];
      /** More of the runner's environment (PATH, for one). */
      env?: Record<string, string>;
    },
  ): Promise<ActionRun & { receipts: unknown[] | null }>;
  stop(): Promise<void>;
}

export async function startPublishScenario(): Promise<PublishScenario> {
  const project = catalogProject();
  // The repository's own ignore rules: the publisher's staging folders are never committed.
  copyFileSync(join(REPO_ROOT, ".gitignore"), join(project.root, ".gitignore"));
  const remote = await startGitRemote({
    repository: REPOSITORY,
    tree: project.root,
    tokens: {
      [WORKFLOW_TOKEN]: { login: "github-actions[bot]", write: false, bypass: false },
      [OLD_WORKFLOW_TOKEN]: { login: "github-actions[bot]", write: true, bypass: false },
      [APP_TOKEN]: { login: BOT_LOGIN, write: true, bypass: true },
    },
  });
  const github = await startGitHubServer();
  const world = new GitHubRepository(github, REPOSITORY, { remote })
    .serveReads()
    .serveReleaseWrites()
    .serveAppTokens();
  // The app's seal: the status comments the bot writes verify in the publish job, which holds the key.
  world.statusKey = deriveStatusKey(appPrivateKey());
  const packages: Record<string, Buffer> = {};
  const tls = await startTlsServer(packages);
  const dir = mkdtempSync(join(tmpdir(), "svc-publish-run-"));
  const database = makeSignatureDatabase(dir);
  const workspaces: string[] = [];
  let saved: string | null = null;
  let savedCount = 0;
  return {
    project,
    remote,
    github,
    world,
    tls,
    packages,
    dir,
    appPrivateKey: appPrivateKey(),
    submission(number, modId, version) {
      const release = modRelease({ modId, version });
      const packagePath = `/${modId}/releases/${modId}-${version}.zip`;
      packages[packagePath] = release.packageBytes;
      const sidecar = {
        ...release.sidecar,
        package: { ...release.sidecar.package, url: `${tls.url}${packagePath}` },
      };
      const path = `submissions/${modId}/${version}.json`;
      const text = `${JSON.stringify(sidecar, null, 2)}\n`;
      const pr = world.openPullRequest(number, { [path]: text });
      return { pr, path, text, packageBytes: release.packageBytes, modId, version };
    },
    savedSite: () => saved,
    async checkout(options = {}) {
      const workspace = await checkoutLikeActions(remote, {
        token: options.token ?? WORKFLOW_TOKEN,
        persistCredentials: options.persistCredentials ?? false,
      });
      workspaces.push(workspace);
      if (saved && options.restoreSite !== false) cpSync(saved, join(workspace, "site"), { recursive: true });
      return workspace;
    },
    async run(workspace, event, options = {}) {
      const receiptsPath = join(dir, `receipts-${Date.now()}-${Math.random().toString(16).slice(2)}.json`);
      const result = await runAction("publish", {
        workspace,
        event: event.payload,
        eventName: event.name,
        ...(options.onSpawn ? { onSpawn: options.onSpawn } : {}),
        env: {
          HOME: dir,
          GITHUB_REPOSITORY: REPOSITORY,
          GITHUB_API_URL: github.url,
          GITHUB_REF: "refs/heads/main",
          GITHUB_SHA: (await gitHead(workspace)).trim(),
          NODE_EXTRA_CA_CERTS: tls.caFile,
          ...options.env,
        },
        inputs: {
          "github-token": WORKFLOW_TOKEN,
          "app-id": "4242",
          "app-private-key": appPrivateKey(),
          "receipts-path": receiptsPath,
          scanner: "clamscan",
          "clamscan-db": database,
          "bot-logins": BOT_LOGIN,
          ...options.inputs,
        },
      });
      // publish.yml saves the site (after signing) when the run deploys it.
      if (result.code === 0 && result.outputs.deploy === "true" && existsSync(join(workspace, "site"))) {
        saved = join(dir, `site-${savedCount++}`);
        cpSync(join(workspace, "site"), saved, { recursive: true });
      }
      let receipts: unknown[] | null = null;
      try {
        receipts = JSON.parse(readFileSync(receiptsPath, "utf8")) as unknown[];
      } catch {
        receipts = null;
      }
      return { ...result, receipts };
    },
    async stop() {
      await github.stop();
      await tls.stop();
      await remote.stop();
      project.cleanup();
      for (const w of workspaces) rmSync(w, { recursive: true, force: true });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function gitHead(workspace: string): Promise<string> {
  return (await promisify(execFile)("git", ["rev-parse", "HEAD"], { cwd: workspace })).stdout;
}

/** The push event GitHub delivers for these commits (a real payload, adjusted). */
export function pushEvent(
  before: string,
  after: string,
  added: string[],
): { name: string; payload: Record<string, unknown> } {
  const payload = eventExample("push");
  payload.ref = "refs/heads/main";
  payload.before = before;
  payload.after = after;
  payload.commits = [{ ...(payload.commits?.[0] ?? {}), id: after, added, modified: [], removed: [] }];
  return { name: "push", payload };
}

/** A scheduled run's event (`on: schedule` carries only the cron expression). */
export function scheduleEvent(): { name: string; payload: Record<string, unknown> } {
  return { name: "schedule", payload: { schedule: "*/30 * * * *" } };
}

/** A workflow_dispatch, plain (reconcile) or with the bot's hide/unhide inputs. */
export function dispatchEvent(inputs: Record<string, string> = {}): {
  name: string;
  payload: Record<string, unknown>;
} {
  const payload = eventExample("workflow_dispatch");
  payload.inputs = inputs;
  return { name: "workflow_dispatch", payload };
}
