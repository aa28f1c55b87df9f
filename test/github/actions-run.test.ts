/**
 * The actions run from their committed bundles as a runner runs them: INPUT_* variables,
 * GITHUB_EVENT_NAME/GITHUB_EVENT_PATH, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files,
 * `node actions/x/dist/index.js`. Every GitHub call goes to the OpenAPI-checked loopback server and
 * each test proves every expected call was made; workspaces are temp portal projects.
 */
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { renderStoredStatus } from "../../src/bot/comments.ts";
import { CHECKS } from "../../src/validation/checks/index.ts";
import type { SubmissionState } from "../../src/workflow/machine.ts";
import { intakeSubmissionReport } from "../../src/github/submission-report.ts";
import { Octokit } from "@octokit/rest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { validateSubmission } from "../../src/pipeline/validate-submission.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { runAction } from "../support/action-runner.ts";
import { testPrivateKey } from "../support/bot-harness.ts";
import { githubRelease, pullRequestFile, releaseAsset } from "../support/github-fixtures.ts";
import { BOT_LOGIN } from "../support/github-repository.ts";
import { type GitHubServer, startGitHubServer } from "../support/github-server.ts";
import { expectReportArtifact, PullRequestWorld } from "../support/pull-request-world.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { runCli } from "../support/run-cli.ts";
import { SIDECAR_PATH, sidecar, submissionReport } from "../support/submission-fixtures.ts";
import { examplePayload, PORTAL } from "../support/webhook-payloads.ts";
import { startTlsServer } from "../support/tls-server.ts";
import { writeZip } from "../support/zip.ts";

/** One entry of GET /pulls/{pull_number}/files: a file the pull request adds. */
const addedFile = (filename: string) => pullRequestFile(filename, "added");

let github: GitHubServer;
let dir: string;
let project: CatalogProject | undefined;
const stops: Array<() => Promise<void>> = [];
beforeEach(async () => {
  github = await startGitHubServer();
  dir = mkdtempSync(join(tmpdir(), "svc-action-"));
});
afterEach(async () => {
  await github.stop();
  for (const stop of stops.splice(0)) await stop();
  project?.cleanup();
  project = undefined;
});

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const readJson = (path: string) => JSON.parse(readFileSync(path, "utf8"));

/** The GITHUB_* variables every run gets; the token is a test string. */
function runnerEnv(extra: Record<string, string> = {}): Record<string, string> {
  return { GITHUB_REPOSITORY: PORTAL, GITHUB_API_URL: github.url, ...extra };
}

/** A merged submission pull request whose status comment the bot wrote in `state`. */
function mergedWorld(
  state: SubmissionState,
  version = "1.0.0",
  sidecarValue: unknown = null,
): PullRequestWorld {
  const world = new PullRequestWorld(github);
  world.number = 7;
  world.merged = true;
  world.state = "closed";
  world.files = [{ filename: `submissions/better-hud/${version}.json`, status: "added" }];
  world.sidecar = sidecarValue ?? { ...modRelease({ version }).sidecar };
  world.labels = [`state:${state}`];
  world.comments = [
    {
      id: 500,
      // Sealed as the app writes it (the receipts job holds the same key).
      body: `${renderStoredStatus(world.stored(world.number, state, world.headSha))}\n### svc submission`,
      user: { login: BOT_LOGIN, type: "Bot" },
    },
  ];
  return world;
}

