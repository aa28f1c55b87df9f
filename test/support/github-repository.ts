/**
 * One repository as the fake GitHub (github-server.ts) answers it: the one state model of the tests
 * on GitHub. It holds pull requests (files with their contents, labels, comments, reviews), check
 * runs, workflow run artifacts, releases and their assets (drafts, publication, immutable releases
 * and burned tags), tags, github-pages deployments and the installation tokens minted for the app.
 * The default branch is the loopback git remote when there is one (git-remote.ts: "commits touching
 * this path" is `git log` over what was really pushed, a merge is a real commit there), otherwise a
 * map of files.
 *
 * Every reply is built from this state (and completed from GitHub's own examples by the server);
 * write calls change it, so the next call sees what the last one wrote. `reply(route)` is the one
 * answer of each modelled route: the serve* methods register groups of them for any number of calls,
 * and a test that scripts the exact calls (pull-request-world.ts) expects them one by one.
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { renderStoredStatus } from "../../src/bot/comments.ts";
import type { SubmissionState } from "../../src/workflow/machine.ts";
import type { GitRemote } from "./git-remote.ts";
import { githubRelease, releaseAsset } from "./github-fixtures.ts";
import type { GitHubServer, RecordedRequest, Reply, ReplyFunction } from "./github-server.ts";

/** The portal app's login: status comments count only when it wrote them. */
export const BOT_LOGIN = "svc-portal[bot]";
/** The installation token the fake mints for the portal app. */
export const APP_TOKEN = "ghs_app_installation_token_test";

const NOT_FOUND: Reply = { status: 404, body: { message: "Not Found" } };

