import { createHash } from "node:crypto";
import { Octokit } from "@octokit/rest";
import { afterEach, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import type { SvcError } from "../../src/errors.ts";
import { githubReleaseArtifactStore } from "../../src/github/release-artifact-store.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import {
  type GitHubApiServer,
  githubRelease,
  releaseAsset,
  startGitHubApi,
} from "../support/github-openapi-server.ts";

let api: GitHubApiServer;
let project: CatalogProject | undefined;
afterEach(async () => {
  await api?.close();
  project?.cleanup();
  project = undefined;
});

const REPO = "svc-portal/mods";
const NOT_FOUND = {
  status: 404,
  body: { message: "Not Found", documentation_url: "https://docs.github.com/rest" },
};

function store(server: GitHubApiServer) {
  const octokit = new Octokit({ auth: "test-token", baseUrl: server.url });
  return githubReleaseArtifactStore({ octokit, repository: REPO, downloadBaseUrl: "https://github.com" });
}

/** Scripts the calls of a successful promotion; returns what GitHub "stored". */
function expectPromotion(
  server: GitHubApiServer,
  tag: string,
  options: { digest?: boolean; corrupt?: boolean } = {},
) {
  const stored: { bytes?: Buffer } = {};
  server.expect({ route: "GET /repos/{owner}/{repo}/releases/tags/{tag}", reply: () => NOT_FOUND });
  server.expect({ route: "GET /repos/{owner}/{repo}/git/ref/{ref}", reply: () => NOT_FOUND });
  server.expect({
    route: "POST /repos/{owner}/{repo}/releases",
    reply: (req) => {
      expect(req.json).toMatchObject({ tag_name: tag, draft: false });
      return {
        status: 201,
        body: githubRelease({ id: 7, tag, repo: REPO, apiUrl: server.url, uploadUrl: server.url }),
      };
    },
  });
  server.expect({
    route: "POST /repos/{owner}/{repo}/releases/{release_id}/assets",
    reply: (req) => {
      stored.bytes = req.body;
      const sha = createHash("sha256").update(req.body).digest("hex");
      return {
        status: 201,
        body: releaseAsset({
          id: 70,
          name: req.query.name!,
          size: req.body.length,
          repo: REPO,
          tag,
          ...(options.digest ? { digest: `sha256:${sha}` } : {}),
        }),
      };
    },
  });
  server.expect({
    route: "GET /repos/{owner}/{repo}/releases/assets/{asset_id}",
    reply: (req) => {
      expect(req.headers.accept).toBe("application/octet-stream");
      return { status: 302, headers: { location: `${server.url}/blob/70` } };
    },
  });
  server.expect({
    route: "GET /blob/70",
    raw: true,
    reply: () => {
      const bytes = Buffer.from(stored.bytes!);
      if (options.corrupt) bytes[0] = (bytes[0] ?? 0) ^ 1;
      return { status: 200, body: bytes, headers: { "content-type": "application/octet-stream" } };
    },
  });
  return stored;
}

