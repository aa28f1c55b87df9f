/**
 * One submission pull request of the portal repository (Codertocat/Hello-World, the repository of
 * the webhook examples), for tests that script the exact calls the bot makes: the state lives in the
 * repository model (github-repository.ts) and every scripted reply is that model's answer, so a
 * scenario's next event sees what the bot wrote before. Its fields are the pull request's; the
 * sidecar is served for every file the pull request lists, and portal.config.json on main names the
 * moderators.
 */
import {
  BOT_LOGIN,
  type CommentState,
  GitHubRepository,
  type PullRequestFile,
  type PullRequestState,
} from "./github-repository.ts";
import { renderStoredStatus } from "../../src/bot/comments.ts";
import { submissionReportArtifact } from "../../src/github/submission-report.ts";
import type { SubmissionState } from "../../src/workflow/machine.ts";
import { testStatusKey } from "./bot-harness.ts";
import { issueComment, pullRequestFileEntry } from "./github-fixtures.ts";
import type { GitHubServer, RecordedRequest, Reply } from "./github-server.ts";
import { writeZip } from "./zip.ts";
import { examplePayload, PORTAL } from "./webhook-payloads.ts";

/** The validation run of the webhook example (workflow_run.completed). */
const RUN_ID = 30433642;
const LABELS = "/repos/{owner}/{repo}/issues/{issue_number}/labels";
const COMMENTS = "/repos/{owner}/{repo}/issues/{issue_number}/comments";
const COMMENT = "/repos/{owner}/{repo}/issues/comments/{comment_id}";

export class PullRequestWorld extends GitHubRepository {
  readonly pr: PullRequestState;
  /** The sidecar as committed at the head, served for every file the pull request lists. */
  sidecar: unknown = null;

  constructor(github: GitHubServer) {
    super(github, PORTAL);
    this.statusKey = testStatusKey();
    this.pr = this.openPullRequest(1, {}, "Codertocat", {
      headSha: "a".repeat(40),
      headRef: "submit-better-hud",
      body: "Submitting better-hud 1.2.0",
    });
    this.branchFiles.set("portal.config.json", { moderators: { logins: ["moderator-mia"], team: null } });
  }

  get number(): number {
    return this.pr.number;
  }
  set number(value: number) {
    this.pulls.delete(this.pr.number);
    this.pr.number = value;
    this.pulls.set(value, this.pr);
  }
  get headSha(): string {
    return this.pr.headSha;
  }
  set headSha(value: string) {
    this.pr.headSha = value;
  }
  get author(): string {
    return this.pr.author;
  }
  get body(): string {
    return this.pr.body;
  }
  get state(): "open" | "closed" {
    return this.pr.state;
  }
  set state(value: "open" | "closed") {
    this.pr.state = value;
  }
  get merged(): boolean {
    return this.pr.merged;
  }
  set merged(value: boolean) {
    this.pr.merged = value;
    this.pr.mergedAt = value ? "2026-11-21T10:00:00Z" : null;
  }
  get files(): PullRequestFile[] {
    return this.pr.files;
  }
  set files(value: PullRequestFile[]) {
    this.pr.files = value;
  }
  get labels(): string[] {
    return this.pr.labels;
  }
  set labels(value: string[]) {
    this.pr.labels = value;
  }
  get comments(): CommentState[] {
    return this.pr.comments;
  }
  set comments(value: CommentState[]) {
    this.pr.comments = value;
  }
  get reviews(): PullRequestState["reviews"] {
    return this.pr.reviews;
  }
  get moderators(): { logins: string[]; team: string | null } {
    return (
      this.branchFiles.get("portal.config.json") as { moderators: { logins: string[]; team: string | null } }
    ).moderators;
  }

