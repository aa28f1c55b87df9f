import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { checkSignedCatalog } from "../../src/distribution/signature-check.ts";
import { parseOnlineKeys } from "../../src/distribution/tuf-keys.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { startCatalogPortal } from "../support/catalog-portal.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { runSvc, spawnSvc } from "../support/crash.ts";
import { runCli } from "../support/run-cli.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { startMirror } from "./support.ts";

/**
 * Issue 25, item 2: signing that cannot go stale. The README's `svc keys init` + `svc keys sign`,
 * then publications and restarts of a portal started with no SVC_TUF_ONLINE_KEYS: every one signs
 * (the keys `svc keys sign` kept in the data folder), a signed site without keys refuses to publish
 * before committing anything, and a manager and the smoke say which of "not signed yet", "tampered"
 * and "not listed" they met.
 */
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});
const skip = shouldSkip(clamscanPath, "clamscan");
let dbDir = "";
let db = "";
beforeAll(() => {
  dbDir = mkdtempSync(join(tmpdir(), "svc-stale-db-"));
  if (!skip) db = makeSignatureDatabase(dbDir);
});
afterAll(() => rmSync(dbDir, { recursive: true, force: true }));

function outsideDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "svc-stale-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function project(): CatalogProject {
  const p = catalogProject();
  cleanups.push(() => p.cleanup());
  return p;
}

