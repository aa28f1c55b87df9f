/**
 * `svc records migrate`: rewrites a portal's records/ from the layout before sharding into the
 * sharded one (src/contracts/records.ts), in one journaled commit, so an operator commits the result:
 *
 * - records/mods/{modId}/{version}.json  -> records/mods/{shard}/{modId}.json (one file per mod)
 * - records/owners/{modId}.json          -> records/owners/{shard}.json
 * - records/changes/{page}.json          -> records/changes/{floor(page/1000)}/{page}.json (same bytes)
 * - records/publication/{modId}/{v}.json -> records/publication/{shard}/{modId}/{v}.json (same bytes)
 *
 * Every old file is checked as the old readers checked it (schema, path matching its content)
 * before anything is written; a record already in the new layout is kept, and one that differs
 * from its old copy stops the migration. A second run finds nothing to do. The site is not
 * touched: it is derived from the records, which say the same after the migration.
 */
import { existsSync, readdirSync, readFileSync, rmdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import type { ModOwnership } from "../contracts/ownership.ts";
import { RECORD_PATHS, type ReleaseRecord, recordShard, SHARD_PATTERN } from "../contracts/records.ts";
import { formatIssues, type SchemaRegistry } from "../contracts/schemas.ts";
import { SvcError } from "../errors.ts";
import { commitFiles, type PublishedTree, withPublishLock } from "./atomic-files.ts";
import { loadModRecords, modRecordsText, ownersShardText } from "./records.ts";

export interface RecordsMigration {
  /** Below records/: the files the migration writes and the old files it removes. */
  write: Map<string, string | Buffer>;
  delete: string[];
  mods: number;
  releases: number;
  owners: number;
  changesPages: number;
  ledgerEntries: number;
}

const isDir = (path: string) => {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
};

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new SvcError("invalid_payload", `${path} is not valid JSON: ${(error as Error).message}`);
  }
}

/** A file name of a version (`1.2.0.json`): versions have dots, mod ids never do. */
const versionFile = (name: string) => name.endsWith(".json") && name.slice(0, -5).includes(".");

/** What the migration would write and remove; nothing is written here. */
export function planRecordsMigration(recordsDir: string, registry: SchemaRegistry): RecordsMigration {
  const plan: RecordsMigration = {
    write: new Map(),
    delete: [],
    mods: 0,
    releases: 0,
    owners: 0,
    changesPages: 0,
    ledgerEntries: 0,
  };

  // Release records: one folder per mod, one file per version.
  const modsDir = join(recordsDir, RECORD_PATHS.modsDir);
  if (existsSync(modsDir))
    for (const modId of readdirSync(modsDir).sort()) {
      const dir = join(modsDir, modId);
      if (!isDir(dir)) continue;
      const versions = readdirSync(dir).filter(versionFile).sort();
      if (versions.length === 0) continue;
      const old: ReleaseRecord[] = versions.map((name) => {
        const path = join(dir, name);
        const result = registry.validate<ReleaseRecord>("release-record", readJson(path));
        if (!result.ok)
          throw new SvcError(
            "invalid_payload",
            `${path} is not a valid release record:\n${formatIssues(result.issues)}`,
          );
        if (result.value.modId !== modId || `${result.value.version}.json` !== name)
          throw new SvcError(
            "invalid_payload",
            `${path} holds ${result.value.modId}@${result.value.version}; its path must match`,
          );
        return result.value;
      });
      // A mod file already there (a migration that was committed in part) is kept and merged.
      const current = existsSync(join(recordsDir, RECORD_PATHS.modRecords(modId)))
        ? loadModRecords(recordsDir, modId, registry)
        : [];
      for (const record of old) {
        const there = current.find((r) => r.version === record.version);
        if (there && JSON.stringify(there) !== JSON.stringify(record))
          throw new SvcError(
            "invalid_payload",
            `${modId}@${record.version} is in both records/${RECORD_PATHS.modsDir}/${modId}/${record.version}.json and records/${RECORD_PATHS.modRecords(modId)}, and they differ; keep one and run again`,
          );
      }
      const releases = [...current, ...old.filter((r) => !current.some((c) => c.version === r.version))];
      plan.write.set(RECORD_PATHS.modRecords(modId), modRecordsText(modId, releases));
      for (const name of versions) plan.delete.push(`${RECORD_PATHS.modsDir}/${modId}/${name}`);
      plan.mods += 1;
      plan.releases += old.length;
    }

  // Ownership records: one file per mod id (told from a shard file by its schema).
  const ownersDir = join(recordsDir, RECORD_PATHS.ownersDir);
  const oldOwners: ModOwnership[] = [];
  if (existsSync(ownersDir))
    for (const name of readdirSync(ownersDir).sort()) {
      if (!name.endsWith(".json")) continue;
      const path = join(ownersDir, name);
      const value = readJson(path) as { schema?: unknown } | null;
      if (value?.schema === "svc.owners-shard.v1") continue;
      const modId = name.slice(0, -".json".length);
      const result = registry.validate<ModOwnership>("mod-ownership", value);
      if (!result.ok)
        throw new SvcError(
          "invalid_payload",
          `${path} is not a valid ownership record: ${formatIssues(result.issues)}`,
        );
      if (result.value.modId !== modId)
        throw new SvcError("invalid_payload", `${path} names mod ${result.value.modId}`);
      oldOwners.push(result.value);
      plan.delete.push(`${RECORD_PATHS.ownersDir}/${name}`);
    }
  if (oldOwners.length > 0) {
    // The shards as they are (skipping the old files just read), merged with the old records.
    const current = loadOwnershipsOfShards(recordsDir, registry);
    const byShard = new Map<string, ModOwnership[]>();
    for (const ownership of oldOwners) {
      const there = current.get(ownership.modId);
      if (there && JSON.stringify(there) !== JSON.stringify(ownership))
        throw new SvcError(
          "invalid_payload",
          `the ownership of ${ownership.modId} is in both records/${RECORD_PATHS.ownersDir}/${ownership.modId}.json and records/${RECORD_PATHS.ownersShard(ownership.modId)}, and they differ; keep one and run again`,
        );
      current.set(ownership.modId, ownership);
    }
    for (const ownership of current.values()) {
      const shard = recordShard(ownership.modId);
      byShard.set(shard, [...(byShard.get(shard) ?? []), ownership]);
    }
    const touched = new Set(oldOwners.map((o) => recordShard(o.modId)));
    for (const shard of touched)
      plan.write.set(
        `${RECORD_PATHS.ownersDir}/${shard}.json`,
        ownersShardText(shard, byShard.get(shard) ?? []),
      );
    plan.owners = oldOwners.length;
  }

  // Changes pages: moved into folders of 1,000, byte for byte.
  const changesDir = join(recordsDir, RECORD_PATHS.changesDir);
  if (existsSync(changesDir))
    for (const name of readdirSync(changesDir).sort()) {
      const m = /^(0|[1-9]\d*)\.json$/.exec(name);
      if (!m) continue;
      const page = Number(m[1]);
      const target = RECORD_PATHS.changesPage(page);
      const bytes = readFileSync(join(changesDir, name));
      if (existsSync(join(recordsDir, target)) && !readFileSync(join(recordsDir, target)).equals(bytes))
        throw new SvcError(
          "invalid_payload",
          `records/${RECORD_PATHS.changesDir}/${name} and records/${target} differ; keep one and run again`,
        );
      plan.write.set(target, bytes);
      plan.delete.push(`${RECORD_PATHS.changesDir}/${name}`);
      plan.changesPages += 1;
    }

  // The publication ledger: records/publication/{modId}/{version}.json, moved byte for byte.
  const ledgerDir = join(recordsDir, RECORD_PATHS.publicationDir);
  if (existsSync(ledgerDir))
    for (const modId of readdirSync(ledgerDir).sort()) {
      const dir = join(ledgerDir, modId);
      if (!isDir(dir)) continue;
      for (const name of readdirSync(dir).filter(versionFile).sort()) {
        const version = name.slice(0, -".json".length);
        plan.write.set(RECORD_PATHS.ledger(modId, version), readFileSync(join(dir, name)));
        plan.delete.push(`${RECORD_PATHS.publicationDir}/${modId}/${name}`);
        plan.ledgerEntries += 1;
      }
    }

  // A two-character hex mod id's old owners file is its shard's new path: written, not deleted.
  plan.delete = plan.delete.filter((path) => !plan.write.has(path));
  return plan;
}

