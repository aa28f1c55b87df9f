/**
 * The actions run from their committed bundles as a runner runs them: INPUT_* variables,
 * GITHUB_EVENT_PATH, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, `node actions/x/dist/index.js`.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { intakeSubmissionReport } from "../../src/github/submission-report.ts";
import { writeZip } from "../support/zip.ts";
import { examplePayload, PORTAL } from "./support/bot-harness.ts";
import { GitHubApiServer } from "./support/github-api-server.ts";
import { SIDECAR_PATH, sidecar } from "./support/scenario.ts";
import { createHash } from "node:crypto";

const ROOT = new URL("../../", import.meta.url).pathname;

function runAction(name: string, env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, "actions", name, "dist/index.js")], {
      cwd: env.GITHUB_WORKSPACE,
      env: { PATH: process.env.PATH ?? "", ...env },
    });
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stdout += d));
    child.on("close", (code) => resolve({ code: code ?? 1, stdout }));
  });
}

let github: GitHubApiServer;
let dir: string;
beforeEach(async () => {
  github = await new GitHubApiServer().start();
  dir = mkdtempSync(join(tmpdir(), "svc-action-"));
});
afterEach(async () => {
  await github.stop();
});

function outputs(file: string): Record<string, string> {
  // GITHUB_OUTPUT uses heredoc blocks: name<<delimiter / value / delimiter.
  const text = readFileSync(file, "utf8");
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/^([\w-]+)<<(\S+)\n([\s\S]*?)\n\2$/gm)) out[m[1]!] = m[3]!;
  return out;
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
    (side.package as Record<string, unknown>).sha256 = createHash("sha256").update(pkg).digest("hex");
    (side.package as Record<string, unknown>).sizeBytes = pkg.length;
    github.expect("GET /repos/{owner}/{repo}/pulls/{pull_number}/files", {
      body: [
        {
          sha: "0".repeat(40),
          filename: SIDECAR_PATH,
          status: "added",
          additions: 1,
          deletions: 0,
          changes: 1,
          blob_url: "",
          raw_url: "",
          contents_url: "",
        },
      ],
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
    writeFileSync(join(dir, "event.json"), JSON.stringify(event));
    writeFileSync(join(dir, "output"), "");
    writeFileSync(join(dir, "summary"), "");
    const result = await runAction("validate", {
      GITHUB_WORKSPACE: ROOT,
      GITHUB_EVENT_PATH: join(dir, "event.json"),
      GITHUB_OUTPUT: join(dir, "output"),
      GITHUB_STEP_SUMMARY: join(dir, "summary"),
      GITHUB_REPOSITORY: PORTAL,
      GITHUB_API_URL: github.url,
      "INPUT_GITHUB-TOKEN": "ghs_read_only_test",
      "INPUT_REPORT-PATH": join(dir, "submission-report.json"),
      INPUT_SCANNER: "none",
      "INPUT_ALLOW-HTTP": "true",
    });
    expect(result.code, result.stdout).toBe(0);
    github.assertDone();
    const intake = intakeSubmissionReport(readFileSync(join(dir, "submission-report.json")), {
      repository: PORTAL,
      headSha,
    });
    expect(intake.ok, JSON.stringify(intake)).toBe(true);
    if (!intake.ok) return;
    expect(intake.report.report?.packageSha256).toBe(createHash("sha256").update(pkg).digest("hex"));
    // No scanner on this runner: antivirus_scan fails closed, so the submission cannot pass.
    expect(intake.report.report?.checks.find((c) => c.id === "antivirus_scan")?.status).toBe("failed");
    expect(outputs(join(dir, "output"))).toMatchObject({
      passed: "false",
      "report-path": join(dir, "submission-report.json"),
    });
    expect(readFileSync(join(dir, "summary"), "utf8")).toContain("| `antivirus_scan` | yes | :x: failed |");
  });

  it("fails the step with one message when the event is not a pull request", async () => {
    writeFileSync(join(dir, "event.json"), JSON.stringify(examplePayload("release", "published")));
    const result = await runAction("validate", {
      GITHUB_WORKSPACE: ROOT,
      GITHUB_EVENT_PATH: join(dir, "event.json"),
      GITHUB_REPOSITORY: PORTAL,
      GITHUB_API_URL: github.url,
      "INPUT_GITHUB-TOKEN": "ghs_read_only_test",
    });
    expect(result.code).toBe(1);
    expect(result.stdout).toContain("::error::validate runs on pull_request events");
  });
});
