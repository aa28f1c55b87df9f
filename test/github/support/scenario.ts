import { CHECKS } from "../../../src/validation/checks/index.ts";
import type { ReportCheck, SubmissionReport } from "../../../src/github/submission-report.ts";
import { writeZip } from "../../support/zip.ts";
import type { GitHubApiServer, RecordedRequest } from "./github-api-server.ts";
import { PORTAL } from "./bot-harness.ts";

export const SIDECAR_PATH = "submissions/better-hud/1.2.0.json";

export function sidecar(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schema: "svc.mod-release-submission.v1",
    modId: "better-hud",
    name: "Better HUD",
    version: "1.2.0",
    targetGameBuild: "17000000",
    summary: "A cleaner heads-up display.",
    releaseNotes: "Fixes the ammo counter.",
    package: {
      fileName: "better-hud-1.2.0.zip",
      url: "https://github.com/modder/better-hud/releases/download/v1.2.0/better-hud-1.2.0.zip",
      sha256: "b".repeat(64),
      sizeBytes: 4096,
    },
    dependencies: [],
    entrypoints: [{ path: "Content/Paks/BetterHud.pak", kind: "pak" }],
    authors: [{ name: "Ada", github: "Codertocat" }],
    ...overrides,
  };
}

export function submissionReport(
  headSha: string,
  options: { fail?: Record<string, string[]>; number?: number } = {},
): SubmissionReport {
  const checks: ReportCheck[] = CHECKS.filter((c) => c.scope === "package").map((c) => {
    const failure = options.fail?.[c.id];
    return failure
      ? { id: c.id, status: "failed", reasonCode: "hash_mismatch", log: failure, required: true }
      : { id: c.id, status: "passed", reasonCode: null, log: [], required: true };
  });
  return {
    schema: "svc.submission-report.v1",
    repository: PORTAL,
    pullRequest: options.number ?? 1,
    headSha,
    sidecarPath: SIDECAR_PATH,
    problems: [],
    report: {
      schema: "svc.validation-report.v1",
      modId: "better-hud",
      version: "1.2.0",
      packageSha256: "b".repeat(64),
      packageSizeBytes: 4096,
      passed: checks.every((c) => c.status === "passed"),
      checks,
      startedAt: "2026-11-21T10:00:00.000Z",
      finishedAt: "2026-11-21T10:00:05.000Z",
    },
  };
}

/** The artifact listing and the redirect to the ZIP, as GitHub serves them. */
export function expectReportArtifact(github: GitHubApiServer, report: unknown, runId = 30433642): void {
  const zip = writeZip([
    { name: "submission-report.json", data: typeof report === "string" ? report : JSON.stringify(report) },
  ]);
  const location = github.serveRaw(`/blob/artifacts/${runId}.zip`, (_req, res) => {
    res.writeHead(200, { "content-type": "application/zip", "content-length": String(zip.length) }).end(zip);
  });
  github.expect("GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", {
    body: {
      total_count: 1,
      artifacts: [{ id: 7, name: "submission-report", size_in_bytes: zip.length, expired: false }],
    },
  });
  github.expect("GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}", {
    status: 302,
    headers: { location },
  });
}

/** What the bot sent (writes only), in order: the file snapshot of a step. */
export function sentSince(github: GitHubApiServer, from: number): string {
  const writes = github.recorded
    .slice(from)
    .filter((r: RecordedRequest) => r.method !== "GET" && !r.route.startsWith("/app/"))
    .map((r) => ({ request: `${r.method} ${r.route}`, params: r.params, body: r.body }));
  return `${JSON.stringify(writes, null, 2)}\n`;
}
