// Where the manager client writes: only under the folder it was given, whatever the signed metadata
// says (a leaked online key or a malicious portal signs whatever it likes), and never through a
// symbolic link it finds inside an installation.
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DistributionError, isDistributionError } from "../../src/distribution/errors.ts";
import { verifyInstall } from "../../src/distribution/install-manifest.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { runCli } from "../support/run-cli.ts";
import { signedPortal, treeHashes } from "./support.ts";

type Portal = Awaited<ReturnType<typeof signedPortal>>;

const VERSIONS = "api/v1/mods/better-hud/versions.json";
const PAK = "Content/Paks/BetterHud.pak";

async function refusal(promise: Promise<unknown> | (() => unknown)): Promise<DistributionError> {
  try {
    await (typeof promise === "function" ? promise() : promise);
  } catch (error) {
    if (isDistributionError(error)) return error;
    throw error;
  }
  throw new Error("expected a refusal");
}

/** The malicious portal: rewrites version 1.0.0 in the signed versions.json and signs the result. */
function signVersionEdit(portal: Portal, original: string, edit: (version: Record<string, unknown>) => void) {
  const document = JSON.parse(original) as { versions: Array<Record<string, unknown>> };
  edit(document.versions.find((v) => v.version === "1.0.0")!);
  writeFileSync(join(portal.siteDir, VERSIONS), `${JSON.stringify(document, null, 2)}\n`);
  signSite(portal.siteDir, portal.keys.online);
}

describe("signed metadata never picks a path outside the target folder (path_escape)", () => {
  let portal: Portal;
  let original: string;
  beforeAll(async () => {
    portal = await signedPortal();
    await portal.publish({ version: "1.0.0" });
    original = readFileSync(join(portal.siteDir, VERSIONS), "utf8");
  });
  afterEach(() => {
    writeFileSync(join(portal.siteDir, VERSIONS), original);
    signSite(portal.siteDir, portal.keys.online);
  });
  afterAll(() => portal.close());

  it.each(["../escaped.zip", "nested/escaped.zip", "escaped.exe", ".."])(
    "svc fetch refuses the signed file name %j and writes nothing",
    async (fileName) => {
      signVersionEdit(portal, original, (v) => {
        v.fileName = fileName;
      });
      const area = mkdtempSync(join(tmpdir(), "svc-fetch-"));
      try {
        const out = join(area, "zips");
        const result = await runCli(
          [
            "fetch",
            "better-hud@1.0.0",
            "--out",
            out,
            "--mirror",
            portal.mirror.origin,
            "--trusted-root",
            portal.trustedRoot,
            "--cache",
            join(area, "cache"),
          ],
          area,
        );
        expect(result.code, result.stdout + result.stderr).toBe(1);
        expect(result.stderr).toContain("path_escape");
        expect(existsSync(join(area, "escaped.zip"))).toBe(false);
        expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
      } finally {
        rmSync(area, { recursive: true, force: true });
      }
    },
  );

  it("svc fetch replaces a symlink at the output name instead of writing through it", async () => {
    const area = mkdtempSync(join(tmpdir(), "svc-fetch-"));
    try {
      const out = join(area, "zips");
      mkdirSync(out);
      writeFileSync(join(area, "player-file"), "keep me\n");
      symlinkSync(join(area, "player-file"), join(out, "better-hud-1.0.0.zip"));
      const result = await runCli(
        [
          "fetch",
          "better-hud@1.0.0",
          "--out",
          out,
          "--mirror",
          portal.mirror.origin,
          "--trusted-root",
          portal.trustedRoot,
          "--cache",
          join(area, "cache"),
        ],
        area,
      );
      expect(result.code, result.stderr).toBe(0);
      expect(readFileSync(join(area, "player-file"), "utf8")).toBe("keep me\n");
      expect(lstatSync(join(out, "better-hud-1.0.0.zip")).isSymbolicLink()).toBe(false);
    } finally {
      rmSync(area, { recursive: true, force: true });
    }
  });

  it("a signed sha256 that is not a hash never names a cache file (the player's file beside the cache survives)", async () => {
    // An externally hosted artifact (its URL is not the site path) is signed with the sha256 the
    // versions document records: the leaked key's way to choose the cache file name.
    signVersionEdit(portal, original, (v) => {
      v.sha256 = "../../victim";
      v.packageUrl = `${v.packageUrl}?mirror=2`;
    });
    const name = "sha-path";
    const victim = join(portal.work, name, "victim.part");
    mkdirSync(join(portal.work, name), { recursive: true });
    writeFileSync(victim, "the player's own file\n");
    const outcome = await portal
      .client(name)
      .install(portal.installDir(name), [{ modId: "better-hud", range: "1.0.0" }])
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(existsSync(victim) && readFileSync(victim, "utf8")).toBe("the player's own file\n");
    expect(readdirSync(join(portal.work, name))).toEqual(["cache", "victim.part"]);
    expect(isDistributionError(outcome) && outcome.code).toBe("catalog_tampered");
  });
});

