import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { writeZip } from "../support/zip.ts";
import { type CatalogProject, catalogProject } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";
import { githubRelease, releaseAsset } from "../support/github-fixtures.ts";
import { type GitHubServer, startGitHubServer } from "../support/github-server.ts";

let api: GitHubServer;
let project: CatalogProject;
afterEach(async () => {
  await api?.stop();
  project?.cleanup();
});

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const managerZip = writeZip([{ name: "Manager.exe", data: "manager build 1.4.0".repeat(100) }]);
const frameworkZip = writeZip([
  { name: "Binaries/Win64/svc-framework.dll", data: "framework 2.1.0".repeat(100) },
]);

function env(server: GitHubServer) {
  return { SVC_GITHUB_API_URL: server.url, SVC_GITHUB_DOWNLOAD_URL: server.url };
}

function scriptReleases(server: GitHubServer, options: { frameworkDigest?: string } = {}) {
  server.expect(
    "GET /repos/{owner}/{repo}/releases/latest",
    (req) => {
      if (req.params.repo === "manager") {
        return {
          status: 200,
          body: githubRelease({
            id: 1,
            tag: "v1.4.0",
            repo: "svc-portal/manager",
            assets: [
              releaseAsset({
                id: 11,
                name: "svc-manager-1.4.0.zip",
                size: managerZip.length,
                repo: "svc-portal/manager",
                tag: "v1.4.0",
                digest: `sha256:${sha(managerZip)}`,
              }),
            ],
          }),
        };
      }
      expect(req.params.repo).toBe("framework");
      return {
        status: 200,
        body: githubRelease({
          id: 2,
          tag: "v2.1.0",
          repo: "svc-portal/framework",
          assets: [
            releaseAsset({
              id: 21,
              name: "svc-framework-2.1.0.zip",
              size: frameworkZip.length,
              repo: "svc-portal/framework",
              tag: "v2.1.0",
            }),
            releaseAsset({
              id: 22,
              name: "svc-framework-2.1.0.zip.sha256",
              size: 90,
              repo: "svc-portal/framework",
              tag: "v2.1.0",
            }),
          ],
        }),
      };
    },
    2,
  );
  server.expectRaw("GET /svc-portal/manager/releases/latest/download/svc-manager-1.4.0.zip", () => ({
    status: 200,
    body: managerZip,
  }));
  server.expectRaw(
    "GET /svc-portal/framework/releases/download/v2.1.0/svc-framework-2.1.0.zip.sha256",
    () => ({
      status: 200,
      body: Buffer.from(`${options.frameworkDigest ?? sha(frameworkZip)}  svc-framework-2.1.0.zip\n`),
    }),
  );
}