export function gitBlobSha(bytes: Buffer): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** One entry of GET /pulls/{pull_number}/files, the `index`th file of a pull request (the rest is GitHub's example). */
export function pullRequestFile(filename: string, status: string, index = 0) {
  return { sha: `${index}`.padStart(40, "0"), filename, status, additions: 1, deletions: 0, changes: 1 };
}

export interface CommentState {
  id: number;
  body: string;
  user: { login: string; type: "User" | "Bot" };
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
  readonly installationId: number;
  private readonly commitPulls = new Map<string, number[]>();
  private nextId = 1000;

  constructor(
    readonly github: GitHubServer,
    readonly fullName: string,
    options: { remote?: GitRemote; installationId?: number } = {},
  ) {
    this.remote = options.remote ?? null;
    this.installationId = options.installationId ?? 4242;
  }

  readonly remote: GitRemote | null;

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

  /** The bot's status comment, as only the bot can write it (another login's is a forgery). */
  setStatus(
    pr: PullRequestState,
    state: SubmissionState,
    options: { headSha?: string; login?: string } = {},
  ): void {
    const login = options.login ?? BOT_LOGIN;
    pr.comments = pr.comments.filter(
      (c) => !(c.user.login === login && c.body.startsWith("<!-- svc:status")),
    );
    pr.comments.unshift({
      id: this.nextId++,
      user: { login, type: login.endsWith("[bot]") ? "Bot" : "User" },
      body: `${renderStoredStatus({ state, headSha: options.headSha ?? pr.headSha })}\n### svc submission`,
    });
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

  published(tag: string): ReleaseState | undefined {
    return this.releases.find((r) => !r.draft && r.tag === tag);
  }

  /** A workflow run's artifact (a ZIP), listed and downloadable. */
  addArtifact(runId: number, name: string, bytes: Buffer): ArtifactState {
    const artifact = { id: this.nextId++, runId, name, bytes };
    this.artifacts.push(artifact);
    return artifact;
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
      "GET /repos/{owner}/{repo}/contents/{path}",
      "GET /repos/{owner}/{repo}/releases",
      "GET /repos/{owner}/{repo}/releases/tags/{tag}",
      "GET /repos/{owner}/{repo}/releases/assets/{asset_id}",
      "GET /repos/{owner}/{repo}/git/ref/{ref}",
      "GET /repos/{owner}/{repo}/deployments",
      "GET /repos/{owner}/{repo}/deployments/{deployment_id}/statuses",
    ]);
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
    ]);
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
    const answer = this.routes()[route];
    if (!answer) throw new Error(`${route} is not modelled by GitHubRepository`);
    return (req) => (this.isThisRepository(req) ? answer(req) : NOT_FOUND);
  }

  private isThisRepository(req: RecordedRequest): boolean {
    const { owner, repo } = req.params;
    return owner === undefined || `${owner}/${repo}`.toLowerCase() === this.fullName.toLowerCase();
  }

  private pull(req: RecordedRequest): PullRequestState | undefined {
    return this.pulls.get(Number(req.params.pull_number ?? req.params.issue_number));
  }

  private release(req: RecordedRequest): ReleaseState | undefined {
    return this.releases.find((r) => r.id === Number(req.params.release_id));
  }

  private routes(): Record<string, ReplyFunction> {
    const withPull =
      (answer: (pr: PullRequestState, req: RecordedRequest) => Reply) => (req: RecordedRequest) => {
        const pr = this.pull(req);
        return pr ? answer(pr, req) : NOT_FOUND;
      };
    const withRelease =
      (answer: (release: ReleaseState, req: RecordedRequest) => Reply) => (req: RecordedRequest) => {
        const release = this.release(req);
        return release ? answer(release, req) : NOT_FOUND;
      };
    return {
      "GET /repos/{owner}/{repo}/installation": () => ({ body: { id: this.installationId } }),
      "POST /app/installations/{installation_id}/access_tokens": (req) => {
        this.tokenRequests.push(req.body);
        return {
          body: {
            token: APP_TOKEN,
            expires_at: "2099-01-01T00:00:00Z",
            permissions: (req.body as { permissions?: unknown } | undefined)?.permissions ?? {},
          },
        };
      },
      "GET /repos/{owner}/{repo}/commits": (req) => this.commits(req),
      "GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls": (req) => ({
        body: (this.commitPulls.get(req.params.commit_sha!) ?? []).map((n) =>
          this.simplePullBody(this.pulls.get(n)!),
        ),
      }),
      "GET /repos/{owner}/{repo}/pulls": (req) => {
        const state = req.query.get("state") ?? "open";
        const head = req.query.get("head");
        const pulls = [...this.pulls.values()].filter(
          (pr) =>
            (state === "all" || pr.state === state) &&
            (!head || head === `${pr.headRepo.split("/")[0]}:${pr.headRef}`),
        );
        return { body: pulls.map((pr) => this.simplePullBody(pr)) };
      },
      "GET /repos/{owner}/{repo}/pulls/{pull_number}": withPull((pr) => ({ body: this.pullRequestBody(pr) })),
      "GET /repos/{owner}/{repo}/pulls/{pull_number}/files": withPull((pr) => ({
        body: pr.files.map((f, i) => this.fileBody(pr, f, i)),
      })),
      "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews": withPull((pr) => ({
        body: pr.reviews.map((r) => ({ ...r, user: { ...r.user, id: 1 } })),
      })),
      "GET /repos/{owner}/{repo}/issues": (req) => {
        const labels = (req.query.get("labels") ?? "").split(",").filter(Boolean);
        const open = [...this.pulls.values()]
          .filter((pr) => pr.state === "open" && labels.every((l) => pr.labels.includes(l)))
          .sort((a, b) => a.number - b.number);
        return {
          body: open.map((pr) => ({
            number: pr.number,
            state: "open",
            pull_request: { url: `https://api.github.com/repos/${this.fullName}/pulls/${pr.number}` },
            labels: pr.labels.map((name) => ({ name })),
          })),
        };
      },
      "GET /repos/{owner}/{repo}/issues/{issue_number}/comments": withPull((pr) => ({
        body: pr.comments.map((c) => this.commentBody(c)),
      })),
      "POST /repos/{owner}/{repo}/issues/{issue_number}/comments": withPull((pr, req) => {
        const comment: CommentState = {
          id: this.nextId++,
          body: (req.body as { body: string }).body,
          user: { login: BOT_LOGIN, type: "Bot" },
        };
        pr.comments.push(comment);
        return { status: 201, body: this.commentBody(comment) };
      }),
      "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}": (req) => {
        const comment = this.comment(Number(req.params.comment_id));
        if (!comment) return NOT_FOUND;
        comment.body = (req.body as { body: string }).body;
        return { body: this.commentBody(comment) };
      },
      "DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}": (req) => {
        for (const pr of this.pulls.values())
          pr.comments = pr.comments.filter((c) => c.id !== Number(req.params.comment_id));
        return { status: 204 };
      },
      "POST /repos/{owner}/{repo}/issues/{issue_number}/labels": withPull((pr, req) => {
        for (const name of (req.body as { labels: string[] }).labels)
          if (!pr.labels.includes(name)) pr.labels.push(name);
        return { body: pr.labels.map((name) => ({ name })) };
      }),
      "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}": withPull((pr, req) => {
        pr.labels = pr.labels.filter((l) => l !== req.params.name);
        return { body: pr.labels.map((name) => ({ name })) };
      }),
      "POST /repos/{owner}/{repo}/check-runs": (req) => {
        const run = { id: this.checkRuns.length + 1, ...(req.body as Record<string, unknown>) };
        this.checkRuns.push(run);
        return { status: 201, body: { id: run.id } };
      },
      "GET /repos/{owner}/{repo}/contents/{path}": (req) => this.contents(req),
      "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts": (req) => {
        const artifacts = this.artifacts.filter((a) => a.runId === Number(req.params.run_id));
        return {
          body: {
            total_count: artifacts.length,
            artifacts: artifacts.map((a) => ({
              id: a.id,
              name: a.name,
              size_in_bytes: a.bytes.length,
              expired: false,
            })),
          },
        };
      },
      "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}": (req) => {
        const artifact = this.artifacts.find((a) => a.id === Number(req.params.artifact_id));
        if (!artifact) return NOT_FOUND;
        const location = this.github.serveRaw(`/blob/artifacts/${artifact.id}.zip`, (_req, res) => {
          res
            .writeHead(200, {
              "content-type": "application/zip",
              "content-length": String(artifact.bytes.length),
            })
            .end(artifact.bytes);
        });
        return { status: 302, headers: { location } };
      },
      "GET /repos/{owner}/{repo}/releases": () => ({
        body: [...this.releases].reverse().map((r) => this.releaseBody(r)),
      }),
      "GET /repos/{owner}/{repo}/releases/tags/{tag}": (req) => {
        const release = this.published(req.params.tag!);
        return release ? { body: this.releaseBody(release) } : NOT_FOUND;
      },
      "GET /repos/{owner}/{repo}/git/ref/{ref}": (req) => {
        const ref = req.params.ref!;
        const tag = ref.replace(/^tags\//, "");
        if (!ref.startsWith("tags/") || !(this.tags.has(tag) || this.burnedTags.has(tag))) return NOT_FOUND;
        return { body: { ref: `refs/tags/${tag}` } };
      },
      "POST /repos/{owner}/{repo}/releases": (req) => {
        const body = req.body as { tag_name: string; draft?: boolean };
        if (!body.draft && (this.tags.has(body.tag_name) || this.burnedTags.has(body.tag_name)))
          return {
            status: 422,
            body: { message: "Validation Failed", errors: [{ code: "already_exists" }] },
          };
        const release: ReleaseState = {
          id: this.nextId++,
          tag: body.tag_name,
          draft: body.draft ?? false,
          assets: [],
        };
        if (!release.draft) this.tags.add(release.tag);
        this.releases.push(release);
        return { status: 201, body: this.releaseBody(release) };
      },
      "POST /repos/{owner}/{repo}/releases/{release_id}/assets": withRelease((release, req) => {
        if (!release.draft && this.immutable)
          return { status: 422, body: { message: "Cannot upload assets to an immutable release." } };
        const asset: AssetState = {
          id: this.nextId++,
          name: req.query.get("name")!,
          bytes: Buffer.from(req.bytes),
        };
        release.assets.push(asset);
        this.onUpload?.(release);
        return { status: 201, body: this.assetBody(release, asset) };
      }),
      "GET /repos/{owner}/{repo}/releases/assets/{asset_id}": (req) => {
        const asset = this.releases
          .flatMap((r) => r.assets)
          .find((a) => a.id === Number(req.params.asset_id));
        if (!asset) return NOT_FOUND;
        const location = this.github.serveRaw(`/blob/${asset.id}`, (_req, res) => {
          res.writeHead(200, { "content-type": "application/octet-stream" }).end(asset.bytes);
        });
        return { status: 302, headers: { location } };
      },
      "PATCH /repos/{owner}/{repo}/releases/{release_id}": withRelease((release, req) => {
        if ((req.body as { draft?: boolean }).draft === false && release.draft) {
          release.draft = false;
          this.tags.add(release.tag);
          this.onPublish?.(release);
        }
        return { body: this.releaseBody(release) };
      }),
      "DELETE /repos/{owner}/{repo}/releases/{release_id}": withRelease((release) => {
        this.releases.splice(this.releases.indexOf(release), 1);
        if (!release.draft && this.immutable) this.burnedTags.add(release.tag);
        return { status: 204 };
      }),
      "GET /repos/{owner}/{repo}/deployments": () => ({
        body: this.deployments
          .slice(0, 1)
          .map((d) => ({ id: d.id, sha: d.sha, environment: "github-pages" })),
      }),
      "GET /repos/{owner}/{repo}/deployments/{deployment_id}/statuses": (req) => {
        const d = this.deployments.find((x) => x.id === Number(req.params.deployment_id));
        return { body: d ? [{ state: d.state }] : [] };
      },
    };
  }

  private comment(id: number): CommentState | undefined {
    for (const pr of this.pulls.values()) {
      const found = pr.comments.find((c) => c.id === id);
      if (found) return found;
    }
    return undefined;
  }

  /** The file at a ref: the default branch (git remote or branchFiles) or a pull request's head. */
  contentAt(path: string, ref: string | null): Buffer | null {
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

  private contents(req: RecordedRequest): Reply {
    const path = req.params.path!;
    const bytes = this.contentAt(path, req.query.get("ref"));
    if (!bytes) return NOT_FOUND;
    return {
      body: {
        type: "file",
        encoding: "base64",
        name: path.split("/").pop(),
        path,
        size: bytes.length,
        sha: gitBlobSha(bytes),
        content: bytes.toString("base64"),
      },
    };
  }

  private commits(req: RecordedRequest): Reply {
    if (!this.remote) return NOT_FOUND;
    const args = ["log", "--format=%H", `refs/heads/${req.query.get("sha") ?? "HEAD"}`];
    const path = req.query.get("path");
    if (path) args.push("--", path);
    let shas: string[];
    try {
      shas = execFileSync("git", args, { cwd: this.remote.bare })
        .toString()
        .trim()
        .split("\n")
        .filter(Boolean);
    } catch {
      return NOT_FOUND;
    }
    return {
      body: shas.map((sha) => ({
        sha,
        url: `https://api.github.com/repos/${this.fullName}/commits/${sha}`,
        html_url: `https://github.com/${this.fullName}/commit/${sha}`,
      })),
    };
  }

  pullRequestBody(pr: PullRequestState): Record<string, unknown> {
    return {
      ...this.simplePullBody(pr),
      merged: pr.merged,
      changed_files: pr.files.length,
    };
  }

  simplePullBody(pr: PullRequestState): Record<string, unknown> {
    return {
      number: pr.number,
      state: pr.state,
      html_url: `https://github.com/${this.fullName}/pull/${pr.number}`,
      body: pr.body,
      merged_at: pr.mergedAt,
      user: { login: pr.author, id: 21031067, type: "User" },
      labels: pr.labels.map((name) => ({ name })),
      requested_reviewers: [],
      requested_teams: [],
      head: { sha: pr.headSha, ref: pr.headRef, repo: { full_name: pr.headRepo } },
      base: { ref: "main", repo: { default_branch: "main", full_name: this.fullName } },
    };
  }

  fileBody(pr: PullRequestState, file: PullRequestFile, index: number): Record<string, unknown> {
    return {
      ...pullRequestFile(file.filename, file.status, index),
      ...(file.content ? { sha: gitBlobSha(file.content) } : {}),
      blob_url: `https://github.com/${this.fullName}/blob/${pr.headSha}/${file.filename}`,
      raw_url: `https://github.com/${this.fullName}/raw/${pr.headSha}/${file.filename}`,
      contents_url: `https://api.github.com/repos/${this.fullName}/contents/${file.filename}?ref=${pr.headSha}`,
    };
  }

  commentBody(comment: CommentState): Record<string, unknown> {
    return { id: comment.id, body: comment.body, user: { ...comment.user, id: 1 } };
  }

  private assetBody(release: ReleaseState, asset: AssetState) {
    return releaseAsset({
      id: asset.id,
      name: asset.name,
      size: asset.bytes.length,
      repo: this.fullName,
      tag: release.tag,
      digest: `sha256:${createHash("sha256").update(asset.bytes).digest("hex")}`,
      apiUrl: this.github.url,
    });
  }

  private releaseBody(release: ReleaseState) {
    return {
      ...githubRelease({
        id: release.id,
        tag: release.tag,
        repo: this.fullName,
        apiUrl: this.github.url,
        uploadUrl: this.github.url,
        assets: release.assets.map((a) => this.assetBody(release, a)),
      }),
      draft: release.draft,
      immutable: !release.draft && this.immutable,
      published_at: release.draft ? null : "2026-11-21T10:05:00Z",
    };
  }
}