describe("a symbolic link inside an installation is never followed (symlink_in_install)", () => {
  let portal: Portal;
  let outside: string;
  let clients = 0;
  const dir = () => portal.installDir("links");
  beforeAll(async () => {
    portal = await signedPortal();
    await portal.publish({ version: "1.0.0" });
  });
  afterEach(() => rmSync(outside, { recursive: true, force: true }));
  afterAll(() => portal.close());

  async function installFresh() {
    rmSync(dir(), { recursive: true, force: true });
    outside = mkdtempSync(join(tmpdir(), "svc-outside-"));
    await portal.client(`links-${++clients}`).install(dir(), [{ modId: "better-hud", range: "*" }]);
  }

  const repairOutcome = () =>
    portal
      .client(`links-${++clients}`)
      .repair(dir())
      .then(
        () => null,
        (error: unknown) => error,
      );

  /** Moves `inside` (a path below the mod folder) out of the install and links it back. */
  function linkOut(inside: string): string {
    const target = join(outside, "moved");
    renameSync(join(dir(), "better-hud", inside), target);
    symlinkSync(target, join(dir(), "better-hud", inside));
    return target;
  }

  it("svc repair refuses a symlinked folder and writes nothing outside the install", async () => {
    await installFresh();
    const moved = linkOut("Content");
    writeFileSync(join(moved, "Paks", "BetterHud.pak"), "the player's other file\n");
    const before = treeHashes(outside);
    const outcome = await repairOutcome();
    expect(treeHashes(outside)).toEqual(before);
    expect(isDistributionError(outcome) && outcome.code).toBe("symlink_in_install");
  });

  it("svc repair refuses a symlinked mod folder", async () => {
    await installFresh();
    const moved = join(outside, "better-hud");
    renameSync(join(dir(), "better-hud"), moved);
    symlinkSync(moved, join(dir(), "better-hud"));
    writeFileSync(join(moved, PAK), "the player's other file\n");
    const before = treeHashes(outside);
    const outcome = await repairOutcome();
    expect(treeHashes(outside)).toEqual(before);
    expect(isDistributionError(outcome) && outcome.code).toBe("symlink_in_install");
  });

  it("svc verify, online and offline, refuses a symlinked file instead of reading through it", async () => {
    await installFresh();
    const secret = join(outside, "secret.txt");
    writeFileSync(secret, "not the mod's\n");
    rmSync(join(dir(), "better-hud", "svc-mod.json"));
    symlinkSync(secret, join(dir(), "better-hud", "svc-mod.json"));
    expect((await refusal(() => verifyInstall(dir()))).code).toBe("symlink_in_install");
    expect((await refusal(portal.client(`links-${++clients}`).verify(dir()))).code).toBe(
      "symlink_in_install",
    );
    const cli = await runCli(["verify", "--dir", dir()], portal.work);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("symlink_in_install");
  });

  it("svc install replaces a symlinked mod folder and staging folder without following them", async () => {
    await installFresh();
    const moved = linkOut("Content");
    symlinkSync(outside, join(dir(), ".svc-staging"));
    const before = treeHashes(outside);
    await portal.client(`links-${++clients}`).install(dir(), [{ modId: "better-hud", range: "*" }]);
    expect(treeHashes(outside)).toEqual(before);
    expect(existsSync(moved)).toBe(true);
    expect(lstatSync(join(dir(), "better-hud", "Content")).isSymbolicLink()).toBe(false);
    expect(existsSync(join(dir(), ".svc-staging"))).toBe(false);
    expect(verifyInstall(dir()).ok).toBe(true);
  });
});
