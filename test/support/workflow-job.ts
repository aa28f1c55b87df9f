/**
 * Runs one job of a workflow file the way a runner does, step by step, so a test exercises the
 * wiring itself: the file read with GitHub's own parser (workflow-file.ts), every `if:` and
 * `${{ }}` evaluated with GitHub's own expression evaluator (@actions/expressions), `run:` steps in
 * `bash --noprofile --norc -eo pipefail` with GITHUB_OUTPUT, local actions (`./actions/<name>`)
 * from their committed bundles with their action.yml defaults (action-runner.ts). What a runner
 * would fetch from elsewhere is a stand-in the test names: third-party actions (`uses:` by name,
 * e.g. the Actions cache) and commands on PATH (sudo, apt-get, freshclam, ...). A step that fails
 * fails the job, and the steps after it run only when their `if:` asks for it (always(),
 * failure()), as on GitHub. A fake of the runner, named as one.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { data, Evaluator, Lexer, Parser } from "@actions/expressions";
import { parse as parseYaml } from "yaml";
import { readOutputs, runAction } from "./action-runner.ts";
import { REPO_ROOT } from "./repo-root.ts";
import { type Plain, readWorkflow } from "./workflow-file.ts";

export type StandIn = (inputs: Record<string, string>) => Promise<Record<string, string>>;

export interface JobOptions {
  workflow: string;
  job: string;
  /** Stop after the step with this id (the rest of the job is not what the test is about). */
  until?: string;
  event: { name: string; payload: Record<string, unknown> };
  workspace: string;
  runnerTemp: string;
  /** The workflow's GITHUB_TOKEN (github.token). */
  token?: string;
  vars?: Record<string, string>;
  secrets?: Record<string, string>;
  /** GITHUB_* variables and anything else every local action sees. */
  env?: Record<string, string>;
  /** Commands on PATH, as bash scripts (`exec` the real one or fake it). */
  commands?: Record<string, string>;
  /** Stand-ins for actions used by name, keyed without the @ref (e.g. actions/cache/restore). */
  actions?: Record<string, StandIn>;
  needs?: Record<string, { result: string; outputs: Record<string, string> }>;
}

export interface StepResult {
  id: string | null;
  name: string;
  outcome: "success" | "failure" | "skipped";
  outputs: Record<string, string>;
  log: string;
}

export interface JobResult {
  /** skipped: the job's own `if:` was false. */
  result: "success" | "failure" | "skipped";
  steps: StepResult[];
  /** The output of each step by id (steps.<id>.outputs). */
  outputs: Record<string, Record<string, string>>;
}

const EXPRESSION = /^\$\{\{\s*([\s\S]*?)\s*\}\}$/;
const CONTEXTS = [
  "github",
  "env",
  "vars",
  "secrets",
  "steps",
  "runner",
  "job",
  "needs",
  "inputs",
  "matrix",
  "strategy",
];
const STATUS = ["success", "failure", "always", "cancelled"];

function evaluate(expr: string, context: Record<string, unknown>, failed: boolean): data.ExpressionData {
  const lexed = new Lexer(expr).lex();
  const parsed = new Parser(lexed.tokens, CONTEXTS, [
    ...STATUS.map((name) => ({ name, minArgs: 0, maxArgs: 0 })),
    { name: "hashFiles", minArgs: 1, maxArgs: 255 },
  ]).parse();
  const status = new Map(
    STATUS.map((name) => [
      name,
      {
        name,
        minArgs: 0,
        maxArgs: 0,
        call: () =>
          new data.BooleanData(
            name === "always" ? true : name === "failure" ? failed : name === "success" ? !failed : false,
          ),
      },
    ]),
  );
  const workspace = String((context.github as { workspace?: unknown } | undefined)?.workspace ?? "");
  const functions: EvaluatorFunctions = new Map([
    ...(status as EvaluatorFunctions),
    ["hashfiles", hashFilesFunction(workspace)],
  ]);
  const dictionary = JSON.parse(JSON.stringify(context), data.reviver) as data.Dictionary;
  return new Evaluator(parsed, dictionary, functions).evaluate();
}

/** The function table Evaluator takes (its FunctionDefinition type is not exported by the package). */
type EvaluatorFunctions = NonNullable<ConstructorParameters<typeof Evaluator>[2]>;

/** A glob of the runner's hashFiles as the workflows use it: `**` any depth, `*` within one name. */
function globRegExp(pattern: string): RegExp {
  const body = pattern
    .split("**")
    .map((part) =>
      part
        .split("*")
        .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
        .join("[^/]*"),
    )
    .join(".*");
  return new RegExp(`^${body}$`);
}

