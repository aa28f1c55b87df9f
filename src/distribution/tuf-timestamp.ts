import { join } from "node:path";
import { Metadata, MetaFile, Timestamp } from "@tufjs/models";
import { writeFileAtomic } from "../lib/atomic-write.ts";
import { sha256Hex } from "../lib/hash.ts";
import { addDays, EXPIRY_DAYS, signerFor, TUF_SPEC_VERSION, tufTime } from "./tuf-keys.ts";
import { serializeMetadata, TUF_DIR } from "./tuf-layout.ts";
import { nextVersion } from "./tuf-signed-state.ts";
import type { SigningRun } from "./tuf-versioned-files.ts";

/**
 * Signs a new timestamp naming the snapshot (always: freeze protection) and publishes it once every
 * file of the run is on disk; returns its version. `liveTimestampVersion` is the newest version
 * served, when this run could not see the previous files.
 */
export function signTimestamp(
  run: SigningRun,
  previousVersion: number,
  snapshot: { version: number; text: string },
  liveTimestampVersion?: number,
): number {
  const timestampVersion = nextVersion(previousVersion, run.at, liveTimestampVersion);
  const snapshotBytes = Buffer.from(snapshot.text);
  const timestamp = new Timestamp({
    version: timestampVersion,
    specVersion: TUF_SPEC_VERSION,
    expires: tufTime(addDays(run.at, EXPIRY_DAYS.timestamp)),
    snapshotMeta: new MetaFile({
      version: snapshot.version,
      length: snapshotBytes.length,
      hashes: { sha256: sha256Hex(snapshotBytes) },
    }),
  });
  const timestampMetadata = new Metadata(timestamp);
  timestampMetadata.sign(signerFor(run.keys.keys.timestamp));
  run.files.sync();
  // Last: until this rename lands, readers see the previous, still complete, set.
  writeFileAtomic(join(run.dir, "timestamp.json"), serializeMetadata(timestampMetadata));
  run.written.push(`${TUF_DIR}/timestamp.json`);
  return timestampVersion;
}
