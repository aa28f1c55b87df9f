/**
 * The one reader and writer of the sharded records (src/contracts/records.ts has the decision and
 * the paths): records/mods/{shard}/{modId}.json (every release record of a mod) and
 * records/owners/{shard}.json (the ownership records of a shard's mods). Every write still goes
 * through the caller's journaled commitFiles; these functions only read and render bytes. A
 * portal still on the layout before sharding is refused with records_layout_outdated, naming
 * `svc records migrate`.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { SvcError } from "../errors.ts";
import { formatIssues, type SchemaRegistry } from "../contracts/schemas.ts";
import * as semver from "../contracts/semver.ts";

import type { ModOwnership } from "../contracts/ownership.ts";
import type { ModRecords, OwnersShard, ReleaseRecord } from "../contracts/records.ts";
import { RECORD_PATHS, recordShard, SHARD_PATTERN } from "../contracts/records.ts";

export const MOD_RECORDS_SCHEMA = "svc.mod-records.v1";
export const OWNERS_SHARD_SCHEMA = "svc.owners-shard.v1";

/** The command that rewrites a portal's records into the sharded layout. */
export const MIGRATE_COMMAND = "svc records migrate";

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new SvcError("invalid_payload", `${path} is not valid JSON: ${(error as Error).message}`);
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The refusal of a portal whose records are still in the layout before sharding. */
export function layoutOutdated(recordsDir: string, found: string): SvcError {
  return new SvcError(
    "records_layout_outdated",
    `${join(recordsDir, found)} is in the records layout before sharding (one file per version under records/mods/{modId}/, records/owners/{modId}.json, records/changes/{page}.json, records/publication/{modId}/); run \`${MIGRATE_COMMAND}\` in the project and commit the result`,
    { details: { found: `records/${found}`, command: MIGRATE_COMMAND } },
  );
}

/**
 * A folder of release records in the layout before sharding: records/mods/{modId}/{version}.json.
 * A version always has dots and a mod id never does, so even a two-character mod id that looks
 * like a shard ("3f") is told apart from a shard folder.
 */
function isOldModDir(dir: string): boolean {
  if (!isDirectory(dir)) return false;
  return readdirSync(dir).some((name) => name.endsWith(".json") && name.slice(0, -5).includes("."));
}

function sortReleases(releases: readonly ReleaseRecord[]): ReleaseRecord[] {
  return [...releases].sort((a, b) =>
    semver.lt(a.version, b.version) ? -1 : semver.gt(a.version, b.version) ? 1 : 0,
  );
}

/** Checks one mod file: its schema, that its path names its mod, each release names it, versions once. */
function checkModFile(
  path: string,
  modId: string,
  value: unknown,
  registry: SchemaRegistry,
): ReleaseRecord[] {
  const result = registry.validate<ModRecords>("mod-records", value);
  if (!result.ok) {
    throw new SvcError(
      "invalid_payload",
      `${path} is not a valid mod records file (svc.mod-records.v1):\n${formatIssues(result.issues)}`,
      {
        details: result.issues,
      },
    );
  }
  const file = result.value;
  if (file.modId !== modId)
    throw new SvcError(
      "invalid_payload",
      `${path} holds the records of ${file.modId}; its path must name the mod (${modId})`,
    );
  const seen = new Set<string>();
  for (const record of file.releases) {
    if (record.modId !== modId)
      throw new SvcError(
        "invalid_payload",
        `${path} holds ${record.modId}@${record.version}; every release in it must be of ${modId}`,
      );
    if (seen.has(record.version))
      throw new SvcError(
        "invalid_payload",
        `${path} holds ${modId}@${record.version} twice; each version is recorded once`,
      );
    seen.add(record.version);
  }
  return sortReleases(file.releases);
}

/**
 * Every mod records file, in the order loadReleaseRecords reads them (shards, then names), after
 * the layout checks it makes (a folder or file that does not belong stops it with its path): what a
 * reader that takes the mods one at a time (the full build) lists first. Nothing is parsed.
 */
export function listModRecordFiles(recordsDir: string): Array<{ modId: string; path: string }> {
  const files: Array<{ modId: string; path: string }> = [];
  forEachModRecordsFile(recordsDir, (modId, path) => files.push({ modId, path }));
  return files;
}

