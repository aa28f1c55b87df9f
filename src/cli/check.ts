import { checkSite } from "../catalog/site-check.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK } from "./io.ts";
import { portalSigning } from "./keys.ts";
import { openProject, PROJECT_OPTIONS, parseFlags, recoveredLine } from "./project.ts";

const HELP = `usage: svc check [--root DIR] [--config FILE] [--records DIR] [--site DIR] [--hashes]

Fails (exit 1) when a committed file under site/api/v1 differs from what \`svc build\` would write
(drift, hand edits, missing or stale files), when a contract rule fails (readiness, liveBackend,
installable mods only, no placeholder URLs or zero hashes, detail and versions equal to the catalog),
or when an artifact a record places under the site is missing or not its recorded size (or a file
under site/downloads/mods is named by no record), or when a signing a crash interrupted is still
owed. Runs under the publish lock, after finishing any publication a crash interrupted (with
SVC_TUF_ONLINE_KEYS set, its signing too).

  --hashes   also recompute the sha256 of every portal-hosted artifact (reads every byte)
`;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(args, { ...PROJECT_OPTIONS, hashes: { type: "boolean" } });
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  const { paths, config } = openProject(values, io);
  const { problems, files, artifacts } = await checkSite(paths, config, {
    hashes: values.hashes === true,
    onRecovered: (r) => io.stderr.write(recoveredLine("check", r)),
    signing: portalSigning(io),
  });
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
