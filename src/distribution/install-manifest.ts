import { existsSync, readFileSync, rmdirSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { writeFileAtomic } from "../lib/atomic-write.ts";
import { sha256Hex } from "../lib/hash.ts";
import { DistributionError } from "./errors.ts";
import { type InstalledFile, safeInstallPath } from "./package-files.ts";

export interface InstalledMod {
  version: string;
  packageSha256: string;
  packageSizeBytes: number;
  packageTarget: string;
  /** The version's game build: the newest visible version offered after a takedown is for the same build. */
  targetGameBuild?: string;
  /** The version's `modConfig.file`: the player's settings, never judged as damage. */
  configFile?: string;
  /** Each file at its package path, with the size and sha256 the portal signed. */
  files: InstalledFile[];
}

/**
 * Where a package's files go below the install folder.
 * - `mod-folder` (`svc install --dir`; a manifest without `layout`): `<dir>/<modId>/<path>`.
 * - `game` (`svc install --game`): the package is laid over the game folder as the package guide
 *   says, `<game>/<path>`; a file at the package root (svc-mod.json, a README) belongs to no game
 *   folder and goes to `<game>/<modsPath>/<modId>/<name>`, so two mods never share one.
 */
export type InstallLayout = { kind: "mod-folder" } | { kind: "game"; modsPath: string };

/** `<dir>/svc-install.json`: what verify, repair and uninstall compare the folder against. */
export interface InstallManifest {
  schema: "svc.install-manifest.v1";
  mirrorUrl: string;
  layout?: InstallLayout;
  mods: Record<string, InstalledMod>;
}

export const INSTALL_MANIFEST = "svc-install.json";

export function readManifest(root: string): InstallManifest | null {
  const file = safeInstallPath(root, INSTALL_MANIFEST);
  return existsSync(file) ? (JSON.parse(readFileSync(file, "utf8")) as InstallManifest) : null;
}

export function writeManifest(root: string, manifest: InstallManifest): void {
  const file = join(root, INSTALL_MANIFEST);
  writeFileAtomic(file, `${JSON.stringify(manifest, null, 2)}\n`);
}

/** A package file's place relative to the install folder, under the manifest's layout. */
export function placedPath(layout: InstallLayout | undefined, modId: string, path: string): string {
  if (layout?.kind !== "game") return `${modId}/${path}`;
  return path.includes("/") ? path : `${layout.modsPath}/${modId}/${path}`;
}

export interface VerifyReport {
  /** No damaged file and no withdrawn version; a settings file the player changed is not damage. */
  ok: boolean;
  checked: number;
  damaged: Array<{ modId: string; files: Array<{ path: string; problem: "missing" | "changed" }> }>;
  /** Settings files (`modConfig.file`) that differ from what the version shipped: the player's. */
  changedByYou: Array<{ modId: string; path: string }>;
  /** Installed versions the signed catalog no longer offers (known only online). */
  withdrawn: Array<{ modId: string; version: string; newestVisible: string | null }>;
}

/**
 * Compares every installed file with its expected size and sha256: `expected` (per mod id, e.g.
 * the signed per-file hashes from ManagerClient.expectedFiles), else what the install manifest
 * recorded (offline; install checked those against the signed hashes when the version had them).
 * `configFiles` names a mod's settings file where the manifest does not (one installed before it
 * recorded them).
 */
export function verifyInstall(
  dir: string,
  expected: Record<string, InstalledFile[]> = {},
  configFiles: Record<string, string> = {},
): VerifyReport {
  const root = resolve(dir);
  const manifest = readManifest(root);
  if (!manifest) throw new DistributionError("install_missing", `no ${INSTALL_MANIFEST} in ${root}`);
  const damaged: VerifyReport["damaged"] = [];
  const changedByYou: VerifyReport["changedByYou"] = [];
  let checked = 0;
  for (const [modId, mod] of Object.entries(manifest.mods).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const bad: VerifyReport["damaged"][number]["files"] = [];
    const configFile = mod.configFile ?? configFiles[modId];
    for (const file of expected[modId] ?? mod.files) {
      checked++;
      const full = safeInstallPath(root, placedPath(manifest.layout, modId, file.path));
      if (!existsSync(full)) {
        bad.push({ path: file.path, problem: "missing" });
        continue;
      }
      const bytes = readFileSync(full);
      if (bytes.length === file.size && sha256Hex(bytes) === file.sha256) continue;
      if (file.path === configFile) changedByYou.push({ modId, path: file.path });
      else bad.push({ path: file.path, problem: "changed" });
    }
    if (bad.length > 0) damaged.push({ modId, files: bad });
  }
  return { ok: damaged.length === 0, checked, damaged, changedByYou, withdrawn: [] };
}

/**
 * Removes the folders a removed file leaves empty, from its own up to (never including) the
 * install folder; a folder that still holds anything, the player's files included, stays.
 */
export function pruneEmptyFolders(root: string, placed: string): void {
  const segments = placed.split("/").slice(0, -1);
  while (segments.length > 0) {
    try {
      rmdirSync(join(root, ...segments));
    } catch {
      return;
    }
    segments.pop();
  }
}

/**
 * Removes exactly the files install placed for each mod (whatever they hold now: a changed settings
 * file goes with its mod), then the folders that leaves empty, and drops the mods from the manifest.
 * Files a player added beside them are never touched.
 */
export function uninstallMods(
  dir: string,
  modIds: readonly string[],
): Array<{ modId: string; path: string }> {
  const root = resolve(dir);
  const manifest = readManifest(root);
  if (!manifest) throw new DistributionError("install_missing", `no ${INSTALL_MANIFEST} in ${root}`);
  const unknown = modIds.filter((id) => !Object.hasOwn(manifest.mods, id));
  if (unknown.length > 0) {
    throw new DistributionError("install_missing", `${unknown.join(", ")} is not installed in ${root}`, {
      modIds: unknown,
    });
  }
  const removed: Array<{ modId: string; path: string }> = [];
  for (const modId of modIds) {
    for (const file of manifest.mods[modId]!.files) {
      const placed = placedPath(manifest.layout, modId, file.path);
      const full = safeInstallPath(root, placed);
      if (!existsSync(full)) continue;
      rmSync(full);
      removed.push({ modId, path: placed });
      pruneEmptyFolders(root, placed);
    }
    delete manifest.mods[modId];
  }
  writeManifest(root, manifest);
  return removed;
}
