/**
 * The unprivileged validation job always leaves a report (its committed bundle run as a runner
 * runs it), and the workflows wire it so: a scanner install that fails does not skip validation, a
 * hung job ends, and the Actions reporter writes only when the operator chose it instead of the app.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { intakeSubmissionReport } from "../../src/github/submission-report.ts";
import { runAction } from "../support/action-runner.ts";
import { type GitHubServer, startGitHubServer } from "../support/github-server.ts";
import { PullRequestWorld } from "../support/pull-request-world.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { SIDECAR_PATH, sidecar } from "../support/submission-fixtures.ts";
import { examplePayload, PORTAL } from "../support/webhook-payloads.ts";

let github: GitHubServer;
let dir: string;
beforeEach(async () => {
  github = await startGitHubServer();
  dir = mkdtempSync(join(tmpdir(), "svc-validate-"));
});
afterEach(async () => {
  await github.stop();
});

const headSha = "e".repeat(40);

async function validate() {
  const event = examplePayload("pull_request", "opened");
  event.pull_request.number = 1;
  event.pull_request.head.sha = headSha;
  const reportPath = join(dir, "submission-report.json");
  const result = await runAction("validate", {
    workspace: REPO_ROOT,
    event,
    eventName: "pull_request",
    env: { GITHUB_REPOSITORY: PORTAL, GITHUB_API_URL: github.url },
    inputs: {
      "github-token": "ghs_read_only_test",
      "report-path": reportPath,
      scanner: "none",
      "allow-http": "true",
    },
  });
  const bytes = readFileSync(reportPath);
  const intake = intakeSubmissionReport(bytes, { repository: PORTAL, headSha });
  if (!intake.ok) throw new Error(`${intake.code}: ${intake.message}`);
  return { result, report: intake.report };
}

describe("actions/validate always writes a report", () => {
  it("a package download that fails is package_download_failed", async () => {
    const world = new PullRequestWorld(github);
    world.headSha = headSha;
    world.files = [{ filename: SIDECAR_PATH, status: "added" }];
    const url = github.serveRaw("/downloads/better-hud-1.2.0.zip", (_req, res) => res.writeHead(503).end());
    world.sidecar = sidecar({ package: { ...(sidecar().package as object), url } });
    github.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", () => ({ body: world.fileList() }));
    github.expect("GET /repos/{owner}/{repo}/contents/{path}", (req) => {
      expect(req.query.get("ref")).toBe(headSha);
      return {
        body: {
          type: "file",
          encoding: "base64",
          content: Buffer.from(JSON.stringify(world.sidecar)).toString("base64"),
          path: SIDECAR_PATH,
          name: "1.2.0.json",
          sha: "f".repeat(40),
          size: 1,
        },
      };
    });
    const { result, report } = await validate();
    expect(result.code, result.stdout).toBe(0);
    github.assertDone();
    expect(report.problems).toEqual([
      { code: "package_download_failed", message: expect.stringContaining("answered 503") },
    ]);
    expect(result.outputs.passed).toBe("false");
  });

  it("GitHub failing under the job is validation_error, and the step fails", async () => {
    github.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      status: 502,
      body: { message: "Server Error" },
    });
    const { result, report } = await validate();
    expect(result.code).not.toBe(0);
    expect(report).toMatchObject({
      pullRequest: 1,
      headSha,
      sidecarPath: null,
      problems: [{ code: "validation_error", message: expect.stringContaining("validation could not run") }],
      report: null,
    });
    expect(result.stdout).toContain("::error::validation could not run");
  });
});

describe("the workflows", () => {
  const workflow = (name: string) =>
    parse(readFileSync(join(REPO_ROOT, ".github/workflows", name), "utf8")) as {
      jobs: Record<
        string,
        { if?: string; "timeout-minutes"?: number; steps?: Array<Record<string, unknown>> }
      >;
    };

  it("report-submission runs only when the operator chose the Actions reporter instead of the app", () => {
    expect(workflow("report-submission.yml").jobs.report!.if).toBe("vars.SVC_REPORTER == 'actions'");
  });

  it("validate-submission ends a hung job and validates even when the scanner could not be installed", () => {
    const job = workflow("validate-submission.yml").jobs.validate!;
    expect(job["timeout-minutes"]).toBeLessThanOrEqual(30);
    const install = job.steps!.find((s) => String(s.name ?? "").startsWith("Install ClamAV"))!;
    expect(install["continue-on-error"]).toBe(true);
    const upload = job.steps!.find((s) => String(s.uses ?? "").startsWith("actions/upload-artifact"))!;
    expect(upload.if).toContain("always()");
  });
});
