import { Metadata, type Signature, TargetFile, Targets } from "@tufjs/models";
import { addDays, EXPIRY_DAYS, type OnlineKeys, TUF_SPEC_VERSION, tufKey, tufTime } from "./tuf-keys.ts";
import {
  BIN_BIT_LENGTH,
  BIN_NAME_PREFIX,
  type SiteTarget,
  serializeMetadata,
  TUF_DIR,
} from "./tuf-layout.ts";
import { expiresWithin, loadBin, nextVersion, type SnapshotState } from "./tuf-signed-state.ts";
import { type BinParts, signedText } from "./tuf-file-writer.ts";
import { PARALLEL_BINS_FROM, type SigningRun } from "./tuf-versioned-files.ts";

type Signer = (data: Buffer) => Signature;

/** The same JSON as Targets.toJSON, built in linear time (see SnapshotState). */
export class LinearTargets extends Targets {
  override toJSON() {
    const targets: Record<string, ReturnType<TargetFile["toJSON"]>> = {};
    for (const [path, file] of Object.entries(this.targets)) targets[path] = file.toJSON();
    return {
      _type: this.type,
      spec_version: this.specVersion,
      version: this.version,
      expires: this.expires,
      targets,
      ...this.unrecognizedFields,
      ...(this.delegations ? { delegations: this.delegations.toJSON() } : {}),
    };
  }
}

export function toSiteTarget(file: TargetFile): SiteTarget {
  const url = file.custom.url;
  return {
    path: file.path,
    length: file.length,
    sha256: file.hashes.sha256 ?? "",
    ...(typeof url === "string" ? { url } : {}),
  };
}

function toTargetFile(t: SiteTarget): TargetFile {
  return new TargetFile({
    path: t.path,
    length: t.length,
    hashes: { sha256: t.sha256 },
    ...(t.url ? { unrecognizedFields: { custom: { url: t.url } } } : {}),
  });
}

function sameTargetSet(current: Targets | null, next: ReadonlyMap<string, SiteTarget>): boolean {
  if (!current) return false;
  const entries = Object.values(current.targets);
  if (entries.length !== next.size) return false;
  return entries.every((c) => {
    const t = next.get(c.path);
    return t !== undefined && c.length === t.length && c.hashes.sha256 === t.sha256 && c.custom.url === t.url;
  });
}

function sameTargetMaps(
  current: ReadonlyMap<string, SiteTarget>,
  next: ReadonlyMap<string, SiteTarget>,
): boolean {
  if (current.size !== next.size) return false;
  for (const [path, c] of current) {
    const t = next.get(path);
    if (!t || c.length !== t.length || c.sha256 !== t.sha256 || c.url !== t.url) return false;
  }
  return true;
}

function succinctDelegationJson(keys: OnlineKeys) {
  const key = keys.keys.targets;
  return {
    keys: { [key.keyid]: tufKey(key).toJSON() },
    succinct_roles: {
      keyids: [key.keyid],
      threshold: 1,
      bit_length: BIN_BIT_LENGTH,
      name_prefix: BIN_NAME_PREFIX,
    },
  };
}

/** Whether the current top-level targets delegates to the bins this signer writes, with its key. */
export function delegatesToBins(targets: Targets | null, keys: OnlineKeys): boolean {
  const succinct = targets?.delegations?.succinctRoles;
  return (
    succinct !== undefined &&
    succinct.bitLength === BIN_BIT_LENGTH &&
    succinct.namePrefix === BIN_NAME_PREFIX &&
    succinct.keyIDs.length === 1 &&
    succinct.keyIDs[0] === keys.keys.targets.keyid
  );
}

/**
 * Whether the current top-level targets carries this signer's targets signature. A targets key
 * rotated away also changes the delegation (delegatesToBins), so this holds with it; both say
 * "re-sign every targets role".
 */
export function signedByTargetsKey(targets: Metadata<Targets> | null, keys: OnlineKeys): boolean {
  return targets !== null && keys.keys.targets.keyid in targets.signatures;
}

