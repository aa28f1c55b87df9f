import * as core from "@actions/core";
import { Octokit } from "@octokit/rest";
import { projectPaths } from "../../src/catalog/site.ts";
import { loadPortalConfig } from "../../src/config/portal-config.ts";
import { octokitReleaseReader } from "../../src/github/release-reader.ts";
import { parseSyncTargets, runSyncTargets, syncSummary } from "../../src/github/sync-action.ts";

async function run(): Promise<void> {
  const targets = parseSyncTargets(core.getInput("targets") || "releases");
  const paths = projectPaths(process.env.GITHUB_WORKSPACE ?? process.cwd());
  const token = core.getInput("github-token");
  const octokit = new Octokit({ ...(token ? { auth: token } : {}), baseUrl: process.env.GITHUB_API_URL });
  const outcomes = await runSyncTargets(targets, {
    root: paths.root,
    recordsDir: paths.recordsDir,
    siteDir: paths.siteDir,
    config: loadPortalConfig(paths.configPath),
    reader: octokitReleaseReader(octokit),
    // As for `svc sync`: where https://github.com downloads are fetched from (recorded URLs never change).
    ...(process.env.SVC_GITHUB_DOWNLOAD_URL
      ? { fetchDownloadBase: process.env.SVC_GITHUB_DOWNLOAD_URL }
      : {}),
  });
  await core.summary.addRaw(syncSummary(outcomes)).write();
  const written = outcomes.flatMap((o) => (o.ok ? o.written : []));
  core.setOutput("changed", String(written.length > 0));
  core.setOutput("written", String(written.length));
  const failed = outcomes.filter((o) => !o.ok);
  core.setOutput("failed", failed.map((o) => o.target).join(","));
  if (failed.length > 0)
    core.setFailed(failed.map((o) => `sync ${o.target}: ${o.code}: ${o.message}`).join("\n"));
}

run().catch((error: unknown) => core.setFailed(error instanceof Error ? error.message : String(error)));
