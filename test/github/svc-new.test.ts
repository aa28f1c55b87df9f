import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { intakeRelease } from "../../src/bot/release-intake.ts";
import { NEW_SIDECAR_CODES } from "../../src/cli/new-sidecar.ts";
import type { GitHubApi } from "../../src/github/api.ts";
import { classifySubmission, parseSubmissionPath } from "../../src/github/submission-files.ts";
import { validateSidecar } from "../../src/validation/documents.ts";
import type { ValidationReport } from "../../src/validation/types.ts";
import { type CatalogProject, catalogProject } from "../support/catalog-project.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { runCli } from "../support/run-cli.ts";
import { writeZip } from "../support/zip.ts";
import { clamdPath, type RunningClamd, startClamd } from "../validation/clamav.ts";

const URL_OF = (file: string) => `https://github.com/ada/better-hud/releases/download/v1.2.0/${file}`;

function manifest(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schema: "svc.mod-manifest.v1",
    id: "better-hud",
    name: "Better HUD",
    version: "1.2.0",
    targetGameBuild: "17000000",
    dependencies: [],
    entrypoints: [{ path: "Content/Paks/BetterHud.pak", kind: "pak" }],
    ...overrides,
  };
}

function packageWith(doc: Record<string, unknown> | null): Buffer {
  return writeZip([
    ...(doc ? [{ name: "svc-mod.json", data: `${JSON.stringify(doc, null, 2)}\n` }] : []),
    { name: "Content/Paks/BetterHud.pak", data: "pak better-hud 1.2.0\n".repeat(200) },
  ]);
}

const DESCRIBED = [
  "--summary",
  "A cleaner heads-up display.",
  "--notes",
  "1.2.0: north-up minimap.",
  "--author",
  "Ada Lovelace @ada",
  "--tag",
  "ui",
  "--source",
  "https://github.com/ada/better-hud",
  "--license",
  "MIT",
];

const sha256 = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

let project: CatalogProject;
let bytes: Buffer;
/** A built portal (site/ with the validation contract, catalog and game builds) holding the package. */
function usePortalWithPackage() {
  beforeEach(() => {
    project = catalogProject();
    bytes = packageWith(manifest());
    writeFileSync(join(project.root, "better-hud-1.2.0.zip"), bytes);
  });
  afterEach(() => project.cleanup());
}

const svcNew = (...args: string[]) =>
  runCli(["new", "--package", "better-hud-1.2.0.zip", ...args], project.root);