function workspaceFiles(dir: string, prefix = ""): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === ".git" || entry.name === "node_modules") continue;
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...workspaceFiles(join(dir, entry.name), rel));
    else if (entry.isFile()) out.push(rel);
  }
  return out;
}

/**
 * The runner's hashFiles(patterns...): the sha256 of the sha256 digests of every matched file under
 * the workspace, in path order; the empty string when nothing matches (actions/runner's
 * hashFiles script). Evaluated when a step's expression is, as on the runner.
 */
function hashFilesFunction(workspace: string) {
  return {
    name: "hashFiles",
    minArgs: 1,
    maxArgs: 255,
    call: (...args: data.ExpressionData[]) => {
      const patterns = args.map((a) => globRegExp(a.coerceString()));
      const files = workspace
        ? workspaceFiles(workspace)
            .filter((f) => patterns.some((p) => p.test(f)))
            .sort()
        : [];
      if (files.length === 0) return new data.StringData("");
      const all = createHash("sha256");
      for (const f of files)
        all.update(
          createHash("sha256")
            .update(readFileSync(join(workspace, f)))
            .digest(),
        );
      return new data.StringData(all.digest("hex"));
    },
  };
}

/** A value of the file as the runner sees it: `${{ }}` evaluated, literals as they are. */
function expand(value: Plain, context: Record<string, unknown>, failed: boolean): string {
  if (typeof value !== "string") return value === null || value === undefined ? "" : String(value);
  const m = EXPRESSION.exec(value);
  return m ? evaluate(m[1]!, context, failed).coerceString() : value;
}

/** `if:` as GitHub reads it: without a status function, success() && (condition). */
function shouldRun(condition: Plain, context: Record<string, unknown>, failed: boolean): boolean {
  if (condition === undefined || condition === null || condition === "") return !failed;
  const text =
    typeof condition === "string" ? (EXPRESSION.exec(condition)?.[1] ?? condition) : String(condition);
  const withStatus = STATUS.some((f) => new RegExp(`\\b${f}\\(`).test(text))
    ? text
    : `success() && (${text})`;
  const result = evaluate(withStatus, context, failed);
  return result.kind === data.Kind.Boolean
    ? (result as data.BooleanData).value
    : result.coerceString() !== "";
}

/** The inputs' defaults of a local action (what the runner fills in for an unset input). */
function actionDefaults(name: string): Record<string, string> {
  const doc = parseYaml(readFileSync(join(REPO_ROOT, "actions", name, "action.yml"), "utf8")) as {
    inputs?: Record<string, { default?: unknown }>;
  };
  return Object.fromEntries(
    Object.entries(doc.inputs ?? {})
      .filter(([, input]) => input.default !== undefined)
      .map(([key, input]) => [key, String(input.default)]),
  );
}

function bash(
  script: string,
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number; log: string }> {
  return new Promise((resolve) => {
    execFile(
      "bash",
      ["--noprofile", "--norc", "-eo", "pipefail", "-c", script],
      { cwd, env, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? (typeof error.code === "number" ? error.code : 1) : 0,
          log: `${stdout}${stderr}`,
        }),
    );
  });
}

