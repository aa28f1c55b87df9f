/**
 * One repository as the fake GitHub (github-server.ts) answers it: the one state model of the tests
 * on GitHub. It holds pull requests (files with their contents, labels, comments, reviews), check
 * runs, workflow run artifacts, releases and their assets (drafts, publication, immutable releases
 * and burned tags), tags, github-pages deployments and the installation tokens minted for the app.
 * The default branch is the loopback git remote when there is one (git-remote.ts: "commits touching
 * this path" is `git log` over what was really pushed, a merge is a real commit there), otherwise a
 * map of files.
 *
 * Every reply is built from this state by the answer of its route (github-routes.ts) and completed
 * from GitHub's own examples by the server; write calls change it, so the next call sees what the
 * last one wrote. `reply(route)` is that answer: the serve* methods register groups of them for any
 * number of calls, and a test that scripts the exact calls (pull-request-world.ts) expects them one
 * by one.
 */
import { randomBytes } from "node:crypto";
import { renderStoredStatus } from "../../src/bot/comments.ts";
import { type StatusKey, sealStatus } from "../../src/bot/status-seal.ts";
import type { SubmissionState } from "../../src/workflow/machine.ts";
import type { GitRemote } from "./git-remote.ts";
import { repositoryRoutes } from "./github-routes.ts";
import { RepositorySettings, settingsRoutes } from "./github-settings.ts";
import {
  type GitHubServer,
  OTHER_REPOSITORY,
  type RecordedRequest,
  type ReplyFunction,
} from "./github-server.ts";

/** The portal app's login: status comments count only when it wrote them. */
export const BOT_LOGIN = "svc-portal[bot]";
/** The installation token the fake mints for the portal app. */
export const APP_TOKEN = "ghs_app_installation_token_test";

export interface CommentState {
  id: number;
  body: string;
  user: { login: string; type: "User" | "Bot" };
  /** ISO times; a comment without them is older than any `since` a listing asks for. */
  createdAt?: string;
  updatedAt?: string;
}

export interface ReviewState {
  id: number;
  state: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" | "DISMISSED";
  user: { login: string };
  commit_id: string;
}

export interface PullRequestFile {
  filename: string;
  status: string;
  /** The file at the head commit; absent when a test only lists the file. */
  content?: Buffer;
}

export interface PullRequestState {
  number: number;
  author: string;
  /** The author's account type: a pull request the app opens is a Bot's. */
  authorType?: "User" | "Bot";
  body: string;
  headSha: string;
  headRef: string;
  /** The repository the head branch lives in (a fork's full name). */
  headRepo: string;
  state: "open" | "closed";
  merged: boolean;
  mergedAt: string | null;
  files: PullRequestFile[];
  labels: string[];
  comments: CommentState[];
  reviews: ReviewState[];
}

export interface AssetState {
  id: number;
  name: string;
  bytes: Buffer;
}

export interface ReleaseState {
  id: number;
  tag: string;
  draft: boolean;
  assets: AssetState[];
}

/** A branch other than the default one: its head commit and the files it adds to the default branch's. */
export interface BranchState {
  sha: string;
  files: Map<string, Buffer>;
}

/** A workflow run of the repository, as GET /actions/runs lists it. */
export interface WorkflowRunState {
  id: number;
  status: "queued" | "in_progress" | "completed";
  createdAt: string;
  updatedAt: string;
  /** Who started the run (or this attempt of it): GitHub's triggering_actor. */
  triggeringActor: { login: string; type: "User" | "Bot" };
  /** Who started its first attempt. */
  actor?: { login: string; type: "User" | "Bot" };
}

export interface ArtifactState {
  id: number;
  runId: number;
  name: string;
  bytes: Buffer;
}