  protected override headContent(_pr: PullRequestState, file: PullRequestFile): Buffer | null {
    if (file.content) return file.content;
    return this.sidecar === null ? null : Buffer.from(JSON.stringify(this.sidecar));
  }

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
    payload.issue.pull_request = { url: `https://api.github.com/repos/${PORTAL}/pulls/${this.number}` };
    payload.comment.user.login = login;
    payload.comment.body = body;
    return payload;
  }

  /**
   * A finished run of the validation workflow for `headSha` on this pull request's head branch, as
   * GitHub sends it for a pull request from a fork: no pull request attached, found by its branch.
   */
  workflowRunPayload(headSha: string, conclusion = "success", runId = RUN_ID): Record<string, any> {
    const payload = examplePayload("workflow_run", "completed");
    payload.repository = examplePayload("pull_request", "opened").repository;
    payload.workflow_run.path = ".github/workflows/validate-submission.yml";
    payload.workflow_run.event = "pull_request";
    payload.workflow_run.head_sha = headSha;
    payload.workflow_run.head_branch = this.pr.headRef;
    payload.workflow_run.head_repository.owner.login = this.pr.headRepo.split("/")[0];
    payload.workflow_run.id = runId;
    payload.workflow_run.conclusion = conclusion;
    payload.workflow_run.pull_requests = [];
    return payload;
  }

  /** The stored state, as the bot's status comment holds it (sealed, as the app writes it), and its label. */
  withStatus(state: string, options: { retryable?: boolean; sealed?: boolean } = {}): this {
    const stored = this.stored(
      this.number,
      state as SubmissionState,
      this.headSha,
      options.sealed ?? true,
      options.retryable ?? false,
    );
    this.comments.push({
      id: 5,
      body: renderStoredStatus(stored),
      user: { login: BOT_LOGIN, type: "Bot" },
    });
    this.labels = [`state:${state}`];
    return this;
  }

  statusComment(): CommentState | undefined {
    return this.comments.find((c) => c.user.login === BOT_LOGIN && c.body.startsWith("<!-- svc:status"));
  }

  /** Answers every read and write of the bot any number of times: for deliveries that race. */
  serve(): this {
    return this.serveReads().serveBotWrites();
  }

  /** The five reads of fetchPullRequestInfo, and the sidecar when the pull request is a submission. */
  expectFetch(options: { sidecar?: boolean } = {}): this {
    this.script("GET /repos/{owner}/{repo}/pulls/{pull_number}");
    this.script("GET /repos/{owner}/{repo}/pulls/{pull_number}/files");
    this.script(`GET ${COMMENTS}`);
    this.script("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews");
    this.script("GET /repos/{owner}/{repo}/issues");
    if (options.sidecar ?? true) this.script("GET /repos/{owner}/{repo}/contents/{path}");
    return this;
  }

  /** portal.config.json on the default branch, read when a review or command needs a moderator check. */
  expectModeratorPolicy(): this {
    return this.script("GET /repos/{owner}/{repo}/contents/{path}");
  }

  /**
   * records/owners/{modId}.json on the default branch, read when a moderator's decision could count
   * (no record: the mod is unclaimed, and nobody owns it yet).
   */
  expectOwnership(): this {
    return this.script("GET /repos/{owner}/{repo}/contents/{path}");
  }

  /** The open pull requests of the run's head branch (how a fork's run finds its pull request). */
  expectRunPullRequests(): this {
    return this.script("GET /repos/{owner}/{repo}/pulls");
  }

  /** The state label set: the old one removed (when there is one), the new one added. */
  expectLabel(): this {
    this.github.allow(`DELETE ${LABELS}/{name}`, this.reply(`DELETE ${LABELS}/{name}`));
    return this.script(`POST ${LABELS}`);
  }

  expectStatusComment(kind: "create" | "update"): this {
    if (kind === "update") return this.script(`PATCH ${COMMENT}`);
    // After a create the bot lists the comments again: a duplicate written beside it is removed.
    return this.script(`POST ${COMMENTS}`).script(`GET ${COMMENTS}`);
  }

  /** The gate check run (`svc / gate`), written when the verdict for the head commit changes. */
  expectGate(): this {
    return this.script("POST /repos/{owner}/{repo}/check-runs");
  }

  expectReply(): this {
    return this.script(`POST ${COMMENTS}`);
  }

  /** The intake branch deleted once the pull request is closed (GitHub's 422 when it is gone already). */
  expectBranchDelete(): this {
    return this.script("DELETE /repos/{owner}/{repo}/git/refs/{ref}");
  }

  fileList(): unknown[] {
    return this.files.map((f, i) => pullRequestFileEntry(PORTAL, this.pr, f, i));
  }

  commentList(): unknown[] {
    return this.comments.map(issueComment);
  }

  addComment(req: RecordedRequest): Reply | Promise<Reply> {
    return this.reply(`POST ${COMMENTS}`)(req);
  }

  private script(route: string): this {
    this.github.expect(route, this.reply(route));
    return this;
  }
}

/** A validation run's submission-report artifact of one attempt (a ZIP), listed and downloaded once. */
export function expectReportArtifact(
  github: GitHubServer,
  report: unknown,
  runId = RUN_ID,
  attempt = 1,
): void {
  const repository = new GitHubRepository(github, PORTAL);
  const text = typeof report === "string" ? report : JSON.stringify(report);
  repository.addArtifact(
    runId,
    submissionReportArtifact(attempt),
    writeZip([{ name: "submission-report.json", data: text }]),
  );
  for (const route of [
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts",
    "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}",
  ])
    github.expect(route, repository.reply(route));
}
