import { linkSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fsyncAll } from "../lib/fsync-many.ts";
import { sha256Hex } from "../lib/hash.ts";
import type { Signature } from "@tufjs/models";
import { type BinParts, FileWriter, signedText } from "./tuf-file-writer.ts";
import type { OnlineKeys, TufKeyFile } from "./tuf-keys.ts";

/** Versioned targets/snapshot files kept behind the newest, for clients mid-refresh. */
const KEEP_OLD_VERSIONS = 3;

/** From this many bins to re-sign on, a run signs and writes them on a worker (FileWriter). */
export const PARALLEL_BINS_FROM = 64;

/**
 * The new versioned files of one signing run (bins, targets, snapshot). They never replace a file a
 * reader uses — nothing names them until timestamp.json does — so they need no rename, only to be
 * on disk before the timestamp is: all are written, then they and the directory are fsynced, many
 * at once on a worker (lib/fsync-many.ts: the 1,024 bins of a full signing took ~4 s of fsyncs one
 * by one on this VM's disk, ~0.3 s concurrently).
 * Files with identical bytes — the empty bins of a full signing, same version and expiry — are
 * hard links to one file. A run that re-signs many bins (`useWriter`) hands every file from then on
 * to a FileWriter, which signs each bin, writes and fsyncs on a worker while this thread builds the
 * next bin's text.
 */
export class VersionedFiles {
  private readonly bySha256 = new Map<string, string>();
  private readonly toSync: string[] = [];
  private writer: FileWriter | null = null;
  constructor(private readonly dir: string) {}

  /** Signs and writes from now on on a worker with this targets key (no worker to be had: here). */
  useWriter(key: TufKeyFile): void {
    if (!this.writer) this.writer = FileWriter.start(this.dir, { pem: key.privateKey, keyid: key.keyid });
  }

  write(name: string, text: string): void {
    if (this.writer) {
      this.writer.write(name, text);
      return;
    }
    const file = join(this.dir, name);
    // A leftover of a run that stopped before its timestamp: never served, safe to replace.
    rmSync(file, { force: true });
    const digest = sha256Hex(Buffer.from(text));
    const same = this.bySha256.get(digest);
    if (same) {
      linkSync(same, file);
      return;
    }
    writeFileSync(file, text);
    this.bySha256.set(digest, file);
    this.toSync.push(file);
  }

  /** A bin: `parts` signed with `signer` here, or with the writer's key (the same targets key) on the worker. */
  writeBin(name: string, parts: BinParts, signer: (data: Buffer) => Signature): void {
    if (this.writer) this.writer.writeSigned(name, parts.canonical, parts.signed);
    else this.write(name, signedText(signer(Buffer.from(parts.canonical)), parts.signed));
  }

  /** After a failed run: stops the writer thread, if one was started (its files are never named). */
  abort(): void {
    const writer = this.writer;
    this.writer = null;
    writer?.stop();
  }

  sync(): void {
    const writer = this.writer;
    this.writer = null;
    // The writer's files and the folder; then any written here before it started.
    writer?.finish();
    if (!writer || this.toSync.length > 0) fsyncAll([...this.toSync, this.dir]);
  }
}

/**
 * One signing run as each role's signer sees it: the files it writes, what it wrote so far (site
 * paths, `tuf/...`), and the version the new snapshot will name for each targets role.
 */
export interface SigningRun {
  dir: string;
  keys: OnlineKeys;
  at: Date;
  files: VersionedFiles;
  written: string[];
  snapshotMeta: Map<string, number>;
}

/** Keeps KEEP_OLD_VERSIONS files behind the newest of each role just re-signed; one directory listing. */
export function pruneOldVersions(
  dir: string,
  roles: readonly string[],
  newest: Record<string, number>,
): void {
  const wanted = new Set(roles);
  const byRole = new Map<string, number[]>();
  for (const name of readdirSync(dir)) {
    const match = /^(\d+)\.(.+)\.json$/.exec(name);
    if (!match || !wanted.has(match[2]!)) continue;
    const version = Number(match[1]);
    if (version >= newest[match[2]!]!) continue;
    byRole.set(match[2]!, [...(byRole.get(match[2]!) ?? []), version]);
  }
  for (const [role, versions] of byRole) {
    for (const version of versions.sort((x, y) => y - x).slice(KEEP_OLD_VERSIONS)) {
      rmSync(join(dir, `${version}.${role}.json`), { force: true });
    }
  }
}
