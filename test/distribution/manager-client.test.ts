import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { DistributionError } from "../../src/distribution/errors.ts";
import { readManifest, verifyInstall } from "../../src/distribution/install-manifest.ts";
import { writeZip } from "../support/zip.ts";
import { signedPortal, treeHashes } from "./support.ts";

let portal: Awaited<ReturnType<typeof signedPortal>> | undefined;
afterEach(async () => {
  await portal?.close();
  portal = undefined;
});

async function refusal(promise: Promise<unknown>): Promise<DistributionError> {
  try {
    await promise;
  } catch (error) {
    return error as DistributionError;
  }
  throw new Error("expected a refusal");
}

const ARTIFACT = (version: string) => `downloads/mods/better-hud/${version}/better-hud-${version}.zip`;

describe("manager client against a signed loopback mirror", () => {
  it("installs a published mod and its dependency, verified, with a per-file install manifest", async () => {
    portal = await signedPortal();
    await portal.publish({ modId: "core-lib", name: "Core Lib", version: "1.0.0" });
    await portal.publish({ version: "1.0.0", dependencies: [{ modId: "core-lib", versionRange: "^1.0.0" }] });
    const dir = portal.installDir();
    const installed = await portal.client().install(dir, [{ modId: "better-hud", range: "^1.0.0" }]);
    expect(installed.map((m) => `${m.modId}@${m.version}`).sort()).toEqual([
      "better-hud@1.0.0",
      "core-lib@1.0.0",
    ]);
    expect(readFileSync(join(dir, "better-hud/Content/Paks/BetterHud.pak"), "utf8")).toContain(
      "pak better-hud 1.0.0",
    );
    const manifest = readManifest(dir)!;
    expect(manifest.mods["better-hud"]!.files.map((f) => f.path).sort()).toEqual([
      "Content/Paks/BetterHud.pak",
      "svc-mod.json",
    ]);
    expect(verifyInstall(dir)).toMatchObject({ ok: true, checked: 4, damaged: [] });
    expect(existsSync(join(dir, ".svc-staging"))).toBe(false);
  });

  it("resumes a partial download with Range and still verifies the whole artifact", async () => {
    portal = await signedPortal();
    await portal.publish({ version: "1.0.0" });
    const client = portal.client();
    const version = (await client.modListing("better-hud"))![0]!;
    const bytes = readFileSync(join(portal.siteDir, ARTIFACT("1.0.0")));
    const partial = join(portal.work, "client", "cache", "packages", `${version.sha256}.part`);
    mkdirSync(join(partial, ".."), { recursive: true });
    writeFileSync(partial, bytes.subarray(0, 100));
    await client.install(portal.installDir(), [{ modId: "better-hud", range: "*" }]);
    const download = portal.mirror.requests.filter((r) => r.path === ARTIFACT("1.0.0"));
    expect(download).toEqual([{ path: ARTIFACT("1.0.0"), range: "bytes=100-", status: 206 }]);
    expect(verifyInstall(portal.installDir()).ok).toBe(true);
  });

  it("verify names a changed and a missing file; repair rewrites only those from the verified package", async () => {
    portal = await signedPortal();
    await portal.publish({ version: "1.0.0", extraFiles: { "Config/keep.ini": "keep=1\n" } });
    const dir = portal.installDir();
    await portal.client().install(dir, [{ modId: "better-hud", range: "*" }]);
    const pak = join(dir, "better-hud/Content/Paks/BetterHud.pak");
    const original = readFileSync(pak);
    writeFileSync(pak, "corrupted");
    rmSync(join(dir, "better-hud/svc-mod.json"));
    const report = verifyInstall(dir);
    expect(report.ok).toBe(false);
    expect(report.damaged).toEqual([
      {
        modId: "better-hud",
        files: [
          { path: "svc-mod.json", problem: "missing" },
          { path: "Content/Paks/BetterHud.pak", problem: "changed" },
        ],
      },
    ]);
    const untouched = statSync(join(dir, "better-hud/Config/keep.ini")).mtimeMs;
    await portal.client().repair(dir);
    expect(readFileSync(pak)).toEqual(original);
    expect(verifyInstall(dir).ok).toBe(true);
    expect(statSync(join(dir, "better-hud/Config/keep.ini")).mtimeMs).toBe(untouched);
  });
});

