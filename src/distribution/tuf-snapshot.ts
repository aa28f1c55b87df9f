import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Signature, Snapshot, type MetaFile } from "@tufjs/models";
import { addDays, EXPIRY_DAYS, signerFor, TUF_SPEC_VERSION, tufTime } from "./tuf-keys.ts";
import { TUF_DIR } from "./tuf-layout.ts";
import { expiresWithin, nextVersion, type SignedState } from "./tuf-signed-state.ts";
import type { SigningRun } from "./tuf-versioned-files.ts";

/** The same JSON as Snapshot.toJSON, built in linear time (see SnapshotState). */
export class LinearSnapshot extends Snapshot {
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

const canonicalString = (text: string) => `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

/**
 * The file of a signed snapshot, built directly: the same bytes as signing a LinearSnapshot with
 * Metadata.sign and writing it with serializeCompact (a test holds it to that), without a MetaFile
 * per role and the library's generic canonical JSON. Meta lists targets.json first, then the bins
 * in name order: a stable order keeps consecutive snapshots alike.
 */
export function signedSnapshotText(
  signer: (data: Buffer) => Signature,
  version: number,
  expires: string,
  roles: ReadonlyMap<string, number>,
): string {
  const names = [...roles.keys()].filter((n) => n !== "targets.json").sort();
  const ordered = roles.has("targets.json") ? ["targets.json", ...names] : names;
  const versionOf = (name: string) => {
    const v = roles.get(name)!;
    if (!Number.isSafeInteger(v)) throw new TypeError(`${name}: version must be an integer`);
    return v;
  };
  const canonicalMeta = [...ordered]
    .sort()
    .map((name) => `${canonicalString(name)}:{"version":${versionOf(name)}}`)
    .join(",");
  const canonical = `{"_type":"snapshot","expires":${canonicalString(expires)},"meta":{${canonicalMeta}},"spec_version":${canonicalString(TUF_SPEC_VERSION)},"version":${version}}`;
  const signature = signer(Buffer.from(canonical));
  const meta = ordered.map((name) => `${JSON.stringify(name)}:{"version":${versionOf(name)}}`).join(",");
  return `{"signatures":[${JSON.stringify(signature.toJSON())}],"signed":{"_type":"snapshot","meta":{${meta}},"spec_version":${JSON.stringify(TUF_SPEC_VERSION)},"version":${version},"expires":${JSON.stringify(expires)}}}\n`;
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
  const text = signedSnapshotText(
    signerFor(run.keys.keys.snapshot),
    nextSnapshotVersion,
    tufTime(addDays(run.at, EXPIRY_DAYS.snapshot)),
    run.snapshotMeta,
  );
  run.files.write(`${nextSnapshotVersion}.snapshot.json`, text);
  run.written.push(`${TUF_DIR}/${nextSnapshotVersion}.snapshot.json`);
  return { version: nextSnapshotVersion, text };
}
