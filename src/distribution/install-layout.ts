import { lstatSync, mkdirSync, renameSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeFileSynced } from "../lib/atomic-write.ts";
import { DistributionError } from "./errors.ts";
import {
  INSTALL_MANIFEST,
  type InstallLayout,
  type InstallManifest,
  placedPath,
  pruneEmptyFolders,
} from "./install-manifest.ts";
import { type InstalledFile, safeInstallPath, safeJoin } from "./package-files.ts";

export const STAGING_DIR = ".svc-staging";
export const CACHE_DIR = ".svc-cache";

/** One mod of an install batch: the files to write (a settings file already merged with the player's). */
export interface PlacedMod {
  modId: string;
  files: Array<InstalledFile & { data: Buffer }>;
}

// Windows, where these games run, does not tell `Mods/X.dll` from `mods/x.dll`.
const key = (path: string) => path.toLowerCase();

function conflict(message: string, details: Record<string, unknown>): DistributionError {
  return new DistributionError("install_conflict", message, details);
}

/** Refuses to add to an installation made with the other layout (its files are placed otherwise). */
export function assertSameLayout(root: string, manifest: InstallManifest, layout: InstallLayout): void {
  const kind = manifest.layout?.kind ?? "mod-folder";
  if (kind === layout.kind) return;
  throw conflict(
    `${root} holds a ${kind} installation; install there with ${kind === "game" ? "--game" : "--dir"}, or into another folder`,
    { layout: kind },
  );
}

/**
 * Refuses a batch that would place a file where the installation has no right to write, under the
 * game layout: over another mod's file (installed or in the same batch), over any file the manifest
 * does not give to the mod itself (the game's own files, the player's), over a file of the signed
 * runtime layout (`reserved`), or over svc's own names. Runs before anything is written.
 */
export function assertPlaceable(
  root: string,
  manifest: InstallManifest,
  layout: InstallLayout,
  batch: readonly PlacedMod[],
  reserved: readonly string[],
): void {
  if (layout.kind !== "game") return;
  const owners = new Map<string, string>();
  for (const [modId, mod] of Object.entries(manifest.mods)) {
    for (const file of mod.files) owners.set(key(placedPath(layout, modId, file.path)), modId);
  }
  const inBatch = new Set(batch.map((m) => m.modId));
  const claimed = new Map([...owners].filter(([, modId]) => !inBatch.has(modId)));
  const ours = new Set([INSTALL_MANIFEST, STAGING_DIR, CACHE_DIR].map(key));
  const runtime = new Set(reserved.map(key));
  for (const { modId, files } of batch) {
    for (const file of files) {
      const placed = placedPath(layout, modId, file.path);
      const details = { modId, path: placed };
      if (ours.has(key(placed.split("/")[0]!)))
        throw conflict(`${modId} would place ${placed}, a name svc keeps for itself`, details);
      if (runtime.has(key(placed)))
        throw conflict(`${modId} would replace ${placed}, a file of the runtime loader`, details);
      const other = claimed.get(key(placed));
      if (other !== undefined)
        throw conflict(`${modId} would replace ${placed}, which belongs to ${other}`, {
          ...details,
          owner: other,
        });
      claimed.set(key(placed), modId);
      assertFreeOnDisk(root, placed, owners.get(key(placed)) === modId, details);
    }
  }
}

/** The path's folders are folders, and the file is absent or the mod's own from its installed version. */
function assertFreeOnDisk(root: string, placed: string, ownFile: boolean, details: Record<string, unknown>) {
  const full = safeInstallPath(root, placed);
  const segments = placed.split("/");
  for (let i = 1; i <= segments.length; i++) {
    const stat = lstatSync(join(root, ...segments.slice(0, i)), { throwIfNoEntry: false });
    if (!stat) return;
    if (i < segments.length && !stat.isDirectory())
      throw conflict(
        `${placed} needs ${segments.slice(0, i).join("/")} to be a folder; it is a file`,
        details,
      );
    if (i === segments.length && (stat.isDirectory() || !ownFile)) {
      throw conflict(
        `${details.modId} would replace ${placed}, which is not one of its installed files (the game's, the player's or another tool's)`,
        { ...details, full },
      );
    }
  }
}

/** Writes each mod's new files under `<staging>/new/<modId>/` (nothing in the installation yet). */
export function stageFiles(staging: string, batch: readonly PlacedMod[]): void {
  for (const { modId, files } of batch) {
    for (const file of files) writeFileSynced(safeJoin(join(staging, "new", modId), file.path), file.data);
  }
}

/**
 * The mod-folder swap: whatever stands at a mod folder's name, a symbolic link included, is moved
 * aside as itself (rename never follows a link) and removed with the staging folder: replaced,
 * never followed.
 */
export function swapModFolders(root: string, staging: string, batch: readonly PlacedMod[]): void {
  mkdirSync(join(staging, "old"), { recursive: true });
  for (const { modId } of batch) {
    const target = join(root, modId);
    if (lstatSync(target, { throwIfNoEntry: false })) renameSync(target, join(staging, "old", modId));
    renameSync(join(staging, "new", modId), target);
  }
}

/**
 * The game swap, file by file: each mod's previously installed files are moved aside, then the new
 * ones renamed into place. A failure midway (a file locked by the running game, a full disk) moves
 * everything back in reverse order before the error is raised. Folders a removed file leaves empty
 * go at the end.
 */
export function swapGameFiles(
  root: string,
  staging: string,
  manifest: InstallManifest,
  layout: InstallLayout,
  batch: readonly PlacedMod[],
): void {
  const moves: Array<{ from: string; to: string }> = [];
  const move = (from: string, to: string) => {
    mkdirSync(dirname(to), { recursive: true });
    renameSync(from, to);
    moves.push({ from, to });
  };
  const left: string[] = [];
  try {
    for (const { modId, files } of batch) {
      const placedNow = new Set(files.map((f) => key(placedPath(layout, modId, f.path))));
      for (const old of manifest.mods[modId]?.files ?? []) {
        const placed = placedPath(layout, modId, old.path);
        const full = safeInstallPath(root, placed);
        if (!lstatSync(full, { throwIfNoEntry: false })) continue;
        move(full, safeJoin(join(staging, "old", modId), old.path));
        if (!placedNow.has(key(placed))) left.push(placed);
      }
    }
    for (const { modId, files } of batch) {
      for (const file of files) {
        const full = safeInstallPath(root, placedPath(layout, modId, file.path));
        move(safeJoin(join(staging, "new", modId), file.path), full);
      }
    }
  } catch (error) {
    for (const { from, to } of moves.reverse()) {
      try {
        renameSync(to, from);
      } catch {
        // Best effort: the error that stopped the swap is the one worth reporting.
      }
    }
    throw error;
  }
  for (const placed of left) pruneEmptyFolders(root, placed);
}