export async function runJob(options: JobOptions): Promise<JobResult> {
  const { doc, errors } = readWorkflow(options.workflow);
  if (errors.length > 0) throw new Error(`${options.workflow}: ${JSON.stringify(errors)}`);
  const job = doc.jobs[options.job];
  if (!job) throw new Error(`${options.workflow} has no job ${options.job}`);
  const bin = mkdtempSync(join(tmpdir(), "svc-job-bin-"));
  for (const [name, script] of Object.entries(options.commands ?? {})) {
    writeFileSync(join(bin, name), `#!/usr/bin/env bash\n${script}\n`);
    chmodSync(join(bin, name), 0o755);
  }
  mkdirSync(options.runnerTemp, { recursive: true });
  const outputs: Record<string, Record<string, string>> = {};
  const stepsContext: Record<
    string,
    { outputs: Record<string, string>; outcome: string; conclusion: string }
  > = {};
  const steps: StepResult[] = [];
  let failed = false;
  const context = () => ({
    github: {
      event_name: options.event.name,
      event: options.event.payload,
      // What GitHub sets: the login whose action started the run (a push's pusher, a schedule's
      // workflow file's last committer), which the payload names as its sender.
      actor: String((options.event.payload.sender as { login?: unknown } | undefined)?.login ?? "octocat"),
      token: options.token ?? "ghs_workflow_token",
      workspace: options.workspace,
      repository: options.env?.GITHUB_REPOSITORY ?? "",
      run_id: "1001",
      run_attempt: "1",
      ref: options.env?.GITHUB_REF ?? "refs/heads/main",
    },
    vars: options.vars ?? {},
    secrets: options.secrets ?? {},
    steps: stepsContext,
    runner: { temp: options.runnerTemp, os: "Linux" },
    needs: options.needs ?? {},
    env: {},
    inputs: {},
  });
  if (job.if !== undefined && !shouldRun(job.if, context(), false)) {
    const skipped = (job.steps as Plain[]).map((step, index) => ({
      id: typeof step.id === "string" ? step.id : null,
      name: String(step.name ?? step.uses ?? step.run ?? `step ${index + 1}`).split("\n")[0]!,
      outcome: "skipped" as const,
      outputs: {},
      log: "",
    }));
    return { result: "skipped", steps: skipped, outputs: {} };
  }
  for (const [index, step] of (job.steps as Plain[]).entries()) {
    const id: string | null = typeof step.id === "string" ? step.id : null;
    const name = String(step.name ?? step.uses ?? step.run ?? `step ${index + 1}`).split("\n")[0]!;
    if (!shouldRun(step.if, context(), failed)) {
      steps.push({ id, name, outcome: "skipped", outputs: {}, log: "" });
      if (id) stepsContext[id] = { outputs: {}, outcome: "skipped", conclusion: "skipped" };
      if (id && id === options.until) break;
      continue;
    }
    const env = Object.fromEntries(
      Object.entries((step.env ?? {}) as Record<string, Plain>).map(([k, v]) => [
        k,
        expand(v, context(), failed),
      ]),
    );
    const inputs = Object.fromEntries(
      Object.entries((step.with ?? {}) as Record<string, Plain>).map(([k, v]) => [
        k,
        expand(v, context(), failed),
      ]),
    );
    let result: { ok: boolean; outputs: Record<string, string>; log: string };
    if (typeof step.run === "string") {
      const output = join(mkdtempSync(join(tmpdir(), "svc-job-out-")), "output");
      writeFileSync(output, "");
      const run = await bash(expand(step.run, context(), failed), options.workspace, {
        ...process.env,
        ...options.env,
        ...env,
        PATH: `${bin}:${process.env.PATH ?? ""}`,
        GITHUB_OUTPUT: output,
        RUNNER_TEMP: options.runnerTemp,
      } as Record<string, string>);
      result = { ok: run.code === 0, outputs: readOutputs(output), log: run.log };
    } else if (typeof step.uses === "string" && step.uses.startsWith("./actions/")) {
      const action = step.uses.slice("./actions/".length);
      const run = await runAction(action, {
        workspace: options.workspace,
        event: options.event.payload,
        eventName: options.event.name,
        env: {
          ...options.env,
          ...env,
          PATH: `${bin}:${process.env.PATH ?? ""}`,
          RUNNER_TEMP: options.runnerTemp,
        },
        inputs: { ...actionDefaults(action), ...inputs },
      });
      result = { ok: run.code === 0, outputs: run.outputs, log: run.stdout };
    } else if (typeof step.uses === "string") {
      const standIn = options.actions?.[step.uses.replace(/@.*$/, "")];
      if (!standIn) throw new Error(`${options.workflow} ${options.job}: no stand-in for ${step.uses}`);
      try {
        result = { ok: true, outputs: await standIn(inputs), log: "" };
      } catch (error) {
        result = { ok: false, outputs: {}, log: (error as Error).message };
      }
    } else throw new Error(`${options.workflow} ${options.job}: step ${name} neither runs nor uses`);
    const outcome = result.ok ? "success" : "failure";
    if (!result.ok && step["continue-on-error"] !== true) failed = true;
    steps.push({ id, name, outcome, outputs: result.outputs, log: result.log });
    if (id) {
      outputs[id] = result.outputs;
      stepsContext[id] = { outputs: result.outputs, outcome, conclusion: outcome };
    }
    if (id && id === options.until) break;
  }
  return { result: failed ? "failure" : "success", steps, outputs };
}

/** One step's record by id or by the start of its name. */
export function stepOf(job: JobResult, key: string): StepResult {
  const found = job.steps.find((s) => s.id === key || s.name.startsWith(key));
  if (!found) throw new Error(`no step ${key} in ${job.steps.map((s) => s.id ?? s.name).join(", ")}`);
  return found;
}