describe("svc sync (against the OpenAPI-checked loopback GitHub)", () => {
  it("records the manager from the latest-release permalink and publishes the framework ZIP", async () => {
    project = catalogProject();
    api = await startGitHubServer();
    scriptReleases(api);
    api.expectRaw("GET /svc-portal/framework/releases/download/v2.1.0/svc-framework-2.1.0.zip", () => ({
      status: 200,
      body: frameworkZip,
    }));
    const result = await runCli(["sync", "releases"], project.root, env(api));
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    api.assertDone();
    const manager = JSON.parse(project.read("site/api/v1/manager/latest.json"));
    expect(manager).toMatchObject({
      version: "1.4.0",
      artifactStatus: "published",
      downloadEnabled: true,
      assetName: "svc-manager-1.4.0.zip",
      downloadUrl: "https://github.com/svc-portal/manager/releases/download/v1.4.0/svc-manager-1.4.0.zip",
      permalinkUrl: "https://github.com/svc-portal/manager/releases/latest/download/svc-manager-1.4.0.zip",
      sha256: sha(managerZip),
      packageSizeBytes: managerZip.length,
    });
    const framework = JSON.parse(project.read("site/api/v1/framework/latest.json"));
    expect(framework).toMatchObject({
      version: "2.1.0",
      downloadEnabled: true,
      packageUrl: `${project.config.baseUrl}/downloads/framework/2.1.0/svc-framework-2.1.0.zip`,
      sha256: sha(frameworkZip),
      packageSizeBytes: frameworkZip.length,
    });
    expect(
      readFileSync(join(project.root, "site/downloads/framework/2.1.0/svc-framework-2.1.0.zip")).equals(
        frameworkZip,
      ),
    ).toBe(true);
    expect(JSON.parse(project.read("records/manager.json")).sha256).toBe(sha(managerZip));
    expect((await runCli(["check"], project.root)).code).toBe(0);

    // A second run is idempotent: the framework ZIP is already published with the same bytes.
    await api.stop();
    api = await startGitHubServer();
    scriptReleases(api);
    const before = project.snapshot();
    expect((await runCli(["sync", "releases"], project.root, env(api))).code).toBe(0);
    api.assertDone();
    expect(project.snapshot()).toEqual(before);
  });

  it("refuses a framework whose bytes do not match the published digest, writing nothing", async () => {
    project = catalogProject();
    api = await startGitHubServer();
    scriptReleases(api, { frameworkDigest: "b".repeat(64) });
    api.expectRaw("GET /svc-portal/framework/releases/download/v2.1.0/svc-framework-2.1.0.zip", () => ({
      status: 200,
      body: frameworkZip,
    }));
    const before = project.snapshot();
    const result = await runCli(["sync", "releases"], project.root, env(api));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/differs from the published digest b{64}/);
    api.assertDone();
    expect(project.snapshot()).toEqual(before);
  });

  it("refuses an asset for which the release publishes no digest", async () => {
    project = catalogProject();
    api = await startGitHubServer();
    api.expect("GET /repos/{owner}/{repo}/releases/latest", () => ({
      status: 200,
      body: githubRelease({
        id: 1,
        tag: "v1.4.0",
        repo: "svc-portal/manager",
        assets: [
          releaseAsset({
            id: 11,
            name: "svc-manager-1.4.0.zip",
            size: 10,
            repo: "svc-portal/manager",
            tag: "v1.4.0",
          }),
        ],
      }),
    }));
    const before = project.snapshot();
    const result = await runCli(["sync", "releases"], project.root, env(api));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/publishes no digest for svc-manager-1\.4\.0\.zip/);
    api.assertDone();
    expect(project.snapshot()).toEqual(before);
  });

  it("refreshes game builds from the framework release; the catalog's supportedGameBuilds follows", async () => {
    project = catalogProject();
    api = await startGitHubServer();
    const matrix = Buffer.from(
      JSON.stringify({
        builds: [
          { buildId: "17000000", manifestIds: ["5871003498571652123"], validationStatus: "validated" },
          {
            buildId: "17100000",
            manifestIds: ["6000000000000000001"],
            validationStatus: "validated",
            label: "Winter patch",
          },
          { buildId: "16900000", manifestIds: [], validationStatus: "incompatible" },
        ],
      }),
    );
    api.expect("GET /repos/{owner}/{repo}/releases/latest", () => ({
      status: 200,
      body: githubRelease({
        id: 2,
        tag: "v2.1.0",
        repo: "svc-portal/framework",
        assets: [
          releaseAsset({
            id: 23,
            name: "game-builds.json",
            size: matrix.length,
            repo: "svc-portal/framework",
            tag: "v2.1.0",
            digest: `sha256:${sha(matrix)}`,
          }),
        ],
      }),
    }));
    api.expectRaw("GET /svc-portal/framework/releases/download/v2.1.0/game-builds.json", () => ({
      status: 200,
      body: matrix,
    }));
    const result = await runCli(["sync", "game-builds"], project.root, env(api));
    expect(result.stderr).toBe("");
    expect(result.stdout).toMatch(/supported: 17000000, 17100000/);
    api.assertDone();
    expect(JSON.parse(project.read("site/api/v1/catalog.json")).supportedGameBuilds).toEqual([
      "17000000",
      "17100000",
    ]);
    expect(JSON.parse(project.read("site/api/v1/game-builds/latest.json")).builds).toHaveLength(3);
    expect((await runCli(["check"], project.root)).code).toBe(0);
  });
});
