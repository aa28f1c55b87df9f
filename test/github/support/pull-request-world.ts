/**
 * The state of one portal repository as the fake GitHub API answers it: a pull request, its files,
 * labels, comments and reviews, the sidecar at the head commit and portal.config.json on main.
 * Write calls update it, so a scenario's next event sees what the bot wrote before.
 */
import type { GitHubApiServer, RecordedRequest, Reply } from "./github-api-server.ts";
import { BOT_LOGIN, examplePayload } from "./bot-harness.ts";

export interface WorldComment {
  id: number;
  body: string;
  user: { login: string; type: "User" | "Bot" };
}

export interface WorldReview {
  id: number;
  state: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" | "DISMISSED";
  user: { login: string };
  commit_id: string;
}

/** One entry of GET /pulls/{pull_number}/files, the `index`th file of the pull request. */
export function pullRequestFile(filename: string, status: string, index = 0) {
  return {
    sha: `${index}`.padStart(40, "0"),
    filename,
    status,
    additions: 1,
    deletions: 0,
    changes: 1,
    blob_url: "",
    raw_url: "",
    contents_url: "",
  };
}

export class PullRequestWorld {
  number = 1;
  headSha = "a".repeat(40);
  author = "Codertocat";
  body = "Submitting better-hud 1.2.0";
  state: "open" | "closed" = "open";
  merged = false;
  files: Array<{ filename: string; status: string }> = [];
  labels: string[] = [];
  comments: WorldComment[] = [];
  reviews: WorldReview[] = [];
  queue: number[] = [];
  sidecar: unknown = null;
  moderators: { logins: string[]; team: string | null } = { logins: ["moderator-mia"], team: null };
  private nextId = 1000;

  constructor(private readonly github: GitHubApiServer) {}

  /** Real payloads (@octokit/webhooks-examples) pointed at this pull request. */
  pullRequestPayload(action: string): Record<string, any> {
    const payload = examplePayload("pull_request", action);
    payload.number = this.number;
    payload.pull_request.number = this.number;
    payload.pull_request.head.sha = this.headSha;
    return payload;
  }

  commentPayload(login: string, body: string): Record<string, any> {
    const payload = examplePayload("issue_comment", "created");
    payload.issue.number = this.number;
    payload.issue.pull_request = {
      url: `https://api.github.com/repos/Codertocat/Hello-World/pulls/${this.number}`,
    };
    payload.comment.user.login = login;
    payload.comment.body = body;
    return payload;
  }

  /**
   * A finished run of the validation workflow for `headSha`, as GitHub sends it for a pull request
   * from a fork: no pull request attached, found by its head branch.
   */
  workflowRunPayload(headSha: string, conclusion = "success", runId = 30433642): Record<string, any> {
    const payload = examplePayload("workflow_run", "completed");
    payload.repository = examplePayload("pull_request", "opened").repository;
    payload.workflow_run.path = ".github/workflows/validate-submission.yml";
    payload.workflow_run.event = "pull_request";
    payload.workflow_run.head_sha = headSha;
    payload.workflow_run.id = runId;
    payload.workflow_run.conclusion = conclusion;
    payload.workflow_run.pull_requests = [];
    return payload;
  }

  /** The stored state, as the bot's status comment holds it. */
  withStatus(state: string, options: { retryable?: boolean } = {}): this {
    this.comments.push({
      id: 5,
      body: `<!-- svc:status ${JSON.stringify({ state, headSha: this.headSha, ...(options.retryable ? { retryable: true } : {}) })} -->`,
      user: { login: BOT_LOGIN, type: "Bot" },
    });
    this.labels = [`state:${state}`];
    return this;
  }

  /** The open pull requests of the run's head branch (how a fork's run finds its pull request). */
  expectRunPullRequests(): this {
    this.github.expect("GET /repos/{owner}/{repo}/pulls", () => ({
      body: [{ number: this.number, head: { sha: this.headSha, ref: "submit-better-hud" } }],
    }));
    return this;
  }

  statusComment(): WorldComment | undefined {
    return this.comments.find((c) => c.user.login === BOT_LOGIN && c.body.startsWith("<!-- svc:status"));
  }

