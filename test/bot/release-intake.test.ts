/**
 * Release intake reaches modders. The portal app is private with write rights on the portal;
 * modders install a separate public app whose only rights are contents: read and metadata: read,
 * and which hears only `release`. Its webhooks (real release.published payloads)
 * reach the same deployment on their own route and secret, and the submission pull request is
 * opened with the portal app's installation token.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeZip } from "../support/zip.ts";
import { type BotHarness, startBot, WEBHOOK_SECRET } from "../support/bot-harness.ts";
import { type GitHubServer, maskSeals } from "../support/github-server.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { sidecar } from "../support/submission-fixtures.ts";
import { examplePayload } from "../support/webhook-payloads.ts";
import { ownersPath } from "../support/records.ts";

const SCENARIOS = new URL("./scenarios/", import.meta.url).pathname;

interface Manifest {
  public: boolean;
  hook_attributes: { url: string };
  default_permissions: Record<string, string>;
  default_events: string[];
}
const manifest = (file: string) => parse(readFileSync(join(REPO_ROOT, file), "utf8")) as Manifest;

describe("the app manifests", () => {
  it("the intake app is public, read-only and hears only release, on its own route", () => {
    const intake = manifest("app-intake.yml");
    expect(intake.public).toBe(true);
    expect(intake.default_permissions).toEqual({ contents: "read", metadata: "read" });
    expect(intake.default_events).toEqual(["release"]);
    expect(new URL(intake.hook_attributes.url).pathname).toBe("/api/github/intake");
  });

  it("the portal app keeps the write rights the bot needs on the portal, and no longer hears release", () => {
    const portal = manifest("app.yml");
    expect(portal.default_permissions).toMatchObject({
      checks: "write",
      pull_requests: "write",
      issues: "write",
      contents: "write",
      actions: "write",
      metadata: "read",
    });
    expect(portal.default_events.sort()).toEqual(
      ["issue_comment", "pull_request", "pull_request_review", "workflow_run"].sort(),
    );
    expect(new URL(portal.hook_attributes.url).pathname).toBe("/api/github/webhooks");
  });
});

describe("a release published in a mod repository", () => {
  let bot: BotHarness;
  let github: GitHubServer;
  let zip: Buffer;
  beforeEach(async () => {
    bot = await startBot();
    github = bot.github;
    zip = writeZip([{ name: "svc-mod.json", data: "{}" }]);
  });
  afterEach(async () => {
    await bot.stop();
  });

  function releasePayload(): Record<string, any> {
    const { package: _omit, ...meta } = sidecar();
    const zipUrl = github.serveRaw("/assets/better-hud-1.2.0.zip", (_q, r) => r.writeHead(200).end(zip));
    const metaUrl = github.serveRaw("/assets/svc-release.json", (_q, r) =>
      r.writeHead(200).end(JSON.stringify(meta)),
    );
    const payload = examplePayload("release", "published");
    payload.repository.id = 9002;
    payload.repository.full_name = "modder/better-hud";
    payload.repository.private = false;
    payload.sender.login = "modder";
    const asset = structuredClone(payload.release.assets?.[0] ?? {});
    payload.release.assets = [
      { ...asset, name: "better-hud-1.2.0.zip", browser_download_url: zipUrl, size: zip.length },
      { ...asset, name: "svc-release.json", browser_download_url: metaUrl, size: 10 },
    ];
    return payload;
  }

  /** The portal app finds its installation on the portal (JWT), then acts as that installation. */
  function expectPortalInstallation(): void {
    github.expect("GET /repos/{owner}/{repo}/installation", (req) => {
      expect(req.params).toMatchObject({ owner: "Codertocat", repo: "Hello-World" });
      expect(String(req.headers.authorization)).toMatch(/^bearer ey/i);
      return { body: { id: 2, account: { login: "Codertocat" } } };
    });
  }
  const noPullRequestYet = () =>
    github.expect("GET /repos/{owner}/{repo}/pulls", (req) => {
      expect(req.query.get("head")).toBe("Codertocat:svc/release/9002/better-hud/1.2.0");
      return { body: [] };
    });
  /** The reads before anything is written: the portal's default branch, and no ownership record (or limits) there. */
  const expectReads = (options: { limits: boolean }) => {
    github.expect("GET /repos/{owner}/{repo}", {
      body: { default_branch: "main", full_name: "Codertocat/Hello-World" },
    });
    const read = (path: string) =>
      github.expect("GET /repos/{owner}/{repo}/contents/{path}", (req) => {
        expect(req.params.path).toBe(path);
        return { status: 404, body: { message: "Not Found" } };
      });
    if (options.limits) read("portal.config.json");
    read(ownersPath("better-hud"));
  };

  it("opens the submission PR with the measured sha256 and size, written with the portal's installation token", async () => {
    const payload = releasePayload();
    expectPortalInstallation();
    expectReads({ limits: true });
    noPullRequestYet();
    github.expect("GET /repos/{owner}/{repo}", {
      body: { default_branch: "main", full_name: "Codertocat/Hello-World" },
    });
    github.expect("GET /repos/{owner}/{repo}/git/ref/{ref}", {
      body: { ref: "refs/heads/main", object: { sha: "9".repeat(40), type: "commit" } },
    });
    github.expect("POST /repos/{owner}/{repo}/git/refs", {
      body: { ref: "refs/heads/svc/release/9002/better-hud/1.2.0" },
    });
    github.expect("PUT /repos/{owner}/{repo}/contents/{path}", {
      body: { content: {}, commit: { sha: "c".repeat(40) } },
    });
    github.expect("POST /repos/{owner}/{repo}/pulls", { body: { number: 42 } });
    const from = github.recorded.length;
    const delivered = await bot.deliver("release", payload, { app: "intake" });
    expect(delivered.status).toBe(202);
    github.assertDone();
    const put = github.calls("PUT /repos/{owner}/{repo}/contents/{path}")[0]!;
    expect(put.params.path).toBe("submissions/better-hud/1.2.0.json");
    expect(String(put.headers.authorization)).toBe("token ghs_test_2");
    const written = JSON.parse(
      Buffer.from((put.body as { content: string }).content, "base64").toString("utf8"),
    );
    expect(written.package).toEqual({
      fileName: "better-hud-1.2.0.zip",
      url: payload.release.assets[0].browser_download_url,
      sha256: createHash("sha256").update(zip).digest("hex"),
      sizeBytes: zip.length,
    });
    const sent = github.recorded
      .slice(from)
      .filter((r) => r.method !== "GET" && !r.route.startsWith("/app/"));
    const stable = sent.map((r) => ({
      request: `${r.method} ${r.route}`,
      params: r.params,
      body: r.route.includes("contents") ? "(sidecar, asserted above)" : r.body,
    }));
    await expect(maskSeals(`${JSON.stringify(stable, null, 2)}\n`)).toMatchFileSnapshot(
      `${SCENARIOS}release-intake/01-published.sent.json`,
    );

    // GitHub redelivers the same delivery: recorded once, nothing opened twice.
    const again = await bot.deliver("release", payload, { app: "intake", id: delivered.id });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.text)).toMatchObject({ status: "duplicate" });
    github.assertDone();
  });

  it("a retry after a failure half-way resumes the branch instead of failing on it", async () => {
    const payload = releasePayload();
    expectPortalInstallation();
    expectReads({ limits: true });
    noPullRequestYet();
    github.expect("GET /repos/{owner}/{repo}", {
      body: { default_branch: "main", full_name: "Codertocat/Hello-World" },
    });
    github.expect("GET /repos/{owner}/{repo}/git/ref/{ref}", {
      body: { ref: "refs/heads/main", object: { sha: "9".repeat(40), type: "commit" } },
    });
    github.expect("POST /repos/{owner}/{repo}/git/refs", {
      body: { ref: "refs/heads/svc/release/9002/better-hud/1.2.0" },
    });
    github.expect("PUT /repos/{owner}/{repo}/contents/{path}", {
      status: 502,
      body: { message: "Server Error" },
    });
    // The second attempt: the branch exists now; the release was counted by the first.
    expectReads({ limits: false });
    noPullRequestYet();
    github.expect("GET /repos/{owner}/{repo}", {
      body: { default_branch: "main", full_name: "Codertocat/Hello-World" },
    });
    github.expect("GET /repos/{owner}/{repo}/git/ref/{ref}", {
      body: { ref: "refs/heads/main", object: { sha: "9".repeat(40), type: "commit" } },
    });
    github.expect("POST /repos/{owner}/{repo}/git/refs", {
      status: 422,
      body: { message: "Reference already exists" },
    });
    github.expect("GET /repos/{owner}/{repo}/contents/{path}", {
      status: 404,
      body: { message: "Not Found" },
    });
    github.expect("PUT /repos/{owner}/{repo}/contents/{path}", {
      body: { content: {}, commit: { sha: "c".repeat(40) } },
    });
    noPullRequestYet();
    github.expect("GET /repos/{owner}/{repo}", {
      body: { default_branch: "main", full_name: "Codertocat/Hello-World" },
    });
    github.expect("POST /repos/{owner}/{repo}/pulls", { body: { number: 43 } });
    await bot.deliver("release", payload, { app: "intake" });
    github.assertDone();
    const rows = await bot.store.query<{ state: string; attempts: number; result: string }>(
      "SELECT state, attempts, result FROM github_deliveries",
    );
    expect(rows.rows).toEqual([
      { state: "done", attempts: 2, result: "submission pull request #43 by modder (claims the mod id)" },
    ]);
  });

  it("a private repository's release is not submitted (its package could not be downloaded by anyone else)", async () => {
    const payload = releasePayload();
    payload.repository.private = true;
    expectPortalInstallation();
    await bot.deliver("release", payload, { app: "intake" });
    github.assertDone();
    const rows = await bot.store.query<{ state: string; result: string }>(
      "SELECT state, result FROM github_deliveries",
    );
    expect(rows.rows).toEqual([
      { state: "done", result: expect.stringMatching(/^release_repository_private: /) },
    ]);
  });

  it("is refused when signed with the portal app's secret, and the portal app's route ignores release", async () => {
    const payload = releasePayload();
    const { sign } = await import("@octokit/webhooks-methods");
    const wrong = await sign(WEBHOOK_SECRET, JSON.stringify(payload));
    expect((await bot.deliver("release", payload, { app: "intake", signature: wrong })).status).toBe(400);
    const toPortal = await bot.deliver("release", payload);
    expect(toPortal.status).toBe(200);
    expect(JSON.parse(toPortal.text)).toMatchObject({ status: "ignored" });
    github.assertDone();
    expect(github.recorded).toEqual([]);
  });
});