/** `npm start` (svc serve --dev) on a free port, as its own process, without SVC_TUF_ONLINE_KEYS. */
async function startDevPortal(root: string, extra: string[] = []) {
  const { SVC_TUF_ONLINE_KEYS: _keys, ...env } = process.env;
  const child = spawnSvc(["serve", "--dev", "--port", "0", "--root", root, ...extra], {
    cwd: root,
    env: env as Record<string, string>,
  });
  let out = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  let done = false;
  void exited.then(() => {
    done = true;
  });
  const deadline = Date.now() + 60_000;
  // With the example, wait for its publication too (it runs after the banner).
  const ready = extra.includes("--no-example") ? /svc portal on (http:\/\/\S+)/ : /example {5}\S+/;
  while (!ready.test(out)) {
    if (done || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`svc serve --dev did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const origin = /svc portal on (http:\/\/\S+)/.exec(out)![1]!;
  const stop = async () => {
    if (!done) child.kill("SIGTERM");
    return exited;
  };
  cleanups.push(stop);
  return { origin, output: () => out, stop };
}

async function install(request: string, origin: string, root: string) {
  const outside = outsideDir();
  const pinned = join(outside, "root.json");
  writeFileSync(pinned, readFileSync(join(root, "site", "tuf", "1.root.json")));
  return runCli(
    ["install", request, "--dir", join(outside, "game"), "--mirror", origin, "--trusted-root", pinned],
    outside,
  );
}

describe.skipIf(skip)("a portal started as the README says keeps its signed metadata current", () => {
  it("after svc keys init and sign, every publication, restart and stop of the dev portal signs: installs verify", async () => {
    const p = project();
    const keysDir = join(outsideDir(), "keys");
    expect((await runCli(["keys", "init", "--keys", keysDir], p.root)).code).toBe(0);
    const sign = await runCli(["keys", "sign"], p.root, {
      SVC_TUF_ONLINE_KEYS: join(keysDir, "online.keys.json"),
    });
    expect(sign.code, sign.stderr).toBe(0);
    // The local portal's copy of the online keys: beside its database, never in git, private.
    const kept = join(p.root, ".data", "online.keys.json");
    expect(sign.stdout).toContain(kept);
    expect(statSync(kept).mode & 0o077).toBe(0);

    // npm start, no SVC_TUF_ONLINE_KEYS: the site is rebuilt for the port it listens on and the
    // example published through the importer; both signed.
    cpSync(join(REPO_ROOT, "pulls-template"), join(p.root, "pulls-template"), { recursive: true });
    const first = await startDevPortal(p.root);
    const example = await install("example-mod", first.origin, p.root);
    expect(example.code, example.stderr).toBe(0);
    expect(example.stdout).toContain("example-mod@1.0.0");
    const smoke = await runCli(["smoke", "--base-url", first.origin], p.root);
    expect(smoke.code, smoke.stdout).toBe(0);
    expect(smoke.stdout).toMatch(/signature: verified/);

    // Stopping puts the site back for portal.config.json's base: signed too.
    expect(await first.stop()).toBe(0);
    const mirror = await startMirror(p.siteDir);
    cleanups.push(() => mirror.close());
    expect(await checkSignedCatalog(mirror.origin)).toMatchObject({ state: "verified", documents: 3 });

    // svc import with no SVC_TUF_ONLINE_KEYS signs its publication too.
    const { packageBytes, sidecar } = modRelease({ modId: "hud-plus", name: "HUD Plus" });
    writeFileSync(join(p.root, "pkg.zip"), packageBytes);
    writeFileSync(join(p.root, "release.json"), JSON.stringify(sidecar));
    const imported = await runCli(
      ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamscan-db", db],
      p.root,
    );
    expect(imported.code, imported.stderr).toBe(0);
    expect(await checkSignedCatalog(mirror.origin)).toMatchObject({ state: "verified", documents: 5 });

    // And a restart on another port serves a signed site again: both mods install.
    const second = await startDevPortal(p.root, ["--no-example"]);
    for (const request of ["hud-plus", "example-mod"]) {
      const result = await install(request, second.origin, p.root);
      expect(result.code, `${request}: ${result.stderr}`).toBe(0);
      expect(result.stdout).toContain(`${request}@1.0.0`);
    }

    // Keys gone while it runs: it still stops cleanly, leaving the site as served (signed for that port).
    rmSync(kept);
    expect(await second.stop()).toBe(0);
    expect(second.output()).toContain("site/ stays built for the port it was served on");
    expect(await checkSignedCatalog(mirror.origin)).toMatchObject({ state: "verified", documents: 5 });
  }, 240_000);

  it("a signed site whose online keys are missing refuses to publish or serve, naming SVC_TUF_ONLINE_KEYS, and commits nothing", async () => {
    const p = project();
    const keysDir = join(outsideDir(), "keys");
    expect((await runCli(["keys", "init", "--keys", keysDir], p.root)).code).toBe(0);
    const keys = parseOnlineKeys(readFileSync(join(keysDir, "online.keys.json"), "utf8"), "keys");
    const first = modRelease({ version: "1.0.0" });
    await publishRelease(publisherOptions(p, { signing: { keys } }), {
      packageBytes: first.packageBytes,
      sidecar: first.sidecar,
      source: { kind: "import" },
    });
    const before = p.snapshot();

    const { packageBytes, sidecar } = modRelease({ version: "1.1.0" });
    writeFileSync(join(p.root, "pkg.zip"), packageBytes);
    writeFileSync(join(p.root, "release.json"), JSON.stringify(sidecar));
    const inputs = new Set(["pkg.zip", "release.json"]);
    const imported = await runCli(
      ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamscan-db", db],
      p.root,
    );
    expect(imported.code).toBe(1);
    expect(imported.stderr).toContain("signing_keys_missing");
    expect(imported.stderr).toContain("SVC_TUF_ONLINE_KEYS");
    const after = [...p.snapshot()].filter(([path]) => !inputs.has(path));
    expect(new Map(after)).toEqual(before);

    // The library path every local route takes (publish, hide, unhide, ownership) refuses the same way.
    await expect(
      publishRelease(publisherOptions(p, { signing: { keys: () => null } }), {
        packageBytes,
        sidecar,
        source: { kind: "import" },
      }),
    ).rejects.toMatchObject({ code: "config_invalid", details: { code: "signing_keys_missing" } });
    expect(new Map([...p.snapshot()].filter(([path]) => !inputs.has(path)))).toEqual(before);

    // A portal would serve documents its signed metadata does not describe: it does not start.
    const { SVC_TUF_ONLINE_KEYS: _unset, ...env } = process.env;
    const served = await runSvc(["serve", "--dev", "--no-example", "--port", "0", "--root", p.root], {
      cwd: p.root,
      env: env as Record<string, string>,
    });
    expect(served.code).toBe(1);
    expect(served.stderr).toContain("signing_keys_missing");
    expect(served.stderr).toContain("SVC_TUF_ONLINE_KEYS");
    expect(
      new Map([...p.snapshot()].filter(([path]) => !inputs.has(path) && !path.startsWith(".data/"))),
    ).toEqual(new Map([...before].filter(([path]) => !path.startsWith(".data/"))));
  }, 120_000);
});

describe("svc install tells not signed yet, tampered and not listed apart; svc smoke names what failed", () => {
  it("each with its own code and message", async () => {
    const p = project();
    const portal = await startCatalogPortal(p);
    cleanups.push(() => portal.close());
    const keysDir = join(outsideDir(), "keys");
    expect((await runCli(["keys", "init", "--keys", keysDir], p.root)).code).toBe(0);
    await publishRelease(publisherOptions(p), { ...modRelease(), source: { kind: "import" } });

    // A root but no signing yet: no tuf/timestamp.json.
    const unsigned = await install("better-hud", portal.origin, p.root);
    expect(unsigned.code).toBe(1);
    expect(unsigned.stderr).toContain("not_signed_yet");
    expect(unsigned.stderr).toContain("not signed yet");

    const keys = parseOnlineKeys(readFileSync(join(keysDir, "online.keys.json"), "utf8"), "keys");
    signSite(p.siteDir, keys);
    // Published after the signing, without it (the GitHub publisher, before its job's sign step).
    const later = modRelease({ modId: "hud-plus", name: "HUD Plus" });
    await publishRelease(publisherOptions(p), { ...later, source: { kind: "import" } });
    const behind = await install("hud-plus", portal.origin, p.root);
    expect(behind.code).toBe(1);
    expect(behind.stderr).toContain("not_signed_yet");
    expect(behind.stderr).toContain("api/v1/mods/hud-plus/versions.json");
    expect(behind.stderr).not.toContain("dependency_unresolved");

    const missing = await install("no-such-mod", portal.origin, p.root);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("mod_not_listed");
    expect(missing.stderr).toContain("no-such-mod is not listed");

    // The smoke's FAILED line comes with the item that failed and why.
    const smoke = await runCli(["smoke", "--base-url", portal.origin], p.root);
    expect(smoke.code).toBe(1);
    // (catalog.json grew past its signed length; hud-plus's versions.json is not signed yet)
    expect(smoke.stdout).toMatch(/signature: FAILED [a-z_]+: \S*api\/v1\/\S+/);
    expect(smoke.stdout).toMatch(/FAILED — .*signature failed/);
    expect(smoke.stdout).toMatch(/\n {2}failed: signature [a-z_]+: \S*api\/v1\/\S+/);

    signSite(p.siteDir, keys);
    expect((await install("hud-plus", portal.origin, p.root)).code).toBe(0);
    const versions = join(p.siteDir, "api/v1/mods/better-hud/versions.json");
    writeFileSync(versions, readFileSync(versions, "utf8").replace("Release 1.0.0.", "Release 6.6.6."));
    const tampered = await install("better-hud", portal.origin, p.root);
    expect(tampered.code).toBe(1);
    expect(tampered.stderr).toContain("catalog_tampered");
    expect(tampered.stderr).toContain("does not match its signed length/sha256");
  }, 120_000);

  it("the publish job's --if-due refuses to deploy a signed site without the secret", async () => {
    const p = project();
    const keysDir = join(outsideDir(), "keys");
    expect((await runCli(["keys", "init", "--keys", keysDir], p.root)).code).toBe(0);
    const outputs = join(outsideDir(), "github-output");
    writeFileSync(outputs, "");
    const result = await runCli(["keys", "sign", "--if-due", "--published", "true"], p.root, {
      GITHUB_OUTPUT: outputs,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("signing_keys_missing");
    expect(result.stderr).toContain("SVC_TUF_ONLINE_KEYS");
    expect(readFileSync(outputs, "utf8")).toBe("deploy=false\n");
    expect(existsSync(join(p.siteDir, "tuf", "timestamp.json"))).toBe(false);
  });
});
