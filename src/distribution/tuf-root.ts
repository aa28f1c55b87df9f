import { existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Metadata, MetadataKind, type Root } from "@tufjs/models";
import { writeFileAtomic } from "../lib/atomic-write.ts";
import { DistributionError } from "./errors.ts";
import { ONLINE_ROLES, type OnlineKeys } from "./tuf-keys.ts";
import { serializeMetadata, TUF_DIR } from "./tuf-layout.ts";

/** The newest root version present under `siteDir`/tuf (site/ or records/), with its parsed metadata. */
export function loadLatestRoot(siteDir: string): { version: number; metadata: Metadata<Root> } | null {
  const dir = join(siteDir, TUF_DIR);
  if (!existsSync(dir)) return null;
  const versions = readdirSync(dir)
    .map((name) => /^(\d+)\.root\.json$/.exec(name)?.[1])
    .filter((v): v is string => v !== undefined)
    .map(Number)
    .sort((a, b) => b - a);
  const newest = versions[0];
  if (newest === undefined) return null;
  const json = JSON.parse(readFileSync(join(dir, `${newest}.root.json`), "utf8"));
  return { version: newest, metadata: Metadata.fromJSON(MetadataKind.Root, json) as Metadata<Root> };
}

/**
 * The root metadata files under `dir`/tuf (N.root.json and root.json), by file name. The roots are
 * source files kept in git at records/tuf/ (svc keys init and rotate write them there); svc build
 * copies them into site/tuf/, which is a build output.
 */
export function readRootFiles(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const tuf = join(dir, TUF_DIR);
  if (!existsSync(tuf)) return files;
  for (const name of readdirSync(tuf).sort())
    if (/^(\d+\.)?root\.json$/.test(name)) files.set(name, readFileSync(join(tuf, name), "utf8"));
  return files;
}

/** Publishes a root version (the first one from `svc keys init`, later ones from `svc keys rotate`). */
export function writeRoot(siteDir: string, root: Metadata<Root>): string[] {
  const dir = join(siteDir, TUF_DIR);
  mkdirSync(dir, { recursive: true });
  const text = serializeMetadata(root);
  const versioned = `${root.signed.version}.root.json`;
  writeFileAtomic(join(dir, versioned), text);
  writeFileAtomic(join(dir, "root.json"), text);
  return [`${TUF_DIR}/${versioned}`, `${TUF_DIR}/root.json`];
}

export function assertOnlineKeysOf(root: Root, keys: OnlineKeys): void {
  for (const role of ONLINE_ROLES) {
    const allowed = root.roles[role]?.keyIDs ?? [];
    if (!allowed.includes(keys.keys[role].keyid)) {
      throw new DistributionError(
        "tuf_key_mismatch",
        `the configured ${role} key ${keys.keys[role].keyid.slice(0, 12)} is not a ${role} key of root v${root.version}`,
      );
    }
  }
}

/** The newest root, refusing a site without one and keys it does not name. */
export function requireRoot(siteDir: string, keys: OnlineKeys): Root {
  const latestRoot = loadLatestRoot(siteDir);
  if (!latestRoot) {
    throw new DistributionError(
      "tuf_not_initialized",
      `no ${TUF_DIR}/N.root.json under ${siteDir}; run \`svc keys init\` first`,
    );
  }
  assertOnlineKeysOf(latestRoot.metadata.signed, keys);
  return latestRoot.metadata.signed;
}
