import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign } from "node:crypto";
import { Key, Metadata, Root, Signature } from "@tufjs/models";
import { DistributionError } from "./errors.ts";

/** The four TUF top-level roles. Root is the offline trust anchor; the other three sign on every publication. */
export type TufRole = "root" | "targets" | "snapshot" | "timestamp";
export const ONLINE_ROLES = ["targets", "snapshot", "timestamp"] as const;
export type OnlineRole = (typeof ONLINE_ROLES)[number];

export const TUF_SPEC_VERSION = "1.0.31";

/**
 * Lifetimes, in days. Timestamp is short so a frozen mirror is noticed within a day; snapshot and
 * targets are re-signed on every publication anyway, their longer life only bounds how long a
 * stalled pipeline stays valid; root changes by hand (offline key), so it lives a year.
 */
export const EXPIRY_DAYS: Record<TufRole, number> = { root: 365, targets: 90, snapshot: 7, timestamp: 1 };

/** One ed25519 key pair as `svc keys init` stores it: the private half never leaves the operator's folder. */
export interface TufKeyFile {
  schema: "svc.tuf-key.v1";
  role: TufRole;
  keyid: string;
  publicKey: string;
  /** PKCS#8 PEM. */
  privateKey: string;
}

/** What a publication needs: one key per online role (one file or one secret holds all three). */
export interface OnlineKeys {
  schema: "svc.tuf-online-keys.v1";
  keys: Record<OnlineRole, TufKeyFile>;
}

export function addDays(date: Date, days: number): Date {
  return new Date(date.getTime() + days * 86_400_000);
}

