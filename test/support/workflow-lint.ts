/**
 * Workflow lint: parses every workflow and action file with GitHub's own parser
 * (@actions/workflow-parser, a devDependency: this is test code) and rejects the patterns that hand
 * write tokens or a shell to strangers. Each rule has a stable id; test/github/workflow-lint.test.ts
 * proves each one fires. The parser imports its schema JSON without an import attribute, which
 * Node's own loader refuses: import this module after tsx's loader is registered (workflow-file.ts).
 */
import { parseAction } from "@actions/workflow-parser/actions/action-parser";
import { NoOperationTraceWriter, parseWorkflow } from "@actions/workflow-parser";

export type LintRule =
  | "parse_error"
  | "missing_top_level_permissions"
  | "unpinned_action"
  | "pull_request_target_checkout_head"
  | "pull_request_job_write"
  | "untrusted_event_text_in_run";

export interface LintFinding {
  file: string;
  rule: LintRule;
  message: string;
}

export type Plain = string | number | boolean | null | Plain[] | { [key: string]: Plain };

/** The parser's token tree as plain data; an expression becomes its `${{ }}` text. */
export function toPlain(token: unknown): Plain {
  if (token === null || typeof token !== "object") return token as Plain;
  const t = token as {
    type?: number;
    map?: Array<{ Key: unknown; Value: unknown }>;
    seq?: unknown[];
    expr?: string;
  };
  if (t.type === 2 && Array.isArray(t.map)) {
    const out: { [key: string]: Plain } = {};
    for (const { Key, Value } of t.map) out[String(toPlain(Key))] = toPlain(Value);
    return out;
  }
  if (t.type === 1 && Array.isArray(t.seq)) return t.seq.map(toPlain);
  if (t.type === 3 && typeof t.expr === "string") return `\${{ ${t.expr} }}`;
  return token as Plain;
}

const asObject = (v: Plain | undefined): { [key: string]: Plain } =>
  v && typeof v === "object" && !Array.isArray(v) ? v : {};
const asArray = (v: Plain | undefined): Plain[] => (Array.isArray(v) ? v : []);

const PINNED = /@[0-9a-f]{40}$/;
/** Contexts an outsider controls (titles, bodies, branch names, commit messages, ...). */
const UNTRUSTED = /github\.event\.|github\.head_ref|inputs\./;
const HEAD_REF =
  /github\.event\.pull_request\.head|github\.head_ref|github\.event\.workflow_run\.head_|refs\/pull\//;
const CHECKOUT = /^actions\/checkout@/;

function eventNames(on: Plain | undefined): string[] {
  if (typeof on === "string") return [on];
  if (Array.isArray(on)) return on.map(String);
  return Object.keys(asObject(on));
}

function hasWrite(permissions: Plain | undefined): boolean {
  if (permissions === "write-all") return true;
  return Object.values(asObject(permissions)).some((v) => v === "write");
}

function checkUses(file: string, where: string, uses: Plain | undefined, findings: LintFinding[]): void {
  if (typeof uses !== "string") return;
  if (uses.startsWith("./")) return;
  if (uses.startsWith("docker://") ? /@sha256:[0-9a-f]{64}$/.test(uses) : PINNED.test(uses)) return;
  findings.push({
    file,
    rule: "unpinned_action",
    message: `${where}: ${uses} is not pinned to a full commit SHA`,
  });
}

function checkRun(file: string, where: string, run: Plain | undefined, findings: LintFinding[]): void {
  if (typeof run !== "string") return;
  for (const match of run.matchAll(/\$\{\{([\s\S]*?)\}\}/g)) {
    if (UNTRUSTED.test(match[1]!)) {
      findings.push({
        file,
        rule: "untrusted_event_text_in_run",
        message: `${where}: run interpolates ${match[0].trim()}; pass it through env: and quote the variable`,
      });
    }
  }
}

/** A workflow parsed by GitHub's own parser: the document as plain data (null when unparsable), and its errors. */
export function parseWorkflowFile(
  file: string,
  content: string,
): { doc: Plain; errors: Array<{ message: string }> } {
  const parsed = parseWorkflow({ name: file, content }, new NoOperationTraceWriter());
  return {
    doc: parsed.value ? toPlain(JSON.parse(JSON.stringify(parsed.value))) : null,
    errors: parsed.context.errors.getErrors(),
  };
}

export function lintWorkflow(file: string, content: string): LintFinding[] {
  const parsed = parseWorkflowFile(file, content);
  if (parsed.errors.length > 0 || parsed.doc === null) {
    return parsed.errors.map((e) => ({ file, rule: "parse_error" as const, message: e.message }));
  }
  const doc = asObject(parsed.doc);
  const findings: LintFinding[] = [];
  const events = eventNames(doc.on);
  const untrustedTrigger = events.includes("pull_request") || events.includes("pull_request_target");
  const privilegedTrigger = events.includes("pull_request_target") || events.includes("workflow_run");
  if (!("permissions" in doc)) {
    findings.push({
      file,
      rule: "missing_top_level_permissions",
      message: "no top-level permissions: start from permissions: {}",
    });
  }
  if (untrustedTrigger && hasWrite(doc.permissions)) {
    findings.push({
      file,
      rule: "pull_request_job_write",
      message: "top-level permissions grant write on a pull_request workflow",
    });
  }
  for (const [jobId, jobPlain] of Object.entries(asObject(doc.jobs))) {
    const job = asObject(jobPlain);
    checkUses(file, `job ${jobId}`, job.uses, findings);
    if (untrustedTrigger && hasWrite(job.permissions)) {
      findings.push({
        file,
        rule: "pull_request_job_write",
        message: `job ${jobId} has write permissions on a pull_request workflow`,
      });
    }
    asArray(job.steps).forEach((stepPlain, index) => {
      const step = asObject(stepPlain);
      const where = `job ${jobId} step ${typeof step.name === "string" ? step.name : index + 1}`;
      checkUses(file, where, step.uses, findings);
      checkRun(file, where, step.run, findings);
      if (privilegedTrigger && typeof step.uses === "string" && CHECKOUT.test(step.uses)) {
        const ref = asObject(step.with).ref;
        if (typeof ref === "string" && HEAD_REF.test(ref)) {
          findings.push({
            file,
            rule: "pull_request_target_checkout_head",
            message: `${where}: checks out the pull request head (${ref}) in a privileged workflow`,
          });
        }
      }
    });
  }
  return findings;
}

export function lintAction(file: string, content: string): LintFinding[] {
  const parsed = parseAction({ name: file, content }, new NoOperationTraceWriter());
  const errors = parsed.context.errors.getErrors();
  if (errors.length > 0 || !parsed.value) {
    return errors.map((e) => ({ file, rule: "parse_error" as const, message: e.message }));
  }
  const doc = asObject(toPlain(JSON.parse(JSON.stringify(parsed.value))));
  const findings: LintFinding[] = [];
  asArray(asObject(doc.runs).steps).forEach((stepPlain, index) => {
    const step = asObject(stepPlain);
    const where = `step ${typeof step.name === "string" ? step.name : index + 1}`;
    checkUses(file, where, step.uses, findings);
    checkRun(file, where, step.run, findings);
  });
  return findings;
}
