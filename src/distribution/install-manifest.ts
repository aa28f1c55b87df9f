import { existsSync, readFileSync } from "node:fs";
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
  files: InstalledFile[];
}
/** `<dir>/svc-install.json`: what verify and repair compare the folder against. */
export interface InstallManifest {
  schema: "svc.install-manifest.v1";
  mirrorUrl: string;
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

export interface VerifyReport {
  ok: boolean;
  checked: number;
  damaged: Array<{ modId: string; files: Array<{ path: string; problem: "missing" | "changed" }> }>;
}

/**
 * Compares every installed file with its expected size and sha256: `expected` (per mod id, e.g.
 * the signed per-file hashes from ManagerClient.expectedFiles), else what the install manifest
 * recorded (offline; install checked those against the signed hashes when the version had them).
 */
export function verifyInstall(dir: string, expected: Record<string, InstalledFile[]> = {}): VerifyReport {
  const root = resolve(dir);
  const manifest = readManifest(root);
  if (!manifest) throw new DistributionError("install_missing", `no ${INSTALL_MANIFEST} in ${root}`);
  const damaged: VerifyReport["damaged"] = [];
  let checked = 0;
  for (const [modId, mod] of Object.entries(manifest.mods).sort(([a], [b]) => (a < b ? -1 : 1))) {
    const bad: VerifyReport["damaged"][number]["files"] = [];
    for (const file of expected[modId] ?? mod.files) {
      checked++;
      const full = safeInstallPath(root, `${modId}/${file.path}`);
      if (!existsSync(full)) {
        bad.push({ path: file.path, problem: "missing" });
        continue;
      }
      const bytes = readFileSync(full);
      if (bytes.length !== file.size || sha256Hex(bytes) !== file.sha256)
        bad.push({ path: file.path, problem: "changed" });
    }
    if (bad.length > 0) damaged.push({ modId, files: bad });
  }
  return { ok: damaged.length === 0, checked, damaged };
}