describe("actions/validate from its bundle", () => {
  it("downloads the package named by the sidecar, writes a schema-valid report, outputs and a summary table", async () => {
    const pkg = writeZip([{ name: "svc-mod.json", data: "{}" }]);
    const url = github.serveRaw("/downloads/better-hud-1.2.0.zip", (_req, res) => {
      res.writeHead(200, { "content-type": "application/zip" }).end(pkg);
    });
    const headSha = "e".repeat(40);
    const side = sidecar();
    (side.package as Record<string, unknown>).url = url;
    (side.package as Record<string, unknown>).sha256 = sha256(pkg);
    (side.package as Record<string, unknown>).sizeBytes = pkg.length;
    github.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      body: [addedFile(SIDECAR_PATH)],
    });
    github.expect("GET /repos/{owner}/{repo}/contents/{path}", (req) => {
      expect(req.query.get("ref")).toBe(headSha);
      return {
        body: {
          type: "file",
          encoding: "base64",
          content: Buffer.from(JSON.stringify(side)).toString("base64"),
          path: SIDECAR_PATH,
          name: "1.2.0.json",
          sha: "f".repeat(40),
          size: 1,
        },
      };
    });
    const event = examplePayload("pull_request", "opened");
    event.pull_request.number = 1;
    event.pull_request.head.sha = headSha;
    const result = await runAction("validate", {
      workspace: REPO_ROOT,
      event,
      eventName: "pull_request",
      env: runnerEnv(),
      inputs: {
        "github-token": "ghs_read_only_test",
        "report-path": join(dir, "submission-report.json"),
        scanner: "none",
        "allow-http": "true",
      },
    });
    expect(result.code, result.stdout).toBe(0);
    github.assertDone();
    const intake = intakeSubmissionReport(readFileSync(join(dir, "submission-report.json")), {
      repository: PORTAL,
      headSha,
    });
    expect(intake.ok, JSON.stringify(intake)).toBe(true);
    if (!intake.ok) return;
    expect(intake.report.report?.packageSha256).toBe(sha256(pkg));
    // No scanner on this runner: antivirus_scan fails closed, so the submission cannot pass.
    expect(intake.report.report?.checks.find((c) => c.id === "antivirus_scan")?.status).toBe("failed");
    expect(result.outputs).toMatchObject({
      passed: "false",
      "report-path": join(dir, "submission-report.json"),
    });
    expect(result.summary).toContain("| `antivirus_scan` | yes | :x: failed |");
  });

  it("builds the base branch's site when the workflow restored none (site/ is not in git) and judges version_exists against it", async () => {
    project = catalogProject();
    const published = modRelease({ version: "1.0.0" });
    await publishRelease(publisherOptions(project), {
      packageBytes: published.packageBytes,
      sidecar: published.sidecar,
      source: { kind: "import" },
    });
    // A checkout of the base branch: records/ and portal.config.json, no site/ (no cache entry).
    rmSync(project.siteDir, { recursive: true, force: true });
    const again = modRelease({ version: "1.0.0", extraFiles: { "notes.txt": "changed\n" } });
    // Over https, as the sidecar schema requires (the loopback server's own CA, trusted by the runner).
    const tls = await startTlsServer({ "/better-hud-1.0.0.zip": again.packageBytes });
    stops.push(() => tls.stop());
    const url = `${tls.url}/better-hud-1.0.0.zip`;
    const path = "submissions/better-hud/1.0.0.json";
    const side = { ...again.sidecar, package: { ...again.sidecar.package, url } };
    github.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", { body: [addedFile(path)] });
    github.expect("GET /repos/{owner}/{repo}/contents/{path}", {
      body: {
        type: "file",
        encoding: "base64",
        content: Buffer.from(JSON.stringify(side)).toString("base64"),
        path,
        name: "1.0.0.json",
        sha: "f".repeat(40),
        size: 1,
      },
    });
    const event = examplePayload("pull_request", "opened");
    event.pull_request.number = 1;
    event.pull_request.head.sha = "e".repeat(40);
    const result = await runAction("validate", {
      workspace: project.root,
      event,
      eventName: "pull_request",
      env: runnerEnv({ NODE_EXTRA_CA_CERTS: tls.caFile }),
      inputs: {
        "github-token": "ghs_read_only_test",
        "report-path": join(dir, "submission-report.json"),
        scanner: "none",
      },
    });
    expect(result.code, result.stdout).toBe(0);
    github.assertDone();
    expect(result.stdout).toContain("no restored site: svc build wrote");
    expect(existsSync(join(project.siteDir, "api/v1/mods/better-hud/versions.json"))).toBe(true);
    const report = readJson(join(dir, "submission-report.json")) as {
      report: { checks: Array<{ id: string; status: string; reasonCode?: string }> };
    };
    expect(report.report.checks.find((c) => c.id === "semantic_version")).toMatchObject({
      status: "failed",
      reasonCode: "version_exists",
    });
  });

  it("reads a restored site as it is only with site-exact; an older entry is built over from the base branch's records", async () => {
    project = catalogProject();
    // The cache entry: a deployment from before 1.0.0 was published.
    const older = mkdtempSync(join(tmpdir(), "svc-older-site-"));
    stops.push(async () => rmSync(older, { recursive: true, force: true }));
    cpSync(project.siteDir, older, { recursive: true });
    const published = modRelease({ version: "1.0.0" });
    await publishRelease(publisherOptions(project), {
      packageBytes: published.packageBytes,
      sidecar: published.sidecar,
      source: { kind: "import" },
    });
    const again = modRelease({ version: "1.0.0", extraFiles: { "notes.txt": "changed\n" } });
    const tls = await startTlsServer({ "/better-hud-1.0.0.zip": again.packageBytes });
    stops.push(() => tls.stop());
    const path = "submissions/better-hud/1.0.0.json";
    const side = {
      ...again.sidecar,
      package: { ...again.sidecar.package, url: `${tls.url}/better-hud-1.0.0.zip` },
    };
    const validate = async (siteExact: string) => {
      rmSync(project!.siteDir, { recursive: true, force: true });
      cpSync(older, project!.siteDir, { recursive: true });
      github.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", { body: [addedFile(path)] });
      github.expect("GET /repos/{owner}/{repo}/contents/{path}", {
        body: {
          type: "file",
          encoding: "base64",
          content: Buffer.from(JSON.stringify(side)).toString("base64"),
          path,
          name: "1.0.0.json",
          sha: "f".repeat(40),
          size: 1,
        },
      });
      const event = examplePayload("pull_request", "opened");
      event.pull_request.number = 1;
      event.pull_request.head.sha = "e".repeat(40);
      const result = await runAction("validate", {
        workspace: project!.root,
        event,
        eventName: "pull_request",
        env: runnerEnv({ NODE_EXTRA_CA_CERTS: tls.caFile }),
        inputs: {
          "github-token": "ghs_read_only_test",
          "report-path": join(dir, "submission-report.json"),
          scanner: "none",
          "site-exact": siteExact,
        },
      });
      expect(result.code, result.stdout).toBe(0);
      github.assertDone();
      const report = readJson(join(dir, "submission-report.json")) as {
        report: { checks: Array<{ id: string; status: string; reasonCode?: string }> };
      };
      return { result, semver: report.report.checks.find((c) => c.id === "semantic_version") };
    };

    // site-exact: the workflow vouches the entry matches the base checkout, so nothing is built (here
    // it does not, which is how the test sees that the site was read as it is).
    const exact = await validate("true");
    expect(exact.result.stdout).toContain("read as it is");
    expect(exact.semver?.reasonCode).not.toBe("version_exists");
    // Without it the older entry is built over from the records, and 1.0.0 exists.
    const built = await validate("false");
    expect(built.result.stdout).toContain("site/ restored from an older cache entry: svc build wrote");
    expect(built.semver).toMatchObject({ status: "failed", reasonCode: "version_exists" });
  });

  it("judges version_exists against every published version, not only the catalog's newest", async () => {
    project = catalogProject();
    for (const version of ["1.0.0", "1.1.0"]) {
      const release = modRelease({ version });
      await publishRelease(publisherOptions(project), {
        packageBytes: release.packageBytes,
        sidecar: release.sidecar,
        source: { kind: "import" },
      });
    }
    // catalog.json names only 1.1.0; 1.0.0 is in versions.json.
    const catalog = readJson(join(project.siteDir, "api/v1/catalog.json"));
    expect(catalog.mods[0].versions.map((v: { version: string }) => v.version)).toEqual(["1.1.0"]);
    // A pull request resubmits 1.0.0 with other bytes.
    const again = modRelease({ version: "1.0.0", extraFiles: { "notes.txt": "changed\n" } });
    const url = "https://github.com/ada/better-hud/releases/download/v1.0.0/better-hud-1.0.0.zip";
    const side = { ...again.sidecar, package: { ...again.sidecar.package, url } };
    const path = "submissions/better-hud/1.0.0.json";
    github.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      body: [addedFile(path)],
    });
    github.expect("GET /repos/{owner}/{repo}/contents/{path}", {
      body: {
        type: "file",
        encoding: "base64",
        content: Buffer.from(JSON.stringify(side)).toString("base64"),
        path,
        name: "1.0.0.json",
        sha: "f".repeat(40),
        size: 1,
      },
    });
    const result = await validateSubmission(new Octokit({ auth: "ghs_read", baseUrl: github.url }), {
      repo: { owner: "Codertocat", repo: "Hello-World" },
      pullRequest: 1,
      headSha: "e".repeat(40),
      policy: readJson(join(project.siteDir, "api/v1/publishing/game-publishing-validation.v1.json")),
      catalog,
      siteDir: project.siteDir,
      gameBuilds: readJson(join(project.siteDir, "api/v1/game-builds/latest.json")),
      scanner: null,
      fetch: async (input) => {
        expect(String(input)).toBe(url);
        return new Response(again.packageBytes, { headers: { "content-type": "application/zip" } });
      },
    });
    github.assertDone();
    expect("report" in result && result.report).toBeTruthy();
    const checks = "report" in result ? (result.report?.checks ?? []) : [];
    expect(checks.find((c) => c.id === "sidecar_schema")?.status).toBe("passed");
    expect(checks.find((c) => c.id === "semantic_version")).toMatchObject({
      status: "failed",
      reasonCode: "version_exists",
    });
  });

  it("fails the step with one message when the event is not a pull request", async () => {
    const result = await runAction("validate", {
      workspace: REPO_ROOT,
      event: examplePayload("release", "published"),
      eventName: "release",
      env: runnerEnv(),
      inputs: { "github-token": "ghs_read_only_test" },
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("::error::validate runs on pull_request events");
    expect(github.recorded).toEqual([]);
  });
});