/**
 * A bin's next version: one more than its previous version, so that snapshot's 1,024 entries stay a
 * few distinct numbers that gzip folds away (epoch-second versions per bin would cost ~3 bytes of
 * entropy each on every refresh). A bin first signed without state takes the signing time in
 * seconds, which is above any version an earlier signer counted up to (one per publication).
 */
function nextBinVersion(previous: number, at: Date): number {
  return previous > 0 ? previous + 1 : Math.floor(at.getTime() / 1000);
}

/** A string as canonical JSON writes it (OLPC canonical JSON: only `\\` and `"` are escaped). */
function canonicalString(text: string): string {
  return `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/**
 * Characters, besides `"`, that canonical JSON or JSON.stringify would write otherwise than as
 * themselves: a value without any of them (and without a quote) is written `"value"` by both.
 */
const ESCAPED_BUT_QUOTES = /[\\\u0000-\u001f\ud800-\udfff]/;

/**
 * The file of one signed bin, built directly: the same bytes as signing a LinearTargets with
 * Metadata.sign (canonical JSON of `signed`) and writing it with serializeCompact, which a test
 * holds it to. The library's way builds a TargetFile per target and canonicalizes generic objects
 * (sorting every object's keys): at 50,000 mods x 5 versions a full signing's 1,024 bins hold
 * ~350,000 targets, and that was most of the signing's CPU.
 */
export function signedBinText(
  signer: Signer,
  version: number,
  expires: string,
  targets: Iterable<SiteTarget>,
): string {
  const parts = binParts(version, expires, targets);
  return signedText(signer(Buffer.from(parts.canonical)), parts.signed);
}

/**
 * Targets in path order (canonical JSON's key order: UTF-16 code units). Paths are unique; sorting
 * the paths themselves with the default order runs without a comparator call per comparison.
 */
function sortedByPath(targets: Iterable<SiteTarget> | ReadonlyMap<string, SiteTarget>): SiteTarget[] {
  let byPath: ReadonlyMap<string, SiteTarget>;
  if (targets instanceof Map) byPath = targets;
  else {
    const map = new Map<string, SiteTarget>();
    for (const t of targets as Iterable<SiteTarget>) map.set(t.path, t);
    byPath = map;
  }
  return [...byPath.keys()].sort().map((path) => byPath.get(path)!);
}

/** The two halves of a signed bin's file (see signedBinText), before it is signed. */
export function binParts(
  version: number,
  expires: string,
  targets: Iterable<SiteTarget> | ReadonlyMap<string, SiteTarget>,
): BinParts {
  const sorted = sortedByPath(targets);
  // Canonical: keys sorted (custom < hashes < length; _type < expires < spec_version < targets < version).
  // First as if no value needed escaping (almost always so): checked per value for a quote, and on
  // the text as a whole for any other character either JSON escapes.
  let canonicalTargets = "";
  let jsonTargets = "";
  let quoted = false;
  for (const t of sorted) {
    if (!Number.isSafeInteger(t.length)) throw new TypeError(`${t.path}: length must be an integer`);
    const comma = canonicalTargets === "" ? "" : ",";
    canonicalTargets += `${comma}"${t.path}":{${t.url ? `"custom":{"url":"${t.url}"},` : ""}"hashes":{"sha256":"${t.sha256}"},"length":${t.length}}`;
    jsonTargets += `${comma}"${t.path}":{"length":${t.length},"hashes":{"sha256":"${t.sha256}"}${t.url ? `,"custom":{"url":"${t.url}"}` : ""}}`;
    quoted ||= t.path.includes('"') || t.sha256.includes('"') || (t.url?.includes('"') ?? false);
  }
  if (quoted || ESCAPED_BUT_QUOTES.test(canonicalTargets)) {
    canonicalTargets = "";
    jsonTargets = "";
    for (const t of sorted) {
      const comma = canonicalTargets === "" ? "" : ",";
      const custom = t.url ? `"custom":{"url":${canonicalString(t.url)}},` : "";
      canonicalTargets += `${comma}${canonicalString(t.path)}:{${custom}"hashes":{"sha256":${canonicalString(t.sha256)}},"length":${t.length}}`;
      jsonTargets += `${comma}${JSON.stringify(t.path)}:{"length":${t.length},"hashes":{"sha256":${JSON.stringify(t.sha256)}}${t.url ? `,"custom":{"url":${JSON.stringify(t.url)}}` : ""}}`;
    }
  }
  const canonical = `{"_type":"targets","expires":${canonicalString(expires)},"spec_version":${canonicalString(TUF_SPEC_VERSION)},"targets":{${canonicalTargets}},"version":${version}}`;
  const signed = `{"_type":"targets","spec_version":${JSON.stringify(TUF_SPEC_VERSION)},"version":${version},"expires":${JSON.stringify(expires)},"targets":{${jsonTargets}}}`;
  return { canonical, signed };
}

/**
 * Re-signs each bin named (all of them, or only those a commit touched) whose targets differ from its
 * signed ones or whose expiry is near, or every one when `force`; returns the bins re-signed.
 */
export function signBins(
  run: SigningRun,
  signer: Signer,
  snapshot: SnapshotState | null,
  bins: ReadonlyMap<string, ReadonlyMap<string, SiteTarget>>,
  force: boolean,
): string[] {
  const binExpires = tufTime(addDays(run.at, EXPIRY_DAYS.targets));
  const resignedBins: string[] = [];
  for (const [bin, targets] of bins) {
    const previousVersion = run.snapshotMeta.get(`${bin}.json`) ?? 0;
    const current = force || !previousVersion ? null : loadBin(run.dir, snapshot, bin);
    if (
      current &&
      sameTargetMaps(current.targets, targets) &&
      !expiresWithin(current, run.at, EXPIRY_DAYS.targets / 2)
    ) {
      continue;
    }
    const version = nextBinVersion(previousVersion, run.at);
    // Many bins (a full signing): signed, written and fsynced on a worker while the next is built.
    if (bins.size >= PARALLEL_BINS_FROM) run.files.useWriter(run.keys.keys.targets);
    run.files.writeBin(`${version}.${bin}.json`, binParts(version, binExpires, targets), signer);
    run.written.push(`${TUF_DIR}/${version}.${bin}.json`);
    run.snapshotMeta.set(`${bin}.json`, version);
    resignedBins.push(bin);
  }
  return resignedBins;
}

/**
 * Re-signs the top-level targets (the index documents and the delegation to the bins) when its
 * target set changed, its expiry is near, it does not delegate to this signer's bins, or `force`;
 * returns the version the snapshot names.
 */
export function signTopLevelTargets(
  run: SigningRun,
  signer: Signer,
  current: Targets | null,
  topLevel: ReadonlyMap<string, SiteTarget>,
  force: boolean,
): number {
  const targetsVersion = run.snapshotMeta.get("targets.json") ?? 0;
  if (
    !force &&
    current &&
    delegatesToBins(current, run.keys) &&
    sameTargetSet(current, topLevel) &&
    !expiresWithin(current, run.at, EXPIRY_DAYS.targets / 2)
  ) {
    return targetsVersion;
  }
  const nextTargetsVersion = nextVersion(targetsVersion, run.at);
  const targets = Targets.fromJSON({
    _type: "targets",
    spec_version: TUF_SPEC_VERSION,
    version: nextTargetsVersion,
    expires: tufTime(addDays(run.at, EXPIRY_DAYS.targets)),
    targets: {},
    delegations: succinctDelegationJson(run.keys),
  });
  for (const t of [...topLevel.values()].sort((a, b) => (a.path < b.path ? -1 : 1)))
    targets.addTarget(toTargetFile(t));
  const metadata = new Metadata(targets);
  metadata.sign(signer);
  run.files.write(`${nextTargetsVersion}.targets.json`, serializeMetadata(metadata));
  run.written.push(`${TUF_DIR}/${nextTargetsVersion}.targets.json`);
  run.snapshotMeta.set("targets.json", nextTargetsVersion);
  return nextTargetsVersion;
}
