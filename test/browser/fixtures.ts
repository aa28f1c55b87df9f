import type { ReleaseRecord } from "../../src/contracts/records.ts";
import { releaseRecord } from "../support/temp-project.ts";

const hash = (c: string) => c.repeat(64);

/** A small, realistic catalog: three mods, two game builds, a dependency, a superseded version. */
export function showcaseRecords(): ReleaseRecord[] {
  return [
    releaseRecord({
      modId: "better-hud",
      version: "1.0.0",
      status: "superseded",
      releaseNotes: "First release.",
      publishedAt: "2026-10-01T10:00:00.000Z",
      sha256: hash("b"),
      packageSizeBytes: 182_304,
    }),
    releaseRecord({
      modId: "better-hud",
      version: "1.1.0",
      name: "Better HUD",
      summary: "A cleaner heads-up display with movable panels and a compact ammo counter.",
      description:
        "Better HUD rearranges the heads-up display.\n\nPanels can be moved in the config file; the ammo counter shrinks to one line.",
      authors: [{ name: "Ada", github: "ada" }],
      tags: ["ui", "hud"],
      links: {
        source: "https://github.com/ada/better-hud",
        issues: "https://github.com/ada/better-hud/issues",
      },
      releaseNotes: "Movable panels.\nCompact ammo counter.\nFixes the minimap overlap.",
      dependencies: [{ modId: "core-lib", versionRange: "^2.0.0" }],
      publishedAt: "2026-11-01T10:00:00.000Z",
      sha256: hash("c"),
      packageSizeBytes: 190_112,
    }),
    releaseRecord({
      modId: "core-lib",
      version: "2.0.0",
      name: "Core Library",
      summary: "Shared hooks other mods build on.",
      description: "Hooks and helpers used by other mods.",
      authors: [{ name: "Grace", url: "https://grace.dev" }],
      tags: ["library"],
      links: {},
      fileName: "core-lib-2.0.0.zip",
      packageUrl: "http://127.0.0.1:8787/downloads/mods/core-lib/2.0.0/core-lib-2.0.0.zip",
      entrypoints: [{ path: "Binaries/Win64/Mods/core.pak", kind: "pak" }],
      releaseNotes: "Stable API.",
      sha256: hash("d"),
      packageSizeBytes: 40_960,
    }),
    releaseRecord({
      modId: "night-sky",
      version: "0.9.2",
      name: "Night Sky",
      summary: "Darker nights and real constellations.",
      description: "Replaces the night skybox.",
      authors: [{ name: "Lin" }],
      tags: ["graphics"],
      links: { homepage: "https://night-sky.games" },
      targetGameBuild: "16000000",
      fileName: "night-sky-0.9.2.zip",
      packageUrl: "http://127.0.0.1:8787/downloads/mods/night-sky/0.9.2/night-sky-0.9.2.zip",
      entrypoints: [{ path: "Binaries/Win64/Mods/sky.pak", kind: "pak" }],
      releaseNotes: "Built for the previous game build.",
      sha256: hash("e"),
      packageSizeBytes: 5_242_880,
    }),
  ];
}

/** A record whose text fields carry markup and script: all of it must reach the page as text. */
export function hostileRecord(): ReleaseRecord {
  return releaseRecord({
    modId: "evil-mod",
    version: "6.6.6",
    name: "<script>window.__pwned='name'</script>Evil",
    summary: `<img src=x onerror="window.__pwned='summary'"> "quoted" & 'single'`,
    description: `<a href="javascript:window.__pwned='description'">click me</a>\n<iframe src="javascript:alert(1)"></iframe>`,
    authors: [{ name: "<b onmouseover=alert(1)>Mallory</b>" }],
    tags: ["ui"],
    links: {},
    releaseNotes: "line one\n<script>window.__pwned='notes'</script>\nline three",
    fileName: "evil-mod-6.6.6.zip",
    packageUrl: "http://127.0.0.1:8787/downloads/mods/evil-mod/6.6.6/evil-mod-6.6.6.zip",
    sha256: hash("f"),
    packageSizeBytes: 1000,
  });
}
