import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { binForTarget, TUF_DIR, targetPathOfCommitted } from "../distribution/tuf-layout.ts";
import { resolveSigning, type SiteSigning, signChanges, signSite } from "../distribution/tuf-repository.ts";
import { loadLatestRoot } from "../distribution/tuf-root.ts";
import { loadBin, loadSignedState } from "../distribution/tuf-signed-state.ts";
import { hashSiteFile } from "../distribution/tuf-site-targets.ts";
import { SvcError } from "../errors.ts";
import { fsyncPath, writeFileAtomic } from "../lib/atomic-write.ts";
import { type CommitOptions, owedSigningPath, type PublishedTree } from "./atomic-files.ts";

/**
 * Signing is part of a publication's commit. A signing publication path (online keys configured)
 * notes, durably and just before its commit point, the targets its commit changes; the signing
 * that follows the commit removes the note. A crash between the two leaves the note, and the next
 * command under the publish lock settles it before anything else: with the keys it signs exactly
 * those targets (incremental, the bins they fall in); without them it checks whether the signed
 * metadata already covers them (someone ran `svc keys sign`) and otherwise the debt stands — a
 * publication is refused naming SVC_TUF_ONLINE_KEYS, `svc check` reports it. The note lists target
 * paths, not a tree state, so signing it after a rollback (a crash before the commit point) only
 * re-signs unchanged files: harmless.
 *
 * The note is `{root}/.svc-tmp/signing-owed.json`, beside the transactions (never served, never in
 * git). On GitHub the publisher does not sign (the publish job's own step does), so nothing is noted.
 */
interface OwedNote {
  version: 1;
  targets: string[];
}

export type SigningSettlement =
  /** Nothing was owed. */
  | "none"
  /** The owed targets were signed now. */
  | "signed"
  /** The signed metadata already described them (a `svc keys sign` since): the note was dropped. */
  | "covered"
  /** Still owed: no keys here, and the signed metadata is behind the committed tree. */
  | "owed";

function readNote(tree: PublishedTree): string[] | null {
  const file = owedSigningPath(tree.root);
  if (!existsSync(file)) return null;
  try {
    const note = JSON.parse(readFileSync(file, "utf8")) as Partial<OwedNote>;
    if (Array.isArray(note.targets)) return note.targets.filter((t) => typeof t === "string");
  } catch {}
  // Unreadable (hand-edited): an empty list, which owes everything and settles as a full signing.
  return [];
}

/** Adds the targets of committed paths (root- or site-relative) to the note, durably. */
export function oweSigning(tree: PublishedTree, committed: readonly string[]): void {
  const targets = committed.map(targetPathOfCommitted).filter((t): t is string => t !== null);
  if (targets.length === 0) return;
  const existing = readNote(tree);
  // An empty list owes everything (an unreadable note); adding to it changes nothing.
  const owed = existing?.length === 0 ? [] : [...new Set([...(existing ?? []), ...targets])].sort();
  const file = owedSigningPath(tree.root);
  mkdirSync(dirname(file), { recursive: true });
  writeFileAtomic(file, `${JSON.stringify({ version: 1, targets: owed } satisfies OwedNote)}\n`);
  fsyncPath(dirname(file));
}

/**
 * The commit hooks of a signing publication path: before the commit point, its paths are noted as
 * owed (then `hooks.beforeCommit` runs). Without signing, the hooks as given.
 */
export function owingSignature(
  tree: PublishedTree,
  signing: SiteSigning | null | undefined,
  hooks: CommitOptions = {},
): CommitOptions {
  // A local portal without keys on an unsigned site: nothing to owe (with a root, assertCanSign refused).
  if (!resolveSigning(signing)) return hooks;
  return {
    ...hooks,
    beforeCommit: (change) => {
      oweSigning(tree, change.paths);
      hooks.beforeCommit?.(change);
    },
  };
}

/** The signing that follows a commit succeeded: nothing is owed any more. */
export function clearOwedSigning(tree: PublishedTree): void {
  const file = owedSigningPath(tree.root);
  if (!existsSync(file)) return;
  rmSync(file, { force: true });
  fsyncPath(dirname(file));
}

/**
 * Settles what a crash left owed (call under the publish lock, after recovery, before the tree is
 * read or changed): signs it with the keys, or drops it when the signed metadata covers it.
 */
export function settleOwedSigning(
  tree: PublishedTree,
  signing: SiteSigning | null | undefined,
): SigningSettlement {
  const owed = readNote(tree);
  if (owed === null) return "none";
  if (!loadLatestRoot(tree.siteDir)) {
    // Signing was turned off (no root any more): there is nothing to keep up to date.
    clearOwedSigning(tree);
    return "covered";
  }
  const resolved = resolveSigning(signing);
  if (resolved) {
    const now = resolved.now ?? (() => new Date());
    if (owed.length > 0) signChanges(tree.siteDir, resolved.keys, { written: owed, deleted: [] }, now);
    else signSite(tree.siteDir, resolved.keys, now);
    clearOwedSigning(tree);
    return "signed";
  }
  if (owed.length > 0 && signedMetadataCovers(tree.siteDir, owed)) {
    clearOwedSigning(tree);
    return "covered";
  }
  return "owed";
}

/** The refusal of a publication while signing is owed and no keys are configured here. */
export function owedSigningError(tree: PublishedTree): SvcError {
  return new SvcError(
    "config_invalid",
    `the signed metadata (${TUF_DIR}/) does not cover the last committed change of ${tree.siteDir} (its signing was interrupted); set SVC_TUF_ONLINE_KEYS (the online keys) so the next command signs it, or run \`svc keys sign\` with it; nothing was published`,
    { details: { code: "signing_owed" } },
  );
}

/** The problem `svc check` reports for owed signing. */
export function owedSigningProblem(tree: PublishedTree): string {
  return `signing: the signed metadata (${join(tree.siteDir, TUF_DIR)}) is behind the committed tree (an interrupted signing); set SVC_TUF_ONLINE_KEYS and run svc check again (it signs what is owed), or svc keys sign`;
}

/** Whether every target's signed entry (top-level or in its bin) is the file as it is now. */
function signedMetadataCovers(siteDir: string, targets: readonly string[]): boolean {
  const dir = join(siteDir, TUF_DIR);
  let state: ReturnType<typeof loadSignedState>;
  try {
    state = loadSignedState(dir);
  } catch {
    // Unreadable signed metadata covers nothing: the debt stands until the keys sign it.
    return false;
  }
  if (!state.targets || !state.snapshot) return false;
  const topLevel = state.targets.signed.targets;
  const bins = new Map<string, ReturnType<typeof loadBin>>();
  return targets.every((path) => {
    const full = join(siteDir, path);
    const current = existsSync(full) ? hashSiteFile(full) : null;
    const inTopLevel = topLevel[path];
    let signed: { length: number; sha256: string } | undefined = inTopLevel
      ? { length: inTopLevel.length, sha256: inTopLevel.hashes.sha256 ?? "" }
      : undefined;
    if (!signed) {
      const bin = binForTarget(path);
      if (!bins.has(bin)) bins.set(bin, loadBin(dir, state.snapshot, bin));
      signed = bins.get(bin)?.targets.get(path);
    }
    if (!current) return signed === undefined;
    return signed !== undefined && signed.length === current.length && signed.sha256 === current.sha256;
  });
}