/** Calls `visit` for each mod records file in turn, making the layout checks as it reaches each. */
function forEachModRecordsFile(recordsDir: string, visit: (modId: string, path: string) => void): void {
  const modsDir = join(recordsDir, RECORD_PATHS.modsDir);
  if (!existsSync(modsDir)) return;
  for (const shard of readdirSync(modsDir).sort()) {
    const shardDir = join(modsDir, shard);
    if (!SHARD_PATTERN.test(shard) || isOldModDir(shardDir)) {
      if (isOldModDir(shardDir)) throw layoutOutdated(recordsDir, `${RECORD_PATHS.modsDir}/${shard}`);
      // An empty folder is nothing (git keeps none; a migration or a deletion may leave one).
      if (isDirectory(shardDir) && readdirSync(shardDir).length === 0) continue;
      throw new SvcError(
        "invalid_payload",
        `${shardDir} does not belong in records/mods (only the 256 shard folders 00..ff)`,
      );
    }
    for (const name of readdirSync(shardDir).sort()) {
      const path = join(shardDir, name);
      if (!name.endsWith(".json"))
        throw new SvcError(
          "invalid_payload",
          `${path} does not belong in records/mods/${shard} (only {modId}.json)`,
        );
      const modId = name.slice(0, -".json".length);
      if (recordShard(modId) !== shard)
        throw new SvcError(
          "invalid_payload",
          `${path} is in shard ${shard}, but ${modId} belongs in records/${RECORD_PATHS.modRecords(modId)}`,
        );
      visit(modId, path);
    }
  }
}

/** One file of listModRecordFiles, read and schema-checked: its releases, semver ascending. */
export function readModRecordsFile(path: string, modId: string, registry: SchemaRegistry): ReleaseRecord[] {
  return checkModFile(path, modId, readJson(path), registry);
}

/** Loads and schema-checks every release record; a broken record stops the build with its path. */
export function loadReleaseRecords(recordsDir: string, registry: SchemaRegistry): ReleaseRecord[] {
  const records: ReleaseRecord[] = [];
  forEachModRecordsFile(recordsDir, (modId, path) =>
    records.push(...readModRecordsFile(path, modId, registry)),
  );
  return records;
}

/** The release records of one mod (every status, semver ascending), schema-checked: what a publication of that mod reads. */
export function loadModRecords(recordsDir: string, modId: string, registry: SchemaRegistry): ReleaseRecord[] {
  const path = join(recordsDir, RECORD_PATHS.modRecords(modId));
  if (!existsSync(path)) {
    if (isOldModDir(join(recordsDir, RECORD_PATHS.modsDir, modId)))
      throw layoutOutdated(recordsDir, `${RECORD_PATHS.modsDir}/${modId}`);
    return [];
  }
  return checkModFile(path, modId, readJson(path), registry);
}

/**
 * One release record as the mod file holds it, or null when the version is not recorded. A cheap
 * read (no schema check of the other versions): what a question about one version needs.
 */
export function findReleaseRecord(recordsDir: string, modId: string, version: string): ReleaseRecord | null {
  const path = join(recordsDir, RECORD_PATHS.modRecords(modId));
  if (!existsSync(path)) {
    if (isOldModDir(join(recordsDir, RECORD_PATHS.modsDir, modId)))
      throw layoutOutdated(recordsDir, `${RECORD_PATHS.modsDir}/${modId}`);
    return null;
  }
  const value = readJson(path) as Partial<ModRecords> | null;
  if (value?.schema !== MOD_RECORDS_SCHEMA || value.modId !== modId || !Array.isArray(value.releases))
    throw new SvcError("invalid_payload", `${path} is not the svc.mod-records.v1 file of ${modId}`);
  return value.releases.find((r) => r?.version === version) ?? null;
}

/** Whether records/ holds a release record (any status) of modId@version. */
export function hasRelease(recordsDir: string, modId: string, version: string): boolean {
  return findReleaseRecord(recordsDir, modId, version) !== null;
}

/** The bytes a mod's records file is written with (releases sorted semver ascending). */
export function modRecordsText(modId: string, releases: readonly ReleaseRecord[]): string {
  const file: ModRecords = { schema: MOD_RECORDS_SCHEMA, modId, releases: sortReleases(releases) };
  return `${JSON.stringify(file, null, 2)}\n`;
}

export function loadOptionalJson<T>(recordsDir: string, relativePath: string): T | null {
  const path = join(recordsDir, relativePath);
  return existsSync(path) ? (readJson(path) as T) : null;
}

