import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type OnlineKeys, parseOnlineKeys } from "../distribution/tuf-keys.ts";
import type { SiteSigning } from "../distribution/tuf-repository.ts";
import type { CliIo } from "./io.ts";

// Where a project's online signing keys are found. Apart from keys.ts (the \`svc keys\` command) so
// that a command that only signs its publications (svc import, serve, check, smoke) does not load
// what \`svc keys\` needs (key generation, root rotation, provenance, mirror transfers).

/** Parses SVC_TUF_ONLINE_KEYS at the edge: the bundle's JSON itself, or the path of a file holding it. */
export function onlineKeysFromEnv(env: NodeJS.ProcessEnv, cwd: string): OnlineKeys | null {
  const value = env.SVC_TUF_ONLINE_KEYS?.trim();
  if (!value) return null;
  if (value.startsWith("{")) return parseOnlineKeys(value, "SVC_TUF_ONLINE_KEYS");
  const file = resolve(cwd, value);
  return parseOnlineKeys(readFileSync(file, "utf8"), file);
}

/**
 * Where a local portal keeps its online keys: online.keys.json in its data folder (SVC_DATA_DIR, else
 * .data/, never in git). `svc keys sign` with SVC_TUF_ONLINE_KEYS puts a copy there, so the portal
 * (`npm start`, `svc import`) signs every later publication without the variable.
 */
export function localKeysFile(env: NodeJS.ProcessEnv, cwd: string, dataDir?: string): string {
  return resolve(cwd, dataDir ?? (env.SVC_DATA_DIR?.trim() || ".data"), "online.keys.json");
}

/** The online keys of this project: SVC_TUF_ONLINE_KEYS, else the local portal's copy, else null. */
export function projectOnlineKeys(env: NodeJS.ProcessEnv, cwd: string, dataDir?: string): OnlineKeys | null {
  const fromEnv = onlineKeysFromEnv(env, cwd);
  if (fromEnv) return fromEnv;
  const file = localKeysFile(env, cwd, dataDir);
  return existsSync(file) ? parseOnlineKeys(readFileSync(file, "utf8"), file) : null;
}

/** The signing `svc build` does when online keys are found (null: unsigned, signed later by `svc keys sign`). */
export function siteSigningFromEnv(io: Pick<CliIo, "env" | "cwd">): SiteSigning | null {
  const keys = projectOnlineKeys(io.env, io.cwd);
  return keys ? { keys } : null;
}

/**
 * The signing of a local portal's publications (svc import, svc serve, smoke --record): the keys are
 * looked up at each publication, so keys made while the portal runs are used at once, and a
 * publication on a signed site (site/tuf has a root) without them is refused before anything is
 * committed (signing_keys_missing, naming SVC_TUF_ONLINE_KEYS).
 */
export function portalSigning(io: Pick<CliIo, "env" | "cwd">, dataDir?: string): SiteSigning {
  return { keys: () => projectOnlineKeys(io.env, io.cwd, dataDir) };
}