/** Every ownership record of the shard files (records/owners/{shard}.json) alone. */
function loadOwnershipsOfShards(recordsDir: string, registry: SchemaRegistry): Map<string, ModOwnership> {
  // loadOwnerships refuses the old layout, which is still beside the shards here: read a copy of the
  // folder's shard files only.
  const out = new Map<string, ModOwnership>();
  const dir = join(recordsDir, RECORD_PATHS.ownersDir);
  for (const name of readdirSync(dir).sort()) {
    const shard = name.slice(0, -".json".length);
    if (!name.endsWith(".json") || !SHARD_PATTERN.test(shard)) continue;
    const value = readJson(join(dir, name)) as { schema?: unknown } | null;
    if (value?.schema !== "svc.owners-shard.v1") continue;
    const result = registry.validate<{ owners: ModOwnership[] }>("owners-shard", value);
    if (!result.ok)
      throw new SvcError(
        "invalid_payload",
        `${join(dir, name)} is not a valid owners shard: ${formatIssues(result.issues)}`,
      );
    for (const o of result.value.owners) out.set(o.modId, o);
  }
  return out;
}

export interface MigrateResult {
  /** Root-relative paths written and removed (both empty: nothing to do). */
  written: string[];
  deleted: string[];
  migration: Omit<RecordsMigration, "write" | "delete">;
}

/** Plans and commits the migration under the publish lock, in one journaled commit. */
export async function migrateRecords(options: {
  root: string;
  recordsDir: string;
  siteDir: string;
  registry: SchemaRegistry;
  lockTimeoutMs?: number;
}): Promise<MigrateResult> {
  const tree: PublishedTree = { root: options.root, siteDir: options.siteDir };
  return withPublishLock(
    tree,
    () => {
      const plan = planRecordsMigration(options.recordsDir, options.registry);
      const { write, delete: remove, ...migration } = plan;
      if (write.size === 0 && remove.length === 0) return { written: [], deleted: [], migration };
      const recordsRel = relative(options.root, options.recordsDir).split("\\").join("/");
      const at = (p: string) => (recordsRel ? `${recordsRel}/${p}` : p);
      const result = commitFiles(options.root, {
        write: new Map([...write].map(([p, text]) => [at(p), text])),
        delete: remove.map(at),
      });
      // The old folders are left empty (git keeps no empty folder): removed, so no reader sees them.
      const folders = new Set(remove.map((p) => dirname(join(options.recordsDir, p))));
      for (const folder of [...folders].sort().reverse()) {
        try {
          rmdirSync(folder);
        } catch {
          // Not empty (a file the old layout did not know): left for the operator.
        }
      }
      return { written: result.written, deleted: result.deleted, migration };
    },
    { timeoutMs: options.lockTimeoutMs ?? 60_000 },
  );
}
