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
import { githubRelease, releaseAsset } from "../support/github-fixtures.ts";
import { type GitHubServer, startGitHubServer } from "../support/github-server.ts";

let api: GitHubServer;
let project: CatalogProject | undefined;
afterEach(async () => {
  await api?.stop();
  project?.cleanup();
  project = undefined;
});

const REPO = "svc-portal/mods";
const NOT_FOUND = {
  status: 404,
  body: { message: "Not Found", documentation_url: "https://docs.github.com/rest" },
};

function store(server: GitHubServer) {
  // The store's expected 404s (no release yet) would otherwise be logged by Octokit as errors.
  const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  const octokit = new Octokit({ auth: "test-token", baseUrl: server.url, log: quiet });
  return githubReleaseArtifactStore({ octokit, repository: REPO, downloadBaseUrl: "https://github.com" });
}

const KEY = { modId: "better-hud", version: "1.0.0", fileName: "better-hud-1.0.0.zip" };

/** Scripts the calls of a promotion into a new draft; returns what GitHub "stored". */
function expectPromotion(
  server: GitHubServer,
  tag: string,
  options: { digest?: boolean; corrupt?: boolean; leftoverDrafts?: number } = {},
) {
  const stored: { bytes?: Buffer } = {};
  server.expect("GET /repos/{owner}/{repo}/releases/tags/{tag}", () => NOT_FOUND);
  server.expect("GET /repos/{owner}/{repo}/git/ref/{ref}", () => NOT_FOUND);
  const leftovers = Array.from({ length: options.leftoverDrafts ?? 0 }, (_, i) => ({
    ...githubRelease({ id: 50 + i, tag, repo: REPO }),
    draft: true,
    published_at: null,
  }));
  server.expect("GET /repos/{owner}/{repo}/releases", () => ({
    status: 200,
    body: [githubRelease({ id: 3, tag: "other-mod-v1.0.0", repo: REPO }), ...leftovers],
  }));
  if (leftovers.length > 0)
    server.expect(
      "DELETE /repos/{owner}/{repo}/releases/{release_id}",
      (req) => {
        expect(Number(req.params.release_id)).toBeGreaterThanOrEqual(50);
        return { status: 204 };
      },
      leftovers.length,
    );
  server.expect("POST /repos/{owner}/{repo}/releases", (req) => {
    // A draft: with immutable releases, assets can only be added before publication.
    expect(req.body).toMatchObject({ tag_name: tag, draft: true });
    return {
      status: 201,
      body: {
        ...githubRelease({ id: 7, tag, repo: REPO, apiUrl: server.url, uploadUrl: server.url }),
        draft: true,
      },
    };
  });
  server.expect("POST /repos/{owner}/{repo}/releases/{release_id}/assets", (req) => {
    stored.bytes = req.bytes;
    const sha = createHash("sha256").update(req.bytes).digest("hex");
    return {
      status: 201,
      body: releaseAsset({
        id: 70,
        name: req.query.get("name")!,
        size: req.bytes.length,
        repo: REPO,
        tag,
        ...(options.digest ? { digest: `sha256:${sha}` } : {}),
      }),
    };
  });
  expectAssetDownload(server, 70, () => {
    const bytes = Buffer.from(stored.bytes!);
    if (options.corrupt) bytes[0] = (bytes[0] ?? 0) ^ 1;
    return bytes;
  });
  return stored;
}

function expectAssetDownload(server: GitHubServer, id: number, bytes: () => Buffer) {
  server.expect("GET /repos/{owner}/{repo}/releases/assets/{asset_id}", (req) => {
    expect(req.headers.accept).toBe("application/octet-stream");
    return { status: 302, headers: { location: `${server.url}/blob/${id}` } };
  });
  server.expectRaw(`GET /blob/${id}`, () => ({
    status: 200,
    body: bytes(),
    headers: { "content-type": "application/octet-stream" },
  }));
}

function expectPublishDraft(server: GitHubServer, tag: string) {
  server.expect("PATCH /repos/{owner}/{repo}/releases/{release_id}", (req) => {
    expect(req.params.release_id).toBe("7");
    expect(req.body).toEqual({ draft: false, make_latest: "false" });
    return { status: 200, body: githubRelease({ id: 7, tag, repo: REPO }) };
  });
}

