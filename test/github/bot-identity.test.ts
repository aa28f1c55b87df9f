/**
 * The bot's identity is configuration, never a guess (issue 23, attack 4). The publish workflow
 * trusts status comments only from the logins in SVC_BOT_LOGINS; with the variable unset it used to
 * trust github-actions[bot], the login of every workflow's GITHUB_TOKEN, so any workflow with
 * `issues: write` could write an approval it believed. Unset is now config_invalid, named.
 */
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { type ActionIo, StepEnv } from "../../src/pipeline/action-step.ts";
import { runAction } from "../support/action-runner.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { readWorkflow } from "../support/workflow-file.ts";

function stepEnv(inputs: Record<string, string>): StepEnv {
  const io: ActionIo = {
    input: (name) => inputs[name] ?? "",
    info: () => {},
    debug: () => {},
    warning: () => {},
    setSecret: () => {},
    idToken: async () => "",
  };
  const context = {
    eventName: "schedule",
    payload: {},
    ref: "refs/heads/main",
    sha: "a".repeat(40),
    repo: { owner: "svc-portal", repo: "mods" },
    apiUrl: "https://api.github.com",
    serverUrl: "https://github.com",
    workspace: tmpdir(),
  };
  return new StepEnv(context, io);
}

describe("SVC_BOT_LOGINS", () => {
  it("unset is config_invalid naming the variable, not github-actions[bot]", () => {
    for (const unset of ["", " , "]) {
      let thrown: unknown;
      try {
        stepEnv({ "bot-logins": unset }).botLogins();
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toMatchObject({
        code: "config_invalid",
        message: expect.stringContaining("SVC_BOT_LOGINS is not set"),
      });
    }
    expect(stepEnv({ "bot-logins": "svc-portal[bot], other[bot]" }).botLogins()).toEqual([
      "svc-portal[bot]",
      "other[bot]",
    ]);
  });

  it("publish.yml passes the repository variable as it is, in every step that reads status comments, and no action defaults it", () => {
    const { doc, errors } = readWorkflow("publish.yml");
    expect(errors).toEqual([]);
    const withBotLogins = Object.values(
      doc.jobs as Record<string, { steps: Array<{ with?: Record<string, string> }> }>,
    )
      .flatMap((job) => job.steps)
      .filter((step) => step.with && "bot-logins" in step.with)
      .map((step) => step.with!["bot-logins"]);
    const variable = ["$", "{{ vars.SVC_BOT_LOGINS }}"].join("");
    expect(withBotLogins).toEqual([variable, variable]);
    for (const action of ["publish", "report"]) {
      const inputs = parse(readFileSync(join(REPO_ROOT, "actions", action, "action.yml"), "utf8")).inputs;
      expect(inputs["bot-logins"], action).not.toHaveProperty("default");
    }
  });

  it("the publish step fails with config_invalid naming the variable before it reads or writes anything", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "svc-bot-identity-"));
    for (const mode of ["publish", "receipts"]) {
      const run = await runAction("publish", {
        workspace,
        eventName: "schedule",
        event: { schedule: "*/30 * * * *" },
        env: {
          GITHUB_REPOSITORY: "svc-portal/mods",
          GITHUB_REF: "refs/heads/main",
          GITHUB_API_URL: "http://127.0.0.1:9",
        },
        inputs: { "github-token": "ghs_test", mode, "receipts-path": join(workspace, "receipts.json") },
      });
      expect(run.code, mode).toBe(1);
      expect(run.stdout, mode).toContain(
        "::error::config_invalid: SVC_BOT_LOGINS is not set (input bot-logins)",
      );
    }
  });
});