export class GitHubRepository {
  readonly pulls = new Map<number, PullRequestState>();
  /** Files of the default branch when there is no git remote (a value that is not bytes is JSON). */
  readonly branchFiles = new Map<string, unknown>();
  readonly checkRuns: Array<Record<string, any>> = [];
  readonly artifacts: ArtifactState[] = [];
  readonly releases: ReleaseState[] = [];
  /** Tags created by published releases; a deleted immutable release leaves its tag burned. */
  readonly tags = new Set<string>();
  readonly burnedTags = new Set<string>();
  /** The bodies of the installation token requests (the repositories and permissions asked for). */
  readonly tokenRequests: unknown[] = [];
  /** github-pages deployments, newest first. */
  deployments: Array<{ id: number; sha: string; state: "success" | "failure" }> = [];
  /** Releases are immutable once published (no asset upload, a deleted one burns its tag). */
  immutable = true;
  /** Called when a draft is published (after the state changed), e.g. to cancel the job there. */
  onPublish: ((release: ReleaseState) => void) | null = null;
  /** Called when an asset was stored (after the state changed). */
  onUpload: ((release: ReleaseState) => void) | null = null;
  /** The portal app's seal: setStatus writes the stored state as the app does, sealed with it. */
  statusKey: StatusKey | null = null;
  readonly installationId: number;
  /** The portal app: who its comments are written as, and the installation token it is minted. */
  readonly botLogin = BOT_LOGIN;
  readonly appToken = APP_TOKEN;
  /** The default branch, when it is a loopback git remote. */
  readonly remote: GitRemote | null;
  /** Merge commit -> the pull requests it closed (GET /commits/{sha}/pulls). */
  readonly commitPulls = new Map<string, number[]>();
  /** Branches made through the API (a submission pull request's head), by name. */
  readonly branches = new Map<string, BranchState>();
  /** Branches deleted through the API (DELETE /git/refs/heads/{name}), in order. */
  readonly deletedBranches: string[] = [];
  /** The default branch's head when there is no git remote. */
  defaultBranchSha = "9".repeat(40);
  /** GitHub's numeric id of the repository, and of its owner's account. */
  repositoryId: number;
  ownerId: number;
  readonly workflowRuns: WorkflowRunState[] = [];
  /** Rulesets, Pages, variables, environments, Actions settings, apps, the rate-limit budget. */
  readonly settings = new RepositorySettings();
  /**
   * The portal app's id (Probot's appId in the bot harness): the app check runs are created by,
   * what a ruleset pins its required check to and lets bypass.
   */
  appId = 1;
  private lastId = 999;

  constructor(
    readonly github: GitHubServer,
    readonly fullName: string,
    options: { remote?: GitRemote; installationId?: number; repositoryId?: number; ownerId?: number } = {},
  ) {
    this.remote = options.remote ?? null;
    this.installationId = options.installationId ?? 4242;
    this.repositoryId = options.repositoryId ?? 186853002;
    this.ownerId = options.ownerId ?? 21031067;
  }

  /** A pull request adding `files` (path -> content) from a fork branch; not merged. */
  openPullRequest(
    number: number,
    files: Record<string, string | Buffer> = {},
    author = "ada",
    fields: Partial<PullRequestState> = {},
  ): PullRequestState {
    const pr: PullRequestState = {
      number,
      author,
      body: "",
      headSha: randomBytes(20).toString("hex"),
      headRef: `submit-${number}`,
      headRepo: `${author}/${this.fullName.split("/")[1]}`,
      state: "open",
      merged: false,
      mergedAt: null,
      files: Object.entries(files).map(([filename, content]) => ({
        filename,
        status: "added",
        content: Buffer.from(content),
      })),
      labels: [],
      comments: [],
      reviews: [],
      ...fields,
    };
    this.pulls.set(number, pr);
    return pr;
  }

  /**
   * The bot's status comment, as only the bot can write it (another login's is a forgery), sealed
   * with statusKey when the bot writes it (`sealed: false`: what an edit by someone else leaves).
   */
  setStatus(
    pr: PullRequestState,
    state: SubmissionState,
    options: { headSha?: string; login?: string; sealed?: boolean } = {},
  ): void {
    const login = options.login ?? BOT_LOGIN;
    pr.comments = pr.comments.filter(
      (c) => !(c.user.login === login && c.body.startsWith("<!-- svc:status")),
    );
    const at = new Date().toISOString();
    pr.comments.unshift({
      id: this.newId(),
      createdAt: at,
      updatedAt: at,
      user: { login, type: login.endsWith("[bot]") ? "Bot" : "User" },
      body: `${renderStoredStatus(this.stored(pr.number, state, options.headSha ?? pr.headSha, options.sealed ?? login === BOT_LOGIN))}\n### svc submission`,
    });
  }