describe("svc new", () => {
  usePortalWithPackage();
  it("writes submissions/{modId}/{version}.json that validates, measured from the exact bytes", async () => {
    const r = await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const path = "submissions/better-hud/1.2.0.json";
    const sidecar = JSON.parse(project.read(path));
    expect(validateSidecar(sidecar)).toEqual({ ok: true, value: sidecar });
    expect(sidecar.package).toEqual({
      fileName: "better-hud-1.2.0.zip",
      sha256: sha256(bytes),
      sizeBytes: bytes.length,
      url: URL_OF("better-hud-1.2.0.zip"),
    });
    expect(sidecar).toMatchObject({
      modId: "better-hud",
      name: "Better HUD",
      version: "1.2.0",
      targetGameBuild: "17000000",
      entrypoints: manifest().entrypoints,
      authors: [{ name: "Ada Lovelace", github: "ada" }],
      releaseNotes: "1.2.0: north-up minimap.",
    });
    // What the pull request classifier will see, and nothing left behind beside it.
    expect(classifySubmission([{ filename: path, status: "added" }])).toEqual({
      kind: "submission",
      sidecar: { path, modId: "better-hud", version: "1.2.0" },
    });
    expect(project.exists(".svc-tmp")).toBe(false);
    for (const step of [
      `npx svc validate --package better-hud-1.2.0.zip --metadata ${path}`,
      `git add ${path}`,
      "gh pr create",
    ]) {
      expect(r.stdout).toContain(step);
    }
  });

  it("the written sidecar passes svc validate on the same package (antivirus off: only antivirus_scan fails)", async () => {
    expect((await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED)).code).toBe(0);
    const r = await runCli(
      [
        "validate",
        "--package",
        "better-hud-1.2.0.zip",
        "--metadata",
        "submissions/better-hud/1.2.0.json",
        "--json",
        "--no-antivirus",
      ],
      project.root,
    );
    const report = JSON.parse(r.stdout) as ValidationReport;
    expect(report.checks.filter((c) => c.status !== "passed").map((c) => `${c.id}:${c.reasonCode}`)).toEqual([
      "antivirus_scan:antivirus_disabled",
    ]);
    expect(report.packageSha256).toBe(sha256(bytes));
  });

  describe.skipIf(!clamdPath)("with clamd", () => {
    let clamd: RunningClamd;
    beforeAll(async () => {
      clamd = await startClamd();
    });
    afterAll(async () => {
      await clamd.stop();
    });
    it("svc validate passes every check", async () => {
      expect((await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED)).code).toBe(0);
      const r = await runCli(
        [
          "validate",
          "--package",
          "better-hud-1.2.0.zip",
          "--metadata",
          "submissions/better-hud/1.2.0.json",
          "--clamd",
          clamd.socket,
        ],
        project.root,
      );
      expect(r.code, r.stdout).toBe(0);
    });
  });

  it("--json prints the written document and the next steps", async () => {
    const r = await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED, "--json");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.ok).toBe(true);
    expect(out.path).toBe("submissions/better-hud/1.2.0.json");
    expect(out.sidecar).toEqual(JSON.parse(project.read(out.path)));
    expect(out.next[0]).toContain("svc validate");
  });

  it("--out chooses the folder; --from copies descriptive fields but never the release notes", async () => {
    expect(
      (await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED, "--out", "portal")).code,
    ).toBe(0);
    const first = "portal/submissions/better-hud/1.2.0.json";
    const next = packageWith(manifest({ version: "1.2.1" }));
    writeFileSync(join(project.root, "better-hud-1.2.1.zip"), next);
    const args = ["--package", "better-hud-1.2.1.zip", "--url", URL_OF("better-hud-1.2.1.zip")];
    const withoutNotes = await runCli(["new", ...args, "--from", first, "--out", "portal"], project.root);
    expect(withoutNotes.code).toBe(1);
    expect(withoutNotes.stderr).toContain("sidecar_incomplete");
    expect(withoutNotes.stderr).toContain("releaseNotes: missing");
    expect(withoutNotes.stderr).not.toMatch(/summary: missing|authors: missing/);
    const r = await runCli(
      ["new", ...args, "--from", first, "--out", "portal", "--notes", "1.2.1: fixes."],
      project.root,
    );
    expect(r.code, r.stderr).toBe(0);
    const sidecar = JSON.parse(project.read("portal/submissions/better-hud/1.2.1.json"));
    expect(sidecar).toMatchObject({
      version: "1.2.1",
      summary: "A cleaner heads-up display.",
      authors: [{ name: "Ada Lovelace", github: "ada" }],
      links: { source: "https://github.com/ada/better-hud" },
      releaseNotes: "1.2.1: fixes.",
      package: { sha256: sha256(next), sizeBytes: next.length },
    });
  });

  it("warns (and still writes) when targetGameBuild is not one the portal supports", async () => {
    writeFileSync(
      join(project.root, "better-hud-1.2.0.zip"),
      packageWith(manifest({ targetGameBuild: "16000000" })),
    );
    const r = await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      "warning: targetGameBuild 16000000 is not a supported game build of this portal (17000000)",
    );
  });

  describe("refusals (nothing is written)", () => {
    const nothingWritten = () => expect(project.exists("submissions")).toBe(false);

    for (const [url, code] of [
      [
        "http://github.com/ada/better-hud/releases/download/v1.2.0/better-hud-1.2.0.zip",
        "package_url_not_https",
      ],
      ["ftp://example.com/better-hud-1.2.0.zip", "package_url_not_https"],
      ["file:///tmp/better-hud-1.2.0.zip", "package_url_not_https"],
      ["better-hud-1.2.0.zip", "package_url_invalid"],
      ["https://ada:secret@example.com/better-hud-1.2.0.zip", "package_url_invalid"],
      [
        "https://github.com/ada/better-hud/releases/latest/download/better-hud.zip",
        "package_url_not_immutable",
      ],
    ] as const) {
      it(`${code}: ${url}`, async () => {
        const r = await svcNew("--url", url, ...DESCRIBED);
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`svc new: ${code}:`);
        nothingWritten();
      });
    }

    it("sidecar_incomplete names every missing field and the flag that gives it", async () => {
      const r = await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), "--json");
      expect(r.code).toBe(1);
      const out = JSON.parse(r.stdout);
      expect(out.code).toBe("sidecar_incomplete");
      expect(out.problems).toEqual([
        "summary: missing; give it with --summary (or --from)",
        "releaseNotes: missing; give it with --notes or --notes-file",
        'authors: missing; give it with --author "NAME [@LOGIN]" (or --from)',
      ]);
      nothingWritten();
    });

    it("sidecar_invalid names the field that breaks the schema", async () => {
      const r = await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED, "--tag", "Not A Slug");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("sidecar_invalid");
      expect(r.stderr).toMatch(/tags\/1: must match pattern .* \(--tag\)/);
      nothingWritten();
    });

    it("manifest_schema_mismatch names the fields svc-mod.json lacks; manifest_missing without one", async () => {
      const { targetGameBuild: _t, entrypoints: _e, ...partial } = manifest();
      writeFileSync(join(project.root, "better-hud-1.2.0.zip"), packageWith(partial));
      const r = await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("svc new: manifest_schema_mismatch:");
      expect(r.stderr).toContain("'targetGameBuild'");
      expect(r.stderr).toContain("'entrypoints'");
      writeFileSync(join(project.root, "better-hud-1.2.0.zip"), packageWith(null));
      const none = await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED);
      expect(none.stderr).toContain("svc new: manifest_missing:");
      nothingWritten();
    });

    it("package_not_zip and package_unreadable", async () => {
      writeFileSync(join(project.root, "better-hud-1.2.0.zip"), "not a zip at all, just text");
      const r = await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED);
      expect(r.stderr).toContain("svc new: package_not_zip:");
      const missing = await runCli(
        ["new", "--package", "nope.zip", "--url", URL_OF("nope.zip"), ...DESCRIBED],
        project.root,
      );
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain("svc new: package_unreadable:");
      nothingWritten();
    });

    it("mod_id_invalid, version_invalid and manifest_mismatch", async () => {
      const url = ["--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED];
      for (const [flag, value, code] of [
        ["--mod-id", "Better_HUD", "mod_id_invalid"],
        ["--mod-id", "../evil", "mod_id_invalid"],
        ["--version", "1.2", "version_invalid"],
        ["--version", "1.2.0+build.5", "version_invalid"],
        ["--version", "1.3.0", "manifest_mismatch"],
        ["--mod-id", "other-mod", "manifest_mismatch"],
        ["--game-build", "16000000", "manifest_mismatch"],
      ] as const) {
        const r = await svcNew(...url, flag, value);
        expect(r.code, `${flag} ${value}`).toBe(1);
        expect(r.stderr).toContain(`svc new: ${code}:`);
      }
      expect((await svcNew(...url, "--mod-id", "better-hud", "--version", "1.2.0")).code).toBe(0);
    });

    it("sidecar_exists: an existing sidecar is never overwritten (bytes unchanged)", async () => {
      expect((await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED)).code).toBe(0);
      const path = join(project.root, "submissions/better-hud/1.2.0.json");
      const before = readFileSync(path);
      const r = await svcNew("--url", URL_OF("better-hud-1.2.0.zip"), ...DESCRIBED, "--notes", "changed");
      expect(r.code).toBe(1);
      expect(r.stderr).toContain("svc new: sidecar_exists:");
      expect(readFileSync(path).equals(before)).toBe(true);
    });

    it("usage errors exit 2", async () => {
      expect((await runCli(["new", "--package", "x.zip"], project.root)).code).toBe(2);
      expect((await svcNew("--release", "--url", URL_OF("x.zip"))).code).toBe(2);
      expect((await svcNew("--url", URL_OF("x.zip"), "--notes", "a", "--notes-file", "b")).code).toBe(2);
      expect((await svcNew("--url", URL_OF("x.zip"), "--notes-file", "missing.md")).code).toBe(2);
      expect((await svcNew("--url", URL_OF("x.zip"), "--bogus")).code).toBe(2);
    });
  });
});

