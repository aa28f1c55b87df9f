import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSubmission } from "../../src/catalog/publisher.ts";
import { MANUAL_FALLBACK } from "../../src/contracts/workflow.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";

describe("documents the workflow names", () => {
  it("the sidecar example is a valid svc.mod-release-submission.v1 document", () => {
    const config = loadPortalConfig(join(REPO_ROOT, "portal.config.json"));
    const example = JSON.parse(readFileSync(join(REPO_ROOT, MANUAL_FALLBACK.sidecarExample), "utf8"));
    expect(parseSubmission(example, config).modId).toBe("better-hud");
  });

  it("the runbook exists and shows the contract's parameter spelling", () => {
    const runbook = readFileSync(join(REPO_ROOT, MANUAL_FALLBACK.runbook), "utf8");
    expect(runbook).toContain("-PackagePath");
    expect(runbook).toContain("svc smoke --base-url");
  });
});
