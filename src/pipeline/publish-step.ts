/**
 * The publish action's step: publish (reconcile publications and hide/unhide decisions), pending,
 * receipts, and signatures (the scheduled refresh of the cached ClamAV signatures).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { handlePublishReceipt } from "../bot/handle.ts";
import { siteMaterializer } from "../catalog/site-build.ts";
import { projectPaths } from "../catalog/site.ts";
import { runnerValidator } from "../catalog/validator.ts";
import { loadPortalConfig } from "../contracts/portal-config.ts";
import { verifyCatalog } from "../github/catalog-push.ts";
import { RECEIPT_TOKEN_PERMISSIONS } from "../github/installation-token.ts";
import { githubReleaseArtifactStore, withdrawReleaseArtifact } from "../github/release-artifact-store.ts";
import { createClamscanScanner } from "../validation/antivirus/clamscan.ts";
import { type ActionOutcome, outcome, type StepEnv } from "./action-step.ts";
import { type PublishRunEntry, publishSummary, runPublish } from "./publish-action.ts";
import { pendingSidecars, type ScannerProblem } from "./publish-reconcile.ts";
import { DEFAULT_REFUSAL_POLICY } from "./publish-refusals.ts";
import { clamscanMissing, refreshSignatures, signatureStatus } from "./publish-signatures.ts";
import { isVisibilityEntry, postVisibilityReceipt } from "./publish-visibility.ts";
import { publishedSidecars } from "./published-sidecars.ts";

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

/** A positive number input, or the fallback when it is empty; anything else is a configuration error. */
function numberInput(env: StepEnv, name: string, fallback: number | null): number | null {
  const text = env.input(name).trim();
  if (text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0)
    throw new Error(`${name} must be a positive number, not ${text}`);
  return value;
}

/** mode signatures: one freshclam run over the cached folder; a failure is a warning, never a failed job. */
async function refreshStep(env: StepEnv): Promise<ActionOutcome> {
  const dir = env.required("clamscan-db");
  const result = await refreshSignatures({
    dir,
    refreshHours: numberInput(env, "signature-refresh-hours", 2)!,
    ...(env.input("freshclam") ? { freshclam: env.input("freshclam") } : {}),
    ...(env.input("signature-mirror") ? { mirror: env.input("signature-mirror") } : {}),
  });
  env.io.info(result.message);
  const status = result.status;
  return outcome({
    outputs: { refreshed: String(result.refreshed), "confirmed-at": status.confirmedAt ?? "" },
    warnings:
      result.refreshed || result.skipped
        ? []
        : [
            `ClamAV signatures not refreshed; publication keeps using the cached ones while they are confirmed within the publish job's bound (${status.confirmedAt ? `last confirmed ${status.confirmedAt}` : "none cached yet"})`,
          ],
  });
}

export async function publishStep(env: StepEnv): Promise<ActionOutcome> {
  const { context, io } = env;
  const reader = env.octokit(env.required("github-token"));
  const receiptsPath = io.input("receipts-path") || "publish-receipts.json";
  const mode = io.input("mode") || "publish";
  if (mode === "signatures") return refreshStep(env);
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
  if (mode !== "publish")
    throw new Error(`mode must be publish, pending, receipts or signatures, not ${mode}`);

  const botLogins = env.botLogins();
  const repository = env.repository;
  const config = loadPortalConfig(join(root, "portal.config.json"));
  const database = io.input("clamscan-db");
  const scanner =
    io.input("scanner") === "none" ? null : createClamscanScanner("clamscan", database ? { database } : {});
  const maxAgeHours = numberInput(env, "signatures-max-age-hours", null);
  const backoffMinutes = numberInput(env, "refusal-backoff-minutes", null);
  const scannerCheck = async (): Promise<ScannerProblem | null> => {
    const problem = (reason: string | null, notInstalled = false) =>
      reason === null ? null : { reason, notInstalled };
    if (scanner === null) return problem("the publish step runs without a scanner (scanner: none)");
    const missing = await clamscanMissing("clamscan");
    if (missing)
      return problem(`${missing} (ClamAV is installed only when the pending step finds work)`, true);
    if (maxAgeHours === null) return null;
    if (!database) return problem("signatures-max-age-hours needs clamscan-db, the cached signature folder");
    return problem(signatureStatus(database, maxAgeHours).reason);
  };
  const siteDir = join(root, "site");
  const materialize = siteMaterializer(projectPaths(root), config, {
    exact: io.input("site-exact") === "true",
    log: io.info,
  });
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
    withdraw: (writer) => (key, recordedUrl) =>
      withdrawReleaseArtifact(
        { octokit: writer, repository, downloadBaseUrl: context.serverUrl },
        key,
        recordedUrl,
      ),
    scannerCheck,
    ...(backoffMinutes !== null
      ? { refusalPolicy: { ...DEFAULT_REFUSAL_POLICY, backoffMs: backoffMinutes * 60_000 } }
      : {}),
    connect: async () => {
      const token = await env.mintAppToken();
      return { writer: env.octokit(token), pushToken: token, statusKey: env.statusKey() };
    },
    verify: () => verifyCatalog(root),
    // site/ is a build output: the workflow restores the previous deployment (or none) before this
    // step; it is kept unexamined when site-exact says the entry was saved from exactly this
    // checkout's inputs, built over otherwise.
    materialize: async () => (await materialize()).rebuilt,
    retire: () => publishedSidecars(root, join(root, "records")),
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
      "site-rebuilt": String(result.siteRebuilt),
      "receipts-path": receiptsPath,
    },
  });
}
