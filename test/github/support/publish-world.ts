/**
 * The portal repository as GitHub answers the publish job: a stateful fake of the network edge,
 * named as one, on the OpenAPI-validating loopback server (test/support/github-openapi-server.ts:
 * every request and every reply checked against GitHub's description; replies are built from
 * GitHub's own examples in that description). Its git history is the real one: the default branch
 * lives in the loopback git remote (git-remote.ts), so "commits touching this path" is `git log` over
 * what was really pushed, and a merge is a real commit there.
 *
 * Modelled as GitHub does it: installation tokens for an installed app (the requested repositories
 * and permissions are recorded), pull requests with their files (blob shas computed like git's),
 * comments, commit -> pull request association, releases as drafts (invisible to tag lookups, no tag
 * until published), asset uploads and downloads (302 to a blob host), publication of a draft, and
 * immutable releases (no asset upload once published; a deleted immutable release burns its tag).
 */
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { createRequire } from "node:module";
import { renderStoredStatus } from "../../../src/bot/comments.ts";
import type { SubmissionState } from "../../../src/workflow/machine.ts";
import type { GitHubApiServer, RecordedRequest, Reply } from "../../support/github-openapi-server.ts";
import { githubRelease, githubUser, releaseAsset } from "../../support/github-openapi-server.ts";
import type { GitRemote } from "./git-remote.ts";

const require = createRequire(import.meta.url);
const EXAMPLES = (
  require("@octokit/openapi/generated/api.github.com.json") as {
    components: { examples: Record<string, { value: unknown }> };
  }
).components.examples;

/** A deep copy of one of GitHub's example replies (arrays give their first item). */
function example(name: string): Record<string, any> {
  const value = EXAMPLES[name]?.value;
  if (value === undefined) throw new Error(`no example ${name} in GitHub's OpenAPI description`);
  return structuredClone(Array.isArray(value) ? value[0] : value) as Record<string, any>;
}

export const BOT_LOGIN = "svc-portal[bot]";
export const APP_TOKEN = "ghs_app_installation_token_test";
export const INSTALLATION_ID = 4242;
const NOT_FOUND = { message: "Not Found", documentation_url: "https://docs.github.com/rest" };

/** A simple-user; a login like `app[bot]` appears percent-encoded in its URLs, as on GitHub. */
function worldUser(login: string, id: number) {
  const user = githubUser("login-placeholder", id);
  const encoded = encodeURIComponent(login);
  return Object.fromEntries(
    Object.entries(user).map(([k, v]) => [
      k,
      k === "login" ? login : typeof v === "string" ? v.replace("login-placeholder", encoded) : v,
    ]),
  );
}

export function gitBlobSha(bytes: Buffer): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

export interface WorldFile {
  filename: string;
  status: "added" | "modified" | "removed";
  content: Buffer;
}

export interface WorldPullRequest {
  number: number;
  author: string;
  headSha: string;
  headRef: string;
  headRepo: string;
  files: WorldFile[];
  mergedAt: string | null;
  comments: Array<{ id: number; login: string; type: "User" | "Bot"; body: string }>;
}

export interface WorldAsset {
  id: number;
  name: string;
  bytes: Buffer;
}

export interface WorldRelease {
  id: number;
  tag: string;
  draft: boolean;
  assets: WorldAsset[];
}

export class PublishWorld {
  readonly pulls = new Map<number, WorldPullRequest>();
  readonly releases: WorldRelease[] = [];
  /** Tags created by published releases; a deleted immutable release leaves its tag burned. */
  readonly tags = new Set<string>();
  readonly burnedTags = new Set<string>();
  readonly tokenRequests: unknown[] = [];
  /** github-pages deployments, newest first. */
  deployments: Array<{ id: number; sha: string; state: "success" | "failure" }> = [];
  immutable = true;
  /** Called when a draft is published (after the world changed), e.g. to cancel the job there. */
  onPublish: ((release: WorldRelease) => void) | null = null;
  /** Called when an asset was stored (after the world changed). */
  onUpload: ((release: WorldRelease) => void) | null = null;
  private readonly commitPulls = new Map<string, number[]>();
  private nextId = 9000;

