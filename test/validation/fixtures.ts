import { createHash, randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import type { Dependency, Entrypoint, ReleaseRecord } from "../../src/contracts/records.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { buildCatalog, type CatalogDocument, visibleMods } from "../../src/contracts/catalog.ts";
import { buildValidationContract, type ValidationContract } from "../../src/contracts/validation-contract.ts";
import { CHECKS } from "../../src/validation/checks/index.ts";
import type { GameBuildsDocument } from "../../src/validation/types.ts";
import { buildZip, type FixtureEntry, fakePe } from "./zip-builder.ts";

export const NOW = "2026-11-21T10:00:00.000Z";
export const BUILD = "17000000";
const config = loadPortalConfig(fileURLToPath(new URL("../../portal.config.json", import.meta.url)));

export function policy(): ValidationContract {
  return buildValidationContract(config, [BUILD], null, CHECKS, NOW);
}

export function gameBuilds(): GameBuildsDocument {
  return {
    schema: "svc.game-build-compatibility.v1",
    supportedGameBuilds: [BUILD],
    builds: [
      { buildId: BUILD, validationStatus: "validated", label: "Current public build" },
      { buildId: "16000000", validationStatus: "untested", label: "Old build" },
    ],
  };
}

export function releaseRecord(
  modId: string,
  version: string,
  dependencies: Dependency[] = [],
): ReleaseRecord {
  const fileName = `${modId}-${version}.zip`;
  return {
    schema: "svc.release-record.v1",
    modId,
    version,
    name: `Mod ${modId}`,
    summary: "A published mod.",
    description: "",
    authors: [{ name: "Someone" }],
    tags: [],
    links: {},
    targetGameBuild: BUILD,
    releaseNotes: "First release.",
    fileName,
    packageUrl: `${config.baseUrl}/downloads/mods/${modId}/${version}/${fileName}`,
    sha256: createHash("sha256").update(`${modId}@${version}`).digest("hex"),
    packageSizeBytes: 1000,
    dependencies,
    entrypoints: [{ path: "Content/Paks/x.pak", kind: "pak" }],
    publishedAt: "2026-11-01T00:00:00.000Z",
    status: "published",
    source: { kind: "import" },
    updatedAt: "2026-11-01T00:00:00.000Z",
  };
}

export function catalog(records: ReleaseRecord[] = [releaseRecord("core-lib", "1.4.0")]): CatalogDocument {
  return buildCatalog(config, visibleMods(records), [BUILD], NOW);
}

export interface PackageSpec {
  modId?: string;
  version?: string;
  dependencies?: Dependency[];
  entrypoints?: Entrypoint[];
  modConfig?: unknown;
  /** Extra entries appended after the standard ones. */
  extra?: FixtureEntry[];
  /** Replace the manifest object (or drop it with null). */
  manifest?: Record<string, unknown> | null;
  /** Size of the incompressible pak, to build packages near the size cap. */
  pakBytes?: number;
}

export function manifestFor(spec: PackageSpec = {}): Record<string, unknown> {
  return {
    schema: "svc.mod-manifest.v1",
    id: spec.modId ?? "better-hud",
    name: "Better HUD",
    version: spec.version ?? "1.2.0",
    targetGameBuild: BUILD,
    dependencies: spec.dependencies ?? [{ modId: "core-lib", versionRange: "^1.2.0" }],
    entrypoints: spec.entrypoints ?? [
      { path: "Binaries/Win64/BetterHud.dll", kind: "native" },
      { path: "Content/Paks/BetterHud_P.pak", kind: "pak" },
    ],
    ...(spec.modConfig !== undefined ? { modConfig: spec.modConfig } : {}),
  };
}

/** A good package: a DLL under Binaries/Win64, a pak, a config, the manifest. */
export function packageEntries(spec: PackageSpec = {}): FixtureEntry[] {
  const manifest = spec.manifest === undefined ? manifestFor(spec) : spec.manifest;
  const pak = randomBytes(spec.pakBytes ?? 64 * 1024);
  // Stored as it is, random bytes hold "PK\x05\x06" once in about 65,000 packages, and the reader
  // rightly refuses a second end record in the last 64 KiB (a flaky eocd_invalid): no "P", no signature.
  for (let i = 0; i < pak.length; i++) if (pak[i] === 0x50) pak[i] = 0x51;
  return [
    ...(manifest ? [{ name: "svc-mod.json", data: JSON.stringify(manifest, null, 2) }] : []),
    { name: "Binaries/", data: "" },
    { name: "Binaries/Win64/", data: "" },
    { name: "Binaries/Win64/BetterHud.dll", data: fakePe(32 * 1024) },
    { name: "Binaries/Win64/BetterHudCore.dll", data: fakePe(16 * 1024) },
    { name: "Content/Paks/BetterHud_P.pak", data: pak, method: 0 },
    { name: "config/settings.json", data: JSON.stringify({ hud: { scale: "medium", compass: true } }) },
    { name: "README.md", data: "# Better HUD\n\nA better HUD.\n" },
    ...(spec.extra ?? []),
  ];
}

export function sidecarFor(bytes: Buffer, spec: PackageSpec = {}, overrides: Record<string, unknown> = {}) {
  const m = manifestFor(spec);
  const version = (spec.version ?? "1.2.0") as string;
  const modId = spec.modId ?? "better-hud";
  return {
    schema: "svc.mod-release-submission.v1",
    modId,
    name: m.name,
    version,
    targetGameBuild: BUILD,
    summary: "A cleaner, scalable HUD.",
    description: "Rebuilds the HUD with scalable widgets.",
    releaseNotes: "Adds a compass.",
    package: {
      fileName: `${modId}-${version}.zip`,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      sizeBytes: bytes.length,
    },
    dependencies: m.dependencies,
    entrypoints: m.entrypoints,
    ...(spec.modConfig !== undefined ? { modConfig: spec.modConfig } : {}),
    authors: [{ name: "Ada", github: "ada", url: "https://example.com/ada" }],
    links: { homepage: "https://example.com/better-hud", source: "https://github.com/ada/better-hud" },
    license: "MIT",
    ...overrides,
  };
}

export function goodPackage(spec: PackageSpec = {}) {
  const bytes = buildZip(packageEntries(spec));
  return { bytes, sidecar: sidecarFor(bytes, spec) };
}

export const MOD_CONFIG = {
  file: "config/settings.json",
  settings: [
    {
      key: "hud.scale",
      label: "HUD scale",
      type: "select",
      default: "medium",
      options: [
        { value: "small", label: "Small" },
        { value: "medium", label: "Medium" },
        { value: "large", label: "Large" },
      ],
    },
    { key: "hud.compass", label: "Show compass", type: "boolean", default: true },
  ],
};
