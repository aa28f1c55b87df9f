/**
 * One publication in a fresh process, as `svc import` or a publish job runs it: the time from the
 * first call into the publisher to its return, first-call costs included (compiling the schemas,
 * cold code). Run by run.ts; prints the milliseconds.
 *
 *   node --import tsx bench/publish/publish-once.ts <root> <modId> <version>
 */
import { join } from "node:path";
import { filesystemArtifactStore } from "../../src/catalog/artifact-store.ts";
import { type PackageValidator, publishRelease } from "../../src/catalog/publisher.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { modRelease, stubValidator } from "../../test/support/catalog-project.ts";

const [root, modId, version] = process.argv.slice(2) as [string, string, string];
const config = loadPortalConfig(join(root, "portal.config.json"));
const { packageBytes, sidecar } = modRelease({ modId, name: modId, version });
const { files } = await stubValidator()({ packageBytes } as unknown as Parameters<PackageValidator>[0]);
const start = process.hrtime.bigint();
await publishRelease(
  {
    root,
    recordsDir: join(root, "records"),
    siteDir: join(root, "site"),
    config,
    store: filesystemArtifactStore({ root, siteDir: join(root, "site"), baseUrl: config.baseUrl }),
    validate: async () => ({ passed: true, checks: [], files }),
  },
  { packageBytes, sidecar, source: { kind: "import" } },
);
process.stdout.write(`${Number(process.hrtime.bigint() - start) / 1e6}\n`);