  /**
   * Answers every read and write of this pull request any number of times, keeping the state: for
   * tests where deliveries race, so the order of calls is not scripted.
   */
  serve(): this {
    const g = this.github;
    g.allow("GET /repos/{owner}/{repo}/pulls/{pull_number}", () => ({ body: this.pullRequest() }));
    g.allow("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", () => ({ body: this.fileList() }));
    g.allow("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", () => ({ body: this.commentList() }));
    g.allow("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", () => ({ body: this.reviews }));
    g.allow("GET /repos/{owner}/{repo}/issues", () => ({ body: [] }));
    g.allow("GET /repos/{owner}/{repo}/contents/{path}", (req) => this.contents(req));
    g.allow("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", (req) => {
      this.labels = this.labels.filter((l) => l !== req.params.name);
      return { status: 200, body: [] };
    });
    g.allow("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", (req) => {
      for (const name of (req.body as { labels: string[] }).labels)
        if (!this.labels.includes(name)) this.labels.push(name);
      return { status: 200, body: this.labels.map((name) => ({ name })) };
    });
    g.allow("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", (req) => this.addComment(req));
    g.allow("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", (req) => {
      const comment = this.comments.find((c) => c.id === Number(req.params.comment_id));
      if (!comment) return { status: 404, body: { message: "Not Found" } };
      comment.body = (req.body as { body: string }).body;
      return { status: 200, body: { ...comment, user: { ...comment.user, id: 1 } } };
    });
    g.allow("DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}", (req) => {
      this.comments = this.comments.filter((c) => c.id !== Number(req.params.comment_id));
      return { status: 204 };
    });
    g.allow("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } });
    return this;
  }

  /** The six reads of fetchPullRequestInfo (the sidecar only when the PR is a submission). */
  expectFetch(options: { sidecar?: boolean } = {}): this {
    const g = this.github;
    g.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}", () => ({ body: this.pullRequest() }));
    g.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", () => ({ body: this.fileList() }));
    g.expect("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", () => ({
      body: this.commentList(),
    }));
    g.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", () => ({ body: this.reviews }));
    g.expect("GET /repos/{owner}/{repo}/issues", () => ({
      body: this.queue.map((n) => ({
        number: n,
        pull_request: { url: "" },
        labels: [{ name: "state:pending_review" }],
      })),
    }));
    if (options.sidecar ?? true) {
      g.expect("GET /repos/{owner}/{repo}/contents/{path}", (req) => this.contents(req));
    }
    return this;
  }

  /** portal.config.json on the default branch, read when a review or command needs a moderator check. */
  expectModeratorPolicy(): this {
    this.github.expect("GET /repos/{owner}/{repo}/contents/{path}", (req) => this.contents(req));
    return this;
  }

  expectLabel(): this {
    this.github.allow("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", (req) => {
      this.labels = this.labels.filter((l) => l !== req.params.name);
      return { status: 200, body: [] };
    });
    this.github.expect("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", (req) => {
      const added = (req.body as { labels: string[] }).labels;
      this.labels.push(...added);
      return { status: 200, body: this.labels.map((name) => ({ name })) };
    });
    return this;
  }

  expectStatusComment(kind: "create" | "update"): this {
    if (kind === "create") {
      this.github.expect("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", (req) =>
        this.addComment(req),
      );
      // After a create the bot lists the comments again: a duplicate written beside it is removed.
      this.github.expect("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", () => ({
        body: this.commentList(),
      }));
    } else
      this.github.expect("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", (req) => {
        const comment = this.comments.find((c) => c.id === Number(req.params.comment_id))!;
        comment.body = (req.body as { body: string }).body;
        return { status: 200, body: { ...comment, user: { ...comment.user, id: 1 } } };
      });
    return this;
  }

  expectReply(): this {
    this.github.expect("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", (req) =>
      this.addComment(req),
    );
    return this;
  }

  fileList(): unknown[] {
    return this.files.map((f, i) => pullRequestFile(f.filename, f.status, i));
  }

  commentList(): unknown[] {
    return this.comments.map((c) => ({ ...c, user: { ...c.user, id: 1 } }));
  }

  addComment(req: RecordedRequest): Reply {
    const comment: WorldComment = {
      id: this.nextId++,
      body: (req.body as { body: string }).body,
      user: { login: BOT_LOGIN, type: "Bot" },
    };
    this.comments.push(comment);
    return { status: 201, body: { ...comment, user: { ...comment.user, id: 1 } } };
  }

  private contents(req: RecordedRequest): Reply {
    const path = req.params.path!;
    const ref = req.query.get("ref");
    let value: unknown;
    if (path === "portal.config.json" && ref === "main") value = { moderators: this.moderators };
    else if (ref === this.headSha && this.files.some((f) => f.filename === path)) value = this.sidecar;
    if (value === undefined || value === null) return { status: 404, body: { message: "Not Found" } };
    return {
      body: {
        type: "file",
        encoding: "base64",
        name: path.split("/").pop(),
        path,
        size: 1,
        sha: "f".repeat(40),
        content: Buffer.from(JSON.stringify(value)).toString("base64"),
      },
    };
  }

  pullRequest(): Record<string, unknown> {
    return {
      number: this.number,
      state: this.state,
      merged: this.merged,
      html_url: `https://github.com/Codertocat/Hello-World/pull/${this.number}`,
      body: this.body,
      user: { login: this.author, id: 21031067, type: "User" },
      labels: this.labels.map((name) => ({ name })),
      changed_files: this.files.length,
      head: { sha: this.headSha, ref: "submit-better-hud" },
      base: { ref: "main", repo: { default_branch: "main", full_name: "Codertocat/Hello-World" } },
    };
  }
}
