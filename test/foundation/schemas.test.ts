import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain .mjs scripts without types
import * as validatorsBuild from "../../bin/build-validators.mjs";
import { generateDocuments, type SiteInputs } from "../../src/catalog/site.ts";
import { ENDPOINTS } from "../../src/contracts/endpoints.ts";
import { type SchemaName, SchemaRegistry, schemaFiles, schemaRegistry } from "../../src/contracts/schemas.ts";
import { recordShard } from "../../src/contracts/records.ts";
import { releaseRecord, repoConfig } from "../support/temp-project.ts";

const config = repoConfig();
const registry = schemaRegistry(config.baseUrl);
const AT = "2026-11-21T10:00:00.000Z";

function inputs(): SiteInputs {
  return {
    config,
    records: [releaseRecord(), releaseRecord({ version: "0.9.0", status: "superseded" })],
    manager: null,
    framework: null,
    gameBuilds: config.gameBuilds,
    postPublishSmoke: null,
    backendSmoke: null,
    endpoints: ENDPOINTS,
  };
}

const generated = new Map<SchemaName, Record<string, unknown>>();
for (const doc of generateDocuments(inputs())) {
  if (!generated.has(doc.schema)) generated.set(doc.schema, { ...doc.document, generatedAt: AT });
}

const sidecar = {
  schema: "svc.mod-release-submission.v1",
  modId: "better-hud",
  name: "Better HUD",
  version: "1.2.0",
  targetGameBuild: "17000000",
  summary: "A cleaner heads-up display.",
  releaseNotes: "Fixes the ammo counter.",
  package: { fileName: "better-hud-1.2.0.zip", sha256: "b".repeat(64), sizeBytes: 4096 },
  dependencies: [{ modId: "core-lib", versionRange: "^2.0.0" }],
  entrypoints: [{ path: "Binaries/Win64/BetterHud.dll", kind: "native" }],
  authors: [{ name: "Ada" }],
  modConfig: {
    file: "Config/better-hud.json",
    settings: [
      {
        key: "hud.scale",
        label: "Scale",
        type: "select",
        default: "1.0",
        options: [
          { value: "1.0", label: "100%" },
          { value: "1.5", label: "150%" },
        ],
      },
      { key: "hud.compact", label: "Compact", type: "boolean", default: false },
    ],
  },
};
const manifest = {
  schema: "svc.mod-manifest.v1",
  id: "better-hud",
  name: "Better HUD",
  version: "1.2.0",
  targetGameBuild: "17000000",
  dependencies: [],
  entrypoints: [{ path: "Content/Paks/BetterHud.pak", kind: "pak" }],
};
const smoke = {
  schema: "svc.post-publish-smoke.v1",
  generatedAt: AT,
  baseUrl: config.baseUrl,
  passed: true,
  summary: { routesChecked: 1, routesFailed: 0, artifactsChecked: 0, artifactsFailed: 0 },
  routes: [{ path: "/api/v1/catalog", httpStatus: 200, ok: true }],
  artifacts: [],
  managerParse: { ok: true, errors: [] },
  ruleFailures: [],
};
const submission = {
  schema: "svc.upload-submission.v1",
  submissionId: "sub_0123456789abcdefgh",
  ownerAccountId: "acc_1",
  modId: "better-hud",
  version: "1.2.0",
  state: "validating",
  packageSha256: "c".repeat(64),
  validationChecks: [{ id: "sidecar_schema", required: true, status: "passed", reasonCode: null, log: [] }],
  review: { state: "not_ready", decisions: [] },
  publication: null,
  createdAt: AT,
  updatedAt: AT,
};

const ownership = {
  schema: "svc.mod-ownership.v1",
  modId: "better-hud",
  owners: [{ account: "acct_0123456789abcdefghijkl" }, { github: "hud-author" }],
  collaborators: [{ github: "Co-Author" }],
  sourceRepository: { fullName: "hud-author/better-hud", id: 123456 },
  trustedPublishers: [
    {
      repository: { fullName: "hud-author/better-hud", id: 123456 },
      workflow: "release.yml",
      environment: null,
    },
  ],
  claimedAt: AT,
  updatedAt: AT,
  history: [
    { at: AT, action: "claim", by: { account: "acct_0123456789abcdefghijkl" }, submissionId: "sub_1" },
    { at: AT, action: "add_collaborator", by: { github: "hud-author" }, subject: { github: "Co-Author" } },
  ],
};

