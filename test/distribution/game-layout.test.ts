// Issue 25, item 3: `svc install --game` places a package the way docs/modders.md lays it out, at
// game-root paths (Binaries/Win64/Mods/X.dll), and its install manifest verifies, repairs and
// uninstalls exactly the files it placed.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readManifest, uninstallMods } from "../../src/distribution/install-manifest.ts";
import { runCli } from "../support/run-cli.ts";
import { guideRelease, signedPortal, treeHashes } from "./support.ts";

const DLL = "Binaries/Win64/Mods/BetterHud.dll";
const PAK = "Content/Paks/BetterHud_P.pak";
const MODS = "Binaries/Win64/Mods";

const v1 = guideRelease({
  version: "1.0.0",
  files: { [DLL]: "MZ better-hud 1.0.0\n", [PAK]: "pak 1.0.0\n".repeat(40), "README.md": "# Better HUD\n" },
  entrypoints: [{ path: DLL, kind: "native" }],
});
const v2 = guideRelease({
  version: "1.1.0",
  files: { [DLL]: "MZ better-hud 1.1.0\n", "Content/Paks/BetterHud2_P.pak": "pak 1.1.0\n".repeat(40) },
  entrypoints: [{ path: DLL, kind: "native" }],
});

describe("svc install --game lays a package over the game folder, as the package guide says (issue 25)", () => {
  let portal: Awaited<ReturnType<typeof signedPortal>>;
  let game: string;
  let flags: string[];
  let rivals = 0;
  const at = (path: string) => join(game, path);
  beforeAll(async () => {
    portal = await signedPortal();
    await portal.publishPackage(v1);
    game = join(portal.work, "Spacewar");
    // The game's own files, which no mod may replace.
    mkdirSync(at("Content/Paks"), { recursive: true });
    writeFileSync(at("Content/Paks/pakchunk0-Windows.pak"), "the game's own pak\n");
    mkdirSync(at(MODS), { recursive: true });
    writeFileSync(at(`${MODS}/notes.txt`), "the player's notes\n");
    flags = [
      "--mirror",
      portal.mirror.origin,
      "--trusted-root",
      portal.trustedRoot,
      "--cache",
      join(portal.work, "player-cache"),
    ];
  });
  afterAll(() => portal.close());

  it("places each file at its game-root path, and the package's root files in the mod's own folder", async () => {
    const install = await runCli(["install", "better-hud", "--game", game, ...flags], portal.work);
    expect(install.code, install.stderr).toBe(0);
    expect(readFileSync(at(DLL), "utf8")).toBe("MZ better-hud 1.0.0\n");
    expect(readFileSync(at(PAK), "utf8")).toBe("pak 1.0.0\n".repeat(40));
    expect(readFileSync(at(`${MODS}/better-hud/README.md`), "utf8")).toBe("# Better HUD\n");
    expect(existsSync(at(`${MODS}/better-hud/svc-mod.json`))).toBe(true);
    expect(existsSync(at(`${MODS}/better-hud/Binaries`))).toBe(false);
    expect(
      readManifest(game)!
        .mods["better-hud"]!.files.map((f) => f.path)
        .sort(),
    ).toEqual([DLL, PAK, "README.md", "svc-mod.json"]);
  });

  it("verify and repair go by the files it placed", async () => {
    expect((await runCli(["verify", "--game", game, ...flags], portal.work)).code).toBe(0);
    writeFileSync(at(DLL), "damaged");
    const verify = await runCli(["verify", "--game", game], portal.work);
    expect(verify.code).toBe(1);
    expect(verify.stdout).toContain(`install_damaged better-hud/${DLL} (changed)`);
    const repair = await runCli(["repair", "--game", game, ...flags], portal.work);
    expect(repair.code, repair.stderr).toBe(0);
    expect(readFileSync(at(DLL), "utf8")).toBe("MZ better-hud 1.0.0\n");
  });

  it.each([
    ["another mod's file", PAK],
    ["the game's own file", "Content/Paks/pakchunk0-Windows.pak"],
    ["the runtime loader's file", "Binaries/Win64/dwmapi.dll"],
  ])("refuses a package that would replace %s (install_conflict), changing nothing", async (_, path) => {
    const version = `1.0.${rivals++}`;
    await portal.publishPackage(
      guideRelease({ modId: "rival-mod", name: "Rival", version, files: { [path]: "rival\n" } }),
    );
    const before = treeHashes(game);
    const install = await runCli(["install", "rival-mod", "--game", game, ...flags], portal.work);
    expect(install.code).toBe(1);
    expect(install.stderr).toContain("install_conflict");
    expect(install.stderr).toContain(path);
    expect(treeHashes(game)).toEqual(before);
    await portal.hide("rival-mod", version);
  });

  it("an update removes the files the new version no longer has", async () => {
    await portal.publishPackage(v2);
    const update = await runCli(["install", "better-hud", "--game", game, ...flags], portal.work);
    expect(update.code, update.stderr).toBe(0);
    expect(existsSync(at(PAK))).toBe(false);
    expect(existsSync(at(`${MODS}/better-hud/README.md`))).toBe(false);
    expect(readFileSync(at("Content/Paks/BetterHud2_P.pak"), "utf8")).toBe("pak 1.1.0\n".repeat(40));
    expect(readFileSync(at("Content/Paks/pakchunk0-Windows.pak"), "utf8")).toBe("the game's own pak\n");
    expect((await runCli(["verify", "--game", game, ...flags], portal.work)).code).toBe(0);
  });

  it("uninstall removes exactly the files it placed", () => {
    const removed = uninstallMods(game, ["better-hud"]);
    expect(removed.map((f) => f.path).sort()).toEqual(
      [DLL, "Content/Paks/BetterHud2_P.pak", `${MODS}/better-hud/svc-mod.json`].sort(),
    );
    expect([...treeHashes(game).keys()].sort()).toEqual(
      ["Content/Paks/pakchunk0-Windows.pak", `${MODS}/notes.txt`, "svc-install.json"].sort(),
    );
    expect(readManifest(game)!.mods).toEqual({});
  });
});
