import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { checkLocalArtifacts } from "../catalog/artifact-check.ts";
import { withPublishLock } from "../catalog/atomic-files.ts";
import { checkContractRules } from "../catalog/contract-rules.ts";
import { listGeneratedFiles, loadSiteInputs, renderSite } from "../catalog/site.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK } from "./io.ts";
import { openProject, PROJECT_OPTIONS, parseFlags, recoveredLine } from "./project.ts";

const HELP = `usage: svc check [--root DIR] [--config FILE] [--records DIR] [--site DIR] [--hashes]

Fails (exit 1) when a committed file under site/api/v1 differs from what \`svc build\` would write
(drift, hand edits, missing or stale files), when a contract rule fails (readiness, liveBackend,
installable mods only, no placeholder URLs or zero hashes, detail and versions equal to the catalog),
or when an artifact a record places under the site is missing or not its recorded size (or a file
under site/downloads/mods is named by no record). Runs under the publish lock, after finishing any
publication a crash interrupted.

  --hashes   also recompute the sha256 of every portal-hosted artifact (reads every byte)
`;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(args, { ...PROJECT_OPTIONS, hashes: { type: "boolean" } });
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  const { paths, config } = openProject(values, io);
  const { problems, files, artifacts } = await withPublishLock(
    paths,
    async () => {
      const inputs = loadSiteInputs(config, paths.recordsDir);
      const expected = renderSite(inputs, paths.siteDir);
      const problems: string[] = [];
      const committed = new Map<string, string>();
      for (const [path, text] of expected) {
        const full = join(paths.siteDir, path);
        if (!existsSync(full)) {
          problems.push(`missing: site/${path} (run svc build)`);
          continue;
        }
        const actual = readFileSync(full, "utf8");
        committed.set(path, actual);
        if (actual !== text)
          problems.push(`drift: site/${path} differs from what svc build writes (hand edit or stale build)`);
      }
      for (const path of listGeneratedFiles(paths.siteDir)) {
        if (!expected.has(path)) problems.push(`stale: site/${path} is not produced by svc build`);
      }
      for (const failure of checkContractRules(committed.size === expected.size ? committed : expected)) {
        problems.push(`${failure.rule}: ${failure.message}`);
      }
      const artifacts = await checkLocalArtifacts(inputs, paths.siteDir, { hashes: values.hashes === true });
      problems.push(...artifacts.problems);
      return { problems, files: expected.size, artifacts: artifacts.checked };
    },
    { onRecovered: (r) => io.stderr.write(recoveredLine("check", r)) },
  );
  if (problems.length > 0) {
    io.stderr.write(
      `svc check: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join("\n")}\n`,
    );
    return EXIT_FAILED;
  }
  io.stdout.write(
    `svc check: ${files} files match svc build; contract rules 1-6 hold; ${artifacts} portal-hosted artifact(s) present at their recorded size${values.hashes ? " and sha256" : ""}\n`,
  );
  return EXIT_OK;
}