describe("GitHub releases artifact store (against GitHub's OpenAPI description)", () => {
  it("uploads into a draft, downloads the asset back and hashes it; finish() publishes the draft", async () => {
    api = await startGitHubServer();
    const stored = expectPromotion(api, "better-hud-v1.0.0", { digest: true });
    const bytes = Buffer.from("PK\u0005\u0006 not really a zip but bytes");
    const promoted = await store(api).promote(KEY, bytes);
    expect(stored.bytes?.equals(bytes)).toBe(true);
    expect(promoted).toMatchObject({
      url: `https://github.com/${REPO}/releases/download/better-hud-v1.0.0/better-hud-1.0.0.zip`,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      sizeBytes: bytes.length,
    });
    expect(promoted.files.size).toBe(0);
    // Nothing is public until the publisher has committed.
    expect(
      api.recorded.some((r) => r.operation === "PATCH /repos/{owner}/{repo}/releases/{release_id}"),
    ).toBe(false);
    expectPublishDraft(api, "better-hud-v1.0.0");
    await promoted.finish();
    api.assertDone();
  });

  it("deletes drafts of the same tag that a cancelled run left before making a new one", async () => {
    api = await startGitHubServer();
    expectPromotion(api, "better-hud-v1.0.0", { leftoverDrafts: 2 });
    await store(api).promote(KEY, Buffer.from("bytes"));
    api.assertDone();
  });

  it("adopts a published release that holds exactly these bytes (a run cancelled before its commit): no new release", async () => {
    api = await startGitHubServer();
    const bytes = Buffer.from("the very same package bytes");
    const sha = createHash("sha256").update(bytes).digest("hex");
    api.expect("GET /repos/{owner}/{repo}/releases/tags/{tag}", () => ({
      status: 200,
      body: githubRelease({
        id: 3,
        tag: "better-hud-v1.0.0",
        repo: REPO,
        assets: [
          releaseAsset({
            id: 31,
            name: KEY.fileName,
            size: bytes.length,
            repo: REPO,
            tag: "better-hud-v1.0.0",
            digest: `sha256:${sha}`,
          }),
        ],
      }),
    }));
    expectAssetDownload(api, 31, () => bytes);
    const promoted = await store(api).promote(KEY, bytes);
    expect(promoted).toMatchObject({ sha256: sha, sizeBytes: bytes.length });
    await promoted.finish();
    await promoted.abort();
    api.assertDone();
  });

  it("refuses (artifact_exists) a published release with other bytes, another asset, or only the tag", async () => {
    const bytes = Buffer.from("new bytes");
    const releases = [
      [
        releaseAsset({
          id: 31,
          name: KEY.fileName,
          size: 3,
          repo: REPO,
          tag: "better-hud-v1.0.0",
          digest: `sha256:${"e".repeat(64)}`,
        }),
      ],
      [releaseAsset({ id: 32, name: "other.zip", size: 3, repo: REPO, tag: "better-hud-v1.0.0" })],
    ];
    for (const assets of releases) {
      api = await startGitHubServer();
      api.expect("GET /repos/{owner}/{repo}/releases/tags/{tag}", () => ({
        status: 200,
        body: githubRelease({ id: 3, tag: "better-hud-v1.0.0", repo: REPO, assets }),
      }));
      const error = await store(api)
        .promote(KEY, bytes)
        .catch((e: unknown) => e);
      expect((error as SvcError).code).toBe("artifact_exists");
      api.assertDone();
      await api.stop();
    }

    api = await startGitHubServer();
    const tag = "better-hud-v1.0.0";
    api.expect("GET /repos/{owner}/{repo}/releases/tags/{tag}", () => NOT_FOUND, 2);
    api.expect(
      "GET /repos/{owner}/{repo}/git/ref/{ref}",
      (req) => {
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
      2,
    );
    expect(await store(api).exists(KEY)).toBe(true);
    const error = await store(api)
      .promote(KEY, bytes)
      .catch((e: unknown) => e);
    expect((error as SvcError).code).toBe("artifact_exists");
    api.assertDone();
  });

  it("deletes the draft (never a published release) when the bytes read back differ", async () => {
    api = await startGitHubServer();
    expectPromotion(api, "better-hud-v1.0.0", { digest: true, corrupt: true });
    api.expect("DELETE /repos/{owner}/{repo}/releases/{release_id}", (req) => {
      expect(req.params.release_id).toBe("7");
      return { status: 204 };
    });
    await expect(store(api).promote(KEY, Buffer.from("some package bytes"))).rejects.toThrow(/digest/);
    api.assertDone();
  });

  it("serves the publisher: the record carries the release asset URL, the release is published after the commit; a failed commit deletes the draft", async () => {
    api = await startGitHubServer();
    project = catalogProject();
    expectPromotion(api, "better-hud-v1.0.0");
    expectPublishDraft(api, "better-hud-v1.0.0");
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

    // An injected failure in the local commit: the draft just made is deleted; nothing was published.
    await api.stop();
    api = await startGitHubServer();
    expectPromotion(api, "better-hud-v1.1.0");
    api.expect("DELETE /repos/{owner}/{repo}/releases/{release_id}", () => ({ status: 204 }));
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
    expect(
      api.recorded.some((r) => r.operation === "PATCH /repos/{owner}/{repo}/releases/{release_id}"),
    ).toBe(false);
    api.assertDone();
  });

  it("reports requests GitHub's description does not allow", async () => {
    api = await startGitHubServer();
    const octokit = new Octokit({ baseUrl: api.url });
    await octokit
      .request("POST /repos/{owner}/{repo}/releases", { owner: "a", repo: "b", draft: "yes" } as never)
      .catch(() => {});
    await octokit.request("GET /not/an/endpoint").catch(() => {});
    expect(() => api.assertDone()).toThrow(/tag_name|draft[\s\S]*not an operation/);
  });
});
