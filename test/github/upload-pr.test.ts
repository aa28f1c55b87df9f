/**
 * Uploads through the API on a GitHub-backed portal: the real portal (HTTP on loopback, the real
 * worker with clamscan over a test signature database) talks to a loopback GitHub that validates
 * every request against GitHub's OpenAPI description. The app authenticates for real
 * (@octokit/auth-app: a JWT signed with a test key, exchanged for an installation token).
 */
import { createHash, generateKeyPairSync } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { Octokit } from "@octokit/rest";
import { renderStoredStatus } from "../../src/bot/comments.ts";
import { deriveStatusKey, sealStatus } from "../../src/bot/status-seal.ts";
import type { SubmissionState } from "../../src/workflow/machine.ts";
import { validateSubmission } from "../../src/pipeline/validate-submission.ts";
import { modRelease } from "../support/catalog-project.ts";
import {
  form,
  type SubmissionsPortal,
  SKIP_CLAMSCAN as skip,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";
import { BOT_LOGIN } from "../support/github-repository.ts";
import { type GitHubServer, type RecordedRequest, startGitHubServer } from "../support/github-server.ts";
import { PORTAL } from "../support/webhook-payloads.ts";

const privateKey = generateKeyPairSync("rsa", { modulusLength: 2048 })
  .privateKey.export({ type: "pkcs1", format: "pem" })
  .toString();

interface CheckRun {
  name: string;
  head_sha: string;
  conclusion: string;
  output: { title: string; summary: string };
}

/** The portal repository as the loopback GitHub answers it; write calls change it. */
class PortalRepo {
  number = 0;
  headSha = "";
  branch = "";
  body = "";
  state: "open" | "closed" = "open";
  merged = false;
  files: Array<{ filename: string; status: string }> = [];
  sidecar: Record<string, any> | null = null;
  labels: string[] = [];
  comments: Array<{ id: number; body: string; login: string }> = [];
  checkRuns: CheckRun[] = [];
  releases: Array<{ id: number; tag_name: string; draft: boolean; assets: any[] }> = [];
  uploaded: Buffer[] = [];
  private nextId = 500;

  constructor(readonly github: GitHubServer) {}

  status(): { state: string } | null {
    const comment = this.comments.find((c) => c.login === BOT_LOGIN && c.body.startsWith("<!-- svc:status"));
    return comment
      ? JSON.parse(comment.body.slice("<!-- svc:status".length, comment.body.indexOf("-->")))
      : null;
  }

  statusBody(): string {
    return this.comments.find((c) => c.body.startsWith("<!-- svc:status"))?.body ?? "";
  }

  /** What the bot on Vercel would write after a review or the publish receipt: sealed with the app's key. */
  setStatus(state: string): void {
    const comment = this.comments.find((c) => c.body.startsWith("<!-- svc:status"))!;
    const stored = sealStatus(
      deriveStatusKey(privateKey),
      { repository: PORTAL, pullRequest: this.number },
      { state: state as SubmissionState, headSha: this.headSha },
      new Date(),
    );
    comment.body = `${renderStoredStatus(stored)}\n${state}`;
  }

  pull(): Record<string, unknown> {
    return {
      number: this.number,
      state: this.state,
      merged: this.merged,
      html_url: `https://github.com/${PORTAL}/pull/${this.number}`,
      body: this.body,
      user: { login: BOT_LOGIN, id: 2, type: "Bot" },
      labels: this.labels.map((name) => ({ name })),
      // The fake completes a reply from GitHub's example, whose pull request changes 5 files.
      changed_files: this.files.length,
      head: { sha: this.headSha, ref: this.branch, repo: { full_name: PORTAL } },
      base: { ref: "main", repo: { default_branch: "main", full_name: PORTAL } },
    };
  }

  /** Everything the app may read or write while a submission lives; the writes tests assert on are expected. */
  serve(): this {
    const g = this.github;
    g.allow("GET /repos/{owner}/{repo}/installation", () => ({ body: { id: 42, app_id: 1 } }));
    g.allow("POST /app/installations/{installation_id}/access_tokens", () => ({
      status: 201,
      body: { token: "ghs_upload_test", expires_at: "2099-01-01T00:00:00Z", permissions: {} },
    }));
    g.allow("GET /repos/{owner}/{repo}", () => ({ body: { default_branch: "main", full_name: PORTAL } }));
    g.allow("GET /repos/{owner}/{repo}/git/ref/{ref}", () => ({ body: { object: { sha: "b".repeat(40) } } }));
    g.allow("GET /repos/{owner}/{repo}/pulls/{pull_number}", () => ({ body: this.pull() }));
    g.allow("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", () => ({
      body: this.files.map((f) => ({ ...f, sha: "0".repeat(40), additions: 1, deletions: 0, changes: 1 })),
    }));
    g.allow("GET /repos/{owner}/{repo}/issues/{issue_number}/comments", () => ({
      body: this.comments.map((c) => ({
        id: c.id,
        body: c.body,
        user: { login: c.login, id: 2, type: "Bot" },
      })),
    }));
    g.allow("GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews", () => ({ body: [] }));
    g.allow("GET /repos/{owner}/{repo}/issues", () => ({ body: [] }));
    g.allow("GET /repos/{owner}/{repo}/contents/{path}", (req) =>
      req.query.get("ref") === this.headSha && this.sidecar
        ? {
            body: {
              type: "file",
              encoding: "base64",
              path: req.params.path,
              sha: "f".repeat(40),
              content: Buffer.from(JSON.stringify(this.sidecar)).toString("base64"),
            },
          }
        : { status: 404, body: { message: "Not Found" } },
    );
    g.allow("POST /repos/{owner}/{repo}/issues/{issue_number}/labels", (req) => {
      this.labels.push(...(req.body as { labels: string[] }).labels);
      return { status: 200, body: this.labels.map((name) => ({ name })) };
    });
    g.allow("DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}", (req) => {
      this.labels = this.labels.filter((l) => l !== req.params.name);
      return { status: 200, body: [] };
    });
    g.allow("POST /repos/{owner}/{repo}/issues/{issue_number}/comments", (req) => {
      const comment = { id: this.nextId++, body: (req.body as { body: string }).body, login: BOT_LOGIN };
      this.comments.push(comment);
      return { status: 201, body: { id: comment.id, body: comment.body, user: { login: BOT_LOGIN } } };
    });
    g.allow("PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}", (req) => {
      const comment = this.comments.find((c) => c.id === Number(req.params.comment_id))!;
      comment.body = (req.body as { body: string }).body;
      return { body: { id: comment.id, body: comment.body, user: { login: BOT_LOGIN } } };
    });
    g.allow("POST /repos/{owner}/{repo}/check-runs", (req) => {
      this.checkRuns.push(req.body as CheckRun);
      return { status: 201, body: { id: this.nextId++ } };
    });
    g.allow("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", (req) => {
      const runs = this.checkRuns
        .filter((r) => r.head_sha === req.params.ref)
        .map((r, i) => ({ id: i + 1, status: "completed", ...r }));
      return { body: { total_count: runs.length, check_runs: runs } };
    });
    return this;
  }

  /** The branch, the sidecar commit and the pull request: once each. */
  expectPullRequest(): this {
    const g = this.github;
    g.expect("POST /repos/{owner}/{repo}/git/refs", (req) => {
      this.branch = (req.body as { ref: string }).ref.replace(/^refs\/heads\//, "");
      return {
        status: 201,
        body: { ref: (req.body as { ref: string }).ref, object: { sha: "b".repeat(40) } },
      };
    });
    g.expect("PUT /repos/{owner}/{repo}/contents/{path}", (req) => {
      const body = req.body as { content: string; branch: string };
      this.sidecar = JSON.parse(Buffer.from(body.content, "base64").toString("utf8"));
      this.files = [{ filename: req.params.path!, status: "added" }];
      this.headSha = "c".repeat(40);
      return { status: 201, body: { content: {}, commit: { sha: this.headSha } } };
    });
    g.expect("POST /repos/{owner}/{repo}/pulls", (req) => {
      this.number = 7;
      this.body = (req.body as { body: string }).body;
      return { status: 201, body: this.pull() };
    });
    return this;
  }

  /** The private draft release and its asset (uploads go to uploads.github.com: a raw route here). */
  expectStagingRelease(): this {
    const g = this.github;
    g.allow("GET /repos/{owner}/{repo}/releases", () => ({ body: this.releases }));
    const uploadPath = "/uploads/repos/Codertocat/Hello-World/releases/77/assets";
    g.serveRaw(uploadPath, (req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const bytes = Buffer.concat(chunks);
        this.uploaded.push(bytes);
        const name = new URL(req.url ?? "/", "http://x").searchParams.get("name");
        const asset = { id: 901, name, size: bytes.length, url: "" };
        this.releases[0]!.assets.push(asset);
        res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify(asset));
      });
    });
    g.expect("POST /repos/{owner}/{repo}/releases", (req) => {
      const body = req.body as { tag_name: string; draft: boolean };
      const release = { id: 77, tag_name: body.tag_name, draft: body.draft, assets: [] };
      this.releases.push(release);
      return {
        status: 201,
        body: { ...release, upload_url: `${g.url}${uploadPath}{?name,label}` },
      };
    });
    return this;
  }
}

