import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { ManagerClient } from "../../src/distribution/manager-client.ts";
import { signatureStatus } from "../../src/distribution/tuf-status.ts";
import { catalogProject, modRelease, publisherOptions } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";
import { startCatalogPortal } from "../support/catalog-portal.ts";
import { startMirror } from "./support.ts";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function portalWithMirror() {
  const project = catalogProject();
  cleanups.push(() => project.cleanup());
  const mirror = await startMirror(project.siteDir);
  cleanups.push(() => mirror.close());
  project.setBaseUrl(mirror.origin);
  const outside = mkdtempSync(join(tmpdir(), "svc-keys-"));
  cleanups.push(() => rmSync(outside, { recursive: true, force: true }));
  return { project, mirror, keysDir: join(outside, "keys"), outside };
}

describe("svc keys / install / verify / repair", () => {
  it("refuses to write keys inside a git repository, writing nothing", async () => {
    const repo = mkdtempSync(join(tmpdir(), "svc-repo-"));
    cleanups.push(() => rmSync(repo, { recursive: true, force: true }));
    mkdirSync(join(repo, ".git"));
    mkdirSync(join(repo, "site"));
    const result = await runCli(["keys", "init", "--keys", "secrets/keys"], repo);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("tuf_keys_in_repository");
    expect(existsSync(join(repo, "secrets"))).toBe(false);
    expect(existsSync(join(repo, "site", "tuf"))).toBe(false);
  });

  it("init, sign, install, verify, damage, repair — end to end through the CLI against the local portal", async () => {
    const project = catalogProject();
    cleanups.push(() => project.cleanup());
    // The real local portal server (what `svc serve` runs), not the attack tests' mirror.
    const mirror = await startCatalogPortal(project);
    cleanups.push(() => mirror.close());
    const outside = mkdtempSync(join(tmpdir(), "svc-keys-"));
    cleanups.push(() => rmSync(outside, { recursive: true, force: true }));
    const keysDir = join(outside, "keys");
    const init = await runCli(["keys", "init", "--keys", keysDir], project.root);
    expect(init.code, init.stderr).toBe(0);
    expect(statSync(join(keysDir, "online.keys.json")).mode & 0o077).toBe(0);
    expect(signatureStatus(project.siteDir)).toMatchObject({ signed: false, reason: "no_timestamp" });
    const { packageBytes, sidecar } = modRelease({ version: "1.0.0" });
    await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });

    const unsigned = await runCli(["keys", "sign"], project.root);
    expect(unsigned.code).toBe(1);
    expect(unsigned.stderr).toContain("SVC_TUF_ONLINE_KEYS");
    const env = { SVC_TUF_ONLINE_KEYS: join(keysDir, "online.keys.json") };
    const sign = await runCli(["keys", "sign"], project.root, env);
    expect(sign.code, sign.stderr).toBe(0);
    const status = signatureStatus(project.siteDir);
    expect(status).toMatchObject({ signed: true, rootVersion: 1 });
    const firstVersion = status.signed ? status.timestampVersion : 0;

    // The publish workflow's scheduled run: the live timestamp is fresh, so nothing is re-signed.
    const outputs = join(outside, "github-output");
    writeFileSync(outputs, "");
    const notDue = await runCli(["keys", "sign", "--if-due"], project.root, {
      ...env,
      GITHUB_OUTPUT: outputs,
    });
    expect(notDue.code, notDue.stderr).toBe(0);
    expect(notDue.stdout).toContain("not due");
    expect(readFileSync(outputs, "utf8")).toBe("deploy=false\n");
    const published = await runCli(["keys", "sign", "--if-due", "--published", "true"], project.root, {
      ...env,
      GITHUB_OUTPUT: outputs,
    });
    expect(published.code, published.stderr).toBe(0);
    expect(readFileSync(outputs, "utf8")).toBe("deploy=false\ndeploy=true\n");
    const resigned = signatureStatus(project.siteDir);
    expect(resigned.signed && resigned.timestampVersion).toBeGreaterThan(firstVersion);

    const game = join(outside, "game");
    const pinned = join(outside, "root.json");
    writeFileSync(pinned, readFileSync(join(project.siteDir, "tuf", "1.root.json")));
    const flags = ["--mirror", mirror.origin, "--trusted-root", pinned];
    const install = await runCli(["install", "better-hud@^1.0.0", "--dir", game, ...flags], outside);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain("better-hud@1.0.0");
    expect((await runCli(["verify", "--dir", game], outside)).code).toBe(0);

    writeFileSync(join(game, "better-hud", "svc-mod.json"), "{}");
    const damaged = await runCli(["verify", "--dir", game], outside);
    expect(damaged.code).toBe(1);
    expect(damaged.stdout).toContain("install_damaged better-hud/svc-mod.json (changed)");
    const repair = await runCli(["repair", "--dir", game, ...flags], outside);
    expect(repair.code, repair.stderr).toBe(0);
    expect(repair.stdout).toContain("1 file(s) rewritten");
    expect((await runCli(["verify", "--dir", game], outside)).code).toBe(0);

    // --game: the package is laid over the game folder; its root files go to the signed runtime
    // layout's mods folder (Binaries/Win64/Mods), in the mod's own folder.
    const gameRoot = join(outside, "Spacewar");
    const viaGame = await runCli(["install", "better-hud", "--game", gameRoot, ...flags], outside);
    expect(viaGame.code, viaGame.stderr).toBe(0);
    expect(existsSync(join(gameRoot, "Content", "Paks", "BetterHud.pak"))).toBe(true);
    expect(existsSync(join(gameRoot, "Binaries", "Win64", "Mods", "better-hud", "svc-mod.json"))).toBe(true);
    expect((await runCli(["verify", "--game", gameRoot], outside)).code).toBe(0);

    const fetched = await runCli(["fetch", "better-hud", "--out", join(outside, "zips"), ...flags], outside, {
      XDG_CACHE_HOME: join(outside, "xdg-cache"),
    });
    expect(fetched.code, fetched.stderr).toBe(0);
    expect(readFileSync(join(outside, "zips", "better-hud-1.0.0.zip"))).toEqual(packageBytes);
  });

  it("rotation: root v2 is signed by old and new root keys; old online keys can no longer sign; a v1-pinned client follows", async () => {
    const { project, mirror, keysDir, outside } = await portalWithMirror();
    expect((await runCli(["keys", "init", "--keys", keysDir], project.root)).code).toBe(0);
    const oldOnline = readFileSync(join(keysDir, "online.keys.json"), "utf8");
    const pinned = join(outside, "root-v1.json");
    writeFileSync(pinned, readFileSync(join(project.siteDir, "tuf", "1.root.json")));
    const { packageBytes, sidecar } = modRelease({ version: "1.0.0" });
    await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });

    const rotate = await runCli(["keys", "rotate", "root", "--keys", keysDir], project.root);
    expect(rotate.code, rotate.stderr).toBe(0);
    const v2 = JSON.parse(readFileSync(join(project.siteDir, "tuf", "2.root.json"), "utf8"));
    expect(Object.keys(v2.signatures)).toHaveLength(2);
    const rotateTs = await runCli(["keys", "rotate", "timestamp", "--keys", keysDir], project.root);
    expect(rotateTs.code, rotateTs.stderr).toBe(0);

    const stale = await runCli(["keys", "sign"], project.root, { SVC_TUF_ONLINE_KEYS: oldOnline });
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("tuf_key_mismatch");
    const fresh = await runCli(["keys", "sign"], project.root, {
      SVC_TUF_ONLINE_KEYS: join(keysDir, "online.keys.json"),
    });
    expect(fresh.code, fresh.stderr).toBe(0);

    const client = new ManagerClient({
      mirrorUrl: mirror.origin,
      cacheDir: join(outside, "cache"),
      trustedRootFile: pinned,
    });
    await client.refresh();
    const trusted = JSON.parse(readFileSync(join(outside, "cache", "metadata", "root.json"), "utf8"));
    expect(trusted.signed.version).toBe(3);
    expect((await client.modListing("better-hud"))?.map((v) => v.version)).toEqual(["1.0.0"]);
  });

  it("writes the attestation subjects of the artifacts a publish run stored, and only those", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-subjects-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const sha = "a".repeat(64);
    const receipts = [
      {
        receipt: {
          ok: true,
          artifactUrl: "https://github.com/o/r/releases/download/m-1.0.0/m-1.0.0.zip",
          sha256: sha,
        },
      },
      { receipt: { ok: false, modId: "m", version: "2.0.0", error: { code: "x", message: "y" } } },
      { receipt: { ok: true, artifactUrl: "https://x.test/a/evil%0Aname.zip", sha256: sha } },
    ];
    writeFileSync(join(dir, "receipts.json"), JSON.stringify(receipts));
    writeFileSync(join(dir, "out"), "");
    const result = await runCli(
      ["keys", "subjects", "--receipts", "receipts.json", "--out", "subjects.txt"],
      dir,
      {
        GITHUB_OUTPUT: join(dir, "out"),
      },
    );
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(join(dir, "subjects.txt"), "utf8")).toBe(`${sha}  m-1.0.0.zip\n`);
    expect(readFileSync(join(dir, "out"), "utf8")).toBe("count=1\n");
  });

  it("explains the trust model", async () => {
    const result = await runCli(["keys", "explain"], tmpdir());
    expect(result.code).toBe(0);
    for (const word of ["root", "targets", "snapshot", "timestamp", "TLS is not relied on"]) {
      expect(result.stdout).toContain(word);
    }
  });
});
