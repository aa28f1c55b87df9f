import { parseArgs } from "node:util";
import { migrateRecords } from "../catalog/records-migrate.ts";
import { schemaRegistry } from "../contracts/schemas.ts";
import { type CliIo, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { openProject, PROJECT_OPTIONS } from "./project.ts";

const HELP = `usage: svc records migrate [--root DIR] [--config FILE] [--records DIR] [--site DIR] [--json]

  migrate   rewrite records/ from the layout before sharding into the sharded layout, in one
            journaled commit under the publish lock, then commit the result with git:
              records/mods/{modId}/{version}.json    -> records/mods/{shard}/{modId}.json
              records/owners/{modId}.json            -> records/owners/{shard}.json
              records/changes/{page}.json            -> records/changes/{page / 1000}/{page}.json
              records/publication/{modId}/{v}.json   -> records/publication/{shard}/{modId}/{v}.json
            {shard} is the first two hex characters of sha256(modId); find a mod's file with
            git ls-files 'records/mods/*/<modId>.json'. Every old record is checked first; nothing
            is written when one is broken. A second run says there is nothing to do. The site is
            not touched (the records say the same after the migration).

Every other command refuses the old layout with records_layout_outdated until this has run.
`;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...PROJECT_OPTIONS, json: { type: "boolean" } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1 || positionals[0] !== "migrate") {
    io.stderr.write(
      `svc records: ${positionals.length === 0 ? "missing the subcommand" : `unknown subcommand '${positionals.join(" ")}'`}\n\n${HELP}`,
    );
    return EXIT_USAGE;
  }
  const { paths, config } = openProject(values, io);
  const result = await migrateRecords({
    root: paths.root,
    recordsDir: paths.recordsDir,
    siteDir: paths.siteDir,
    registry: schemaRegistry(config.baseUrl),
  });
  if (values.json) {
    io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return EXIT_OK;
  }
  const m = result.migration;
  if (result.written.length === 0 && result.deleted.length === 0) {
    io.stdout.write("svc records migrate: nothing to do: records/ is already in the sharded layout\n");
    return EXIT_OK;
  }
  io.stdout.write(
    [
      `svc records migrate: ${m.releases} release record(s) of ${m.mods} mod(s), ${m.owners} ownership record(s), ${m.changesPages} changes page(s), ${m.ledgerEntries} ledger entr(ies) moved into the sharded layout`,
      `  ${result.written.length} file(s) written, ${result.deleted.length} removed; commit records/ with git (git add -A records && git commit)`,
      "",
    ].join("\n"),
  );
  return EXIT_OK;
}
