import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { checkBackendReadiness } from "../../src/validation/checks/backend_readiness.ts";
import { checkPublicSmoke } from "../../src/validation/checks/public_smoke.ts";
import { CHECKS, REASONS, REQUIRED_PACKAGE_CHECK_IDS } from "../../src/validation/checks/index.ts";
import { PACKAGE_CHECKS } from "../../src/validation/runner.ts";
import { SOURCE_SCHEMA_BASE, schemaRegistry } from "../../src/contracts/schemas.ts";
import { policyShapeProblems } from "../../src/validation/policy-shape.ts";
import { ANY_CHECK_REASONS } from "../../src/validation/reasons.ts";
import { parseUntrustedJson } from "../../src/lib/untrusted-json.ts";
import { policy } from "./fixtures.ts";

const docs = readFileSync(fileURLToPath(new URL("../../docs/validation.md", import.meta.url)), "utf8");

describe("the checks, the policy and the docs agree", () => {
  it("every package check of the contract has an implementation, in the policy's order", () => {
    expect(Object.keys(PACKAGE_CHECKS)).toEqual([...REQUIRED_PACKAGE_CHECK_IDS]);
    expect(policy().requiredChecks).toEqual([...REQUIRED_PACKAGE_CHECK_IDS]);
  });

  it("docs/validation.md documents every check and every reason code", () => {
    for (const check of CHECKS) expect(docs, check.id).toContain(`### \`${check.id}\``);
    for (const code of Object.keys(REASONS)) expect(docs, code).toContain(`| \`${code}\` |`);
    expect(docs).toContain("blocked_by_");
  });

  it("every reason code belongs to a real check (or to any check) and says how to fix it", () => {
    const ids = new Set(CHECKS.map((c) => c.id));
    for (const [code, info] of Object.entries(REASONS)) {
      expect(code).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(info.check === "*" || ids.has(info.check), code).toBe(true);
      expect(info.fix.length, code).toBeGreaterThan(10);
    }
  });
});

describe("every check is described once, in its own file, and listed in CHECKS", () => {
  const root = fileURLToPath(new URL("../../", import.meta.url));
  const json = (path: string) => JSON.parse(readFileSync(`${root}${path}`, "utf8"));

  it("each file under src/validation/checks is a check of CHECKS, named after its id", () => {
    const files = readdirSync(`${root}src/validation/checks`)
      .filter((name) => name.endsWith(".ts") && name !== "index.ts" && name !== "common.ts")
      .map((name) => name.slice(0, -".ts".length))
      .sort();
    expect(files).toEqual(CHECKS.map((c) => c.id).sort());
  });

  it("no reason code is declared twice: by two checks, or by a check and as any check's", () => {
    const declared = [...CHECKS.flatMap((c) => Object.keys(c.reasons)), ...Object.keys(ANY_CHECK_REASONS)];
    expect(declared.length).toBe(new Set(declared).size);
    expect(Object.keys(REASONS).length).toBe(declared.length);
  });

  it("docs/validation.md carries each check's description and each code's meaning and fix as declared", () => {
    const cell = (text: string) => text.replaceAll("|", "\\|");
    for (const check of CHECKS) expect(docs).toContain(`### \`${check.id}\`\n\n${check.description}\n`);
    for (const [code, info] of Object.entries(REASONS))
      expect(docs).toContain(`| \`${code}\` | ${cell(info.meaning)} | ${cell(info.fix)} |`);
  });

  it("the backend contract schema's checkId enum names the package checks, in order", () => {
    const schema = json("schemas/publishing/backend-contract.schema.json");
    expect(schema.$defs.checkId.enum).toEqual(CHECKS.filter((c) => c.scope === "package").map((c) => c.id));
  });

  it("the committed site documents list the checks of CHECKS (svc build writes them from it)", () => {
    const definitions = CHECKS.map(({ id, required, scope, description }) => ({
      id,
      required,
      scope,
      description,
    }));
    const contract = json("site/api/v1/publishing/game-publishing-validation.v1.json");
    expect(contract.checks).toEqual(definitions);
    expect(contract.requiredChecks).toEqual([...REQUIRED_PACKAGE_CHECK_IDS]);
    expect(json("site/api/v1/publishing/workflow.json").validationChecks).toEqual(definitions);
    expect(json("site/api/v1/publishing/backend-contract.json").validationWorker.requiredChecks).toEqual([
      ...REQUIRED_PACKAGE_CHECK_IDS,
    ]);
  });
});

describe("the runner's policy shape check", () => {
  const schemaAccepts = (doc: unknown) =>
    schemaRegistry(SOURCE_SCHEMA_BASE).validate("game-publishing-validation", doc).ok;

  it("accepts the built policy, which the schema accepts too", () => {
    expect(schemaAccepts(policy())).toBe(true);
    expect(policyShapeProblems(policy())).toEqual([]);
  });

  it.each<[string, (p: Record<string, any>) => void]>([
    ["a cap of the wrong type", (p) => (p.package.maxEntries = "many")],
    ["a missing cap", (p) => delete p.package.maxCompressionRatio],
    ["a zero cap", (p) => (p.package.maxPackageBytes = 0)],
    ["a missing extension list", (p) => delete p.content.allowedExtensions],
    ["a signature map of strings", (p) => (p.signatures.byExtension = { ".dll": "pe" })],
    ["checks without scope", (p) => (p.checks = [{ id: "x", required: true }])],
    ["another schema id", (p) => (p.schema = "svc.other.v1")],
  ])("refuses %s, as the schema does", (_label, mutate) => {
    const broken = structuredClone(policy()) as Record<string, any>;
    mutate(broken);
    expect(schemaAccepts(broken)).toBe(false);
    expect(policyShapeProblems(broken).length).toBeGreaterThan(0);
  });
});