/** Checks one owners shard file: its schema, its shard, each owner in it belongs to it, once, sorted. */
function checkOwnersShard(
  path: string,
  shard: string,
  value: unknown,
  registry: SchemaRegistry,
): ModOwnership[] {
  const result = registry.validate<OwnersShard<ModOwnership>>("owners-shard", value);
  if (!result.ok)
    throw new SvcError(
      "invalid_payload",
      `${path} is not a valid owners shard (svc.owners-shard.v1): ${formatIssues(result.issues)}`,
      { details: result.issues },
    );
  if (result.value.shard !== shard)
    throw new SvcError("invalid_payload", `${path} names shard ${result.value.shard}`);
  const owners = result.value.owners;
  owners.forEach((o, i) => {
    if (recordShard(o.modId) !== shard)
      throw new SvcError(
        "invalid_payload",
        `${path} holds the ownership of ${o.modId}, which belongs in records/${RECORD_PATHS.ownersShard(o.modId)}`,
      );
    if (i > 0 && owners[i - 1]!.modId >= o.modId)
      throw new SvcError(
        "invalid_payload",
        `${path}: owners must be sorted by modId, each mod once (${o.modId})`,
      );
  });
  return owners;
}

/** The ownership records of one shard file (empty when the file does not exist). */
function loadOwnersShard(recordsDir: string, shard: string, registry: SchemaRegistry): ModOwnership[] {
  const relPath = `${RECORD_PATHS.ownersDir}/${shard}.json`;
  const path = join(recordsDir, relPath);
  if (!existsSync(path)) return [];
  const value = readJson(path) as { schema?: unknown } | null;
  // A mod id of two hex characters had its record at this very path before sharding.
  if (value?.schema === "svc.mod-ownership.v1") throw layoutOutdated(recordsDir, relPath);
  return checkOwnersShard(path, shard, value, registry);
}

/** The mod's ownership record (from records/owners/{shard}.json), schema-checked; null when the mod id is unclaimed. */
export function loadOwnership(
  recordsDir: string,
  modId: string,
  registry: SchemaRegistry,
): ModOwnership | null {
  const found = loadOwnersShard(recordsDir, recordShard(modId), registry).find((o) => o.modId === modId);
  if (found) return found;
  // Before sharding the record was records/owners/{modId}.json (a shard's own path when the mod id
  // is two hex characters: told apart by its schema).
  const old = `${RECORD_PATHS.ownersDir}/${modId}.json`;
  if (SHARD_PATTERN.test(modId)) loadOwnersShard(recordsDir, modId, registry);
  else if (existsSync(join(recordsDir, old))) throw layoutOutdated(recordsDir, old);
  return null;
}

/** Every ownership record, by mod id. */
export function loadOwnerships(recordsDir: string, registry: SchemaRegistry): Map<string, ModOwnership> {
  const dir = join(recordsDir, RECORD_PATHS.ownersDir);
  const out = new Map<string, ModOwnership>();
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir).sort()) {
    const shard = name.endsWith(".json") ? name.slice(0, -".json".length) : name;
    if (!name.endsWith(".json") || !SHARD_PATTERN.test(shard)) {
      if (name.endsWith(".json")) throw layoutOutdated(recordsDir, `${RECORD_PATHS.ownersDir}/${name}`);
      throw new SvcError(
        "invalid_payload",
        `${join(dir, name)} does not belong in records/owners (only {shard}.json)`,
      );
    }
    for (const ownership of loadOwnersShard(recordsDir, shard, registry)) out.set(ownership.modId, ownership);
  }
  return out;
}

/** The bytes an owners shard is written with (owners sorted by mod id). */
export function ownersShardText(shard: string, owners: readonly ModOwnership[]): string {
  const file: OwnersShard<ModOwnership> = {
    schema: OWNERS_SHARD_SCHEMA,
    shard,
    owners: [...owners].sort((a, b) => (a.modId < b.modId ? -1 : a.modId > b.modId ? 1 : 0)),
  };
  return `${JSON.stringify(file, null, 2)}\n`;
}

/**
 * The owners shard that holds `ownership` once it is written: its path below records/ and its
 * bytes, the other mods of the shard as they are on disk.
 */
export function ownershipWrite(
  recordsDir: string,
  ownership: ModOwnership,
  registry: SchemaRegistry,
): { path: string; text: string } {
  const shard = recordShard(ownership.modId);
  const others = loadOwnersShard(recordsDir, shard, registry).filter((o) => o.modId !== ownership.modId);
  return {
    path: RECORD_PATHS.ownersShard(ownership.modId),
    text: ownersShardText(shard, [...others, ownership]),
  };
}
