import { CONFIG_JSON_LIMITS } from "../documents.ts";
import type { CheckContext, CheckOutcome, ModConfig, PackageCheck } from "../types.ts";
import { parseUntrustedJson } from "../../lib/untrusted-json.ts";
import { blocked, canonical, contentBlocker, failuresOf, firstNotPassed, passed } from "./common.ts";

const ID = "mod_config_contract";

export const modConfigContract = {
  id: ID,
  scope: "package",
  required: true,
  pack: "file_list",
  description:
    "Optional modConfig declares a safe JSON config path present in the package, select settings, defaults and allowed option values.",
  reasons: {
    config_path_unsafe: {
      meaning: "A modConfig file path escapes the package or is not a .json path.",
      fix: "Use a relative .json path inside the package.",
    },
    config_file_missing: {
      meaning: "A modConfig file is not in the package.",
      fix: "Add the config file to the package or fix its path.",
    },
    config_file_invalid: {
      meaning: "A modConfig file is not valid JSON.",
      fix: "Save the config file as UTF-8 JSON.",
    },
    config_setting_invalid: {
      meaning:
        "A select setting has no options, duplicate option values, or a default that is not one of its options.",
      fix: "Give each select setting unique options and a default taken from them.",
    },
    config_mismatch: {
      meaning: "The sidecar and svc-mod.json declare different modConfig.",
      fix: "Declare the same modConfig in both files.",
    },
  },
  run: checkModConfigContract,
} as const satisfies PackageCheck;

const { failed } = failuresOf(modConfigContract);

function lookup(doc: unknown, key: string): { found: boolean; value?: unknown } {
  let at: unknown = doc;
  for (const part of key.split(".")) {
    if (at === null || typeof at !== "object" || Array.isArray(at) || !Object.hasOwn(at, part))
      return { found: false };
    at = (at as Record<string, unknown>)[part];
  }
  return { found: true, value: at };
}

export function checkModConfigContract(ctx: CheckContext): CheckOutcome {
  const missing = firstNotPassed(ctx, ["sidecar_schema", "manifest_schema"]);
  const sidecar = ctx.sidecar.valid;
  const manifest = ctx.manifest.valid;
  if (missing || !sidecar || !manifest) {
    return blocked(ID, missing ?? "manifest_schema", "modConfig is read from a valid sidecar and manifest");
  }
  if (canonical(sidecar.modConfig ?? null) !== canonical(manifest.modConfig ?? null)) {
    return failed("config_mismatch", ["the sidecar and svc-mod.json declare different modConfig"]);
  }
  const config: ModConfig | undefined = manifest.modConfig;
  if (!config) return passed(ID, ["no modConfig declared; nothing to check"]);
  const path = config.file;
  if (
    path.split("/").some((s) => s === ".." || s === "." || s === "") ||
    !path.toLowerCase().endsWith(".json")
  ) {
    return failed("config_path_unsafe", [`${JSON.stringify(path)} is not a safe relative .json path`]);
  }
  if (!ctx.pkg.entries.some((e) => !e.entry.isDirectory && e.entry.name === path)) {
    return failed("config_file_missing", [`modConfig.file ${path} is not in the package`]);
  }
  const bytes = ctx.pkg.files.get(path);
  if (!bytes) {
    const blocker = contentBlocker(ctx);
    return blocked(ID, blocker?.check ?? "file_signature", blocker?.why ?? `${path} was not read`);
  }
  const parsed = parseUntrustedJson(bytes, CONFIG_JSON_LIMITS);
  if (!parsed.ok) return failed("config_file_invalid", [`${path}: ${parsed.message}`]);
  const log: string[] = [];
  const keys = new Set<string>();
  for (const s of config.settings) {
    const where = `setting ${s.key}`;
    if (keys.has(s.key)) log.push(`${where}: declared more than once`);
    keys.add(s.key);
    let allowed: unknown[];
    if (s.type === "select") {
      const values = (s.options ?? []).map((o) => o.value);
      if (values.length < 2) log.push(`${where}: a select needs at least two options`);
      if (new Set(values.map((v) => canonical(v))).size !== values.length)
        log.push(`${where}: option values repeat`);
      allowed = values;
    } else {
      allowed = [true, false];
    }
    if (!allowed.some((v) => canonical(v) === canonical(s.default))) {
      log.push(
        `${where}: default ${JSON.stringify(s.default)} is not one of ${allowed.map((v) => JSON.stringify(v)).join(", ")}`,
      );
    }
    const current = lookup(parsed.value, s.key);
    if (!current.found) log.push(`${where}: ${path} has no value at ${s.key}`);
    else if (!allowed.some((v) => canonical(v) === canonical(current.value))) {
      log.push(`${where}: ${path} holds ${JSON.stringify(current.value)}, which is not an allowed value`);
    }
  }
  if (log.length > 0) return failed("config_setting_invalid", log);
  return passed(ID, [`${path}: ${config.settings.length} setting(s) with allowed values and defaults`]);
}
