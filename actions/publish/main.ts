import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import * as core from "@actions/core";
import { context } from "@actions/github";
import { Octokit } from "@octokit/rest";
import { handlePublishReceipt } from "../../src/bot/handle.ts";
import { runnerValidator } from "../../src/catalog/validator.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { verifyCatalog } from "../../src/github/catalog-push.ts";
import { mintInstallationToken } from "../../src/github/installation-token.ts";
import { type PublishRunEntry, publishSummary, runPublish } from "../../src/pipeline/publish-action.ts";
import { pendingSidecars } from "../../src/pipeline/publish-reconcile.ts";
import { isVisibilityEntry, postVisibilityReceipt } from "../../src/pipeline/publish-visibility.ts";
import { githubReleaseArtifactStore } from "../../src/github/release-artifact-store.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";

async function postReceipts(reader: Octokit, receiptsPath: string, botLogins: string[]): Promise<void> {
  const entries = JSON.parse(readFileSync(receiptsPath, "utf8")) as PublishRunEntry[];
  for (const m of entries)
    if (isVisibilityEntry(m)) await postVisibilityReceipt(reader, context.repo, m);
    else if (m.pullRequest !== null)
      await handlePublishReceipt(reader, context.repo, m.pullRequest, m.receipt, { botLogins });
}

// Octokit logs every failed request; the expected 404s (no release for this version yet) are noise.
const log = { debug: core.debug, info: core.debug, warn: core.warning, error: core.debug };

async function run(): Promise<void> {
  const baseUrl = context.apiUrl;
  const reader = new Octokit({ auth: core.getInput("github-token", { required: true }), baseUrl, log });
  const botLogins = (core.getInput("bot-logins") || "github-actions[bot]").split(",").map((s) => s.trim());
  const receiptsPath = core.getInput("receipts-path") || "publish-receipts.json";
  const mode = core.getInput("mode") || "publish";
  if (mode === "receipts") return postReceipts(reader, receiptsPath, botLogins);
  const root = process.env.GITHUB_WORKSPACE ?? process.cwd();
  if (mode === "pending") {
    const pending = pendingSidecars(root, join(root, "records"));
    core.info(
      `${pending.length} sidecar(s) without a release record: ${pending.map((p) => p.path).join(", ")}`,
    );
    return core.setOutput("pending", String(pending.length > 0));
  }
  if (mode !== "publish") throw new Error(`mode must be publish, pending or receipts, not ${mode}`);

  const repository = `${context.repo.owner}/${context.repo.repo}`;
  const config = loadPortalConfig(join(root, "portal.config.json"));
  const database = core.getInput("clamscan-db");
  const scanner =
    core.getInput("scanner") === "none"
      ? null
      : createClamscanScanner("clamscan", database ? { database } : {});
  const siteDir = join(root, "site");
  const result = await runPublish({
    eventName: context.eventName,
    event: context.payload,
    ref: context.ref,
    sha: context.sha,
    repo: context.repo,
    branch: config.portal.defaultBranch ?? "main",
    publisher: (writer) => ({
      root,
      recordsDir: join(root, "records"),
      siteDir,
      config,
      store: githubReleaseArtifactStore({ octokit: writer, repository, downloadBaseUrl: context.serverUrl }),
      validate: runnerValidator({ siteDir, scanner }),
    }),
    botLogins,
    reader,
    connect: async () => {
      const minted = await mintInstallationToken({
        appId: core.getInput("app-id", { required: true }),
        privateKey: core.getInput("app-private-key", { required: true }),
        repository,
        apiUrl: baseUrl,
      });
      core.setSecret(minted.token);
      return { writer: new Octokit({ auth: minted.token, baseUrl, log }), pushToken: minted.token };
    },
    verify: () => verifyCatalog(root),
    log: (line) => core.info(line),
  });
  writeFileSync(receiptsPath, `${JSON.stringify(result.receipts, null, 2)}\n`);
  await core.summary.addRaw(publishSummary(result)).write();
  for (const e of result.entries.filter((e) => !e.receipt.ok))
    core.warning(`${e.path}: ${e.receipt.error?.code}: ${e.receipt.error?.message}`);
  const published = result.entries.filter((e) => "outcome" in e && e.outcome === "published");
  core.setOutput("published", String(published.length));
  const applied = result.entries.find((e) => isVisibilityEntry(e) && e.receipt.ok);
  core.setOutput("visibility", applied && isVisibilityEntry(applied) ? applied.visibility : "");
  core.setOutput("commit", result.push.commit ?? "");
  core.setOutput("deploy", String(result.deploy));
  core.setOutput("receipts-path", receiptsPath);
}

run().catch((error: unknown) => {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  core.setFailed(typeof code === "string" ? `${code}: ${message}` : message);
});
