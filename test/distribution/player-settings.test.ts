// Issue 25, item 1: the modConfig settings file is the player's. verify reports a change to it
// without failing, repair keeps it unless asked (--reset-config), and an update keeps every value
// the new version still declares and allows.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../support/run-cli.ts";
import { guideRelease, signedPortal } from "./support.ts";

const CONFIG = "Config/BetterHud.json";
const PAK = "Content/Paks/BetterHud_P.pak";

const select = (key: string, values: string[], fallback: string) => ({
  key,
  label: key,
  type: "select",
  default: fallback,
  options: values.map((value) => ({ value, label: value })),
});
const toggle = (key: string, fallback: boolean) => ({ key, label: key, type: "boolean", default: fallback });

const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;

const V1_DEFAULTS = json({ difficulty: { preset: "normal" }, ui: { showHints: true, scale: "m" } });
const V2_DEFAULTS = json({ difficulty: { preset: "normal" }, ui: { showHints: true, theme: "dark" } });

const v1 = guideRelease({
  version: "1.0.0",
  files: { [PAK]: "pak 1.0.0\n".repeat(40), [CONFIG]: V1_DEFAULTS },
  entrypoints: [{ path: PAK, kind: "pak" }],
  modConfig: {
    file: CONFIG,
    settings: [
      select("difficulty.preset", ["relaxed", "normal", "hard"], "normal"),
      toggle("ui.showHints", true),
      select("ui.scale", ["s", "m", "l"], "m"),
    ],
  },
});
// 1.1.0 drops the "hard" preset and the scale setting and adds a theme.
const v2 = guideRelease({
  version: "1.1.0",
  files: { [PAK]: "pak 1.1.0\n".repeat(40), [CONFIG]: V2_DEFAULTS },
  entrypoints: [{ path: PAK, kind: "pak" }],
  modConfig: {
    file: CONFIG,
    settings: [
      select("difficulty.preset", ["relaxed", "normal"], "normal"),
      toggle("ui.showHints", true),
      select("ui.theme", ["dark", "light"], "dark"),
    ],
  },
});

const PLAYER = json({ difficulty: { preset: "hard" }, ui: { showHints: false, scale: "l" } });

describe("the modConfig file is the player's (issue 25)", () => {
  let portal: Awaited<ReturnType<typeof signedPortal>>;
  let game: string;
  let flags: string[];
  const config = () => join(game, "better-hud", CONFIG);
  beforeAll(async () => {
    portal = await signedPortal();
    await portal.publishPackage(v1);
    game = portal.installDir("player");
    flags = [
      "--mirror",
      portal.mirror.origin,
      "--trusted-root",
      portal.trustedRoot,
      "--cache",
      join(portal.work, "player-cache"),
    ];
    const install = await runCli(["install", "better-hud", "--dir", game, ...flags], portal.work);
    expect(install.code, install.stderr).toBe(0);
  });
  afterAll(() => portal.close());

  it("verify reports the changed settings file as the player's, and passes", async () => {
    writeFileSync(config(), PLAYER);
    const online = await runCli(["verify", "--dir", game, ...flags], portal.work);
    expect(online.stdout).toContain(`changed by you: better-hud/${CONFIG}`);
    expect(online.stdout).not.toContain("install_damaged");
    expect(online.code, online.stdout).toBe(0);
    const offline = await runCli(["verify", "--dir", game], portal.work);
    expect(offline.stdout).toContain(`changed by you: better-hud/${CONFIG}`);
    expect(offline.code, offline.stdout).toBe(0);
  });

  it("repair rewrites a damaged file and leaves the settings; --reset-config restores the defaults", async () => {
    writeFileSync(config(), PLAYER);
    writeFileSync(join(game, "better-hud", PAK), "damaged");
    const repair = await runCli(["repair", "--dir", game, ...flags], portal.work);
    expect(repair.code, repair.stderr).toBe(0);
    expect(repair.stdout).toContain("1 file(s) rewritten");
    expect(readFileSync(join(game, "better-hud", PAK), "utf8")).toBe("pak 1.0.0\n".repeat(40));
    expect(readFileSync(config(), "utf8")).toBe(PLAYER);

    const reset = await runCli(["repair", "--dir", game, "--reset-config", ...flags], portal.work);
    expect(reset.code, reset.stderr).toBe(0);
    expect(reset.stdout).toContain("1 file(s) rewritten");
    expect(readFileSync(config(), "utf8")).toBe(V1_DEFAULTS);
    const verify = await runCli(["verify", "--dir", game, ...flags], portal.work);
    expect(verify.stdout).not.toContain("changed by you");
  });

  it("an update keeps the values the new version still declares and allows", async () => {
    writeFileSync(config(), PLAYER);
    await portal.publishPackage(v2);
    const update = await runCli(["install", "better-hud", "--dir", game, ...flags], portal.work);
    expect(update.code, update.stderr).toBe(0);
    expect(update.stdout).toContain("better-hud@1.1.0");
    expect(update.stdout).toContain("kept 1 of your settings");
    // "hard" is no longer an option and ui.scale no longer exists: the new defaults stand there.
    expect(JSON.parse(readFileSync(config(), "utf8"))).toEqual({
      difficulty: { preset: "normal" },
      ui: { showHints: false, theme: "dark" },
    });
    const verify = await runCli(["verify", "--dir", game, ...flags], portal.work);
    expect(verify.code, verify.stdout).toBe(0);
    expect(verify.stdout).toContain(`changed by you: better-hud/${CONFIG}`);
  });

  it("an update over untouched settings installs the new defaults byte for byte", async () => {
    const reset = await runCli(["repair", "--dir", game, "--reset-config", ...flags], portal.work);
    expect(reset.code, reset.stderr).toBe(0);
    const again = await runCli(["install", "better-hud@1.1.0", "--dir", game, ...flags], portal.work);
    expect(again.code, again.stderr).toBe(0);
    expect(readFileSync(config(), "utf8")).toBe(V2_DEFAULTS);
  });
});