const VALID: Record<SchemaName, unknown> = {
  common: {},
  artifact: { artifactStatus: "planned", downloadEnabled: false },
  catalog: generated.get("catalog"),
  "changes-head": generated.get("changes-head"),
  "changes-page": {
    schema: "svc.changes-page.v1",
    page: 0,
    entries: [
      { sequence: 1, modId: "better-hud", version: "1.2.0", kind: "publish", latestVersion: "1.2.0", at: AT },
      { sequence: 2, modId: "better-hud", version: "1.2.0", kind: "hide", latestVersion: null, at: AT },
    ],
  },
  "mods-index": generated.get("mods-index"),
  "mod-detail": generated.get("mod-detail"),
  "mod-ownership": ownership,
  "mod-records": {
    schema: "svc.mod-records.v1",
    modId: "better-hud",
    releases: [releaseRecord({ version: "0.9.0", status: "superseded" }), releaseRecord()],
  },
  "owners-shard": { schema: "svc.owners-shard.v1", shard: recordShard(ownership.modId), owners: [ownership] },
  "mod-versions": generated.get("mod-versions"),
  runtime: generated.get("runtime"),
  framework: generated.get("framework"),
  manager: generated.get("manager"),
  "game-builds": generated.get("game-builds"),
  readiness: generated.get("readiness"),
  workflow: generated.get("workflow"),
  "backend-contract": generated.get("backend-contract"),
  "game-publishing-validation": generated.get("game-publishing-validation"),
  "post-publish-smoke": smoke,
  "mod-manifest": manifest,
  "release-record": releaseRecord(),
  "portal-config": config,
  "upload-submission": submission,
  "mod-release-submission": sidecar,
  "submission-report": {
    schema: "svc.submission-report.v1",
    repository: "svc-portal/mods",
    pullRequest: 7,
    headSha: "a".repeat(40),
    sidecarPath: "submissions/better-hud/1.2.0.json",
    problems: [],
    report: null,
  },
};

