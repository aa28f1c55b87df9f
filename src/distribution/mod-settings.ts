import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { CONFIG_JSON_LIMITS } from "../validation/documents.ts";

/** What a version's signed `modConfig` tells a manager: the player's settings file and what each setting allows. */
export interface ModSettings {
  file: string;
  settings: Array<{ key: string; allowed: unknown[] }>;
}

const KEY = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*){0,7}$/;
const FORBIDDEN = new Set(["constructor", "prototype"]);

/**
 * The settings a signed `modConfig` declares (the contract's mod_config_contract shape), or null
 * when there is none. Signed is not the same as well-formed: a setting this client cannot read is
 * left out, so its value falls back to the new default instead of being carried over.
 */
export function readModSettings(modConfig: unknown): ModSettings | null {
  if (!modConfig || typeof modConfig !== "object") return null;
  const { file, settings } = modConfig as { file?: unknown; settings?: unknown };
  if (typeof file !== "string" || !Array.isArray(settings)) return null;
  const read: ModSettings["settings"] = [];
  for (const setting of settings as Array<Record<string, unknown> | null>) {
    const key = setting?.key;
    if (typeof key !== "string" || !KEY.test(key) || key.split(".").some((s) => FORBIDDEN.has(s))) continue;
    if (setting?.type === "boolean") read.push({ key, allowed: [true, false] });
    else if (setting?.type === "select" && Array.isArray(setting.options)) {
      const allowed = (setting.options as Array<{ value?: unknown } | null>)
        .map((o) => o?.value)
        .filter((v) => ["string", "number", "boolean"].includes(typeof v));
      read.push({ key, allowed });
    }
  }
  return { file, settings: read };
}

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject =>
  value !== null && typeof value === "object" && !Array.isArray(value);

function lookup(doc: unknown, key: string): { found: boolean; value?: unknown } {
  let at: unknown = doc;
  for (const part of key.split(".")) {
    if (!isObject(at) || !Object.hasOwn(at, part)) return { found: false };
    at = at[part];
  }
  return { found: true, value: at };
}

function assign(doc: JsonObject, key: string, value: unknown): boolean {
  const parts = key.split(".");
  let at = doc;
  for (const part of parts.slice(0, -1)) {
    if (!Object.hasOwn(at, part)) at[part] = {};
    const next = at[part];
    if (!isObject(next)) return false;
    at = next;
  }
  at[parts[parts.length - 1]!] = value;
  return true;
}

/**
 * The new version's settings file with the player's values carried over: every setting the new
 * version declares whose value in the player's file is one it still allows. Everything else (a
 * removed setting, an option no longer offered, keys no setting names) comes from the new file.
 * When nothing differs from the new defaults the new file's bytes are returned as they are, so an
 * untouched file stays byte-identical to the signed one.
 */
export function keepPlayerSettings(
  settings: ModSettings,
  defaults: Buffer,
  player: Buffer,
): { data: Buffer; kept: string[] } {
  const next = parseUntrustedJson(defaults, CONFIG_JSON_LIMITS);
  const mine = parseUntrustedJson(player, CONFIG_JSON_LIMITS);
  if (!next.ok || !isObject(next.value) || !mine.ok) return { data: defaults, kept: [] };
  const merged = next.value;
  const kept: string[] = [];
  for (const { key, allowed } of settings.settings) {
    const theirs = lookup(mine.value, key);
    if (!theirs.found || !allowed.includes(theirs.value)) continue;
    const current = lookup(merged, key);
    if (current.found && current.value === theirs.value) continue;
    if (assign(merged, key, theirs.value)) kept.push(key);
  }
  if (kept.length === 0) return { data: defaults, kept };
  return { data: Buffer.from(`${JSON.stringify(merged, null, 2)}\n`), kept };
}