describe("svc new --release", () => {
  usePortalWithPackage();
  let server: Server;
  let origin: string;
  const assets = new Map<string, Buffer>();
  beforeAll(async () => {
    server = createServer((req, res) => {
      const body = assets.get(req.url ?? "");
      if (!body) res.writeHead(404).end();
      else res.writeHead(200, { "content-length": body.length }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address() as { port: number };
    origin = `http://127.0.0.1:${address.port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("writes svc-release.json (no package) that release intake turns into a valid submission", async () => {
    const r = await svcNew("--release", ...DESCRIBED);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("gh release create v1.2.0 better-hud-1.2.0.zip svc-release.json");
    expect(project.exists("submissions")).toBe(false);
    const released = readFileSync(join(project.root, "svc-release.json"));
    expect(JSON.parse(released.toString()).package).toBeUndefined();

    assets.set("/download/better-hud-1.2.0.zip", bytes);
    assets.set("/download/svc-release.json", released);
    // The dry run never reaches GitHub; any use of the client is a test failure.
    const unusedGitHub = new Proxy({} as GitHubApi, {
      get: (_target, key) => {
        throw new Error(`dry run used github.${String(key)}`);
      },
    });
    const result = await intakeRelease(
      unusedGitHub,
      { owner: "svc-portal", repo: "mods" },
      {
        sourceRepository: "ada/better-hud",
        repositoryId: 9002,
        ownerLogin: "ada",
        ownerId: 77,
        htmlUrl: "https://github.com/ada/better-hud/releases/tag/v1.2.0",
        tagName: "v1.2.0",
        body: "",
        sender: { login: "ada", type: "User" },
        publishedAt: "2026-11-21T10:00:00Z",
        draft: false,
        prerelease: false,
        assets: [
          {
            name: "better-hud-1.2.0.zip",
            browserDownloadUrl: `${origin}/download/better-hud-1.2.0.zip`,
            size: bytes.length,
          },
          {
            name: "svc-release.json",
            browserDownloadUrl: `${origin}/download/svc-release.json`,
            size: released.length,
          },
        ],
      },
      {
        maxPackageBytes: project.config.limits.maxPackageBytes,
        statusKey: Buffer.alloc(32),
        limiter: null,
        dryRun: true,
        allowHttp: true,
      },
    );
    if (!result.ok) throw new Error(`${result.code}: ${result.message}`);
    // The loopback URL is http; a real asset URL is https, which the schema requires.
    const submitted = {
      ...result.sidecar,
      package: { ...(result.sidecar.package as object), url: URL_OF("better-hud-1.2.0.zip") },
    };
    expect(validateSidecar(submitted).ok).toBe(true);
    expect(result.sidecar.package).toMatchObject({ sha256: sha256(bytes), sizeBytes: bytes.length });
  });

  it("refuses --url and an existing svc-release.json", async () => {
    expect((await svcNew("--release", ...DESCRIBED)).code).toBe(0);
    const before = readFileSync(join(project.root, "svc-release.json"));
    const again = await svcNew("--release", ...DESCRIBED, "--notes", "other");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("svc new: sidecar_exists:");
    expect(readFileSync(join(project.root, "svc-release.json")).equals(before)).toBe(true);
  });
});

describe("pulls-template examples", () => {
  for (const file of [
    "pulls-template/submissions/example-mod/1.0.0.json",
    "pulls-template/release.example.json",
  ]) {
    it(`${file} validates against svc.mod-release-submission.v1`, () => {
      const doc = JSON.parse(readFileSync(join(REPO_ROOT, file), "utf8"));
      const result = validateSidecar(doc);
      expect(result.ok ? [] : result.issues).toEqual([]);
    });
  }

  it("the example sits where a submission must: submissions/{modId}/{version}.json of its own fields", () => {
    const rel = "submissions/example-mod/1.0.0.json";
    const doc = JSON.parse(readFileSync(join(REPO_ROOT, "pulls-template", rel), "utf8"));
    expect(parseSubmissionPath(rel)).toEqual({ path: rel, modId: doc.modId, version: doc.version });
    expect(doc.package.url).toMatch(/^https:\/\/.*\/releases\/download\/[^/]+\/[^/]+\.zip$/);
  });

  it("pulls-template/README.md explains every svc new refusal code", () => {
    const readme = readFileSync(join(REPO_ROOT, "pulls-template/README.md"), "utf8");
    expect(NEW_SIDECAR_CODES.filter((code) => !readme.includes(`\`${code}\``))).toEqual([]);
  });
});
