/**
 * A submission as the bot sees it: the sidecar a pull request adds, and the submission report the
 * validation run uploads for it.
 */
import type { ReportCheck, SubmissionReport } from "../../src/github/submission-report.ts";
import { CHECKS } from "../../src/validation/checks/index.ts";
import { PORTAL } from "./webhook-payloads.ts";

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
