import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as core from "@actions/core";
import { Octokit } from "@octokit/rest";
import { handlePublishReceipt } from "../../src/bot/handle.ts";
import { filesystemArtifactStore } from "../../src/catalog/artifact-store.ts";
import { runnerValidator } from "../../src/catalog/validator.ts";
import { loadPortalConfig } from "../../src/config/portal-config.ts";
import { splitRepository } from "../../src/github/api.ts";
import { type MergedSubmission, publishMergedSubmissions } from "../../src/github/publish-merged.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";

async function run(): Promise<void> {
  const api = new Octokit({
    auth: core.getInput("github-token", { required: true }),
    baseUrl: process.env.GITHUB_API_URL,
  });
  const repo = splitRepository(process.env.GITHUB_REPOSITORY ?? "");
  const botLogins = (core.getInput("bot-logins") || "github-actions[bot]").split(",").map((s) => s.trim());
  const receiptsPath = core.getInput("receipts-path") || "publish-receipts.json";
  if (core.getInput("mode") === "receipts") {
    const merged = JSON.parse(readFileSync(receiptsPath, "utf8")) as MergedSubmission[];
    for (const m of merged)
      if (m.pullRequest !== null)
        await handlePublishReceipt(api, repo, m.pullRequest, m.receipt, { botLogins });
    return;
  }
  const event = JSON.parse(readFileSync(process.env.GITHUB_EVENT_PATH ?? "", "utf8"));
  const root = process.env.GITHUB_WORKSPACE ?? process.cwd();
  const config = loadPortalConfig(join(root, "portal.config.json"));
  const siteDir = join(root, "site");
  const scanner = core.getInput("scanner") === "none" ? null : createClamscanScanner();
  const merged = await publishMergedSubmissions(api, {
    repo,
    before: event.before,
    after: event.after,
    botLogins,
    publisher: {
      root,
      recordsDir: join(root, "records"),
      siteDir,
      config,
      store: filesystemArtifactStore({ root, siteDir, baseUrl: config.baseUrl }),
      validate: runnerValidator({ siteDir, scanner }),
    },
  });
  writeFileSync(receiptsPath, `${JSON.stringify(merged, null, 2)}\n`);
  const table = merged.map((m) => [
    m.path,
    m.receipt.ok ? "published" : `failed: ${m.receipt.error?.code}`,
    m.receipt.artifactUrl ?? "",
  ]);
  await core.summary
    .addHeading("svc publish")
    .addTable([["sidecar", "result", "artifact"], ...table])
    .write();
  core.setOutput("published", String(merged.filter((m) => m.receipt.ok).length));
  core.setOutput("receipts-path", receiptsPath);
}

run().catch((error: unknown) => core.setFailed(error instanceof Error ? error.message : String(error)));