  /** A stored state as the app writes it for pull request `number`: sealed when the repository has the key. */
  stored(number: number, state: SubmissionState, headSha: string, sealed = true, retryable = false) {
    const plain = { state, headSha, ...(retryable ? { retryable: true } : {}) };
    if (!this.statusKey || !sealed) return plain;
    return sealStatus(this.statusKey, { repository: this.fullName, pullRequest: number }, plain, new Date());
  }

  /**
   * Merges: one commit on the default branch with the pull request's files (plus `extra`, what a
   * push beside the merge brought), associated with the pull request. Returns the commit.
   */
  merge(pr: PullRequestState, extra: Record<string, string | Buffer> = {}): string {
    if (!this.remote) throw new Error("merge needs the git remote");
    const files: Record<string, string | Buffer> = { ...extra };
    for (const f of pr.files) if (f.content) files[f.filename] = f.content;
    const sha = this.remote.commitAs("web-flow", `Merge pull request #${pr.number}`, files);
    pr.merged = true;
    pr.state = "closed";
    pr.mergedAt = "2026-11-21T10:00:00Z";
    this.commitPulls.set(sha, [...(this.commitPulls.get(sha) ?? []), pr.number]);
    return sha;
  }

  /** Ids for comments, releases, assets and artifacts, unique in the repository. */
  newId(): number {
    return ++this.lastId;
  }

  published(tag: string): ReleaseState | undefined {
    return this.releases.find((r) => !r.draft && r.tag === tag);
  }

  /** A workflow run's artifact (a ZIP), listed and downloadable. */
  addArtifact(runId: number, name: string, bytes: Buffer): ArtifactState {
    const artifact = { id: this.newId(), runId, name, bytes };
    this.artifacts.push(artifact);
    return artifact;
  }

  /**
   * An upload as actions/upload-artifact v4 makes it. A name is unique in a workflow run, across
   * every attempt of it (a re-run is the same run): a second upload of the name is refused with
   * GitHub's 409 and the step fails, unless `overwrite` deletes the earlier artifact first.
   */
  uploadArtifact(
    runId: number,
    name: string,
    bytes: Buffer,
    options: { overwrite?: boolean } = {},
  ): { ok: true; artifact: ArtifactState } | { ok: false; message: string } {
    const existing = this.artifacts.filter((a) => a.runId === runId && a.name === name);
    if (existing.length > 0 && !options.overwrite)
      return {
        ok: false,
        message:
          "Failed to CreateArtifact: Received non-retryable error: Failed request: (409) Conflict: an artifact with this name already exists on the workflow run",
      };
    for (const old of existing) this.artifacts.splice(this.artifacts.indexOf(old), 1);
    return { ok: true, artifact: this.addArtifact(runId, name, bytes) };
  }

  /** Every read of the modelled state, any number of times. */
  serveReads(): this {
    return this.allowAll([
      "GET /repos/{owner}/{repo}/installation",
      "GET /repos/{owner}/{repo}/commits",
      "GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls",
      "GET /repos/{owner}/{repo}/pulls",
      "GET /repos/{owner}/{repo}/pulls/{pull_number}",
      "GET /repos/{owner}/{repo}/pulls/{pull_number}/files",
      "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews",
      "GET /repos/{owner}/{repo}/issues",
      "GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
      "GET /repos/{owner}/{repo}/issues/comments",
      "GET /repos/{owner}/{repo}/contents/{path}",
      "GET /repos/{owner}/{repo}/releases",
      "GET /repos/{owner}/{repo}/releases/tags/{tag}",
      "GET /repos/{owner}/{repo}/releases/assets/{asset_id}",
      "GET /repos/{owner}/{repo}/git/ref/{ref}",
      "GET /repos/{owner}/{repo}/deployments",
      "GET /repos/{owner}/{repo}/deployments/{deployment_id}/statuses",
    ]);
  }

  /**
   * The repository's settings and what they enforce (github-settings.ts), any number of times: its
   * rulesets (read, created), merges checked against them, check runs of a commit, Pages,
   * variables, environments, Actions settings, apps, the rate limit.
   */
  serveSettings(): this {
    // The doctor also asks whether the default branch still commits site/ (a file read).
    return this.allowAll([...Object.keys(settingsRoutes(this)), "GET /repos/{owner}/{repo}/contents/{path}"]);
  }