/** TUF wants second precision with a Z suffix. */
export function tufTime(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

function publicKeyDescriptor(publicHex: string) {
  return { keytype: "ed25519", scheme: "ed25519", keyval: { public: publicHex } };
}

/** The conventional TUF key id: sha256 of the canonical JSON of the public key (its keys are already sorted here). */
export function keyIdFor(publicHex: string): string {
  const d = publicKeyDescriptor(publicHex);
  const canonical = `{"keytype":"${d.keytype}","keyval":{"public":"${publicHex}"},"scheme":"${d.scheme}"}`;
  return createHash("sha256").update(canonical).digest("hex");
}

export function generateKey(role: TufRole): TufKeyFile {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  // The raw 32-byte key is the last 32 bytes of the SPKI DER encoding.
  const publicHex = publicKey.export({ format: "der", type: "spki" }).subarray(-32).toString("hex");
  return {
    schema: "svc.tuf-key.v1",
    role,
    keyid: keyIdFor(publicHex),
    publicKey: publicHex,
    privateKey: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
  };
}

/** A fresh key for every role (svc keys init). */
export function generateKeySet(): Record<TufRole, TufKeyFile> {
  return Object.fromEntries(
    (["root", ...ONLINE_ROLES] as TufRole[]).map((role) => [role, generateKey(role)]),
  ) as Record<TufRole, TufKeyFile>;
}

/** The online keys of a key set as the bundle the publish job holds (online.keys.json, the secret). */
export function onlineKeyBundle(keys: Record<TufRole, TufKeyFile>): OnlineKeys {
  return {
    schema: "svc.tuf-online-keys.v1",
    keys: { targets: keys.targets, snapshot: keys.snapshot, timestamp: keys.timestamp },
  };
}

export function tufKey(file: Pick<TufKeyFile, "keyid" | "publicKey">): Key {
  return new Key({
    keyID: file.keyid,
    keyType: "ed25519",
    scheme: "ed25519",
    keyVal: { public: file.publicKey },
  });
}

/** Private keys already made, by their PEM text (a publication signs with three keys, often in one process). */
const privateKeys = new Map<string, ReturnType<typeof createPrivateKey>>();

export function signerFor(file: TufKeyFile): (data: Buffer) => Signature {
  let privateKey = privateKeys.get(file.privateKey);
  if (!privateKey) {
    privateKey = createPrivateKey(file.privateKey);
    if (privateKeys.size >= 16) privateKeys.clear();
    privateKeys.set(file.privateKey, privateKey);
  }
  return (data) => new Signature({ keyID: file.keyid, sig: sign(null, data, privateKey).toString("hex") });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Checks a key file's shape and that its private key really matches its public key and key id. */
export function parseKeyFile(value: unknown, where: string): TufKeyFile {
  if (
    !isRecord(value) ||
    value.schema !== "svc.tuf-key.v1" ||
    typeof value.role !== "string" ||
    !["root", ...ONLINE_ROLES].includes(value.role) ||
    typeof value.publicKey !== "string" ||
    typeof value.privateKey !== "string" ||
    typeof value.keyid !== "string"
  ) {
    throw new DistributionError("tuf_key_invalid", `${where} is not an svc.tuf-key.v1 key`);
  }
  const file = value as unknown as TufKeyFile;
  let derived: string;
  try {
    derived = createPublicKey(createPrivateKey(file.privateKey))
      .export({ format: "der", type: "spki" })
      .subarray(-32)
      .toString("hex");
  } catch (error) {
    throw new DistributionError(
      "tuf_key_invalid",
      `${where}: unreadable private key (${(error as Error).message})`,
    );
  }
  if (derived !== file.publicKey || keyIdFor(derived) !== file.keyid) {
    throw new DistributionError(
      "tuf_key_invalid",
      `${where}: the private key does not match its public key or key id`,
    );
  }
  return file;
}

/** Parses the online key bundle (from a file or from a secret's text). */
/**
 * Bundles already parsed, by their exact text: a local portal reads its keys file at every
 * publication (and a publication asks for the keys several times), and checking that each private
 * key matches its public key costs ~50 ms of CPU per bundle. The same text parses to the same keys.
 */
const parsedBundles = new Map<string, OnlineKeys>();

export function parseOnlineKeys(text: string, where: string): OnlineKeys {
  const parsed = parsedBundles.get(text);
  if (parsed) return parsed;
  const keys = parseOnlineKeysText(text, where);
  if (parsedBundles.size >= 4) parsedBundles.clear();
  parsedBundles.set(text, keys);
  return keys;
}

function parseOnlineKeysText(text: string, where: string): OnlineKeys {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DistributionError("tuf_key_invalid", `${where} is not JSON`);
  }
  if (!isRecord(value) || value.schema !== "svc.tuf-online-keys.v1" || !isRecord(value.keys)) {
    throw new DistributionError("tuf_key_invalid", `${where} is not an svc.tuf-online-keys.v1 bundle`);
  }
  const keys = {} as Record<OnlineRole, TufKeyFile>;
  for (const role of ONLINE_ROLES) {
    const key = parseKeyFile(value.keys[role], `${where} (${role})`);
    if (key.role !== role)
      throw new DistributionError("tuf_key_invalid", `${where}: the ${role} key is labelled ${key.role}`);
    keys[role] = key;
  }
  return { schema: "svc.tuf-online-keys.v1", keys };
}

/** A root that names one key per role, threshold 1 (a small portal has one operator; raise it with more keys). */
export function buildRoot(
  version: number,
  keys: Record<TufRole, Pick<TufKeyFile, "keyid" | "publicKey">>,
  now: Date,
): Root {
  const root = new Root({
    version,
    specVersion: TUF_SPEC_VERSION,
    expires: tufTime(addDays(now, EXPIRY_DAYS.root)),
    consistentSnapshot: true,
  });
  for (const role of ["root", ...ONLINE_ROLES] as TufRole[]) root.addKey(tufKey(keys[role]), role);
  return root;
}

/** The key of a role in a root, as the public half. */
export function roleKeys(root: Root, role: TufRole): Array<{ keyid: string; publicKey: string }> {
  const ids = root.roles[role]?.keyIDs ?? [];
  return ids.map((keyid) => ({ keyid, publicKey: root.keys[keyid]?.keyVal.public ?? "" }));
}

/**
 * Root rotation (TUF 5.3.4): the new root must carry signatures that satisfy both the old root's
 * root role and its own, so a client that trusts version N can walk to N+1 and no further by forgery.
 */
export function rotateRoot(
  current: Metadata<Root>,
  oldRootKey: TufKeyFile,
  next: Record<TufRole, Pick<TufKeyFile, "keyid" | "publicKey">>,
  newRootKey: TufKeyFile,
  now: Date,
): Metadata<Root> {
  const metadata = new Metadata(buildRoot(current.signed.version + 1, next, now));
  metadata.sign(signerFor(oldRootKey), true);
  if (newRootKey.keyid !== oldRootKey.keyid) metadata.sign(signerFor(newRootKey), true);
  return metadata;
}
