// Issue 25 item 9: the submit action names the release asset (the package's public URL) by the
// portal's convention, {modId}-{version}.zip, also for a built ZIP (`package: dist/...`), instead
// of after the build's file name.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ActionContext, StepEnv } from "../../src/pipeline/action-step.ts";
import { preparePackage } from "../../src/pipeline/submit-step.ts";
import type { ValidationContract } from "../../src/contracts/validation-contract.ts";
import { modRelease } from "../support/catalog-project.ts";

let workspace = "";
afterEach(() => rmSync(workspace, { recursive: true, force: true }));

function stepEnv(inputs: Record<string, string>): StepEnv {
  const context = { workspace } as ActionContext;
  return new StepEnv(context, {
    input: (name) => inputs[name] ?? "",
    info: () => {},
    debug: () => {},
    warning: () => {},
    setSecret: () => {},
    idToken: async () => "",
  });
}

describe("the submit action's package name", () => {
  it("a built ZIP named dist/lantern-1.0.0-rev2.zip goes out as lantern-1.0.0.zip", async () => {
    workspace = mkdtempSync(join(tmpdir(), "svc-submit-name-"));
    const { packageBytes } = modRelease({ modId: "lantern", version: "1.0.0" });
    mkdirSync(join(workspace, "dist"));
    writeFileSync(join(workspace, "dist", "lantern-1.0.0-rev2.zip"), packageBytes);
    writeFileSync(
      join(workspace, "svc-release.json"),
      JSON.stringify({ modId: "lantern", version: "1.0.0", summary: "Light.", authors: [{ name: "Ada" }] }),
    );
    const prepared = await preparePackage(
      stepEnv({ package: "dist/lantern-1.0.0-rev2.zip" }),
      {} as ValidationContract,
      "",
    );
    expect(prepared.fileName).toBe("lantern-1.0.0.zip");
    expect((prepared.sidecar.package as { fileName: string }).fileName).toBe("lantern-1.0.0.zip");
    expect(prepared.bytes.equals(packageBytes)).toBe(true);
  });
});