type Mutation = (doc: any) => void;
/** Each case: a change that must be refused, and the exact place and rule the refusal names. */
const INVALID: Array<[SchemaName, string, Mutation, { path: string; keyword: string }]> = [
  [
    "catalog",
    "a zero hash",
    (d) => (d.mods[0].versions[0].sha256 = "0".repeat(64)),
    { path: "/mods/0/versions/0/sha256", keyword: "not" },
  ],
  [
    "catalog",
    "an unknown top-level field",
    (d) => (d.extra = 1),
    { path: "/", keyword: "additionalProperties" },
  ],
  [
    "catalog",
    "a mod id with path characters",
    (d) => (d.mods[0].id = "../x"),
    { path: "/mods/0/id", keyword: "pattern" },
  ],
  [
    "catalog",
    "a placeholder artifact",
    (d) => (d.mods[0].versions[0].artifactStatus = "placeholder"),
    { path: "/mods/0/versions/0/artifactStatus", keyword: "enum" },
  ],
  [
    "catalog",
    "more than the newest version (all versions live in versions.json)",
    (d) => d.mods[0].versions.push({ ...d.mods[0].versions[0], version: "0.1.0" }),
    { path: "/mods/0/versions", keyword: "maxItems" },
  ],
  [
    "catalog",
    "a mod without the hash of its versions.json",
    (d) => delete d.mods[0].versionsSha256,
    { path: "/mods/0", keyword: "required" },
  ],
  [
    "mod-versions",
    "a version without release notes",
    (d) => delete d.versions[0].releaseNotes,
    { path: "/versions/0", keyword: "required" },
  ],
  [
    "changes-page",
    "an entry of an unknown kind",
    (d) => (d.entries[0].kind = "delete"),
    { path: "/entries/0/kind", keyword: "enum" },
  ],
  [
    "changes-head",
    "a negative sequence",
    (d) => (d.sequence = -1),
    { path: "/sequence", keyword: "minimum" },
  ],
  [
    "readiness",
    "release_ready with blockers",
    (d) => (d.overallStatus = "release_ready"),
    { path: "/releaseBlockers", keyword: "maxItems" },
  ],
  [
    "readiness",
    "a ready gate with work remaining",
    (d) => (d.gates[1].status = "ready"),
    { path: "/gates/1/remaining", keyword: "maxItems" },
  ],
  [
    "readiness",
    "a missing evidence URL",
    (d) => delete d.evidence.catalogUrl,
    { path: "/evidence", keyword: "required" },
  ],
  [
    "runtime",
    "resolving the upstream latest",
    (d) => (d.resolveLatest = true),
    { path: "/resolveLatest", keyword: "const" },
  ],
  [
    "runtime",
    "a planned asset with a URL",
    (d) => (d.asset.url = "https://github.com/a/b/x.zip"),
    { path: "/asset", keyword: "not" },
  ],
  [
    "framework",
    "published without a hash",
    (d) =>
      Object.assign(d, {
        artifactStatus: "published",
        tag: "v1",
        fileName: "f.zip",
        packageUrl: "https://x.test/f.zip",
        packageSizeBytes: 5,
      }),
    { path: "/", keyword: "required" },
  ],
  [
    "manager",
    "a manager ZIP hosted under downloads/manager",
    (d) =>
      Object.assign(d, {
        artifactStatus: "published",
        downloadEnabled: true,
        tag: "v1",
        assetName: "m.zip",
        downloadUrl: "https://portal.test/downloads/manager/m.zip",
        sha256: "d".repeat(64),
        packageSizeBytes: 9,
      }),
    { path: "/downloadUrl", keyword: "not" },
  ],
  [
    "game-builds",
    "an unknown validation status",
    (d) => (d.builds[0].validationStatus = "ok"),
    { path: "/builds/0/validationStatus", keyword: "enum" },
  ],
  ["mods-index", "a missing count", (d) => delete d.count, { path: "/", keyword: "required" }],
  [
    "mod-detail",
    "an unknown field",
    (d) => (d.downloads = 5),
    { path: "/", keyword: "unevaluatedProperties" },
  ],
  [
    "mod-ownership",
    "a principal that is both an account and a GitHub user",
    (d) => (d.owners[0] = { account: "acct_0123456789abcdefghijkl", github: "hud-author" }),
    { path: "/owners/0", keyword: "oneOf" },
  ],
  ["mod-ownership", "no owner", (d) => (d.owners = []), { path: "/owners", keyword: "minItems" }],
  [
    "mod-ownership",
    "a trusted publisher whose workflow is a path",
    (d) => (d.trustedPublishers[0].workflow = "../other/release.yml"),
    { path: "/trustedPublishers/0/workflow", keyword: "pattern" },
  ],
  [
    "mod-versions",
    "blank release notes",
    (d) => (d.versions[0].releaseNotes = "   "),
    { path: "/versions/0/releaseNotes", keyword: "pattern" },
  ],
  [
    "mod-versions",
    "a per-file hash whose path leaves the mod folder",
    (d) => (d.versions[0].files = [{ path: "/etc/passwd", sizeBytes: 1, sha256: "e".repeat(64) }]),
    { path: "/versions/0/files/0/path", keyword: "pattern" },
  ],
  [
    "catalog",
    "per-file hashes (they live in versions.json and the mod detail)",
    (d) => (d.mods[0].versions[0].files = [{ path: "svc-mod.json", sizeBytes: 1, sha256: "e".repeat(64) }]),
    { path: "/mods/0/versions/0", keyword: "additionalProperties" },
  ],
  [
    "mod-records",
    "a release that is not a valid release record",
    (d) => (d.releases[1].sha256 = "0".repeat(64)),
    { path: "/releases/1/sha256", keyword: "not" },
  ],
  [
    "owners-shard",
    "a shard that is not two hex characters",
    (d) => (d.shard = "better-hud"),
    { path: "/shard", keyword: "pattern" },
  ],
  [
    "release-record",
    "a per-file entry without its sha256",
    (d) => (d.files = [{ path: "svc-mod.json", sizeBytes: 1 }]),
    { path: "/files/0", keyword: "required" },
  ],
  ["workflow", "a missing state", (d) => d.states.pop(), { path: "/states", keyword: "minItems" }],
  [
    "workflow",
    "a wrong staging template",
    (d) => (d.upload.stagingPathTemplate = "uploads/{fileName}"),
    { path: "/upload/stagingPathTemplate", keyword: "const" },
  ],
  [
    "backend-contract",
    "an extra top-level field",
    (d) => (d.notes = "x"),
    { path: "/", keyword: "additionalProperties" },
  ],
  [
    "backend-contract",
    "another base URL",
    (d) => (d.baseUrl = "https://evil.test"),
    { path: "/baseUrl", keyword: "const" },
  ],
  [
    "backend-contract",
    "required checks without antivirus_scan",
    (d) =>
      (d.validationWorker.requiredChecks = d.validationWorker.requiredChecks.filter(
        (c: string) => c !== "antivirus_scan",
      )),
    { path: "/validationWorker/requiredChecks", keyword: "minItems" },
  ],
  [
    "backend-contract",
    "an endpoint id with capitals",
    (d) => (d.endpoints[0].id = "Health"),
    { path: "/endpoints/0/id", keyword: "pattern" },
  ],
  [
    "backend-contract",
    "plain HTTP allowed",
    (d) => (d.security.requiresHttps = false),
    { path: "/security/requiresHttps", keyword: "const" },
  ],
  [
    "game-publishing-validation",
    "native binaries elsewhere",
    (d) => (d.content.nativeBinaryDirectory = "Binaries"),
    { path: "/content/nativeBinaryDirectory", keyword: "const" },
  ],
  [
    "game-publishing-validation",
    "a compression method other than stored/deflate",
    (d) => d.package.allowedCompressionMethods.push(12),
    { path: "/package/allowedCompressionMethods/2", keyword: "enum" },
  ],
  [
    "upload-submission",
    "a required check skipped",
    (d) => (d.validationChecks[0].status = "skipped"),
    { path: "/validationChecks/0/status", keyword: "not" },
  ],
  [
    "upload-submission",
    "a client-chosen submission id",
    (d) => (d.submissionId = "../../etc"),
    { path: "/submissionId", keyword: "pattern" },
  ],
  [
    "mod-release-submission",
    "a server-owned field (mass assignment)",
    (d) => (d.state = "published"),
    { path: "/", keyword: "additionalProperties" },
  ],
  [
    "mod-release-submission",
    "a non-semver version",
    (d) => (d.version = "1.2"),
    { path: "/version", keyword: "pattern" },
  ],
  [
    "mod-release-submission",
    "build metadata in the version",
    (d) => (d.version = "1.2.0+build5"),
    { path: "/version", keyword: "pattern" },
  ],
  [
    "mod-release-submission",
    "a mod id with a slash",
    (d) => (d.modId = "a/b"),
    { path: "/modId", keyword: "pattern" },
  ],
  [
    "mod-release-submission",
    "a javascript: link",
    (d) => (d.links = { homepage: "javascript:alert(1)" }),
    { path: "/links/homepage", keyword: "pattern" },
  ],
  [
    "mod-release-submission",
    "blank release notes",
    (d) => (d.releaseNotes = "\n\t "),
    { path: "/releaseNotes", keyword: "pattern" },
  ],
  [
    "mod-release-submission",
    "a package file name with traversal",
    (d) => (d.package.fileName = "..x.zip"),
    { path: "/package/fileName", keyword: "not" },
  ],
  [
    "mod-release-submission",
    "a plain-http package URL",
    (d) => (d.package.url = "http://cdn.test/a.zip"),
    { path: "/package/url", keyword: "pattern" },
  ],
  [
    "mod-release-submission",
    "a boolean setting with options",
    (d) =>
      (d.modConfig.settings[1].options = [
        { value: true, label: "on" },
        { value: false, label: "off" },
      ]),
    { path: "/modConfig/settings/1/options", keyword: "false schema" },
  ],
  [
    "mod-release-submission",
    "a __proto__ config key",
    (d) => (d.modConfig.settings[0].key = "__proto__.polluted"),
    { path: "/modConfig/settings/0/key", keyword: "pattern" },
  ],
  [
    "mod-manifest",
    "an entrypoint that escapes",
    (d) => (d.entrypoints[0].path = "../evil.dll"),
    { path: "/entrypoints/0/path", keyword: "pattern" },
  ],
  [
    "mod-manifest",
    "an entrypoint with a trailing dot",
    (d) => (d.entrypoints[0].path = "Content/Paks/x.pak."),
    { path: "/entrypoints/0/path", keyword: "not" },
  ],
  [
    "mod-manifest",
    "a Windows path",
    (d) => (d.entrypoints[0].path = "C:\\mods\\x.pak"),
    { path: "/entrypoints/0/path", keyword: "pattern" },
  ],
  [
    "release-record",
    "hidden without the status to restore",
    (d) => (d.status = "hidden"),
    { path: "/", keyword: "required" },
  ],
  ["release-record", "a zero hash", (d) => (d.sha256 = "0".repeat(64)), { path: "/sha256", keyword: "not" }],
  [
    "portal-config",
    "a plain-http public base URL",
    (d) => (d.baseUrl = "http://mods.example.org"),
    { path: "/baseUrl", keyword: "pattern" },
  ],
  [
    "portal-config",
    "a package cap above 100 MiB",
    (d) => (d.limits.maxPackageBytes = 104857601),
    { path: "/limits/maxPackageBytes", keyword: "maximum" },
  ],
  [
    "post-publish-smoke",
    "passed as a string",
    (d) => (d.passed = "yes"),
    { path: "/passed", keyword: "type" },
  ],
  [
    "submission-report",
    "a head SHA that is not a full lower-case SHA",
    (d) => (d.headSha = "ABC"),
    { path: "/headSha", keyword: "pattern" },
  ],
  [
    "submission-report",
    "a sidecar outside submissions/",
    (d) => (d.sidecarPath = "../.github/workflows/x.json"),
    { path: "/sidecarPath", keyword: "pattern" },
  ],
  [
    "artifact",
    "a published artifact without a hash",
    (d) =>
      Object.assign(d, {
        artifactStatus: "published",
        name: "a.zip",
        url: "https://x.test/a.zip",
        sizeBytes: 3,
      }),
    { path: "/", keyword: "required" },
  ],
];

