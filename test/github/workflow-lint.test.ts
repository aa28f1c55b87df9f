import { readdirSync, readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { register } from "tsx/esm/api";
import { describe, expect, it } from "vitest";
import type { LintRule } from "../support/workflow-lint.ts";

// @actions/workflow-parser imports its schema JSON without an import attribute, which Node's own
// loader refuses; tsx's loader (the one bin/svc.js uses) accepts it.
register();
const { lintAction, lintWorkflow } = await import("../support/workflow-lint.ts");

const ROOT = new URL("../../", import.meta.url).pathname;
const FIXTURES = new URL("./fixtures/workflows/", import.meta.url).pathname;

function workflowFiles(): string[] {
  const dir = join(ROOT, ".github/workflows");
  return readdirSync(dir)
    .filter((f) => f.endsWith(".yml") || f.endsWith(".yaml"))
    .map((f) => join(dir, f));
}

function actionFiles(): string[] {
  const dir = join(ROOT, "actions");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => join(dir, name, "action.yml"))
    .filter((f) => existsSync(f));
}

describe("workflow lint over the repository", () => {
  it("finds workflows to lint", () => {
    expect(workflowFiles().length).toBeGreaterThan(0);
  });

  for (const file of workflowFiles()) {
    it(`${file.slice(ROOT.length)} passes every rule`, () => {
      expect(lintWorkflow(file.slice(ROOT.length), readFileSync(file, "utf8"))).toEqual([]);
    });
  }
  for (const file of actionFiles()) {
    it(`${file.slice(ROOT.length)} passes every rule`, () => {
      expect(lintAction(file.slice(ROOT.length), readFileSync(file, "utf8"))).toEqual([]);
    });
  }
});

describe("each rule fires on a bad sample", () => {
  const cases: Array<[string, LintRule, number]> = [
    ["bad-missing-permissions.yml", "missing_top_level_permissions", 1],
    ["bad-unpinned.yml", "unpinned_action", 1],
    ["bad-pull-request-target-checkout.yml", "pull_request_target_checkout_head", 1],
    ["bad-validation-write.yml", "pull_request_job_write", 1],
    ["bad-untrusted-run.yml", "untrusted_event_text_in_run", 2],
  ];
  for (const [file, rule, count] of cases) {
    it(`${file}: ${rule}`, () => {
      const findings = lintWorkflow(file, readFileSync(join(FIXTURES, file), "utf8"));
      expect(findings.map((f) => f.rule)).toEqual(Array(count).fill(rule));
    });
  }

  it("a composite action: unpinned step and event text in a shell", () => {
    const findings = lintAction(
      "bad-action/action.yml",
      readFileSync(join(FIXTURES, "bad-action/action.yml"), "utf8"),
    );
    expect(findings.map((f) => f.rule).sort()).toEqual(["unpinned_action", "untrusted_event_text_in_run"]);
  });

  it("a file that is not a workflow is a parse error, never a pass", () => {
    expect(lintWorkflow("x.yml", "jobs: [1, 2]\n").map((f) => f.rule)).toContain("parse_error");
  });

  it("local actions and SHA-pinned actions pass", () => {
    const ok = `on: push\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: ./actions/validate\n      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683\n`;
    expect(lintWorkflow("ok.yml", ok)).toEqual([]);
  });
});
