import { octokitFor } from "../github/octokit.ts";
import { syncGameBuilds, syncReleases, type SyncOptions } from "../catalog/sync.ts";
import { octokitReleaseReader } from "../github/release-reader.ts";
import { isSvcError } from "../errors.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { portalSigning } from "./online-keys.ts";
import { openProject, PROJECT_OPTIONS } from "./project.ts";
import { parseArgs } from "node:util";

const HELP = `usage: svc sync releases|game-builds [--root DIR] [--json]

  releases     read the latest manager and framework releases; download the manager ZIP through
               https://github.com/{repo}/releases/latest/download/{asset} and verify its sha256 against
               the digest the release publishes (GitHub's asset digest, else a {asset}.sha256 asset);
               record records/manager.json; publish the framework ZIP under
               site/downloads/framework/{version}/ and record records/framework.json; rebuild the site
  game-builds  refresh records/game-builds.json from the game-builds.json asset of the latest framework
               release; game-builds/latest.json and catalog supportedGameBuilds follow

Environment: GITHUB_TOKEN (optional; raises rate limits), SVC_GITHUB_API_URL (default
https://api.github.com), SVC_GITHUB_DOWNLOAD_URL (where github.com downloads are fetched from;
default https://github.com).
`;

export async function run(args: string[], io: CliIo): Promise<number> {
  try {
    return await runSync(args, io);
  } catch (error) {
    if (!isSvcError(error)) throw error;
    io.stderr.write(
      `svc sync: ${error.code}: ${error.message}\nnothing was recorded; every published file is unchanged\n`,
    );
    return EXIT_FAILED;
  }
}

async function runSync(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...PROJECT_OPTIONS, json: { type: "boolean" } },
    allowPositionals: true,
    strict: true,
  });
  const what = positionals[0];
  if (values.help || !what) {
    io.stdout.write(HELP);
    return values.help ? EXIT_OK : EXIT_USAGE;
  }
  if (positionals.length > 1 || (what !== "releases" && what !== "game-builds")) {
    io.stderr.write(`svc sync: unknown target '${positionals.join(" ")}'\n\n${HELP}`);
    return EXIT_USAGE;
  }
  const { paths, config } = openProject(values, io);
  const octokit = octokitFor(io.env.GITHUB_TOKEN || null, {
    baseUrl: io.env.SVC_GITHUB_API_URL || "https://api.github.com",
    log: { debug: () => {}, warn: (line) => io.stderr.write(`svc sync: ${line}\n`) },
  });
  const options: SyncOptions = {
    root: paths.root,
    recordsDir: paths.recordsDir,
    siteDir: paths.siteDir,
    config,
    // A sync rewrites documents like a publication: signed with the portal's keys, refused without them on a signed site.
    signing: portalSigning(io),
    reader: octokitReleaseReader(octokit),
    ...(io.env.SVC_GITHUB_DOWNLOAD_URL ? { fetchDownloadBase: io.env.SVC_GITHUB_DOWNLOAD_URL } : {}),
  };
  if (what === "releases") {
    const result = await syncReleases(options);
    if (values.json) io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    else
      io.stdout.write(
        [
          `svc sync releases:`,
          `  manager    ${result.manager.version} ${result.manager.assetName} sha256 ${result.manager.sha256} (${result.manager.sizeBytes} bytes)`,
          `             ${result.manager.permalinkUrl}`,
          `  framework  ${result.framework.version} ${result.framework.fileName} sha256 ${result.framework.sha256} (${result.framework.sizeBytes} bytes)`,
          `             ${result.framework.url}`,
          `  ${result.written.length} file(s) written`,
          "",
        ].join("\n"),
      );
    return EXIT_OK;
  }
  const result = await syncGameBuilds(options);
  if (values.json) io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else
    io.stdout.write(
      `svc sync game-builds: ${result.builds.length} build(s), supported: ${result.supportedGameBuilds.join(", ") || "none"}; ${result.written.length} file(s) written\n`,
    );
  return EXIT_OK;
}
