/**
 * Build provenance wiring, run for real up to the attestation step: the committed actions/publish
 * bundle publishes against the loopback GitHub (OpenAPI-checked) and git remote, then publish.yml's
 * own `subjects` step (its `run` line and env, read with GitHub's workflow parser) writes the file the
 * attest job hands to actions/attest-build-provenance as `subject-checksums`. That file must name
 * exactly the assets the loopback Releases store holds, with the sha256 of their stored bytes.
 * Sigstore itself (Fulcio, Rekor, the OIDC token) is not run: it cannot be reached or faked offline.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { startPublishScenario, type PublishScenario, scheduleEvent } from "../support/publish-scenario.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { type Plain, readWorkflow } from "../support/workflow-file.ts";
import { clamscanPath, shouldSkip } from "../validation/clamav.ts";

const workflow = readWorkflow("publish.yml").doc;
const publishSteps: Plain[] = workflow.jobs.publish.steps;
const step = (pred: (s: Plain) => boolean, what: string): Plain => {
  const found = publishSteps.find(pred) ?? workflow.jobs.attest.steps.find(pred);
  if (!found) throw new Error(`publish.yml has no ${what} step`);
  return found;
};

/**
 * Evaluates the only expressions these values use: `${{ runner.temp }}`, which the parser hands back
 * as `format('{0}/file', runner.temp)` when it is part of a longer string.
 */
const expand = (text: string, runnerTemp: string) =>
  text
    .replace(/\$\{\{ format\('([^']*)', runner\.temp\) \}\}/g, (_, template: string) =>
      template.replaceAll("{0}", runnerTemp),
    )
    .replaceAll(["$", "{{ runner.temp }}"].join(""), runnerTemp);

/** Runs publish.yml's `subjects` step as a runner does: bash, the step's env, GITHUB_OUTPUT. */
async function runSubjectsStep(workspace: string, runnerTemp: string) {
  const subjects = step((s) => s.id === "subjects", "subjects");
  const env = Object.fromEntries(
    Object.entries(subjects.env as Record<string, string>).map(([k, v]) => [k, expand(v, runnerTemp)]),
  );
  const output = join(runnerTemp, "github-output");
  writeFileSync(output, "");
  // The runner's checkout is this repository; here the workspace is the portal data, so the CLI is ours.
  const script = String(subjects.run).replace("node bin/svc.js", `node ${join(REPO_ROOT, "bin/svc.js")}`);
  await promisify(execFile)("bash", ["-e", "-c", script], {
    cwd: workspace,
    env: { ...process.env, ...env, GITHUB_OUTPUT: output },
  });
  const outputs = Object.fromEntries(
    readFileSync(output, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => line.split("=", 2) as [string, string]),
  );
  return { env, outputs };
}

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

let scenario: PublishScenario | undefined;
afterEach(async () => {
  await scenario?.stop();
  scenario = undefined;
});

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))(
  "publish.yml: attestation subjects from a real publish run",
  { timeout: 120_000 },
  () => {
    it("the subject-checksums file the attest job receives lists exactly the stored release assets with their sha256; a run that stores nothing attests nothing", async () => {
      const s = await startPublishScenario();
      scenario = s;
      for (const [number, modId] of [
        [7, "better-hud"],
        [8, "fast-travel"],
      ] as const) {
        const sub = s.submission(number, modId, "1.0.0");
        s.world.setStatus(sub.pr, "approved");
        s.world.merge(sub.pr);
      }
      const runnerTemp = mkdtempSync(join(tmpdir(), "svc-runner-temp-"));
      const publish = step((x) => x.id === "publish", "publish");
      const receiptsPath = expand(publish.with["receipts-path"], runnerTemp);
      const workspace = await s.checkout();
      const run = await s.run(workspace, scheduleEvent(), { inputs: { "receipts-path": receiptsPath } });
      expect(run.code, run.stdout).toBe(0);
      expect(run.outputs.published).toBe("2");

      const { env, outputs } = await runSubjectsStep(workspace, runnerTemp);
      expect(env.RECEIPTS).toBe(receiptsPath);
      expect(outputs.count).toBe("2");
      // What the attest job reads is what the publish job uploaded: same artifact, same file name.
      const upload = step(
        (x) => String(x.uses).startsWith("actions/upload-artifact@") && x.with.name === "provenance-subjects",
        "upload",
      );
      const download = step((x) => String(x.uses).startsWith("actions/download-artifact@"), "download");
      const attest = step((x) => String(x.uses).startsWith("actions/attest-build-provenance@"), "attest");
      expect(expand(upload.with.path, runnerTemp)).toBe(env.SUBJECTS);
      expect(download.with.name).toBe("provenance-subjects");
      expect(basename(expand(attest.with["subject-checksums"], runnerTemp))).toBe(basename(env.SUBJECTS!));
      expect(workflow.jobs.publish.outputs.attest).toContain("steps.subjects.outputs.count");

      const stored = s.world.releases
        .filter((r) => !r.draft)
        .flatMap((r) => r.assets.map((a) => `${sha256(a.bytes)}  ${a.name}`))
        .sort();
      expect(stored).toHaveLength(2);
      const subjects = readFileSync(env.SUBJECTS!, "utf8").split("\n").filter(Boolean).sort();
      expect(subjects).toEqual(stored);

      // The next scheduled run finds everything published: no subjects, so the attest job is skipped.
      const again = await s.run(await s.checkout(), scheduleEvent(), {
        inputs: { "receipts-path": receiptsPath },
      });
      expect(again.code, again.stdout).toBe(0);
      expect(again.outputs.published).toBe("0");
      const rerun = await runSubjectsStep(workspace, runnerTemp);
      expect(rerun.outputs.count).toBe("0");
      expect(existsSync(rerun.env.SUBJECTS!) ? readFileSync(rerun.env.SUBJECTS!, "utf8") : "").toBe("");
    });
  },
);
