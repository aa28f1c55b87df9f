import { withPublishLock } from "../catalog/atomic-files.ts";
import { clearOwedSigning, owingSignature, settleOwedSigning } from "../catalog/owed-signing.ts";
import { loadSiteInputs, renderSite, writeSite } from "../catalog/site.ts";
import { assertCanSign, signAfterCommit } from "../distribution/tuf-repository.ts";
import { type CliIo, EXIT_OK } from "./io.ts";
import { siteSigningFromEnv } from "./keys.ts";
import { openProject, PROJECT_OPTIONS, parseFlags, recoveredLine } from "./project.ts";

const HELP = `usage: svc build [--root DIR] [--config FILE] [--records DIR] [--site DIR]

Regenerates every file under site/api/v1 from portal.config.json and records/, validates each
against its schema, and writes them as one transaction (all files or none) under the publish lock,
after finishing any publication a crash interrupted.
A rebuild with no input change changes no byte.
`;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(args, PROJECT_OPTIONS);
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  const { paths, config } = openProject(values, io);
  // Under the publish lock, after recovery: a build never interleaves with a publication, sync or
  // smoke record, and never renders from a transaction a crash left half-applied.
  const signing = siteSigningFromEnv(io);
  const { files, result } = await withPublishLock(
    paths,
    () => {
      assertCanSign(paths.siteDir, signing);
      const owed = settleOwedSigning(paths, signing);
      if (owed === "signed")
        io.stderr.write("svc build: signed what an interrupted publication left unsigned\n");
      if (owed === "owed")
        io.stderr.write(
          "svc build: the signed metadata is behind the catalog (an interrupted signing); set SVC_TUF_ONLINE_KEYS so it is signed\n",
        );
      const files = renderSite(loadSiteInputs(config, paths.recordsDir), paths.siteDir);
      const result = writeSite(paths.siteDir, files, owingSignature(paths, signing));
      // A build is also the repair path: re-hash the whole site rather than trust the commit's list.
      signAfterCommit(paths.siteDir, signing, result, { full: true });
      if (signing) clearOwedSigning(paths);
      return { files, result };
    },
    { onRecovered: (r) => io.stderr.write(recoveredLine("build", r)) },
  );
  io.stdout.write(
    `svc build: ${files.size} files, ${result.written.length} written, ${result.deleted.length} removed, ${result.unchanged} unchanged\n`,
  );
  for (const path of result.written) io.stdout.write(`  wrote   site/${path}\n`);
  for (const path of result.deleted) io.stdout.write(`  removed site/${path}\n`);
  return EXIT_OK;
}