describe("untrusted JSON", () => {
  it("accepts ordinary JSON, with or without a BOM", () => {
    expect(parseUntrustedJson('{"a":[1,{"b":"x,y{"}]}')).toEqual({
      ok: true,
      value: { a: [1, { b: "x,y{" }] },
    });
    expect(parseUntrustedJson(Buffer.from('\ufeff{"a":1}'))).toEqual({ ok: true, value: { a: 1 } });
    expect(parseUntrustedJson('{"a":{"k":1},"b":{"k":2}}').ok).toBe(true);
  });

  it.each([
    ['{"a":1,"a":2}', /duplicate key/],
    ['{"a":{"b":1,"b":2}}', /duplicate key/],
    ['{"a\\u0022":1,"a\\"":2}', /duplicate key/],
    ['{"__proto__":{"admin":true}}', /forbidden key/],
    ['{"constructor":1}', /forbidden key/],
    [`${"[".repeat(100)}${"]".repeat(100)}`, /nested deeper/],
    ["{", /JSON|Unexpected|Expected/],
    ['{"a":"\\ud800"}', /surrogate/],
  ])("refuses %s", (text, message) => {
    const r = parseUntrustedJson(text);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(message);
  });

  it("refuses invalid UTF-8 and oversized documents", () => {
    expect(parseUntrustedJson(Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]))).toEqual({
      ok: false,
      message: "not valid UTF-8",
    });
    expect(parseUntrustedJson(Buffer.alloc(2000, 0x20), { maxBytes: 1000, maxDepth: 10 }).ok).toBe(false);
  });
});

describe("workflow-level checks", () => {
  const readiness = (over: Record<string, unknown> = {}) => ({
    schema: "svc.production-readiness.v1",
    overallStatus: "release_ready",
    liveBackend: true,
    releaseBlockers: [],
    gates: [{ id: 1, title: "Accounts", status: "ready", evidence: [], remaining: [] }],
    ...over,
  });

  it("backend_readiness passes only with every gate ready, no blockers and a live backend", () => {
    expect(checkBackendReadiness(readiness()).status).toBe("passed");
    const notReady = checkBackendReadiness(
      readiness({
        overallStatus: "not_release_ready",
        liveBackend: false,
        releaseBlockers: [{ id: "email", summary: "no email delivery" }],
        gates: [{ id: 2, title: "Uploads", status: "blocked" }],
      }),
    );
    expect(notReady).toMatchObject({ status: "failed", reasonCode: "backend_not_ready" });
    expect(notReady.log.join("\n")).toMatch(/no email delivery[\s\S]*Uploads is blocked/);
    expect(checkBackendReadiness(null)).toMatchObject({
      status: "failed",
      reasonCode: "readiness_unavailable",
    });
    expect(checkBackendReadiness({ schema: "other" })).toMatchObject({ reasonCode: "readiness_unavailable" });
  });

  it("the repository's own readiness.json is not release ready, so the check fails", () => {
    const doc = JSON.parse(
      readFileSync(fileURLToPath(new URL("../../site/api/v1/readiness.json", import.meta.url)), "utf8"),
    );
    expect(checkBackendReadiness(doc)).toMatchObject({ status: "failed", reasonCode: "backend_not_ready" });
  });

  const smoke = (over: Record<string, unknown> = {}) => ({
    schema: "svc.post-publish-smoke.v1",
    generatedAt: "2026-11-21T10:00:00.000Z",
    baseUrl: "https://mods.example.com",
    passed: true,
    summary: { routesChecked: 1, routesFailed: 0, artifactsChecked: 1, artifactsFailed: 0 },
    routes: [{ path: "/api/v1/catalog.json", ok: true }],
    artifacts: [
      {
        url: "https://mods.example.com/downloads/mods/a/1.0.0/a.zip",
        expectedSha256: "a".repeat(64),
        expectedSizeBytes: 1,
        ok: true,
      },
    ],
    managerParse: { ok: true, errors: [] },
    ruleFailures: [],
    ...over,
  });

  it("public_smoke passes a passing report and fails a failing, missing or malformed one", () => {
    expect(checkPublicSmoke(smoke()).status).toBe("passed");
    const bad = checkPublicSmoke(
      smoke({
        passed: false,
        artifacts: [
          {
            url: "https://x/a.zip",
            expectedSha256: "a".repeat(64),
            expectedSizeBytes: 1,
            ok: false,
            errors: ["sha256 differs"],
          },
        ],
      }),
    );
    expect(bad).toMatchObject({ status: "failed", reasonCode: "smoke_failed" });
    expect(bad.log.join()).toContain("sha256 differs");
    expect(
      checkPublicSmoke(smoke({ passed: true, ruleFailures: [{ rule: "5", message: "drift" }] })).status,
    ).toBe("failed");
    expect(checkPublicSmoke(undefined)).toMatchObject({ reasonCode: "smoke_report_unavailable" });
    expect(checkPublicSmoke({ schema: "svc.post-publish-smoke.v1" })).toMatchObject({
      reasonCode: "smoke_report_unavailable",
    });
  });
});
