/**
 * sync.yml's commit path: actions/sync with push=true, from its committed bundle, puts the framework
 * ZIP into a release of the portal (never into git) and pushes records/ and site/ to the protected
 * default branch with the app's installation token, through the same code as publication; a second
 * run changes nothing.
 */
import { createHash, generateKeyPairSync } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { runAction } from "../support/action-runner.ts";
import { githubRelease, releaseAsset } from "../support/github-fixtures.ts";
import { BOT_LOGIN } from "../support/github-repository.ts";
import { writeZip } from "../support/zip.ts";
import {
  type PublishScenario,
  REPOSITORY,
  startPublishScenario,
  WORKFLOW_TOKEN,
} from "../support/publish-scenario.ts";

// Each test runs the bundle several times, as a runner would; the bound guards a hang, not speed.
const RUNS_TIMEOUT = 120_000;

let scenario: PublishScenario | undefined;
afterEach(async () => {
  await scenario?.stop();
  scenario = undefined;
});
async function start(): Promise<PublishScenario> {
  scenario = await startPublishScenario();
  return scenario;
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
const appKey = generateKeyPairSync("rsa", { modulusLength: 2048 })
  .privateKey.export({ type: "pkcs1", format: "pem" })
  .toString();
const managerZip = writeZip([{ name: "Manager.exe", data: "manager build 1.4.0".repeat(100) }]);
const frameworkZip = writeZip([
  { name: "Binaries/Win64/svc-framework.dll", data: "framework 2.1.0".repeat(100) },
]);
const matrix = Buffer.from(
  JSON.stringify({
    builds: [{ buildId: "17000000", manifestIds: ["5871003498571652123"], validationStatus: "validated" }],
  }),
);

/** The manager and framework repositories' latest releases, and their downloads. */
function upstreamReleases(s: PublishScenario) {
  const asset = (id: number, name: string, bytes: Buffer, repo: string, tag: string) =>
    releaseAsset({ id, name, size: bytes.length, repo, tag, digest: `sha256:${sha256(bytes)}` });
  s.github.expect(
    "GET /repos/{owner}/{repo}/releases/latest",
    (req) =>
      req.params.repo === "manager"
        ? {
            status: 200,
            body: githubRelease({
              id: 1,
              tag: "v1.4.0",
              repo: "svc-portal/manager",
              assets: [asset(11, "svc-manager-1.4.0.zip", managerZip, "svc-portal/manager", "v1.4.0")],
            }),
          }
        : {
            status: 200,
            body: githubRelease({
              id: 2,
              tag: "v2.1.0",
              repo: "svc-portal/framework",
              assets: [
                asset(21, "svc-framework-2.1.0.zip", frameworkZip, "svc-portal/framework", "v2.1.0"),
                asset(22, "game-builds.json", matrix, "svc-portal/framework", "v2.1.0"),
              ],
            }),
          },
    Number.POSITIVE_INFINITY,
  );
  const serve = (path: string, body: Buffer) =>
    s.github.expectRaw(
      `GET ${path}`,
      () => ({ status: 200, body, headers: { "content-type": "application/octet-stream" } }),
      Number.POSITIVE_INFINITY,
    );
  serve("/svc-portal/manager/releases/latest/download/svc-manager-1.4.0.zip", managerZip);
  serve("/svc-portal/framework/releases/download/v2.1.0/svc-framework-2.1.0.zip", frameworkZip);
  serve("/svc-portal/framework/releases/download/v2.1.0/game-builds.json", matrix);
}

async function runSync(s: PublishScenario, workspace: string) {
  return runAction("sync", {
    workspace,
    eventName: "schedule",
    event: { schedule: "17 */6 * * *" },
    env: {
      HOME: s.dir,
      GITHUB_REPOSITORY: REPOSITORY,
      GITHUB_API_URL: s.github.url,
      GITHUB_REF: "refs/heads/main",
      SVC_GITHUB_DOWNLOAD_URL: s.github.url,
    },
    inputs: {
      "github-token": WORKFLOW_TOKEN,
      targets: "releases game-builds",
      push: "true",
      "app-id": "4242",
      "app-private-key": appKey,
    },
  });
}

describe("actions/sync with push=true (sync.yml)", { timeout: RUNS_TIMEOUT }, () => {
  it("puts the framework ZIP in a release of the portal, pushes records and site with the app token; a second run changes nothing", async () => {
    const s = await start();
    upstreamReleases(s);
    const before = s.remote.head();
    const result = await runSync(s, await s.checkout());
    expect(result.code, result.stdout).toBe(0);
    s.github.assertDone();
    expect(result.outputs).toMatchObject({ changed: "true", failed: "", commit: s.remote.head() });
    expect(s.remote.accepted()).toEqual([
      { login: BOT_LOGIN, ref: "refs/heads/main", before, after: s.remote.head() },
    ]);
    const release = s.world.published("framework_v2.1.0");
    expect(release?.assets.map((a) => a.name)).toEqual(["svc-framework-2.1.0.zip"]);
    expect(release?.assets[0]?.bytes.equals(frameworkZip)).toBe(true);
    const framework = JSON.parse(s.remote.show("records/framework.json")!.toString("utf8"));
    expect(framework).toMatchObject({
      version: "2.1.0",
      url: `https://github.com/${REPOSITORY}/releases/download/framework_v2.1.0/svc-framework-2.1.0.zip`,
      sha256: sha256(frameworkZip),
    });
    expect(s.remote.files().filter((f) => f.endsWith(".zip") || f.startsWith("site/downloads/"))).toEqual([]);
    expect(s.world.tokenRequests).toEqual([{ repositories: ["mods"], permissions: { contents: "write" } }]);

    const head = s.remote.head();
    const again = await runSync(s, await s.checkout());
    expect(again.code, again.stdout).toBe(0);
    s.github.assertDone();
    expect(again.outputs).toMatchObject({ changed: "false", commit: "" });
    expect(s.remote.head()).toBe(head);
    expect(s.world.releases).toHaveLength(1);
  });
});
