/** The sync action's step: the manager/framework releases and game builds, pushed when asked. */
import { siteMaterializer } from "../catalog/site-build.ts";
import { projectPaths } from "../catalog/site.ts";
import { frameworkTag, type SyncOptions } from "../catalog/sync.ts";
import { loadPortalConfig } from "../contracts/portal-config.ts";
import { verifyCatalog } from "../github/catalog-push.ts";
import { githubReleaseArtifactStore } from "../github/release-artifact-store.ts";
import { octokitReleaseReader } from "../github/release-reader.ts";
import { type ActionOutcome, outcome, type StepEnv } from "./action-step.ts";
import {
  parseSyncTargets,
  runSyncTargets,
  type SyncOutcome,
  syncAndPush,
  syncSummary,
} from "./sync-action.ts";

export async function syncStep(env: StepEnv): Promise<ActionOutcome> {
  const { context, io } = env;
  const targets = parseSyncTargets(io.input("targets") || "releases");
  const paths = projectPaths(context.workspace);
  const config = loadPortalConfig(paths.configPath);
  const options: SyncOptions = {
    root: paths.root,
    recordsDir: paths.recordsDir,
    siteDir: paths.siteDir,
    config,
    reader: octokitReleaseReader(env.octokit(io.input("github-token") || null)),
    // As for `svc sync`: where https://github.com downloads are fetched from (recorded URLs never change).
    ...(context.downloadBase ? { fetchDownloadBase: context.downloadBase } : {}),
  };
  const outputs: Record<string, string> = {};
  let outcomes: SyncOutcome[];
  let changed: boolean;
  if (io.input("push") === "true") {
    const token = await env.mintAppToken();
    // On GitHub the framework ZIP is a release of the portal, like every mod package: none enters git.
    options.frameworkStore = githubReleaseArtifactStore({
      octokit: env.octokit(token),
      repository: env.repository,
      tagFor: frameworkTag,
      downloadBaseUrl: context.serverUrl,
    });
    const materialize = siteMaterializer(paths, config, {
      exact: io.input("site-exact") === "true",
      log: io.info,
    });
    const result = await syncAndPush(targets, options, {
      cwd: paths.root,
      branch: config.portal.defaultBranch ?? "main",
      token: token,
      verify: () => verifyCatalog(paths.root),
      // site/ is a build output: the workflow restores the previous deployment, or none, and
      // site-exact says whether that entry was saved from exactly this checkout's inputs.
      materialize: async () => {
        await materialize();
      },
      log: io.info,
    });
    outcomes = result.outcomes;
    changed = result.push.commit !== null;
    outputs.commit = result.push.commit ?? "";
  } else {
    outcomes = await runSyncTargets(targets, options);
    changed = outcomes.some((o) => o.ok && o.written.length > 0);
  }
  const failed = outcomes.filter((o) => !o.ok);
  return outcome({
    summary: syncSummary(outcomes),
    outputs: {
      ...outputs,
      changed: String(changed),
      written: String(outcomes.flatMap((o) => (o.ok ? o.written : [])).length),
      failed: failed.map((o) => o.target).join(","),
    },
    failure:
      failed.length > 0 ? failed.map((o) => `sync ${o.target}: ${o.code}: ${o.message}`).join("\n") : null,
  });
}
