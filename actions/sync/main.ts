import * as core from "@actions/core";
import { context } from "@actions/github";
import { Octokit } from "@octokit/rest";
import { projectPaths } from "../../src/catalog/site.ts";
import { frameworkTag, type SyncOptions } from "../../src/catalog/sync.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { verifyCatalog } from "../../src/github/catalog-push.ts";
import { mintInstallationToken } from "../../src/github/installation-token.ts";
import { githubReleaseArtifactStore } from "../../src/github/release-artifact-store.ts";
import { octokitReleaseReader } from "../../src/github/release-reader.ts";
import { parseSyncTargets, runSyncTargets, syncAndPush, syncSummary } from "../../src/pipeline/sync-action.ts";

// Octokit logs every failed request; the expected 404s (no framework release yet) are noise.
const log = { debug: core.debug, info: core.debug, warn: core.warning, error: core.debug };

async function run(): Promise<void> {
  const targets = parseSyncTargets(core.getInput("targets") || "releases");
  const paths = projectPaths(process.env.GITHUB_WORKSPACE ?? process.cwd());
  const config = loadPortalConfig(paths.configPath);
  const token = core.getInput("github-token");
  const octokit = new Octokit({ ...(token ? { auth: token } : {}), baseUrl: context.apiUrl });
  const options: SyncOptions = {
    root: paths.root,
    recordsDir: paths.recordsDir,
    siteDir: paths.siteDir,
    config,
    reader: octokitReleaseReader(octokit),
    // As for `svc sync`: where https://github.com downloads are fetched from (recorded URLs never change).
    ...(process.env.SVC_GITHUB_DOWNLOAD_URL
      ? { fetchDownloadBase: process.env.SVC_GITHUB_DOWNLOAD_URL }
      : {}),
  };
  let outcomes: Awaited<ReturnType<typeof runSyncTargets>>;
  let changed: boolean;
  if (core.getInput("push") === "true") {
    const repository = `${context.repo.owner}/${context.repo.repo}`;
    const minted = await mintInstallationToken({
      appId: core.getInput("app-id", { required: true }),
      privateKey: core.getInput("app-private-key", { required: true }),
      repository,
      apiUrl: context.apiUrl,
    });
    core.setSecret(minted.token);
    const writer = new Octokit({ auth: minted.token, baseUrl: context.apiUrl, log });
    // On GitHub the framework ZIP is a release of the portal, like every mod package: none enters git.
    options.frameworkStore = githubReleaseArtifactStore({
      octokit: writer,
      repository,
      tagFor: frameworkTag,
      downloadBaseUrl: context.serverUrl,
    });
    const result = await syncAndPush(targets, options, {
      cwd: paths.root,
      branch: config.portal.defaultBranch ?? "main",
      token: minted.token,
      verify: () => verifyCatalog(paths.root),
      log: (line) => core.info(line),
    });
    outcomes = result.outcomes;
    changed = result.push.commit !== null;
    core.setOutput("commit", result.push.commit ?? "");
  } else {
    outcomes = await runSyncTargets(targets, options);
    changed = outcomes.some((o) => o.ok && o.written.length > 0);
  }
  await core.summary.addRaw(syncSummary(outcomes)).write();
  core.setOutput("changed", String(changed));
  core.setOutput("written", String(outcomes.flatMap((o) => (o.ok ? o.written : [])).length));
  const failed = outcomes.filter((o) => !o.ok);
  core.setOutput("failed", failed.map((o) => o.target).join(","));
  if (failed.length > 0)
    core.setFailed(failed.map((o) => `sync ${o.target}: ${o.code}: ${o.message}`).join("\n"));
}

run().catch((error: unknown) => {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  core.setFailed(typeof code === "string" ? `${code}: ${message}` : message);
});
