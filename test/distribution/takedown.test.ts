// Issue 25, item 2: a takedown reaches installed copies. A version the portal hid after a player
// installed it is reported by verify (its own exit code), and install offers the newest visible one.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readManifest } from "../../src/distribution/install-manifest.ts";
import { runCli } from "../support/run-cli.ts";
import { signedPortal } from "./support.ts";

const EXIT_WITHDRAWN = 3;

describe("a withdrawn version reaches the players who installed it (issue 25)", () => {
  let portal: Awaited<ReturnType<typeof signedPortal>>;
  let game: string;
  let flags: string[];
  beforeAll(async () => {
    portal = await signedPortal();
    await portal.publish({ modId: "core-lib", name: "Core Lib", version: "1.0.0" });
    await portal.publish({ version: "1.0.0" });
    game = portal.installDir("player");
    flags = [
      "--mirror",
      portal.mirror.origin,
      "--trusted-root",
      portal.trustedRoot,
      "--cache",
      join(portal.work, "player-cache"),
    ];
    const install = await runCli(
      ["install", "better-hud@1.0.0", "core-lib", "--dir", game, ...flags],
      portal.work,
    );
    expect(install.code, install.stderr).toBe(0);
    await portal.publish({ version: "1.1.0" });
    await portal.hide("better-hud", "1.0.0");
    await portal.hide("core-lib", "1.0.0");
  });
  afterAll(() => portal.close());

  it("svc verify names each withdrawn version, offers the newest visible one, and exits 3", async () => {
    const verify = await runCli(["verify", "--dir", game, ...flags], portal.work);
    expect(verify.stdout).toContain(
      "version_withdrawn better-hud@1.0.0: the portal withdrew this version; the newest visible is 1.1.0 (svc install better-hud@1.1.0)",
    );
    expect(verify.stdout).toContain(
      "version_withdrawn core-lib@1.0.0: the portal withdrew this version; no version of core-lib is offered any more",
    );
    expect(verify.code, verify.stdout).toBe(EXIT_WITHDRAWN);
    const json = await runCli(["verify", "--dir", game, "--json", ...flags], portal.work);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      damaged: [],
      withdrawn: [
        { modId: "better-hud", version: "1.0.0", newestVisible: "1.1.0" },
        { modId: "core-lib", version: "1.0.0", newestVisible: null },
      ],
    });
  });

  it("a manager's refresh sees it too: ManagerClient.verify reports it", async () => {
    const report = await portal.client("manager").verify(game);
    expect(report.ok).toBe(false);
    expect(report.withdrawn.map((w) => `${w.modId}@${w.version}`)).toEqual([
      "better-hud@1.0.0",
      "core-lib@1.0.0",
    ]);
  });

  it("svc install of the withdrawn version refuses with version_withdrawn and offers the newest visible one", async () => {
    const pinned = await runCli(["install", "better-hud@1.0.0", "--dir", game, ...flags], portal.work);
    expect(pinned.code).toBe(EXIT_WITHDRAWN);
    expect(pinned.stderr).toContain("version_withdrawn");
    expect(pinned.stderr).toContain("svc install better-hud@1.1.0");
    expect(readManifest(game)!.mods["better-hud"]!.version).toBe("1.0.0");
  });

  it("svc install without a pin moves to the newest visible version and says what it replaced", async () => {
    const moved = await runCli(["install", "better-hud", "--dir", game, ...flags], portal.work);
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toContain("better-hud@1.1.0");
    expect(moved.stdout).toContain("replaces withdrawn 1.0.0");
    const verify = await runCli(["verify", "--dir", game, ...flags], portal.work);
    expect(verify.stdout).not.toContain("better-hud@1.0.0");
    expect(verify.code).toBe(EXIT_WITHDRAWN);
  });
});