  constructor(
    readonly github: GitHubApiServer,
    readonly remote: GitRemote,
    readonly repository: string,
  ) {
    const on = (route: string, reply: (req: RecordedRequest) => Reply) =>
      github.expect({ route, reply, times: Number.POSITIVE_INFINITY });
    on("GET /repos/{owner}/{repo}/installation", (req) => {
      if (`${req.params.owner}/${req.params.repo}` !== this.repository)
        return { status: 404, body: NOT_FOUND };
      return { status: 200, body: { ...example("installation"), id: INSTALLATION_ID } };
    });
    on("POST /app/installations/{installation_id}/access_tokens", (req) => {
      this.tokenRequests.push(req.json);
      return {
        status: 201,
        body: {
          ...example("installation-token"),
          token: APP_TOKEN,
          expires_at: "2099-01-01T00:00:00Z",
          permissions: (req.json as { permissions?: unknown }).permissions ?? {},
        },
      };
    });
    on("GET /repos/{owner}/{repo}/commits", (req) => this.commits(req));
    on("GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls", (req) => ({
      status: 200,
      body: (this.commitPulls.get(req.params.commit_sha!) ?? []).map((n) =>
        this.simplePull(this.pulls.get(n)!),
      ),
    }));
    on("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", (req) => {
      const pr = this.pulls.get(Number(req.params.pull_number));
      if (!pr) return { status: 404, body: NOT_FOUND };
      return {
        status: 200,
        body: pr.files.map((f) => ({
          ...example("diff-entry-items"),
          filename: f.filename,
          status: f.status,
          sha: gitBlobSha(f.content),
          blob_url: `https://github.com/${this.repository}/blob/${pr.headSha}/${f.filename}`,
          raw_url: `https://github.com/${this.repository}/raw/${pr.headSha}/${f.filename}`,
          contents_url: `https://api.github.com/repos/${this.repository}/contents/${f.filename}?ref=${pr.headSha}`,
        })),
      };
    });
    on("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", (req) => {
      const pr = this.pulls.get(Number(req.params.issue_number));
      if (!pr) return { status: 404, body: NOT_FOUND };
      return {
        status: 200,
        body: pr.comments.map((c) => ({
          ...example("issue-comment-items"),
          id: c.id,
          body: c.body,
          user: { ...worldUser(c.login, c.id), type: c.type },
        })),
      };
    });
    on("GET /repos/{owner}/{repo}/releases/tags/{tag}", (req) => {
      const release = this.releases.find((r) => !r.draft && r.tag === req.params.tag);
      return release ? { status: 200, body: this.releaseBody(release) } : { status: 404, body: NOT_FOUND };
    });
    on("GET /repos/{owner}/{repo}/git/ref/{ref}", (req) => {
      const tag = req.params.ref!.replace(/^tags\//, "");
      if (!req.params.ref!.startsWith("tags/") || !(this.tags.has(tag) || this.burnedTags.has(tag)))
        return { status: 404, body: NOT_FOUND };
      return {
        status: 200,
        body: { ...example("git-ref"), ref: `refs/tags/${tag}` },
      };
    });
    on("GET /repos/{owner}/{repo}/releases", () => ({
      status: 200,
      body: [...this.releases].reverse().map((r) => this.releaseBody(r)),
    }));
    on("POST /repos/{owner}/{repo}/releases", (req) => {
      const body = req.json as { tag_name: string; draft?: boolean };
      if (!body.draft && (this.tags.has(body.tag_name) || this.burnedTags.has(body.tag_name)))
        return { status: 422, body: { message: "Validation Failed", errors: [{ code: "already_exists" }] } };
      const release: WorldRelease = {
        id: this.nextId++,
        tag: body.tag_name,
        draft: body.draft ?? false,
        assets: [],
      };
      if (!release.draft) this.tags.add(release.tag);
      this.releases.push(release);
      return { status: 201, body: this.releaseBody(release) };
    });
    on("POST /repos/{owner}/{repo}/releases/{release_id}/assets", (req) => {
      const release = this.release(req.params.release_id!);
      if (!release) return { status: 404, body: NOT_FOUND };
      if (!release.draft && this.immutable)
        return { status: 422, body: { message: "Cannot upload assets to an immutable release." } };
      const asset: WorldAsset = { id: this.nextId++, name: req.query.name!, bytes: Buffer.from(req.body) };
      release.assets.push(asset);
      github.expect({
        route: `GET /blob/${asset.id}`,
        raw: true,
        times: Number.POSITIVE_INFINITY,
        reply: () => ({
          status: 200,
          body: asset.bytes,
          headers: { "content-type": "application/octet-stream" },
        }),
      });
      this.onUpload?.(release);
      return { status: 201, body: this.assetBody(release, asset) };
    });
    on("GET /repos/{owner}/{repo}/releases/assets/{asset_id}", (req) => {
      const found = this.releases.flatMap((r) => r.assets).find((a) => a.id === Number(req.params.asset_id));
      if (!found) return { status: 404, body: NOT_FOUND };
      return { status: 302, headers: { location: `${github.url}/blob/${found.id}` } };
    });
    on("PATCH /repos/{owner}/{repo}/releases/{release_id}", (req) => {
      const release = this.release(req.params.release_id!);
      if (!release) return { status: 404, body: NOT_FOUND };
      if ((req.json as { draft?: boolean }).draft === false && release.draft) {
        release.draft = false;
        this.tags.add(release.tag);
        this.onPublish?.(release);
      }
      return { status: 200, body: this.releaseBody(release) };
    });
    on("DELETE /repos/{owner}/{repo}/releases/{release_id}", (req) => {
      const release = this.release(req.params.release_id!);
      if (!release) return { status: 404, body: NOT_FOUND };
      this.releases.splice(this.releases.indexOf(release), 1);
      if (!release.draft && this.immutable) this.burnedTags.add(release.tag);
      return { status: 204 };
    });
    on("GET /repos/{owner}/{repo}/deployments", () => ({
      status: 200,
      body: this.deployments
        .slice(0, 1)
        .map((d) => ({ ...example("deployment-items"), id: d.id, sha: d.sha, environment: "github-pages" })),
    }));
    on("GET /repos/{owner}/{repo}/deployments/{deployment_id}/statuses", (req) => {
      const d = this.deployments.find((x) => x.id === Number(req.params.deployment_id));
      return { status: 200, body: d ? [{ ...example("deployment-status-items"), state: d.state }] : [] };
    });
  }

  /** A pull request adding `files` (path -> content) from a fork branch; not merged. */
  openPullRequest(number: number, files: Record<string, string | Buffer>, author = "ada"): WorldPullRequest {
    const pr: WorldPullRequest = {
      number,
      author,
      headSha: randomBytes(20).toString("hex"),
      headRef: `submit-${number}`,
      headRepo: `${author}/mods`,
      files: Object.entries(files).map(([filename, content]) => ({
        filename,
        status: "added",
        content: Buffer.from(content),
      })),
      mergedAt: null,
      comments: [],
    };
    this.pulls.set(number, pr);
    return pr;
  }

  /** The bot's status comment, as only the bot can write it. */
  setStatus(
    pr: WorldPullRequest,
    state: SubmissionState,
    options: { headSha?: string; login?: string } = {},
  ): void {
    const login = options.login ?? BOT_LOGIN;
    pr.comments = pr.comments.filter((c) => !(c.login === login && c.body.startsWith("<!-- svc:status")));
    pr.comments.unshift({
      id: this.nextId++,
      login,
      type: login.endsWith("[bot]") ? "Bot" : "User",
      body: `${renderStoredStatus({ state, headSha: options.headSha ?? pr.headSha })}\n### svc submission`,
    });
  }

  /**
   * Merges: one commit on the default branch with the pull request's files (plus `extra`, what a
   * push beside the merge brought), associated with the pull request. Returns the commit.
   */
  merge(pr: WorldPullRequest, extra: Record<string, string | Buffer> = {}): string {
    const files: Record<string, string | Buffer> = { ...extra };
    for (const f of pr.files) files[f.filename] = f.content;
    const sha = this.remote.commitAs("web-flow", `Merge pull request #${pr.number}`, files);
    pr.mergedAt = "2026-11-21T10:00:00Z";
    this.commitPulls.set(sha, [...(this.commitPulls.get(sha) ?? []), pr.number]);
    return sha;
  }

  published(tag: string): WorldRelease | undefined {
    return this.releases.find((r) => !r.draft && r.tag === tag);
  }

  private release(id: string): WorldRelease | undefined {
    return this.releases.find((r) => r.id === Number(id));
  }

  private commits(req: RecordedRequest): Reply {
    const ref = req.query.sha ?? "HEAD";
    const args = ["log", "--format=%H", `refs/heads/${ref}`];
    if (req.query.path) args.push("--", req.query.path);
    let shas: string[] = [];
    try {
      shas = execFileSync("git", args, { cwd: this.remote.bare })
        .toString()
        .trim()
        .split("\n")
        .filter(Boolean);
    } catch {
      return { status: 404, body: NOT_FOUND };
    }
    return {
      status: 200,
      body: shas.map((sha) => ({
        ...example("commit-items"),
        sha,
        url: `https://api.github.com/repos/${this.repository}/commits/${sha}`,
        html_url: `https://github.com/${this.repository}/commit/${sha}`,
      })),
    };
  }

  private simplePull(pr: WorldPullRequest): Record<string, unknown> {
    const base = example("pull-request-simple-items");
    return {
      ...base,
      number: pr.number,
      state: pr.mergedAt ? "closed" : "open",
      html_url: `https://github.com/${this.repository}/pull/${pr.number}`,
      merged_at: pr.mergedAt,
      user: worldUser(pr.author, 77),
      requested_reviewers: [],
      requested_teams: [],
      head: {
        ...base.head,
        sha: pr.headSha,
        ref: pr.headRef,
        repo: { ...base.head.repo, full_name: pr.headRepo },
      },
      base: { ...base.base, ref: "main", repo: { ...base.base.repo, full_name: this.repository } },
    };
  }

  private assetBody(release: WorldRelease, asset: WorldAsset) {
    return releaseAsset({
      id: asset.id,
      name: asset.name,
      size: asset.bytes.length,
      repo: this.repository,
      tag: release.tag,
      digest: `sha256:${createHash("sha256").update(asset.bytes).digest("hex")}`,
      apiUrl: this.github.url,
    });
  }

  private releaseBody(release: WorldRelease) {
    return {
      ...githubRelease({
        id: release.id,
        tag: release.tag,
        repo: this.repository,
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
