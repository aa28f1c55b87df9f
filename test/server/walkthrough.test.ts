import { type ChildProcess, execFile, spawn } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { resolvePort } from "../../src/cli/dev-portal.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { runCli } from "../support/run-cli.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";

/** The fenced sh blocks of one README section, verbatim. */
function readmeBlocks(heading: string): string[] {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const start = readme.indexOf(`\n## ${heading}\n`);
  if (start < 0) throw new Error(`README.md has no section "${heading}"`);
  const end = readme.indexOf("\n## ", start + 4);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

interface ServeProcess {
  child: ChildProcess;
  port: number;
  origin: string;
  stdout: () => string;
  stop: () => Promise<number | null>;
}

/** `svc serve --dev` (what npm start runs) as its own process, on a port the test chose. */
async function startServeProcess(
  root: string,
  port: number,
  env: NodeJS.ProcessEnv,
  extra: string[] = [],
): Promise<ServeProcess> {
  const child = spawn(
    process.execPath,
    [join(REPO_ROOT, "bin/svc.js"), "serve", "--dev", "--root", root, ...extra],
    {
      cwd: REPO_ROOT,
      env: { ...env, PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
  });
  const deadline = Date.now() + 60_000;
  // The example line comes last: the portal is serving and the example is settled.
  while (!/\n {2}example {5}/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`svc serve did not start:\n${out}\n${err}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    port,
    origin: `http://127.0.0.1:${port}`,
    stdout: () => out,
    // Ctrl-C, as a person stops npm start.
    stop: () =>
      new Promise((resolve) => {
        child.once("exit", (code) => resolve(code));
        child.kill("SIGINT");
      }),
  };
}

function bash(
  script: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      "bash",
      ["-c", `set -eo pipefail\n${script}`],
      { cwd: REPO_ROOT, env, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

/** A fresh clone's portal: the repository's configuration (baseUrl on port 8787), no records, no site. */
function freshPortal(): string {
  const root = mkdtempSync(join(tmpdir(), "svc-walkthrough-"));
  cpSync(join(REPO_ROOT, "portal.config.json"), join(root, "portal.config.json"));
  cpSync(join(REPO_ROOT, "pulls-template"), join(root, "pulls-template"), { recursive: true });
  mkdirSync(join(root, "site"));
  return root;
}

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))("the README walkthrough on a non-default port", () => {
  let root = "";
  let env: NodeJS.ProcessEnv = {};
  let portal: ServeProcess | null = null;
  beforeAll(() => {
    root = freshPortal();
    const db = makeSignatureDatabase(join(root, "clamav"));
    // Only what the README sets: the machine's own SVC_* settings must not leak in.
    env = Object.fromEntries(
      Object.entries(process.env).filter(([k]) => !k.startsWith("SVC_") && k !== "PORT"),
    );
    Object.assign(env, {
      SVC_BOOTSTRAP_ADMIN_EMAILS: "admin@example.com",
      SVC_CLAMSCAN: clamscanPath!,
      SVC_CLAMAV_DATABASE: db,
    });
  });
  afterAll(async () => {
    if (portal && portal.child.exitCode === null) await portal.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("passes verbatim: example on start, upload, validation, review, publication, download and its sha256, smoke", async () => {
    let port = await resolvePort("127.0.0.1", 0);
    if (port === 8787) port = await resolvePort("127.0.0.1", 0);
    portal = await startServeProcess(root, port, env);
    const banner = portal.stdout();
    expect(banner).toContain(`svc portal on ${portal.origin}`);
    expect(banner).toContain(`  base URL    ${portal.origin}  (dev: follows the listening port;`);
    expect(banner).toContain(
      `  example     published example-mod@1.0.0 from pulls-template/example-mod (svc pack, then the importer's checks): ${portal.origin}/mods/example-mod/`,
    );

    // "Try it": every route answers on this port, also without .json.
    const [tryIt] = readmeBlocks("The two commands").filter((b) => b.includes("curl"));
    const routes = [...tryIt!.matchAll(/\$B(\/\S+)/g)].map((m) => m[1]!);
    expect(routes).toContain("/api/v1/game-builds/latest");
    for (const route of routes) expect((await fetch(`${portal.origin}${route}`)).status, route).toBe(200);

    const [start, walkthrough] = readmeBlocks("From upload to download, with curl");
    expect(start).toContain("npm start");
    const run = await bash(walkthrough!, { ...env, PORT: String(port) });
    expect(run.stderr).not.toMatch(/rate_limit_exceeded|internal error/);
    expect(run.code, `${run.stdout}\n${run.stderr}`).toBe(0);
    expect(run.stdout).toContain('"state": "pending_review"');
    expect(run.stdout).toMatch(/etag: "[0-9a-f]{64}"/);
    expect(run.stdout).toMatch(/\/mod\.zip: OK\n/);
    expect(run.stdout).toMatch(
      /svc smoke http:\/\/127\.0\.0\.1:\d+: PASSED — routes \d+\/\d+ ok, artifacts 2\/2 ok/,
    );
    // The new version kept the example's page (issue 25 item 4): svc new started from 1.0.0.
    const example = JSON.parse(
      readFileSync(join(REPO_ROOT, "pulls-template/submissions/example-mod/1.0.0.json"), "utf8"),
    );
    const detail = (await (await fetch(`${portal.origin}/api/v1/mods/example-mod`)).json()) as {
      latestVersion: string;
      description: string;
    };
    expect(detail.latestVersion).not.toBe("1.0.0");
    expect(detail).toMatchObject({
      summary: example.summary,
      description: example.description,
      authors: example.authors,
      tags: example.tags ?? [],
      links: example.links ?? {},
      license: example.license ?? null,
    });
    expect(detail.description).not.toBe("");

    // The walkthrough signed up three accounts; a second run soon after meets the per-IP limit,
    // and the refusal says how to reset it.
    let refusal: { code?: string; message?: string } = {};
    for (let i = 0; i < 5 && refusal.code !== "rate_limit_exceeded"; i++) {
      const response = await fetch(`${portal.origin}/api/v1/accounts`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: `again${i}@example.com`, displayName: "again", role: "player" }),
      });
      refusal = (await response.json()) as typeof refusal;
    }
    expect(refusal.code).toBe("rate_limit_exceeded");
    expect(refusal.message).toContain("npm start -- --reset-limits");

    // Ctrl-C: the site goes back to portal.config.json's base, so the tree passes svc check.
    expect(await portal.stop()).toBe(0);
    const catalog = JSON.parse(readFileSync(join(root, "site/api/v1/catalog.json"), "utf8")) as {
      baseUrl: string;
    };
    expect(catalog.baseUrl).toBe("http://127.0.0.1:8787");
    const check = await runCli(["check", "--root", root], REPO_ROOT);
    expect(check.stderr).toBe("");
    expect(check.code).toBe(0);
  }, 180_000);
});
