/**
 * The sharded records as tests read and write them (src/contracts/records.ts): one file per mod
 * (records/mods/{shard}/{modId}.json), owners per shard (records/owners/{shard}.json), the ledger
 * under records/publication/{shard}/. Paths here are relative to the project root (records/...).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { modRecordsText, ownersShardText } from "../../src/catalog/records.ts";
import type { ModOwnership } from "../../src/contracts/ownership.ts";
import {
  type ModRecords,
  RECORD_PATHS,
  type ReleaseRecord,
  recordShard,
} from "../../src/contracts/records.ts";

/** records/mods/{shard}/{modId}.json */
export const modRecordsPath = (modId: string) => `records/${RECORD_PATHS.modRecords(modId)}`;
/** records/owners/{shard}.json */
export const ownersPath = (modId: string) => `records/${RECORD_PATHS.ownersShard(modId)}`;
/** records/publication/{shard}/{modId}/{version}.json */
export const ledgerFile = (modId: string, version: string) =>
  `records/${RECORD_PATHS.ledger(modId, version)}`;
/** records/changes/{folder}/{page}.json */
export const changesPagePath = (page: number) => `records/${RECORD_PATHS.changesPage(page)}`;

type Bytes = string | Buffer | Uint8Array | null | undefined;
const text = (bytes: Bytes): string | null =>
  bytes === null || bytes === undefined
    ? null
    : typeof bytes === "string"
      ? bytes
      : Buffer.from(bytes).toString("utf8");

/** The release records of a mod file's bytes (empty when absent). */
export function releasesIn(bytes: Bytes): ReleaseRecord[] {
  const t = text(bytes);
  return t === null ? [] : (JSON.parse(t) as ModRecords).releases;
}

/** One version's record from a mod file's bytes, or null. */
export function releaseIn(bytes: Bytes, version: string): ReleaseRecord | null {
  return releasesIn(bytes).find((r) => r.version === version) ?? null;
}

/** One mod's ownership from an owners shard's bytes, or null. */
export function ownershipIn(bytes: Bytes, modId: string): ModOwnership | null {
  const t = text(bytes);
  if (t === null) return null;
  return (JSON.parse(t) as { owners: ModOwnership[] }).owners.find((o) => o.modId === modId) ?? null;
}

/** The record of modId@version in root's records/, or null. */
export function readRelease(root: string, modId: string, version: string): ReleaseRecord | null {
  const path = join(root, modRecordsPath(modId));
  return existsSync(path) ? releaseIn(readFileSync(path), version) : null;
}

/** Writes a release record into its mod's file (replacing the same version), as the publisher stores it. */
export function writeRelease(root: string, record: ReleaseRecord): void {
  const path = join(root, modRecordsPath(record.modId));
  const others = existsSync(path)
    ? releasesIn(readFileSync(path)).filter((r) => r.version !== record.version)
    : [];
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, modRecordsText(record.modId, [...others, record]));
}

/** The bytes of an owners shard holding exactly these ownership records (all of one shard). */
export function ownersShardBytes(owners: readonly ModOwnership[]): string {
  return ownersShardText(recordShard(owners[0]!.modId), owners);
}

/** Every release record under root/records/mods (any status), mod by mod. */
export function readAllReleases(root: string): ReleaseRecord[] {
  const dir = join(root, "records", "mods");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .sort()
    .flatMap((shard) =>
      readdirSync(join(dir, shard))
        .filter((name) => name.endsWith(".json"))
        .map((name) => releasesIn(readFileSync(join(dir, shard, name)))),
    )
    .flat()
    .sort((a, b) => (a.modId < b.modId ? -1 : a.modId > b.modId ? 1 : 0));
}

/** Writes an ownership record into its owners shard (replacing the mod's entry), as the publisher stores it. */
export function writeOwnership(root: string, ownership: ModOwnership): void {
  const path = join(root, ownersPath(ownership.modId));
  const others = existsSync(path)
    ? (JSON.parse(readFileSync(path, "utf8")) as { owners: ModOwnership[] }).owners.filter(
        (o) => o.modId !== ownership.modId,
      )
    : [];
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, ownersShardBytes([...others, ownership]));
}
