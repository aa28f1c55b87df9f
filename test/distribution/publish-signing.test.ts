/**
 * publish.yml's sign step after the real publish bundle: the run publishes a release (a GitHub
 * Release asset), then `svc keys sign --if-due --published true` signs the workspace's site as the
 * workflow does before uploading it to Pages, and the reference manager verifies and installs the
 * release from that site, the package bytes coming from the release asset.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ManagerClient } from "../../src/distribution/manager-client.ts";
import { pushEvent, type PublishScenario, startPublishScenario } from "../support/publish-scenario.ts";
import { runCli } from "../support/run-cli.ts";
import { clamscanPath, shouldSkip } from "../validation/clamav.ts";
import { startMirror } from "./support.ts";

const cleanups: Array<() => unknown> = [];
let scenario: PublishScenario | undefined;
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
  await scenario?.stop();
  scenario = undefined;
});

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))(
  "publish.yml: the sign step after the publish bundle",
  () => {
    it("signs what the run published; the manager verifies the catalog and installs the release asset's bytes", {
      timeout: 120_000,
    }, async () => {
      const s = await startPublishScenario();
      scenario = s;
      const sub = s.submission(7, "better-hud", "1.0.0");
      s.world.setStatus(sub.pr, "approved");
      const before = s.remote.head();
      const merged = s.world.merge(sub.pr);
      const workspace = await s.checkout();
      const run = await s.run(workspace, pushEvent(before, merged, [sub.path]));
      expect(run.code, `${run.stdout}\n${s.github.problems.join("\n")}`).toBe(0);
      expect(run.outputs).toMatchObject({ published: "1" });

      // The root a portal commits once (svc keys init, keys kept outside the repository).
      const outside = mkdtempSync(join(tmpdir(), "svc-keys-"));
      cleanups.push(() => rmSync(outside, { recursive: true, force: true }));
      const keysDir = join(outside, "keys");
      expect((await runCli(["keys", "init", "--keys", keysDir], workspace)).code).toBe(0);
      // The workflow's sign step, with the secret in its environment and GITHUB_OUTPUT as the runner sets it.
      const outputs = join(outside, "github-output");
      writeFileSync(outputs, "");
      const sign = await runCli(
        ["keys", "sign", "--if-due", "--published", String(run.outputs.published !== "0")],
        workspace,
        {
          SVC_TUF_ONLINE_KEYS: readFileSync(join(keysDir, "online.keys.json"), "utf8"),
          GITHUB_OUTPUT: outputs,
        },
      );
      expect(sign.code, sign.stderr).toBe(0);
      expect(readFileSync(outputs, "utf8")).toBe("deploy=true\n");

      // Pages serves the workspace's site; the release asset is fetched where the catalog says it lives.
      const pages = await startMirror(join(workspace, "site"));
      cleanups.push(() => pages.close());
      const asset = s.world.published("better-hud-v1.0.0")!.assets[0]!;
      const releaseFetch: typeof fetch = async (input, init) => {
        const url = String(input instanceof Request ? input.url : input);
        if (url.startsWith("https://github.com/") && url.endsWith(`/${asset.name}`))
          return new Response(new Uint8Array(asset.bytes), { status: 200 });
        return fetch(input, init);
      };
      writeFileSync(join(outside, "root.json"), readFileSync(join(workspace, "site", "tuf", "1.root.json")));
      const client = new ManagerClient({
        mirrorUrl: pages.origin,
        cacheDir: join(outside, "cache"),
        trustedRootFile: join(outside, "root.json"),
        fetch: releaseFetch,
      });
      const installed = await client.install(join(outside, "game"), [
        { modId: "better-hud", range: "^1.0.0" },
      ]);
      expect(installed).toEqual([expect.objectContaining({ modId: "better-hud", version: "1.0.0" })]);
      expect(
        (
          await client.downloadPackage((await client.resolve([{ modId: "better-hud", range: "1.0.0" }]))[0]!)
        ).equals(sub.packageBytes),
      ).toBe(true);
    });
  },
);
