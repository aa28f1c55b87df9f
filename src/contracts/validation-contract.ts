import type { PortalConfig } from "../config/portal-config.ts";
import { type CheckDefinition, checkDefinition, requiredPackageCheckIds } from "./checks.ts";
import { portalUrls } from "./urls.ts";

export const MANIFEST_FILE_NAME = "svc-mod.json";

/** The upload inspection policy: the runner reads every cap, extension and signature from here. */
export interface ValidationContract {
  schema: "svc.game-publishing-validation.v1";
  generatedAt: string;
  game: { name: string; storeAppId: string };
  framework: { version: string | null; runtimeTag: string };
  supportedGameBuilds: string[];
  gameBuildCompatibilityUrl: string;
  sidecarSchemaUrl: string;
  manifestSchemaUrl: string;
  manifestFileName: typeof MANIFEST_FILE_NAME;
  checks: CheckDefinition[];
  requiredChecks: string[];
  package: {
    acceptedContentTypes: Array<"application/zip" | "application/x-zip-compressed">;
    maxPackageBytes: number;
    maxEntries: number;
    maxNameBytes: number;
    maxPathDepth: number;
    maxEntryUncompressedBytes: number;
    maxTotalUncompressedBytes: number;
    maxCompressionRatio: number;
    compressionRatioMinBytes: number;
    allowedCompressionMethods: Array<0 | 8>;
    maxNestedArchiveDepth: number;
  };
  content: {
    allowedExtensions: string[];
    nativeBinaryExtensions: string[];
    nativeBinaryDirectory: "Binaries/Win64";
    forbiddenExtensions: string[];
    scriptExtensions: string[];
    configExtensions: string[];
  };
  signatures: {
    package: string[];
    byExtension: Record<string, string[]>;
    forbiddenAnywhere: string[];
  };
}

const MIB = 1024 * 1024;

/**
 * What the contract calls native and script: also what the bot's release diff flags, since the bot
 * has no checked-out site to read the contract from.
 */
export const NATIVE_RULES = {
  nativeBinaryExtensions: [".dll", ".exe"],
  nativeBinaryDirectory: "Binaries/Win64",
  scriptExtensions: [".lua"],
} as const;

/** The ZIP caps the framework validation contract publishes (also what `svc new` uses without a site). */
export const DEFAULT_ZIP_CAPS = {
  maxEntries: 25_000,
  maxNameBytes: 240,
  maxPathDepth: 12,
  maxEntryUncompressedBytes: 512 * MIB,
  maxTotalUncompressedBytes: 1024 * MIB,
  maxCompressionRatio: 200,
  compressionRatioMinBytes: 1 * MIB,
} as const;

export function buildValidationContract(
  config: PortalConfig,
  supportedGameBuilds: string[],
  frameworkVersion: string | null,
  checks: readonly CheckDefinition[],
  generatedAt: string,
): ValidationContract {
  const urls = portalUrls(config.baseUrl);
  return {
    schema: "svc.game-publishing-validation.v1",
    generatedAt,
    game: { name: config.game.name, storeAppId: config.game.storeAppId },
    framework: { version: frameworkVersion, runtimeTag: config.runtime.tag },
    supportedGameBuilds,
    gameBuildCompatibilityUrl: urls.gameBuilds,
    sidecarSchemaUrl: urls.sidecarSchema,
    manifestSchemaUrl: urls.manifestSchema,
    manifestFileName: MANIFEST_FILE_NAME,
    checks: checks.map(checkDefinition),
    requiredChecks: requiredPackageCheckIds(checks),
    package: {
      acceptedContentTypes: ["application/zip", "application/x-zip-compressed"],
      maxPackageBytes: config.limits.maxPackageBytes,
      ...DEFAULT_ZIP_CAPS,
      allowedCompressionMethods: [0, 8],
      maxNestedArchiveDepth: 0,
    },
    content: {
      allowedExtensions: [
        ".pak",
        ".utoc",
        ".ucas",
        ".sig",
        ".uasset",
        ".uexp",
        ".ubulk",
        ".umap",
        ".locres",
        ".dll",
        ".pdb",
        ".exe",
        ".lua",
        ".json",
        ".ini",
        ".toml",
        ".cfg",
        ".txt",
        ".md",
        ".csv",
        ".png",
        ".jpg",
        ".jpeg",
        ".dds",
        ".tga",
        ".wav",
        ".ogg",
        ".ttf",
        ".otf",
      ],
      nativeBinaryExtensions: [...NATIVE_RULES.nativeBinaryExtensions],
      nativeBinaryDirectory: NATIVE_RULES.nativeBinaryDirectory,
      forbiddenExtensions: [
        ".bat",
        ".cmd",
        ".ps1",
        ".psm1",
        ".vbs",
        ".vbe",
        ".js",
        ".jse",
        ".wsf",
        ".wsh",
        ".hta",
        ".lnk",
        ".scr",
        ".com",
        ".pif",
        ".cpl",
        ".msi",
        ".msp",
        ".reg",
        ".sh",
        ".jar",
        ".sys",
        ".drv",
        ".ocx",
        ".zip",
        ".7z",
        ".rar",
        ".gz",
        ".tar",
        ".cab",
        ".iso",
      ],
      scriptExtensions: [...NATIVE_RULES.scriptExtensions],
      configExtensions: [".json", ".ini", ".toml", ".cfg"],
    },
    signatures: {
      package: ["zip"],
      byExtension: {
        ".dll": ["pe"],
        ".exe": ["pe"],
        ".png": ["png"],
        ".jpg": ["jpeg"],
        ".jpeg": ["jpeg"],
        ".dds": ["dds"],
        ".wav": ["riff"],
        ".ogg": ["ogg"],
        ".ttf": ["truetype"],
        ".otf": ["opentype"],
        ".pdb": ["msf"],
      },
      // Kinds as src/validation/zip/sniff.ts names them; "ole" is the compound file format of MSI installers.
      forbiddenAnywhere: [
        "elf",
        "macho",
        "java_class",
        "wasm",
        "lnk",
        "zip",
        "gzip",
        "bzip2",
        "xz",
        "zstd",
        "7z",
        "rar",
        "cab",
        "tar",
        "ole",
      ],
    },
  };
}