let github: GitHubServer | undefined;
let portal: SubmissionsPortal | undefined;
afterEach(async () => {
  await portal?.stop();
  await github?.stop();
  portal = undefined;
  github = undefined;
});

async function startGitHubPortal(): Promise<{ p: SubmissionsPortal; repo: PortalRepo }> {
  github = await startGitHubServer();
  const repo = new PortalRepo(github).serve();
  portal = await startSubmissionsPortal({
    SVC_LIVE_UPLOADS: "1",
    SVC_PORTAL_REPOSITORY: PORTAL,
    SVC_GITHUB_APP_ID: "1",
    SVC_GITHUB_PRIVATE_KEY: privateKey,
    SVC_GITHUB_API_URL: github.url,
    SVC_BOT_LOGINS: BOT_LOGIN,
  });
  return { p: portal, repo };
}

const decide = (p: SubmissionsPortal, id: string, decision: string, notes: string) =>
  p.call("POST", `/api/v1/moderation/releases/${id}/decision`, {
    body: { decision, notes },
    cookie: p.moderator.cookie,
    csrf: p.moderator.csrf,
  });

const writes = (g: GitHubServer): string[] =>
  g.recorded.filter((r: RecordedRequest) => r.method !== "GET").map((r) => `${r.method} ${r.route}`);

