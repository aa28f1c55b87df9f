// Key rotation of each TUF role through the CLI: `svc keys rotate <role>` then `svc keys sign` must
// leave a site that a fresh client and a client that trusted the old root both install from, with
// nothing published in between (a rotation alone, e.g. after a leaked online key).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { ManagerClient } from "../../src/distribution/manager-client.ts";
import { TUF_DIR } from "../../src/distribution/tuf-layout.ts";
import { catalogProject, modRelease, publisherOptions } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";
import { startMirror } from "./support.ts";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function signedSite() {
  const project = catalogProject();
  cleanups.push(() => project.cleanup());
  const mirror = await startMirror(project.siteDir);
  cleanups.push(() => mirror.close());
  project.setBaseUrl(mirror.origin);
  const outside = mkdtempSync(join(tmpdir(), "svc-rotation-"));
  cleanups.push(() => rmSync(outside, { recursive: true, force: true }));
  const keysDir = join(outside, "keys");
  const init = await runCli(["keys", "init", "--keys", keysDir], project.root);
  expect(init.code, init.stderr).toBe(0);
  const { packageBytes, sidecar } = modRelease({ version: "1.0.0" });
  await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });
  const sign = async () => {
    const result = await runCli(["keys", "sign"], project.root, {
      SVC_TUF_ONLINE_KEYS: join(keysDir, "online.keys.json"),
    });
    expect(result.code, result.stderr).toBe(0);
  };
  await sign();
  const pin = (name: string) => {
    const file = join(outside, `${name}.root.json`);
    writeFileSync(file, readFileSync(join(project.siteDir, TUF_DIR, "root.json")));
    return file;
  };
  const client = (name: string, trustedRootFile: string) =>
    new ManagerClient({ mirrorUrl: mirror.origin, cacheDir: join(outside, name, "cache"), trustedRootFile });
  const install = (name: string, trustedRootFile: string) =>
    client(name, trustedRootFile).install(join(outside, name, "mods"), [{ modId: "better-hud", range: "*" }]);
  return { project, keysDir, outside, sign, pin, install };
}

describe("key rotation of each role keeps every client working", () => {
  it.each(["root", "targets", "snapshot", "timestamp"] as const)(
    "rotate %s, sign: a fresh client and one that trusted the old root both install",
    async (role) => {
      const site = await signedSite();
      const oldRoot = site.pin("old");
      // The existing client: it installed before the rotation, so its cache trusts the old root and
      // holds timestamp, snapshot, targets and bins signed with the old keys.
      await site.install("existing", oldRoot);

      const rotate = await runCli(["keys", "rotate", role, "--keys", site.keysDir], site.project.root);
      expect(rotate.code, rotate.stderr).toBe(0);
      await site.sign();

      const newRoot = site.pin("new");
      for (const [name, pinned] of [
        ["existing", oldRoot],
        ["fresh", newRoot],
        ["fresh-pinned-on-v1", oldRoot],
      ] as const) {
        const installed = await site.install(name, pinned).catch((error: Error & { code?: string }) => {
          throw new Error(`${name} client after rotating ${role}: ${error.code}: ${error.message}`);
        });
        expect(installed.map((m) => `${m.modId}@${m.version}`)).toEqual(["better-hud@1.0.0"]);
        const trusted = JSON.parse(
          readFileSync(join(site.outside, name, "cache", "metadata", "root.json"), "utf8"),
        );
        expect(trusted.signed.version, name).toBe(2);
      }
    },
  );
});