  /** The app's installation tokens (background calls: any number). */
  serveAppTokens(): this {
    return this.allowAll(["POST /app/installations/{installation_id}/access_tokens"]);
  }

  /** What the bot writes on a pull request: labels, comments, check runs. */
  serveBotWrites(): this {
    return this.allowAll([
      "POST /repos/{owner}/{repo}/issues/{issue_number}/labels",
      "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
      "POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
      "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}",
      "DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}",
      "POST /repos/{owner}/{repo}/check-runs",
      "DELETE /repos/{owner}/{repo}/git/refs/{ref}",
    ]);
  }

  /**
   * What the app writes to open a submission pull request (release intake, API uploads): the
   * repository's default branch, a branch from it, the sidecar committed there, the pull request.
   */
  serveSubmissionWrites(): this {
    return this.allowAll([
      "GET /repos/{owner}/{repo}",
      "POST /repos/{owner}/{repo}/git/refs",
      "PUT /repos/{owner}/{repo}/contents/{path}",
      "POST /repos/{owner}/{repo}/pulls",
    ]);
  }

  /** The repository's workflow runs (GET /actions/runs), any number of times. */
  serveWorkflowRuns(): this {
    return this.allowAll(["GET /repos/{owner}/{repo}/actions/runs"]);
  }

  /** What the GitHub Releases artifact store writes: drafts, assets, publication, deletion. */
  serveReleaseWrites(): this {
    return this.allowAll([
      "POST /repos/{owner}/{repo}/releases",
      "POST /repos/{owner}/{repo}/releases/{release_id}/assets",
      "PATCH /repos/{owner}/{repo}/releases/{release_id}",
      "DELETE /repos/{owner}/{repo}/releases/{release_id}",
    ]);
  }

  private allowAll(routes: string[]): this {
    for (const route of routes) this.github.allow(route, this.reply(route));
    return this;
  }

  /** The modelled answer of `METHOD /template`, reading and writing this state. */
  reply(route: string): ReplyFunction {
    const answer = { ...repositoryRoutes(this), ...settingsRoutes(this) }[route];
    if (!answer) throw new Error(`${route} is not modelled by GitHubRepository`);
    return (req) => {
      if (!this.isThisRepository(req)) return OTHER_REPOSITORY;
      if (route !== "GET /rate_limit")
        this.settings.rateLimit.remaining = Math.max(0, this.settings.rateLimit.remaining - 1);
      return answer(req);
    };
  }

  private isThisRepository(req: RecordedRequest): boolean {
    const { owner, repo } = req.params;
    return owner === undefined || `${owner}/${repo}`.toLowerCase() === this.fullName.toLowerCase();
  }

  /** A comment of any pull request, by id. */
  comment(id: number): CommentState | undefined {
    for (const pr of this.pulls.values()) {
      const found = pr.comments.find((c) => c.id === id);
      if (found) return found;
    }
    return undefined;
  }

  /** The file at a ref: the default branch (git remote or branchFiles), a branch, or a pull request's head. */
  contentAt(path: string, ref: string | null): Buffer | null {
    const branch =
      ref === null
        ? undefined
        : [...this.branches.entries()].find(([name, b]) => name === ref || b.sha === ref);
    if (branch) return branch[1].files.get(path) ?? this.contentAt(path, null);
    if (ref === null || ref === "main" || ref === "refs/heads/main") {
      if (this.remote) return this.remote.show(path);
      const value = this.branchFiles.get(path);
      if (value === undefined) return null;
      return Buffer.isBuffer(value)
        ? value
        : Buffer.from(typeof value === "string" ? value : JSON.stringify(value));
    }
    for (const pr of this.pulls.values()) {
      if (pr.headSha !== ref) continue;
      const file = pr.files.find((f) => f.filename === path && f.status !== "removed");
      return file ? this.headContent(pr, file) : null;
    }
    return null;
  }

  /** A file's content at the pull request's head (pull-request-world.ts serves a sidecar for listed files). */
  protected headContent(_pr: PullRequestState, file: PullRequestFile): Buffer | null {
    return file.content ?? null;
  }
}