describe.skipIf(skip)("uploads on a GitHub-backed portal", () => {
  it("stages the package in a private draft release, opens the PR, reports the worker's checks to it, and the API and the PR show one state through decision, merge and publication", async () => {
    const { p, repo } = await startGitHubPortal();
    repo.expectStagingRelease().expectPullRequest();
    const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version: "1.0.0" });
    const created = await upload(p, p.modder, form(sidecar, packageBytes));
    expect(created.status).toBe(201);
    expect(created.json.source).toEqual({
      kind: "pull_request",
      pullRequestUrl: `https://github.com/${PORTAL}/pull/7`,
    });
    const id = created.json.submissionId as string;

    // Private staging: a draft release holding exactly the uploaded bytes; the branch names the upload.
    expect(repo.releases).toMatchObject([{ tag_name: `svc-upload-${id}`, draft: true }]);
    expect(repo.uploaded).toHaveLength(1);
    expect(createHash("sha256").update(repo.uploaded[0]!).digest("hex")).toBe(sidecar.package.sha256);
    expect(repo.branch).toBe(`svc/upload/${id}`);
    expect(repo.files).toEqual([{ filename: "submissions/quick-travel/1.0.0.json", status: "added" }]);
    expect(repo.sidecar!.package).toEqual({
      fileName: sidecar.package.fileName,
      sha256: sidecar.package.sha256,
      sizeBytes: sidecar.package.sizeBytes,
    });
    expect(repo.body).toContain(`portal:${p.modder.accountId}`);

    // The worker validates the private bytes and reports: one check run per check, the status comment.
    const pending = await waitForState(p, p.modder, id, ["pending_review", "validation_failed"]);
    expect(pending.state).toBe("pending_review");
    expect(repo.status()?.state).toBe("pending_review");
    expect(repo.labels).toEqual(["state:pending_review"]);
    // The worker's file list reaches the bot: nothing of the mod is published, so the comment lists the files.
    expect(repo.statusBody()).toContain(`### First release: ${pending.version}`);
    expect(repo.statusBody()).toContain("| file | `svc-mod.json` |");
    const ids = pending.validationChecks.map((c: { id: string }) => c.id);
    const checks = repo.checkRuns.filter((r) => r.name !== "svc / gate");
    expect(checks.map((r) => r.name).sort()).toEqual(ids.map((c: string) => `svc / ${c}`).sort());
    expect(checks.every((r) => r.head_sha === repo.headSha && r.conclusion === "success")).toBe(true);
    // The gate waits for a moderator's approval.
    expect(repo.checkRuns.filter((r) => r.name === "svc / gate").at(-1)).toMatchObject({
      status: "in_progress",
    });

    // An illegal decision changes nothing on GitHub.
    const before = writes(github!).length;
    const unhide = await decide(p, id, "unhide", "not hidden");
    expect(unhide.status).toBe(409);
    expect(unhide.json.code).toBe("illegal_transition");
    expect(writes(github!).length).toBe(before);

    // A decision through the API is written to the PR by the bot, with the notes; the row follows.
    const approved = await decide(p, id, "approve", "Clean package, good notes.");
    expect(approved.status).toBe(200);
    expect(approved.json.state).toBe("approved");
    expect(repo.status()?.state).toBe("approved");
    expect(repo.labels).toEqual(["state:approved"]);
    expect(repo.statusBody()).toContain("Clean package, good notes.");
    expect(approved.json.review.decisions).toMatchObject([
      { decision: "approve", notes: "Clean package, good notes.", toState: "approved" },
    ]);

    // publish_catalog merges the approved PR at its head; the publish workflow does the rest.
    github!.expect("PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge", (req) => {
      expect(req.body).toMatchObject({ sha: repo.headSha, merge_method: "squash" });
      repo.merged = true;
      repo.state = "closed";
      return { body: { sha: "d".repeat(40), merged: true, message: "Pull Request successfully merged" } };
    });
    const publish = await p.call("POST", "/api/v1/catalog/publish", {
      cookie: p.admin.cookie,
      csrf: p.admin.csrf,
    });
    expect(publish.json).toMatchObject({
      published: 0,
      merged: 1,
      failed: 0,
      results: [{ submissionId: id, outcome: "merged", mergeCommit: "d".repeat(40) }],
    });

    // The publish workflow's receipt moves the PR to published; the API reads the same.
    repo.setStatus("published");
    const status = await p.call("GET", `/api/v1/uploads/${id}`, { cookie: p.modder.cookie });
    expect(status.json.state).toBe("published");
    const audit = await p.call("GET", `/api/v1/audit/events?targetId=${id}`, { cookie: p.admin.cookie });
    const actions = (audit.json.items ?? audit.json.events).map((e: { action: string }) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        "upload.created",
        "moderation.decided",
        "catalog.publish_requested",
        "submission.synced_from_github",
      ]),
    );
    github!.assertDone();
  });

  it("takes a package named by URL as JSON (the Vercel variant), validates nothing itself, and refuses package bytes where the runtime takes none", async () => {
    const { p, repo } = await startGitHubPortal();
    repo.expectPullRequest();
    const { sidecar } = modRelease({ modId: "far-sight", version: "2.0.0" });
    const url = "https://github.com/modder/far-sight/releases/download/v2.0.0/far-sight-2.0.0.zip";
    const body = { ...sidecar, package: { ...sidecar.package, url } };
    const post = (json: unknown) =>
      fetch(`${p.h.origin}/api/v1/uploads`, {
        method: "POST",
        body: JSON.stringify(json),
        headers: { "content-type": "application/json", cookie: p.modder.cookie, "x-svc-csrf": p.modder.csrf },
      }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));

    const noUrl = await post(sidecar);
    expect(noUrl.status).toBe(400);
    expect(noUrl.json).toMatchObject({ code: "invalid_payload", details: { field: "package.url" } });

    const created = await post(body);
    expect(created.status).toBe(201);
    // The PR carries the URL; the validate workflow downloads and checks it, so the row mirrors validating.
    expect(repo.sidecar!.package.url).toBe(url);
    expect(created.json.state).toBe("validating");
    expect(repo.status()?.state).toBe("validating");
    expect(github!.calls("POST /repos/{owner}/{repo}/releases")).toHaveLength(0);

    // The validation workflow's check runs become the API's validation checks.
    repo.checkRuns.push({
      name: "svc / antivirus_scan",
      head_sha: repo.headSha,
      conclusion: "failure",
      output: { title: "antivirus_scan: failed", summary: "Eicar-Test-Signature found" },
    });
    repo.setStatus("validation_failed");
    // list_uploads brings the open row in line with its PR before listing it.
    const listed = await p.call("GET", "/api/v1/uploads", { cookie: p.modder.cookie });
    expect(listed.json.items).toMatchObject([
      {
        submissionId: created.json.submissionId,
        state: "validation_failed",
        pullRequestUrl: created.json.source.pullRequestUrl,
        failedChecks: [{ id: "antivirus_scan" }],
      },
    ]);
    const status = await p.call("GET", `/api/v1/uploads/${created.json.submissionId}`, {
      cookie: p.modder.cookie,
    });
    expect(status.json.state).toBe("validation_failed");
    expect(status.json.validationChecks).toMatchObject([
      {
        id: "antivirus_scan",
        status: "failed",
        log: ["antivirus_scan: failed", "Eicar-Test-Signature found"],
      },
    ]);

    // Vercel's runtime takes no package bytes: a multipart upload is refused before it is read.
    p.h.app.submissions!.acceptsPackageBytes = false;
    const { packageBytes, sidecar: other } = modRelease({ modId: "far-sight", version: "2.0.1" });
    const refused = await upload(p, p.modder, form(other, packageBytes));
    expect(refused.status).toBe(415);
    expect(refused.json.code).toBe("unsupported_media_type");
    expect(refused.json.message).toContain("application/json");
    github!.assertDone();
  });
});

