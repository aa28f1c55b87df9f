/**
 * Runs an action's committed bundle the way a runner does: `node actions/<name>/dist/index.js` with
 * INPUT_* variables, GITHUB_EVENT_NAME/GITHUB_EVENT_PATH, and GITHUB_OUTPUT and GITHUB_STEP_SUMMARY
 * files. The bundle is run from its real path, because it finds schemas/ relative to itself.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "./repo-root.ts";

export interface ActionRun {
  code: number;
  /** stdout and stderr together: workflow commands (::error::, ::warning::) and logs. */
  stdout: string;
  outputs: Record<string, string>;
  summary: string;
}

export interface RunnerFiles {
  /** Temp folder of the run's own files (event, output, summary). */
  dir: string;
}

export function runnerFiles(): RunnerFiles {
  return { dir: mkdtempSync(join(tmpdir(), "svc-runner-")) };
}

/**
 * Runs the bundle. `event` is written to GITHUB_EVENT_PATH; `inputs` become INPUT_<NAME> variables
 * (upper case, hyphens kept, as the runner does); `env` adds GITHUB_* variables.
 */
export function runAction(
  name: string,
  options: {
    files?: RunnerFiles;
    workspace: string;
    event?: unknown;
    eventName?: string;
    inputs?: Record<string, string>;
    env?: Record<string, string>;
    /** The runner's process, e.g. to cancel the job (SIGKILL) at a chosen point. */
    onSpawn?: (child: ChildProcess) => void;
  },
): Promise<ActionRun> {
  const files = options.files ?? runnerFiles();
  const output = join(files.dir, "output");
  const summary = join(files.dir, "summary");
  writeFileSync(output, "");
  writeFileSync(summary, "");
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "",
    GITHUB_WORKSPACE: options.workspace,
    GITHUB_OUTPUT: output,
    GITHUB_STEP_SUMMARY: summary,
    ...options.env,
  };
  if (options.event !== undefined) {
    writeFileSync(join(files.dir, "event.json"), JSON.stringify(options.event));
    env.GITHUB_EVENT_PATH = join(files.dir, "event.json");
  }
  if (options.eventName) env.GITHUB_EVENT_NAME = options.eventName;
  for (const [key, value] of Object.entries(options.inputs ?? {})) env[`INPUT_${key.toUpperCase()}`] = value;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, "actions", name, "dist/index.js")], {
      cwd: options.workspace,
      env,
    });
    options.onSpawn?.(child);
    let stdout = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stdout += d));
    child.on("close", (code) =>
      resolve({
        code: code ?? 1,
        stdout,
        outputs: readOutputs(output),
        summary: readFileSync(summary, "utf8"),
      }),
    );
  });
}

/** GITHUB_OUTPUT uses heredoc blocks: name<<delimiter / value / delimiter. */
export function readOutputs(file: string): Record<string, string> {
  const text = readFileSync(file, "utf8");
  const out: Record<string, string> = {};
  for (const m of text.matchAll(/^([\w-]+)<<(\S+)\n([\s\S]*?)\n\2$/gm)) out[m[1]!] = m[3]!;
  return out;
}
