import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.ts";
import { formatIssues, type SchemaRegistry } from "../contracts/schemas.ts";

import type { ModOwnership } from "../contracts/ownership.ts";
import type { ReleaseRecord } from "../contracts/records.ts";
import { RECORD_PATHS } from "../contracts/records.ts";

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new SvcError("invalid_payload", `${path} is not valid JSON: ${(error as Error).message}`);
  }
}

/** Loads and schema-checks every release record; a broken record stops the build with its path. */
export function loadReleaseRecords(recordsDir: string, registry: SchemaRegistry): ReleaseRecord[] {
  const modsDir = join(recordsDir, RECORD_PATHS.modsDir);
  if (!existsSync(modsDir)) return [];
  const records: ReleaseRecord[] = [];
  for (const modId of readdirSync(modsDir).sort())
    records.push(...loadModRecords(recordsDir, modId, registry));
  return records;
}

/** The release records of one mod (every status), schema-checked: what a publication of that mod reads. */
export function loadModRecords(recordsDir: string, modId: string, registry: SchemaRegistry): ReleaseRecord[] {
  const modDir = join(recordsDir, RECORD_PATHS.modsDir, modId);
  if (!existsSync(modDir)) return [];
  const records: ReleaseRecord[] = [];
  for (const file of readdirSync(modDir).sort()) {
    if (!file.endsWith(".json")) continue;
    const path = join(modDir, file);
    const result = registry.validate<ReleaseRecord>("release-record", readJson(path));
    if (!result.ok) {
      throw new SvcError(
        "invalid_payload",
        `${path} is not a valid release record:\n${formatIssues(result.issues)}`,
        {
          details: result.issues,
        },
      );
    }
    const record = result.value;
    if (record.modId !== modId || `${record.version}.json` !== file) {
      throw new SvcError(
        "invalid_payload",
        `${path} holds ${record.modId}@${record.version}; its path must match`,
      );
    }
    records.push(record);
  }
  return records;
}

export function loadOptionalJson<T>(recordsDir: string, relativePath: string): T | null {
  const path = join(recordsDir, relativePath);
  return existsSync(path) ? (readJson(path) as T) : null;
}

/** records/owners/{modId}.json, schema-checked; null when the mod id is unclaimed. */
export function loadOwnership(
  recordsDir: string,
  modId: string,
  registry: SchemaRegistry,
): ModOwnership | null {
  const value = loadOptionalJson<unknown>(recordsDir, RECORD_PATHS.ownership(modId));
  if (value === null) return null;
  const result = registry.validate<ModOwnership>("mod-ownership", value);
  if (!result.ok)
    throw new SvcError(
      "invalid_payload",
      `records/${RECORD_PATHS.ownership(modId)} is not a valid ownership record: ${formatIssues(result.issues)}`,
    );
  if (result.value.modId !== modId)
    throw new SvcError(
      "invalid_payload",
      `records/${RECORD_PATHS.ownership(modId)} names mod ${result.value.modId}`,
    );
  return result.value;
}

/** Every ownership record, by mod id. */
export function loadOwnerships(recordsDir: string, registry: SchemaRegistry): Map<string, ModOwnership> {
  const dir = join(recordsDir, RECORD_PATHS.ownersDir);
  const out = new Map<string, ModOwnership>();
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).sort()) {
    if (!name.endsWith(".json")) continue;
    const modId = name.slice(0, -".json".length);
    const ownership = loadOwnership(recordsDir, modId, registry);
    if (ownership) out.set(modId, ownership);
  }
  return out;
}

/** The bytes an ownership record is written with. */
export function ownershipText(ownership: ModOwnership): string {
  return `${JSON.stringify(ownership, null, 2)}\n`;
}