describe("the validate action on a staged upload's pull request", () => {
  it("defers to the portal's worker for the portal's own upload branch, and reports a look-alike from a fork", async () => {
    const g = await startGitHubServer();
    try {
      const sidecarPath = "submissions/quick-travel/1.0.0.json";
      const { sidecar } = modRelease({ modId: "quick-travel", version: "1.0.0" });
      const { url: _url, ...pkg } = sidecar.package as Record<string, unknown>;
      g.allow("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", () => ({
        body: [
          {
            filename: sidecarPath,
            status: "added",
            sha: "0".repeat(40),
            additions: 1,
            deletions: 0,
            changes: 1,
          },
        ],
      }));
      g.allow("GET /repos/{owner}/{repo}/contents/{path}", () => ({
        body: {
          type: "file",
          encoding: "base64",
          path: sidecarPath,
          sha: "f".repeat(40),
          content: Buffer.from(JSON.stringify({ ...sidecar, package: pkg })).toString("base64"),
        },
      }));
      const api = new Octokit({ auth: "ghs_read", baseUrl: g.url });
      const base = {
        repo: { owner: "Codertocat", repo: "Hello-World" },
        pullRequest: 7,
        headSha: "c".repeat(40),
        policy: { package: { maxPackageBytes: 1024 } } as any,
        catalog: null,
        gameBuilds: null,
        scanner: null,
      };
      const branch = "svc/upload/sub_0123456789abcdefghijklmnop";
      const own = await validateSubmission(api, { ...base, head: { ref: branch, repository: PORTAL } });
      expect(own).toEqual({
        kind: "staged_upload",
        submissionId: "sub_0123456789abcdefghijklmnop",
        sidecarPath,
      });
      const fork = await validateSubmission(api, {
        ...base,
        head: { ref: branch, repository: "mallory/Hello-World" },
      });
      expect(fork).toMatchObject({ problems: [{ code: "package_url_missing" }], report: null });
      g.assertDone();
    } finally {
      await g.stop();
    }
  });
});