describe("actions/report from its bundle", () => {
  const headSha = "a".repeat(40);
  const packageChecks = CHECKS.filter((c) => c.scope === "package").length;

  function workflowRun(runHeadSha: string) {
    const payload = examplePayload("workflow_run", "completed");
    payload.workflow_run.path = ".github/workflows/validate-submission.yml";
    payload.workflow_run.event = "pull_request";
    payload.workflow_run.head_sha = runHeadSha;
    payload.workflow_run.id = 30433642;
    return payload;
  }

  function validatingWorld(): PullRequestWorld {
    const world = new PullRequestWorld(github);
    world.files = [{ filename: SIDECAR_PATH, status: "added" }];
    world.sidecar = sidecar();
    world.labels = ["state:validating"];
    world.comments = [
      {
        id: 500,
        body: renderStoredStatus({ state: "validating", headSha }),
        user: { login: BOT_LOGIN, type: "Bot" },
      },
    ];
    return world;
  }

  it("re-validates the artifact, writes one check run per check, the label, the status comment and a summary", async () => {
    const world = validatingWorld();
    expectReportArtifact(github, submissionReport(headSha));
    world.expectFetch().expectLabel().expectStatusComment("update");
    github.expect("POST /repos/{owner}/{repo}/check-runs", { body: { id: 1 } }, packageChecks);
    const result = await runAction("report", {
      workspace: dir,
      event: workflowRun(headSha),
      eventName: "workflow_run",
      env: runnerEnv(),
      inputs: { "github-token": "ghs_report_test", "bot-logins": BOT_LOGIN },
    });
    expect(result.code, result.stdout).toBe(0);
    github.assertDone();
    expect(result.outputs).toEqual({
      "pull-request": "1",
      state: "pending_review",
      actions: String(packageChecks + 2),
    });
    expect(world.labels).toEqual(["state:pending_review"]);
    expect(world.statusComment()!.body).toContain('"state":"pending_review"');
    const runs = github
      .calls("POST /repos/{owner}/{repo}/check-runs")
      .map((c) => c.body as { head_sha: string });
    expect(new Set(runs.map((r) => r.head_sha))).toEqual(new Set([headSha]));
    expect(result.summary).toContain(
      `<td>#1</td><td>validating → pending_review</td><td>${packageChecks + 2}</td>`,
    );
  });

  it("refuses a report for another commit than the run validated: nothing is written", async () => {
    validatingWorld();
    expectReportArtifact(github, submissionReport("c".repeat(40)));
    const result = await runAction("report", {
      workspace: dir,
      event: workflowRun(headSha),
      eventName: "workflow_run",
      env: runnerEnv(),
      inputs: { "github-token": "ghs_report_test", "bot-logins": BOT_LOGIN },
    });
    expect(result.code, result.stdout).toBe(0);
    github.assertDone();
    expect(github.recorded.filter((r) => r.method !== "GET")).toEqual([]);
    expect(result.outputs).toEqual({ "pull-request": "", state: "", actions: "0" });
    expect(result.stdout).toContain(`::notice::report_mismatch: the report is for commit ${"c".repeat(40)}`);
    expect(result.summary).toContain("<td>refused</td>");
  });
});