describe("GitHub releases artifact store (against GitHub's OpenAPI description)", () => {
  it("creates one release per version, uploads, downloads the asset back and hashes it", async () => {
    api = await startGitHubApi();
    const stored = expectPromotion(api, "better-hud-v1.0.0", { digest: true });
    const bytes = Buffer.from("PK\u0005\u0006 not really a zip but bytes");
    const promoted = await store(api).promote(
      { modId: "better-hud", version: "1.0.0", fileName: "better-hud-1.0.0.zip" },
      bytes,
    );
    expect(stored.bytes?.equals(bytes)).toBe(true);
    expect(promoted).toMatchObject({
      url: `https://github.com/${REPO}/releases/download/better-hud-v1.0.0/better-hud-1.0.0.zip`,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      sizeBytes: bytes.length,
    });
    expect(promoted.files.size).toBe(0);
    api.assertDone();
  });

  it("refuses when the release or only the tag already exists (artifact_exists)", async () => {
    api = await startGitHubApi();
    const tag = "better-hud-v1.0.0";
    api.expect({
      route: "GET /repos/{owner}/{repo}/releases/tags/{tag}",
      reply: () => ({ status: 200, body: githubRelease({ id: 3, tag, repo: REPO }) }),
    });
    const key = { modId: "better-hud", version: "1.0.0", fileName: "better-hud-1.0.0.zip" };
    const error = await store(api)
      .promote(key, Buffer.from("x"))
      .catch((e: unknown) => e);
    expect((error as SvcError).code).toBe("artifact_exists");
    api.assertDone();

    await api.close();
    api = await startGitHubApi();
    api.expect({ route: "GET /repos/{owner}/{repo}/releases/tags/{tag}", reply: () => NOT_FOUND });
    api.expect({
      route: "GET /repos/{owner}/{repo}/git/ref/{ref}",
      reply: (req) => {
        expect(req.params.ref).toBe(`tags/${tag}`);
        return {
          status: 200,
          body: {
            ref: `refs/tags/${tag}`,
            node_id: "REF_1",
            url: `https://api.github.com/repos/${REPO}/git/refs/tags/${tag}`,
            object: {
              type: "commit",
              sha: "a".repeat(40),
              url: `https://api.github.com/repos/${REPO}/git/commits/${"a".repeat(40)}`,
            },
          },
        };
      },
    });
    expect(await store(api).exists(key)).toBe(true);
    api.assertDone();
  });

  it("withdraws the release and tag when the bytes read back differ", async () => {
    api = await startGitHubApi();
    expectPromotion(api, "better-hud-v1.0.0", { digest: true, corrupt: true });
    api.expect({
      route: "DELETE /repos/{owner}/{repo}/releases/{release_id}",
      reply: () => ({ status: 204 }),
    });
    api.expect({ route: "DELETE /repos/{owner}/{repo}/git/refs/{ref}", reply: () => ({ status: 204 }) });
    const key = { modId: "better-hud", version: "1.0.0", fileName: "better-hud-1.0.0.zip" };
    await expect(store(api).promote(key, Buffer.from("some package bytes"))).rejects.toThrow(/digest/);
    api.assertDone();
  });

  it("serves the publisher: the record carries the release asset URL; a failed commit withdraws the release", async () => {
    api = await startGitHubApi();
    project = catalogProject();
    expectPromotion(api, "better-hud-v1.0.0");
    const { packageBytes, sidecar } = modRelease();
    const result = await publishRelease(publisherOptions(project, { store: store(api) }), {
      packageBytes,
      sidecar,
      source: { kind: "pull_request", pullRequestUrl: `https://github.com/${REPO}/pull/12` },
    });
    expect(result.record.packageUrl).toBe(
      `https://github.com/${REPO}/releases/download/better-hud-v1.0.0/better-hud-1.0.0.zip`,
    );
    expect(result.record.sha256).toBe(sidecar.package.sha256);
    expect(result.written.some((p) => p.startsWith("site/downloads/"))).toBe(false);
    api.assertDone();

    // An injected failure in the local commit: the release just created is deleted again.
    await api.close();
    api = await startGitHubApi();
    expectPromotion(api, "better-hud-v1.1.0");
    api.expect({
      route: "DELETE /repos/{owner}/{repo}/releases/{release_id}",
      reply: () => ({ status: 204 }),
    });
    api.expect({ route: "DELETE /repos/{owner}/{repo}/git/refs/{ref}", reply: () => ({ status: 204 }) });
    const before = project.snapshot();
    const next = modRelease({ version: "1.1.0" });
    await expect(
      publishRelease(
        publisherOptions(project, {
          store: store(api),
          commit: {
            beforeApply: () => {
              throw new Error("disk full (injected)");
            },
          },
        }),
        { packageBytes: next.packageBytes, sidecar: next.sidecar, source: { kind: "import" } },
      ),
    ).rejects.toThrow(/injected/);
    expect(project.snapshot()).toEqual(before);
    api.assertDone();
  });

  it("reports requests GitHub's description does not allow", async () => {
    api = await startGitHubApi();
    const octokit = new Octokit({ baseUrl: api.url });
    await octokit
      .request("POST /repos/{owner}/{repo}/releases", { owner: "a", repo: "b", draft: "yes" } as never)
      .catch(() => {});
    await octokit.request("GET /not/an/endpoint").catch(() => {});
    expect(() => api.assertDone()).toThrow(/tag_name|draft[\s\S]*not an operation/);
  });
});
