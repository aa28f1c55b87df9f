/** The publish action's step: publish (reconcile or apply a dispatched hide/unhide), pending, receipts. */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { handlePublishReceipt } from "../bot/handle.ts";
import { runnerValidator } from "../catalog/validator.ts";
import { loadPortalConfig } from "../contracts/portal-config.ts";
import { verifyCatalog } from "../github/catalog-push.ts";
import { RECEIPT_TOKEN_PERMISSIONS } from "../github/installation-token.ts";
import { githubReleaseArtifactStore } from "../github/release-artifact-store.ts";
import { createClamscanScanner } from "../validation/antivirus/clamscan.ts";
import { type ActionOutcome, outcome, type StepEnv } from "./action-step.ts";
import { type PublishRunEntry, publishSummary, runPublish } from "./publish-action.ts";
import { pendingSidecars } from "./publish-reconcile.ts";
import { isVisibilityEntry, postVisibilityReceipt } from "./publish-visibility.ts";

/** Posts each receipt as the app (its token and its seal): the status comment is the app's to write. */
async function postReceipts(env: StepEnv, receiptsPath: string): Promise<void> {
  const botLogins = env.botLogins();
  const statusKey = env.statusKey();
  const writer = env.octokit(await env.mintAppToken(RECEIPT_TOKEN_PERMISSIONS));
  const repo = env.context.repo;
  const entries = JSON.parse(readFileSync(receiptsPath, "utf8")) as PublishRunEntry[];
  for (const m of entries)
    if (isVisibilityEntry(m)) await postVisibilityReceipt(writer, repo, m);
    else if (m.pullRequest !== null)
      await handlePublishReceipt(writer, repo, m.pullRequest, m.receipt, { botLogins, statusKey });
}

export async function publishStep(env: StepEnv): Promise<ActionOutcome> {
  const { context, io } = env;
  const reader = env.octokit(env.required("github-token"));
  const receiptsPath = io.input("receipts-path") || "publish-receipts.json";
  const mode = io.input("mode") || "publish";
  if (mode === "receipts") {
    await postReceipts(env, receiptsPath);
    return outcome({});
  }
  const root = context.workspace;
  if (mode === "pending") {
    const pending = pendingSidecars(root, join(root, "records"));
    io.info(
      `${pending.length} sidecar(s) without a release record: ${pending.map((p) => p.path).join(", ")}`,
    );
    return outcome({ outputs: { pending: String(pending.length > 0) } });
  }
  if (mode !== "publish") throw new Error(`mode must be publish, pending or receipts, not ${mode}`);

  const botLogins = env.botLogins();
  const repository = env.repository;
  const config = loadPortalConfig(join(root, "portal.config.json"));
  const database = io.input("clamscan-db");
  const scanner =
    io.input("scanner") === "none" ? null : createClamscanScanner("clamscan", database ? { database } : {});
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
      const token = await env.mintAppToken();
      return { writer: env.octokit(token), pushToken: token, statusKey: env.statusKey() };
    },
    verify: () => verifyCatalog(root),
    log: io.info,
  });
  writeFileSync(receiptsPath, `${JSON.stringify(result.receipts, null, 2)}\n`);
  const published = result.entries.filter((e) => "outcome" in e && e.outcome === "published");
  const applied = result.entries.find((e) => isVisibilityEntry(e) && e.receipt.ok);
  return outcome({
    summary: publishSummary(result),
    warnings: result.entries
      .filter((e) => !e.receipt.ok)
      .map((e) => `${e.path}: ${e.receipt.error?.code}: ${e.receipt.error?.message}`),
    outputs: {
      published: String(published.length),
      visibility: applied && isVisibilityEntry(applied) ? applied.visibility : "",
      commit: result.push.commit ?? "",
      deploy: String(result.deploy),
      "receipts-path": receiptsPath,
    },
  });
}