// actions/publish on push, schedule and dispatch (reconciliation, branch protection, GitHub
// Releases, hide/unhide) is tested in publish-reconcile.test.ts and publish-visibility.test.ts.

describe("actions/publish from its bundle: receipts mode", () => {
  it("moves a published submission to published with its receipt, and posts a hide receipt", async () => {
    const world = mergedWorld("approved");
    const receipts = join(dir, "publish-receipts.json");
    const receipt = {
      ok: true,
      modId: "better-hud",
      version: "1.0.0",
      artifactUrl: "https://portal.example/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip",
      sha256: "d".repeat(64),
      sizeBytes: 1234,
      catalogUrl: "https://portal.example/api/v1/catalog.json",
      detailUrl: "https://portal.example/api/v1/mods/better-hud/index.json",
    };
    writeFileSync(
      receipts,
      JSON.stringify([
        { path: "submissions/better-hud/1.0.0.json", pullRequest: 7, receipt },
        {
          path: "submissions/better-hud/0.9.0.json",
          pullRequest: null,
          receipt: { ...receipt, version: "0.9.0" },
        },
        {
          path: "submissions/better-hud/1.0.0.json",
          pullRequest: 7,
          visibility: "hide",
          status: "hidden",
          receipt: { ok: true, modId: "better-hud", version: "1.0.0", catalogUrl: receipt.catalogUrl },
        },
      ]),
    );
    // The receipts are written as the app: an installation token for issues and pull requests.
    github.expect("GET /repos/{owner}/{repo}/installation", { body: { id: 4242 } });
    github.expect("POST /app/installations/{installation_id}/access_tokens", (req) => {
      expect(req.body).toEqual({
        repositories: ["Hello-World"],
        permissions: { issues: "write", pull_requests: "write" },
      });
      return { status: 201, body: { token: "ghs_app_receipts", expires_at: "2099-01-01T00:00:00Z" } };
    });
    world.expectFetch().expectLabel().expectStatusComment("update").expectReply().expectReply();
    const result = await runAction("publish", {
      workspace: dir,
      eventName: "push",
      env: runnerEnv(),
      inputs: {
        "github-token": "ghs_receipts_test",
        mode: "receipts",
        "receipts-path": receipts,
        "app-id": "4242",
        "app-private-key": testPrivateKey(),
        "bot-logins": BOT_LOGIN,
      },
    });
    expect(result.code, result.stdout).toBe(0);
    github.assertDone();
    expect(
      github.recorded
        .filter((r) => r.method !== "GET" && !r.route.startsWith("/app/"))
        .every((r) => r.headers.authorization === "token ghs_app_receipts"),
    ).toBe(true);
    expect(world.labels).toEqual(["state:published"]);
    expect(world.statusComment()!.body).toContain('"state":"published"');
    const replies = world.comments.slice(1).map((c) => c.body);
    expect(replies[0]).toContain("### svc published `better-hud@1.0.0`");
    expect(replies[1]).toContain("### svc hid `better-hud@1.0.0` from the public catalog");
    expect(replies[1]).toContain("| status | `hidden` |");
  });
});

