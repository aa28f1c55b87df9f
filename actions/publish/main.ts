import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as core from "@actions/core";
import { Octokit } from "@octokit/rest";
import { handlePublishReceipt } from "../../src/bot/handle.ts";
import { filesystemArtifactStore } from "../../src/catalog/artifact-store.ts";
import type { PublisherOptions } from "../../src/catalog/publisher.ts";
import { runnerValidator } from "../../src/catalog/validator.ts";
import { loadPortalConfig } from "../../src/config/portal-config.ts";
import { splitRepository } from "../../src/github/api.ts";
import { type MergedSubmission, publishMergedSubmissions } from "../../src/github/publish-merged.ts";
import {
  applyVisibility,
  isVisibilityEntry,
  parseVisibilityInputs,
  postVisibilityReceipt,
  type VisibilityEntry,
  VisibilityRefusal,
} from "../../src/github/publish-visibility.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";

type ReceiptEntry = MergedSubmission | VisibilityEntry;

function publisherOptions(root: string): PublisherOptions {
  const config = loadPortalConfig(join(root, "portal.config.json"));
  const siteDir = join(root, "site");
  const database = core.getInput("clamscan-db");
  const scanner =
    core.getInput("scanner") === "none"
      ? null
      : createClamscanScanner("clamscan", database ? { database } : {});
  return {
    root,
    recordsDir: join(root, "records"),
    siteDir,
    config,
    store: filesystemArtifactStore({ root, siteDir, baseUrl: config.baseUrl }),
    validate: runnerValidator({ siteDir, scanner }),
  };
}

async function run(): Promise<void> {
  const api = new Octokit({
    auth: core.getInput("github-token", { required: true }),
    baseUrl: process.env.GITHUB_API_URL,
  });
  const repo = splitRepository(process.env.GITHUB_REPOSITORY ?? "");
  const botLogins = (core.getInput("bot-logins") || "github-actions[bot]").split(",").map((s) => s.trim());
  const receiptsPath = core.getInput("receipts-path") || "publish-receipts.json";
  if (core.getInput("mode") === "receipts") {
    const entries = JSON.parse(readFileSync(receiptsPath, "utf8")) as ReceiptEntry[];
    for (const m of entries)
      if (isVisibilityEntry(m)) await postVisibilityReceipt(api, repo, m);
      else if (m.pullRequest !== null)
        await handlePublishReceipt(api, repo, m.pullRequest, m.receipt, { botLogins });
    return;
  }
  const event = JSON.parse(readFileSync(process.env.GITHUB_EVENT_PATH ?? "", "utf8"));
  const root = process.env.GITHUB_WORKSPACE ?? process.cwd();
  let entries: ReceiptEntry[];
  let message: string;
  if (process.env.GITHUB_EVENT_NAME === "workflow_dispatch") {
    // The bot dispatches hide/unhide; applyVisibility refuses any dispatch its pull request does not back.
    const request = parseVisibilityInputs(event.inputs);
    entries = [await applyVisibility(api, { repo, request, botLogins, publisher: publisherOptions(root) })];
    message = `${request.action === "hide" ? "Hide" : "Unhide"} ${request.modId}@${request.version} (#${request.pullRequest})`;
  } else {
    const publisher = publisherOptions(root);
    entries = await publishMergedSubmissions(api, {
      repo,
      before: event.before,
      after: event.after,
      botLogins,
      publisher,
    });
    message = "Publish merged submissions";
  }
  writeFileSync(receiptsPath, `${JSON.stringify(entries, null, 2)}\n`);
  const rows = entries.map((m) => [
    m.path,
    isVisibilityEntry(m) ? m.visibility : "publish",
    m.receipt.ok ? (isVisibilityEntry(m) ? `${m.status}` : "published") : `failed: ${m.receipt.error?.code}`,
    m.receipt.ok ? (m.receipt.artifactUrl ?? m.receipt.detailUrl ?? "") : "",
  ]);
  await core.summary
    .addHeading("svc publish")
    .addTable([
      ["sidecar", "action", "result", "artifact or page"].map((data) => ({ data, header: true })),
      ...rows,
    ])
    .write();
  for (const m of entries.filter((e) => !e.receipt.ok))
    core.warning(`${m.path}: ${m.receipt.error?.code}: ${m.receipt.error?.message}`);
  const applied = entries.filter((m) => m.receipt.ok);
  core.setOutput("published", String(applied.filter((m) => !isVisibilityEntry(m)).length));
  core.setOutput("visibility", applied.find(isVisibilityEntry)?.visibility ?? "");
  core.setOutput("commit-message", message);
  core.setOutput("receipts-path", receiptsPath);
}

run().catch((error: unknown) =>
  core.setFailed(
    error instanceof VisibilityRefusal
      ? `${error.code}: ${error.message}`
      : error instanceof Error
        ? error.message
        : String(error),
  ),
);
