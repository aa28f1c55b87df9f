import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs build script without types
import { actionNames, buildOptions } from "../../actions/build.mjs";

const ROOT = new URL("../../", import.meta.url).pathname;

describe("committed action bundles match a fresh build (check-dist)", () => {
  const names = actionNames() as string[];
  it("every action folder has a bundle", () => {
    expect(names).toEqual(["publish", "report", "submit", "sweep", "sync", "validate"]);
  });
  for (const name of names) {
    it(`actions/${name}/dist/index.js`, async () => {
      const out = join(mkdtempSync(join(tmpdir(), "svc-dist-")), "index.js");
      await build(buildOptions(name, out));
      const fresh = readFileSync(out, "utf8");
      const committed = readFileSync(join(ROOT, "actions", name, "dist/index.js"), "utf8");
      // Compare without a diff dump of megabytes: a mismatch means `npm run build:actions` was not run.
      expect(committed === fresh, `actions/${name}/dist is stale: run npm run build:actions and commit`).toBe(
        true,
      );
    });
  }
});
