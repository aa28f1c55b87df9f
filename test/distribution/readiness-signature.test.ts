import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { ENDPOINTS } from "../../src/contracts/endpoints.ts";
import { computeReadiness, type SmokeSummary } from "../../src/contracts/readiness.ts";

const config = loadPortalConfig(join(import.meta.dirname, "..", "..", "portal.config.json"));

function blockerFor(smoke: SmokeSummary | null) {
  const readiness = computeReadiness({
    config,
    endpoints: ENDPOINTS,
    postPublishSmoke: smoke,
    backendSmoke: null,
    backendVerifiedRelease: false,
  });
  return readiness.blockers.find((b) => b.id === "catalog_not_signed");
}

const smoke = (signature?: SmokeSummary["signature"]): SmokeSummary => ({
  passed: true,
  baseUrl: config.baseUrl,
  generatedAt: "2026-11-20T00:00:00.000Z",
  ...(signature ? { signature } : {}),
});

describe("readiness: the signed catalog", () => {
  it("blocks until a recorded smoke for this base URL verified the signed catalog", () => {
    expect(blockerFor(null)?.summary).toContain("svc smoke --record");
    expect(
      blockerFor({ ...smoke({ state: "verified" }), baseUrl: "https://elsewhere.example" }),
    ).toBeDefined();
    expect(blockerFor(smoke())?.summary).toContain("not signed");
    expect(blockerFor(smoke({ state: "unsigned" }))?.summary).toContain("not signed");
    expect(blockerFor(smoke({ state: "failed", code: "metadata_expired" }))?.summary).toContain(
      "metadata_expired",
    );
    expect(blockerFor(smoke({ state: "failed", code: "catalog_tampered" }))?.summary).toContain(
      "catalog_tampered",
    );
    expect(blockerFor(smoke({ state: "verified" }))).toBeUndefined();
  });
});