describe("attacks: each is refused with a stable code and leaves the installation as it was", () => {
  // One portal for the whole block (building one costs seconds): better-hud 1.0.0 (needing core-lib
  // ^1.0.0) installed by a client, the signed site copied (the rollback attacker's stock), then
  // 1.1.0 published. Tests that change the portal run last, in the order written.
  let shared: Awaited<ReturnType<typeof signedPortal>>;
  let firstSite: string;
  let clients = 0;
  const upgrade = (name: string) =>
    shared.client(name).install(shared.installDir(), [{ modId: "better-hud", range: "^1.1.0" }]);
  const fresh = () => `attacker-${++clients}`;

  beforeAll(async () => {
    shared = await signedPortal();
    await shared.publish({ modId: "core-lib", name: "Core Lib", version: "1.0.0" });
    await shared.publish({ version: "1.0.0", dependencies: [{ modId: "core-lib", versionRange: "^1.0.0" }] });
    await shared.client().install(shared.installDir(), [{ modId: "better-hud", range: "1.0.0" }]);
    firstSite = shared.copySite();
    await shared.publish({ version: "1.1.0", dependencies: [{ modId: "core-lib", versionRange: "^1.0.0" }] });
  });
  afterEach(() => shared.mirror.override.clear());
  afterAll(async () => {
    await shared.close();
    rmSync(firstSite, { recursive: true, force: true });
  });

  it("a tampered versions document (catalog_tampered)", async () => {
    const before = treeHashes(shared.installDir());
    const path = "api/v1/mods/better-hud/versions.json";
    const versions = readFileSync(join(shared.siteDir, path), "utf8");
    shared.mirror.override.set(path, Buffer.from(versions.replace(/"1\.1\.0"/g, '"1.1.1"')));
    expect((await refusal(upgrade(fresh()))).code).toBe("catalog_tampered");
    expect(treeHashes(shared.installDir())).toEqual(before);
  });

  it("targets metadata altered after signing (catalog_tampered)", async () => {
    const before = treeHashes(shared.installDir());
    const read = (name: string) => JSON.parse(readFileSync(join(shared.siteDir, "tuf", name), "utf8"));
    const snapshotVersion = read("timestamp.json").signed.meta["snapshot.json"].version;
    const targetsVersion = read(`${snapshotVersion}.snapshot.json`).signed.meta["targets.json"].version;
    const targets = read(`${targetsVersion}.targets.json`);
    targets.signed.targets["api/v1/catalog.json"].length += 1;
    shared.mirror.override.set(`tuf/${targetsVersion}.targets.json`, Buffer.from(JSON.stringify(targets)));
    expect((await refusal(upgrade(fresh()))).code).toBe("catalog_tampered");
    expect(treeHashes(shared.installDir())).toEqual(before);
  });

  it("an older signed catalog replayed to a client that saw a newer one (catalog_rollback)", async () => {
    const before = treeHashes(shared.installDir());
    await shared.client().refresh();
    for (const path of ["tuf/timestamp.json", "api/v1/catalog.json"]) {
      shared.mirror.override.set(path, readFileSync(join(firstSite, path)));
    }
    const error = await refusal(
      shared.client().install(shared.installDir(), [{ modId: "better-hud", range: "*" }]),
    );
    expect(error.code).toBe("catalog_rollback");
    expect(treeHashes(shared.installDir())).toEqual(before);
  });

  it("a swapped artifact (artifact_mismatch), and the bad bytes are not kept", async () => {
    const before = treeHashes(shared.installDir());
    const swapped = Buffer.from(readFileSync(join(shared.siteDir, ARTIFACT("1.1.0"))));
    swapped[swapped.length - 30] = (swapped[swapped.length - 30] ?? 0) ^ 0xff;
    shared.mirror.override.set(ARTIFACT("1.1.0"), swapped);
    const name = fresh();
    expect((await refusal(upgrade(name))).code).toBe("artifact_mismatch");
    expect(treeHashes(shared.installDir())).toEqual(before);
    expect([...treeHashes(join(shared.work, name, "cache", "packages")).keys()]).toEqual([]);
  });

  it("a truncated download (artifact_mismatch); the partial is kept and a later run resumes", async () => {
    const before = treeHashes(shared.installDir());
    const real = readFileSync(join(shared.siteDir, ARTIFACT("1.1.0")));
    shared.mirror.override.set(ARTIFACT("1.1.0"), real.subarray(0, 120));
    const name = fresh();
    const requestsBefore = shared.mirror.requests.length;
    expect((await refusal(upgrade(name))).code).toBe("artifact_mismatch");
    expect(treeHashes(shared.installDir())).toEqual(before);
    shared.mirror.override.delete(ARTIFACT("1.1.0"));
    await upgrade(name);
    const ranges = shared.mirror.requests
      .slice(requestsBefore)
      .filter((r) => r.path === ARTIFACT("1.1.0"))
      .map((r) => r.range);
    expect(ranges).toEqual([undefined, "bytes=120-"]);
    expect(readManifest(shared.installDir())!.mods["better-hud"]!.version).toBe("1.1.0");
    expect(verifyInstall(shared.installDir()).ok).toBe(true);
  });

  it("a signed package whose entry escapes the install folder (path_escape), nothing written", async () => {
    const before = treeHashes(shared.installDir());
    await shared.publish({
      modId: "evil-mod",
      name: "Evil",
      version: "1.0.0",
      extraFiles: { "../pwned.txt": "x" },
    });
    const error = await refusal(
      shared.client(fresh()).install(shared.installDir(), [{ modId: "evil-mod", range: "*" }]),
    );
    expect(error.code).toBe("path_escape");
    expect(treeHashes(shared.installDir())).toEqual(before);
    expect(existsSync(join(shared.installDir(), "pwned.txt"))).toBe(false);
  });

  it("an expired timestamp: a frozen mirror (metadata_expired)", async () => {
    const before = treeHashes(shared.installDir());
    // A signing run two days ago (injected clock): its one-day timestamp has since expired.
    await shared.publish({ version: "1.2.0" }, { now: () => new Date(Date.now() - 2 * 86_400_000) });
    const error = await refusal(
      shared.client(fresh()).install(shared.installDir(), [{ modId: "better-hud", range: "^1.2.0" }]),
    );
    expect(error.code).toBe("metadata_expired");
    expect(treeHashes(shared.installDir())).toEqual(before);
  });

  it("refuses escaping names in a raw archive without extracting anything", async () => {
    const { readPackageFiles } = await import("../../src/distribution/package-files.ts");
    for (const name of ["../x", "a/../../x", "/etc/x", "C:/x", "a\\..\\x"]) {
      const zip = writeZip([{ name, data: "x" }]);
      expect(() => readPackageFiles(zip, "/tmp/svc-install-root/mod")).toThrow(
        expect.objectContaining({ code: "path_escape" }),
      );
    }
  });
});
