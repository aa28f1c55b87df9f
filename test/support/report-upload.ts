/**
 * The validation run's report upload, done the way validate-submission.yml says: the
 * actions/upload-artifact step's `name` (its expressions evaluated for this run attempt) and
 * `overwrite`, read from the committed workflow by GitHub's own parser, applied to the repository
 * model, which refuses a name already on the run as GitHub does. So a test sees what the workflow
 * as written leaves behind on a re-run, not what a test assumes it does.
 */
import type { SubmissionReport } from "../../src/github/submission-report.ts";
import type { GitHubRepository } from "./github-repository.ts";
import { readWorkflow } from "./workflow-file.ts";
import { writeZip } from "./zip.ts";

const UPLOAD_ACTION = /^actions\/upload-artifact@/;

/** The upload step of validate-submission.yml's validate job: its `with:` as written. */
export function reportUploadStep(): { name: string; overwrite: string; path: string } {
  const { doc, errors } = readWorkflow("validate-submission.yml");
  if (errors.length > 0) throw new Error(`validate-submission.yml: ${JSON.stringify(errors)}`);
  const steps = doc.jobs.validate.steps as Array<{ uses?: string; with?: Record<string, string> }>;
  const upload = steps.filter((s) => typeof s.uses === "string" && UPLOAD_ACTION.test(s.uses));
  if (upload.length !== 1) throw new Error(`expected one upload-artifact step, found ${upload.length}`);
  const inputs = upload[0]!.with ?? {};
  return { name: inputs.name ?? "artifact", overwrite: inputs.overwrite ?? "false", path: inputs.path ?? "" };
}

/**
 * An input's value for a run: a literal, `${{ ctx.path }}` or `${{ format('...{0}', ctx.path) }}`
 * (what the parser turns `text-${{ ctx.path }}` into). Any other expression is refused: the test
 * would otherwise guess what GitHub computes.
 */
export function evaluateInput(value: string, context: Record<string, string | number>): string {
  const expression = /^\$\{\{ ([\s\S]*) \}\}$/.exec(value);
  if (!expression) return value;
  const lookup = (path: string): string => {
    const found = context[path.trim()];
    if (found === undefined) throw new Error(`no value for ${path} in the test's run context`);
    return String(found);
  };
  const body = expression[1]!;
  const format = /^format\('((?:[^']|'')*)'((?:, *[a-z_.]+)*)\)$/.exec(body);
  if (format) {
    const args = format[2]!
      .split(",")
      .map((a) => a.trim())
      .filter(Boolean)
      .map(lookup);
    return format[1]!.replace(/''/g, "'").replace(/\{(\d+)\}/g, (_m, i: string) => args[Number(i)] ?? "");
  }
  if (/^[a-z_.]+$/.test(body)) return lookup(body);
  throw new Error(`cannot evaluate ${value}`);
}

/**
 * Uploads the report of one attempt of a validation run as the workflow's upload step would.
 * Returns whether the upload step succeeded (a refused upload fails the job: the run ends
 * `failure`).
 */
export function uploadReportAsWorkflow(
  repository: GitHubRepository,
  run: { id: number; attempt: number },
  report: SubmissionReport | string,
): { ok: boolean; name: string; message?: string } {
  const step = reportUploadStep();
  const context = { "github.run_attempt": run.attempt, "github.run_id": run.id };
  const name = evaluateInput(step.name, context);
  const overwrite = evaluateInput(step.overwrite, context) === "true";
  const text = typeof report === "string" ? report : JSON.stringify(report);
  const file = step.path.split("/").pop() || "submission-report.json";
  const uploaded = repository.uploadArtifact(run.id, name, writeZip([{ name: file, data: text }]), {
    overwrite,
  });
  return uploaded.ok ? { ok: true, name } : { ok: false, name, message: uploaded.message };
}
