import { buildSite, materializeSite } from "../catalog/site-build.ts";
import { type CliIo, EXIT_OK } from "./io.ts";
import { siteSigningFromEnv } from "./keys.ts";
import { openProject, PROJECT_OPTIONS, parseFlags, recoveredLine } from "./project.ts";

const HELP = `usage: svc build [--root DIR] [--config FILE] [--records DIR] [--site DIR] [--if-drifted [--site-exact]]

Regenerates every file under site/api/v1 and the pages from portal.config.json and records/, copies
the TUF root metadata (records/tuf/N.root.json) into site/tuf/, validates each document against its
schema, and writes them as one transaction (all files or none) under the publish lock, after
finishing any publication a crash interrupted.
A rebuild with no input change changes no byte. site/ is a build output: on GitHub it is deployed
to Pages and never committed (docs/github.md, section 2).

  --if-drifted   bring the site on disk (a previous deployment the workflow restored) in line with
                 the records: svc build over it (cheaper than svc check over it: unchanged
                 documents keep their bytes); with SVC_TUF_ONLINE_KEYS, svc check first and a
                 matching site is kept (a build re-signs everything)
  --site-exact   with --if-drifted: the site on disk was restored from a cache entry saved from
                 exactly these inputs (records, config, schemas, code): kept with no check
`;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(args, {
    ...PROJECT_OPTIONS,
    "if-drifted": { type: "boolean" },
    "site-exact": { type: "boolean" },
  });
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  const { paths, config } = openProject(values, io);
  const signing = siteSigningFromEnv(io);
  if (values["if-drifted"]) {
    await materializeSite(paths, config, {
      signing,
      exact: values["site-exact"] === true,
      log: (line) => io.stdout.write(`svc build: ${line.replace(/^svc build: /, "")}\n`),
    });
    return EXIT_OK;
  }
  // Under the publish lock, after recovery: a build never interleaves with a publication, sync or
  // smoke record, and never renders from a transaction a crash left half-applied.
  const result = await buildSite(paths, config, {
    signing,
    onRecovered: (r) => io.stderr.write(recoveredLine("build", r)),
  });
  if (result.owed === "signed")
    io.stderr.write("svc build: signed what an interrupted publication left unsigned\n");
  if (result.owed === "owed")
    io.stderr.write(
      "svc build: the signed metadata is behind the catalog (an interrupted signing); set SVC_TUF_ONLINE_KEYS so it is signed\n",
    );
  io.stdout.write(
    `svc build: ${result.files} files, ${result.written.length} written, ${result.deleted.length} removed, ${result.unchanged} unchanged\n`,
  );
  for (const path of result.written) io.stdout.write(`  wrote   site/${path}\n`);
  for (const path of result.deleted) io.stdout.write(`  removed site/${path}\n`);
  return EXIT_OK;
}