describe("schemas", () => {
  it("every schema file compiles and carries a 2020-12 $schema and an $id under the base URL", () => {
    for (const file of schemaFiles()) {
      const schema = JSON.parse(file.text) as { $schema: string; $id: string };
      expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
      expect(schema.$id).toBe(`https://svc.invalid/${file.publicPath}`);
      expect(() => registry.validate(file.name, {})).not.toThrow();
    }
  });

  it("every schema file is valid against the 2020-12 meta-schema (portal processes skip that check)", () => {
    const checked = new SchemaRegistry(config.baseUrl, { checkSchemas: true });
    for (const file of schemaFiles()) expect(() => checked.validate(file.name, {}), file.name).not.toThrow();
  });

  it("the precompiled validators are what bin/build-validators.mjs writes from schemas/ (npm run build:validators)", async () => {
    const build = validatorsBuild as {
      VALIDATORS_DIR: string;
      generateValidatorFiles: () => Promise<Map<string, string>>;
    };
    const files = await build.generateValidatorFiles();
    for (const [path, text] of files) expect(readFileSync(path, "utf8"), path).toBe(text);
    // No module of a schema that is gone (or pins the base URL) is left beside them.
    expect(
      readdirSync(build.VALIDATORS_DIR)
        .map((name) => join(build.VALIDATORS_DIR, name))
        .sort(),
    ).toEqual([...files.keys()].filter((path) => path.startsWith(join(build.VALIDATORS_DIR, "/"))).sort());
  });

  it("precompiled and compiled-at-run-time validators give the same answers and issues", () => {
    const compiled = new SchemaRegistry(config.baseUrl, { checkSchemas: true });
    const cases: Array<[SchemaName, unknown]> = [
      ...Object.entries(VALID).map(
        ([name, document]) => [name as SchemaName, document] as [SchemaName, unknown],
      ),
      ...INVALID.map(([name, , mutate]): [SchemaName, unknown] => {
        const document = structuredClone(VALID[name]);
        mutate(document);
        return [name, document];
      }),
      ...schemaFiles().map((f): [SchemaName, unknown] => [f.name, { unexpected: true }]),
    ];
    for (const [name, document] of cases)
      expect(registry.validate(name, document), name).toEqual(compiled.validate(name, document));
  });

  it("has a valid fixture for every schema", () => {
    expect(Object.keys(VALID).sort()).toEqual(
      schemaFiles()
        .map((f) => f.name)
        .sort(),
    );
  });

  for (const [name, document] of Object.entries(VALID)) {
    it(`accepts a valid ${name} document`, () => {
      const result = registry.validate(name as SchemaName, document);
      expect(result.ok ? [] : result.issues).toEqual([]);
    });
  }

  for (const [name, label, mutate, expected] of INVALID) {
    it(`refuses ${name}: ${label}`, () => {
      const document = structuredClone(VALID[name]);
      mutate(document);
      const result = registry.validate(name, document);
      expect(result.ok).toBe(false);
      if (result.ok) return;
      expect(result.issues).toContainEqual(expect.objectContaining(expected));
    });
  }

  it("pins the portal's base URL in the published backend contract schema", () => {
    const other = schemaRegistry("https://mods.example.net");
    const result = other.validate("backend-contract", VALID["backend-contract"]);
    expect(result.ok).toBe(false);
  });
});
