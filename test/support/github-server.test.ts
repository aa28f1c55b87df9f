/**
 * The fake GitHub answers as GitHub does: the rate limits a client must back off from (primary: 403
 * or 429 with x-ratelimit-remaining 0 and x-ratelimit-reset; secondary: 403 or 429 with
 * retry-after), which Octokit's throttling plugin reads and retries after; a reply a test names in
 * part is completed from GitHub's example, and one that contradicts the response schema is reported.
 */
import { throttling } from "@octokit/plugin-throttling";
import { Octokit } from "@octokit/rest";
import { afterEach, describe, expect, it } from "vitest";
import { type GitHubServer, startGitHubServer } from "./github-server.ts";

let github: GitHubServer;
afterEach(async () => {
  await github?.stop();
});

const CHECK_RUNS = "POST /repos/{owner}/{repo}/check-runs";
const checkRun = { name: "svc / antivirus_scan", head_sha: "a".repeat(40) };
const post = (path = "/repos/Codertocat/Hello-World/check-runs") =>
  fetch(`${github.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(checkRun),
  });

describe("rate limits", () => {
  it("a secondary limit answers the next requests 429 with retry-after, then the expected call is made", async () => {
    github = await startGitHubServer();
    github.limitNext({ kind: "secondary", status: 429, retryAfterSeconds: 1, count: 2 });
    github.expect(CHECK_RUNS, { body: { id: 7 } });
    for (const _ of [1, 2]) {
      const limited = await post();
      expect(limited.status).toBe(429);
      expect(limited.headers.get("retry-after")).toBe("1");
      expect(((await limited.json()) as { message: string }).message).toMatch(/secondary rate limit/);
    }
    const answered = await post();
    expect(answered.status).toBe(201);
    expect(((await answered.json()) as { id: number }).id).toBe(7);
    github.assertDone();
    expect(github.calls(CHECK_RUNS).map((r) => r.rateLimited)).toEqual([true, true, false]);
  });

  it("a secondary limit may be a 403, and may hold only one operation", async () => {
    github = await startGitHubServer();
    github.limitNext({ kind: "secondary", retryAfterSeconds: 30, route: "GET /repos/{owner}/{repo}" });
    github.expect(CHECK_RUNS, { body: { id: 7 } });
    github.expect("GET /repos/{owner}/{repo}", { body: { full_name: "Codertocat/Hello-World" } });
    expect((await post()).status).toBe(201);
    const limited = await fetch(`${github.url}/repos/Codertocat/Hello-World`);
    expect(limited.status).toBe(403);
    expect(limited.headers.get("retry-after")).toBe("30");
    expect((await fetch(`${github.url}/repos/Codertocat/Hello-World`)).status).toBe(200);
    github.assertDone();
  });

  it("a primary limit answers 403 with x-ratelimit-remaining 0 and the reset time", async () => {
    github = await startGitHubServer();
    github.limitNext({ kind: "primary", resetAfterSeconds: 120 });
    github.expect(CHECK_RUNS, { body: { id: 7 } });
    const now = Math.floor(Date.now() / 1000);
    const limited = await post();
    expect(limited.status).toBe(403);
    expect(limited.headers.get("x-ratelimit-remaining")).toBe("0");
    const reset = Number(limited.headers.get("x-ratelimit-reset"));
    expect(reset).toBeGreaterThanOrEqual(now + 119);
    expect(reset).toBeLessThanOrEqual(now + 121);
    expect(((await limited.json()) as { message: string }).message).toMatch(/rate limit exceeded/);
    expect((await post()).status).toBe(201);
    github.assertDone();
  });

  it("Octokit's throttling plugin waits for retry-after and retries, once per limited answer", async () => {
    github = await startGitHubServer();
    github.limitNext({ kind: "secondary", status: 429, retryAfterSeconds: 1, count: 1 });
    github.limitNext({ kind: "primary", resetAfterSeconds: 1, count: 1 });
    github.expect(CHECK_RUNS, { body: { id: 7 } });
    const waits: Array<[string, number]> = [];
    const api = new (Octokit.plugin(throttling))({
      baseUrl: github.url,
      auth: "ghs_test",
      throttle: {
        onSecondaryRateLimit: (retryAfter: number) => {
          waits.push(["secondary", retryAfter]);
          return true;
        },
        onRateLimit: (retryAfter: number) => {
          waits.push(["primary", retryAfter]);
          return true;
        },
      },
    });
    const started = Date.now();
    const { data } = await api.rest.checks.create({ owner: "Codertocat", repo: "Hello-World", ...checkRun });
    expect(data.id).toBe(7);
    expect(waits.map(([kind]) => kind)).toEqual(["secondary", "primary"]);
    expect(waits[0]![1]).toBe(1);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    github.assertDone();
    expect(github.calls(CHECK_RUNS)).toHaveLength(3);
  });
});

describe("replies", () => {
  it("a reply the test names in part is completed from GitHub's example of that operation", async () => {
    github = await startGitHubServer();
    github.expect(CHECK_RUNS, { body: { id: 7, name: checkRun.name } });
    const reply = (await (await post()).json()) as Record<string, unknown>;
    expect(reply).toMatchObject({ id: 7, name: checkRun.name });
    expect(Object.keys(reply)).toEqual(expect.arrayContaining(["head_sha", "status", "app", "check_suite"]));
    github.assertDone();
  });

  it("a reply that contradicts the response schema, or a status the operation does not document, is a problem", async () => {
    github = await startGitHubServer();
    github.expect(CHECK_RUNS, { body: { id: "seven" } });
    github.expect(CHECK_RUNS, { status: 418, body: {} });
    await post();
    await post();
    expect(() => github.assertDone()).toThrow(
      /reply 201: \/id must be integer[\s\S]*reply status 418 is not documented/,
    );
  });
});
