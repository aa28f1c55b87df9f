import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Metadata, MetaFile, Snapshot } from "@tufjs/models";
import { addDays, EXPIRY_DAYS, signerFor, TUF_SPEC_VERSION, tufTime } from "./tuf-keys.ts";
import { serializeCompact, TUF_DIR } from "./tuf-layout.ts";
import { expiresWithin, nextVersion, type SignedState } from "./tuf-signed-state.ts";
import type { SigningRun } from "./tuf-versioned-files.ts";

/** The same JSON as Snapshot.toJSON, built in linear time (see SnapshotState). */
class LinearSnapshot extends Snapshot {
  override toJSON() {
    const meta: Record<string, ReturnType<MetaFile["toJSON"]>> = {};
    for (const [name, file] of Object.entries(this.meta)) meta[name] = file.toJSON();
    return {
      _type: this.type,
      meta,
      spec_version: this.specVersion,
      version: this.version,
      expires: this.expires,
      ...this.unrecognizedFields,
    };
  }
}

/**
 * Re-signs the snapshot when this run wrote a targets role, there is none yet, its expiry is near,
 * or the current one is not signed by the snapshot key (a rotated key: clients refuse the old
 * signature, and nothing else would make a new snapshot until the next publication); returns the
 * version the timestamp names and its exact bytes (new, or the current file's).
 */
export function signSnapshot(run: SigningRun, state: SignedState): { version: number; text: string } {
  const snapshotVersion = state.timestamp?.signed.snapshotMeta.version ?? 0;
  if (
    run.written.length === 0 &&
    state.snapshot &&
    state.snapshot.signedBy.includes(run.keys.keys.snapshot.keyid) &&
    !expiresWithin(state.snapshot, run.at, EXPIRY_DAYS.snapshot / 2)
  ) {
    return {
      version: snapshotVersion,
      text: readFileSync(join(run.dir, `${snapshotVersion}.snapshot.json`), "utf8"),
    };
  }
  const nextSnapshotVersion = nextVersion(snapshotVersion, run.at);
  // Bins first in name order, then targets.json: a stable order keeps consecutive snapshots alike.
  const names = [...run.snapshotMeta.keys()].filter((n) => n !== "targets.json").sort();
  const meta: Record<string, MetaFile> = {
    "targets.json": new MetaFile({ version: run.snapshotMeta.get("targets.json")! }),
  };
  for (const name of names) meta[name] = new MetaFile({ version: run.snapshotMeta.get(name)! });
  const snapshot = new LinearSnapshot({
    version: nextSnapshotVersion,
    specVersion: TUF_SPEC_VERSION,
    expires: tufTime(addDays(run.at, EXPIRY_DAYS.snapshot)),
    meta,
  });
  const metadata = new Metadata(snapshot);
  metadata.sign(signerFor(run.keys.keys.snapshot));
  const text = serializeCompact(metadata);
  run.files.write(`${nextSnapshotVersion}.snapshot.json`, text);
  run.written.push(`${TUF_DIR}/${nextSnapshotVersion}.snapshot.json`);
  return { version: nextSnapshotVersion, text };
}