describe("actions/sync from its bundle", () => {
  const managerZip = writeZip([{ name: "Manager.exe", data: "manager build 1.4.0".repeat(100) }]);
  const frameworkZip = writeZip([
    { name: "Binaries/Win64/svc-framework.dll", data: "framework 2.1.0".repeat(100) },
  ]);
  const matrix = Buffer.from(
    JSON.stringify({
      builds: [
        { buildId: "17000000", manifestIds: ["5871003498571652123"], validationStatus: "validated" },
        { buildId: "17100000", manifestIds: ["6000000000000000001"], validationStatus: "validated" },
      ],
    }),
  );

  function scriptReleases(options: { frameworkDigest?: string; times?: number } = {}) {
    github.expect(
      "GET /repos/{owner}/{repo}/releases/latest",
      (req) => {
        if (req.params.repo === "manager") {
          return {
            body: githubRelease({
              id: 1,
              tag: "v1.4.0",
              repo: "svc-portal/manager",
              assets: [
                releaseAsset({
                  id: 11,
                  name: "svc-manager-1.4.0.zip",
                  size: managerZip.length,
                  repo: "svc-portal/manager",
                  tag: "v1.4.0",
                  digest: `sha256:${sha256(managerZip)}`,
                }),
              ],
            }),
          };
        }
        expect(req.params).toMatchObject({ owner: "svc-portal", repo: "framework" });
        return {
          body: githubRelease({
            id: 2,
            tag: "v2.1.0",
            repo: "svc-portal/framework",
            assets: [
              releaseAsset({
                id: 21,
                name: "svc-framework-2.1.0.zip",
                size: frameworkZip.length,
                repo: "svc-portal/framework",
                tag: "v2.1.0",
                digest: `sha256:${options.frameworkDigest ?? sha256(frameworkZip)}`,
              }),
              releaseAsset({
                id: 22,
                name: "game-builds.json",
                size: matrix.length,
                repo: "svc-portal/framework",
                tag: "v2.1.0",
                digest: `sha256:${sha256(matrix)}`,
              }),
            ],
          }),
        };
      },
      options.times ?? 3,
    );
    const serve = (path: string, body: Buffer) =>
      github.serveRaw(path, (_req, res) => {
        res.writeHead(200, { "content-type": "application/octet-stream" }).end(body);
      });
    serve("/svc-portal/manager/releases/latest/download/svc-manager-1.4.0.zip", managerZip);
    serve("/svc-portal/framework/releases/download/v2.1.0/svc-framework-2.1.0.zip", frameworkZip);
    serve("/svc-portal/framework/releases/download/v2.1.0/game-builds.json", matrix);
  }

  function runSync(p: CatalogProject, targets: string) {
    return runAction("sync", {
      workspace: p.root,
      eventName: "schedule",
      env: runnerEnv({ SVC_GITHUB_DOWNLOAD_URL: github.url }),
      inputs: { "github-token": "ghs_sync_test", targets },
    });
  }

  it("records manager, framework and game builds, outputs changed, a summary table; a second run changes nothing", async () => {
    project = catalogProject();
    scriptReleases();
    const result = await runSync(project, "releases game-builds");
    expect(result.code, result.stdout).toBe(0);
    github.assertDone();
    expect(result.outputs.changed).toBe("true");
    expect(Number(result.outputs.written)).toBeGreaterThanOrEqual(5);
    expect(result.outputs.failed).toBe("");
    expect(readJson(join(project.recordsDir, "manager.json"))).toMatchObject({
      version: "1.4.0",
      sha256: sha256(managerZip),
      permalinkUrl: "https://github.com/svc-portal/manager/releases/latest/download/svc-manager-1.4.0.zip",
    });
    expect(readJson(join(project.recordsDir, "framework.json")).sha256).toBe(sha256(frameworkZip));
    expect(
      readFileSync(join(project.siteDir, "downloads/framework/2.1.0/svc-framework-2.1.0.zip")).equals(
        frameworkZip,
      ),
    ).toBe(true);
    expect(readJson(join(project.siteDir, "api/v1/catalog.json")).supportedGameBuilds).toEqual([
      "17000000",
      "17100000",
    ]);
    expect(result.summary).toContain("| `releases` | :white_check_mark: manager 1.4.0, framework 2.1.0 |");
    expect(result.summary).toContain(
      "| `game-builds` | :white_check_mark: 2 build(s), supported: 17000000, 17100000 |",
    );
    expect(result.summary).toContain("- `records/manager.json`");
    expect((await runCli(["check"], project.root)).code).toBe(0);

    await github.stop();
    github = await startGitHubServer();
    scriptReleases({ times: 3 });
    const snapshot = project.snapshot();
    // The framework ZIP is already published with the same bytes, so it is not downloaded again.
    const again = await runSync(project, "releases,game-builds");
    expect(again.code, again.stdout).toBe(0);
    expect(project.snapshot()).toEqual(snapshot);
    expect(again.outputs).toEqual({ changed: "false", written: "0", failed: "" });
    expect(again.summary).toContain("Nothing changed.");
    github.assertDone();
  });

  it("refuses a framework whose bytes differ from the published digest; the other target still lands", async () => {
    project = catalogProject();
    scriptReleases({ frameworkDigest: "b".repeat(64) });
    const result = await runSync(project, "releases game-builds");
    expect(result.code).toBe(1);
    github.assertDone();
    expect(result.stdout).toMatch(
      /::error::sync releases: invalid_payload: .*differs from the published digest b{64}/,
    );
    expect(result.outputs).toMatchObject({ changed: "true", failed: "releases" });
    expect(existsSync(join(project.recordsDir, "manager.json"))).toBe(false);
    expect(existsSync(join(project.siteDir, "downloads/framework"))).toBe(false);
    expect(readJson(join(project.recordsDir, "game-builds.json")).builds).toHaveLength(2);
    expect(result.summary).toContain("| `releases` | :x: `invalid_payload`:");
  });

  it("fails on an unknown target before any call", async () => {
    project = catalogProject();
    const result = await runSync(project, "releases everything");
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("::error::unknown sync target(s) everything");
    expect(github.recorded).toEqual([]);
  });
});
