import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Metadata, MetadataKind, type Targets, type Timestamp } from "@tufjs/models";
import { addDays } from "./tuf-keys.ts";
import type { SiteTarget } from "./tuf-layout.ts";

export function readMetadata<T>(file: string): T | null {
  if (!existsSync(file)) return null;
  return JSON.parse(readFileSync(file, "utf8")) as T;
}

/** The signed state as the live timestamp names it (each part null when absent). */
export interface SignedState {
  timestamp: Metadata<Timestamp> | null;
  snapshot: SnapshotState | null;
  targets: Metadata<Targets> | null;
}

export function loadSignedState(dir: string): SignedState {
  const timestampJson = readMetadata<Record<string, unknown>>(join(dir, "timestamp.json"));
  const timestamp = timestampJson
    ? (Metadata.fromJSON(MetadataKind.Timestamp, timestampJson as never) as Metadata<Timestamp>)
    : null;
  const snapshotVersion = timestamp?.signed.snapshotMeta.version ?? 0;
  const snapshot = snapshotVersion ? readSnapshotState(join(dir, `${snapshotVersion}.snapshot.json`)) : null;
  const targetsVersion = snapshot?.meta.get("targets.json") ?? 0;
  const targetsJson = targetsVersion
    ? readMetadata<{ signed?: { delegations?: unknown } }>(join(dir, `${targetsVersion}.targets.json`))
    : null;
  // A targets file of the single-file layout (every target, no delegations) is not parsed: its
  // size would make the library's quadratic fromJSON the cost of the run, and it is replaced whole.
  const targets = targetsJson?.signed?.delegations
    ? (Metadata.fromJSON(MetadataKind.Targets, targetsJson as never) as Metadata<Targets>)
    : null;
  return { timestamp, snapshot, targets };
}

/**
 * What signing needs of the current snapshot, read as plain JSON: @tufjs/models builds a snapshot's
 * meta map (and a targets map) by spreading an accumulator per entry, quadratic in the entries —
 * ~0.4 s for 1,024 bins on each of fromJSON and toJSON. The signer never needs to verify its own
 * output, so it reads the versions directly.
 */
export interface SnapshotState {
  version: number;
  expires: string;
  meta: Map<string, number>;
  /** The key ids that signed it: after `svc keys rotate snapshot`, not the current key's. */
  signedBy: string[];
}

function readSnapshotState(file: string): SnapshotState | null {
  const json = readMetadata<{
    signed?: { version?: unknown; expires?: unknown; meta?: Record<string, { version?: unknown }> };
    signatures?: Array<{ keyid?: unknown }>;
  }>(file);
  const signed = json?.signed;
  if (!signed || typeof signed.version !== "number" || typeof signed.expires !== "string") return null;
  const meta = new Map<string, number>();
  for (const [name, entry] of Object.entries(signed.meta ?? {})) {
    if (typeof entry?.version === "number") meta.set(name, entry.version);
  }
  const signedBy = (json?.signatures ?? []).flatMap((sig) =>
    typeof sig?.keyid === "string" ? [sig.keyid] : [],
  );
  return { version: signed.version, expires: signed.expires, meta, signedBy };
}

/** A signed bin as signing needs it, read as plain JSON (see SnapshotState: no quadratic fromJSON). */
export interface BinState {
  expires: string;
  targets: Map<string, SiteTarget>;
}

export function loadBin(dir: string, snapshot: SnapshotState | null, bin: string): BinState | null {
  const version = snapshot?.meta.get(`${bin}.json`);
  if (!version) return null;
  const json = readMetadata<{
    signed?: {
      expires?: string;
      targets?: Record<string, { length: number; hashes?: { sha256?: string }; custom?: { url?: unknown } }>;
    };
  }>(join(dir, `${version}.${bin}.json`));
  if (!json?.signed?.expires) return null;
  const targets = new Map<string, SiteTarget>();
  for (const [path, t] of Object.entries(json.signed.targets ?? {})) {
    const url = t.custom?.url;
    targets.set(path, {
      path,
      length: t.length,
      sha256: t.hashes?.sha256 ?? "",
      ...(typeof url === "string" ? { url } : {}),
    });
  }
  return { expires: json.signed.expires, targets };
}

export function expiresWithin(signed: { expires: string }, now: Date, days: number): boolean {
  return new Date(signed.expires).getTime() <= addDays(now, days).getTime();
}

/**
 * Versions only grow, also where the signer keeps no state: on GitHub the signed metadata is deployed
 * to Pages but not committed, so a run may not see the previous files. A version is therefore at
 * least the signing time in seconds, and at least one more than the newest this signer has seen.
 */
export function nextVersion(previous: number, at: Date, seen = 0): number {
  return Math.max(previous + 1, seen + 1, Math.floor(at.getTime() / 1000));
}
