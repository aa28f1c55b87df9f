import { readFileSync } from "node:fs";
import type { PortalConfig } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import { SOURCE_SCHEMA_BASE, schemaRegistry } from "./schemas.ts";

/** Parses and validates operator configuration; an invalid field fails with a message that names it. */
export function parsePortalConfig(value: unknown, source = "portal.config.json"): PortalConfig {
  // The schema is validated against the source base: the config's own baseUrl is not known yet.
  const result = schemaRegistry(SOURCE_SCHEMA_BASE).validate<PortalConfig>("portal-config", value);
  if (!result.ok) {
    const first = result.issues[0]!;
    const field = first.path === "/" ? "(top level)" : first.path.slice(1).replaceAll("/", ".");
    throw new SvcError(
      "config_invalid",
      `${source}: field ${field} ${first.message}` +
        (result.issues.length > 1 ? ` (and ${result.issues.length - 1} more problem(s))` : ""),
      { details: result.issues },
    );
  }
  return result.value;
}

export function loadPortalConfig(path: string): PortalConfig {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new SvcError("config_invalid", `cannot read ${path}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new SvcError("config_invalid", `${path} is not valid JSON: ${(error as Error).message}`);
  }
  return parsePortalConfig(value, path);
}
