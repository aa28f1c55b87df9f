// Issue 25, item 4: `svc fetch` keeps its trusted metadata and downloads in the per-user cache
// ($XDG_CACHE_HOME/svc, else ~/.cache/svc), never in the folder it was run from.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/run-cli.ts";
import { signedPortal, treeHashes } from "./support.ts";

describe("svc fetch's cache is the player's, not the current folder's (issue 25)", () => {
  let portal: Awaited<ReturnType<typeof signedPortal>>;
  let area: string;
  beforeAll(async () => {
    portal = await signedPortal();
    await portal.publish({ version: "1.0.0" });
  });
  afterEach(() => rmSync(area, { recursive: true, force: true }));
  afterAll(() => portal.close());

  const fetch = (cwd: string, env: NodeJS.ProcessEnv) =>
    runCli(
      [
        "fetch",
        "better-hud",
        "--out",
        "zips",
        "--mirror",
        portal.mirror.origin,
        "--trusted-root",
        portal.trustedRoot,
      ],
      cwd,
      env,
    );

  it("writes under $XDG_CACHE_HOME/svc and leaves the current folder with only the ZIP", async () => {
    area = mkdtempSync(join(tmpdir(), "svc-fetch-cache-"));
    const cwd = join(area, "work");
    mkdirSync(cwd);
    const result = await fetch(cwd, { XDG_CACHE_HOME: join(area, "xdg"), HOME: join(area, "home") });
    expect(result.code, result.stderr).toBe(0);
    expect(readdirSync(cwd)).toEqual(["zips"]);
    expect(readdirSync(join(cwd, "zips"))).toEqual(["better-hud-1.0.0.zip"]);
    const cached = [...treeHashes(join(area, "xdg", "svc")).keys()];
    expect(cached.some((p) => p.endsWith(join("metadata", "root.json")))).toBe(true);
    expect(cached.some((p) => p.includes(join("packages", "")))).toBe(true);
    expect(existsSync(join(area, "home"))).toBe(false);
  });

  it("falls back to ~/.cache/svc, and a second run reads the package from there", async () => {
    area = mkdtempSync(join(tmpdir(), "svc-fetch-cache-"));
    const cwd = join(area, "work");
    mkdirSync(cwd);
    const env = { HOME: join(area, "home") };
    expect((await fetch(cwd, env)).code).toBe(0);
    const before = portal.mirror.requests.length;
    const again = await fetch(cwd, env);
    expect(again.code, again.stderr).toBe(0);
    expect(portal.mirror.requests.slice(before).filter((r) => r.path.startsWith("downloads/"))).toEqual([]);
    expect(readdirSync(cwd)).toEqual(["zips"]);
    expect(readdirSync(join(area, "home", ".cache", "svc"))).toHaveLength(1);
    expect(readFileSync(join(cwd, "zips", "better-hud-1.0.0.zip")).length).toBeGreaterThan(0);
  });

  it("names the variables when there is no per-user folder to use (usage error)", async () => {
    area = mkdtempSync(join(tmpdir(), "svc-fetch-cache-"));
    const result = await fetch(area, {});
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("XDG_CACHE_HOME");
    expect(result.stderr).toContain("--cache");
    expect(readdirSync(area)).toEqual([]);
  });
});
