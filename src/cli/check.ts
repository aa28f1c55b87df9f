import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { checkContractRules } from "../catalog/contract-rules.ts";
import { listGeneratedFiles, loadSiteInputs, renderSite } from "../catalog/site.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK } from "./io.ts";
import { openProject, PROJECT_OPTIONS, parseFlags } from "./project.ts";

const HELP = `usage: svc check [--root DIR] [--config FILE] [--records DIR] [--site DIR]

Fails (exit 1) when a committed file under site/api/v1 differs from what \`svc build\` would write
(drift, hand edits, missing or stale files) or when a contract rule fails (readiness, liveBackend,
installable mods only, no placeholder URLs or zero hashes, detail and versions equal to the catalog).
`;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(args, PROJECT_OPTIONS);
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  const { paths, config } = openProject(values, io);
  const expected = renderSite(loadSiteInputs(config, paths.recordsDir), paths.siteDir);
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
  if (problems.length > 0) {
    io.stderr.write(
      `svc check: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join("\n")}\n`,
    );
    return EXIT_FAILED;
  }
  io.stdout.write(`svc check: ${expected.size} files match svc build; contract rules 1-6 hold\n`);
  return EXIT_OK;
}
