/**
 * The sync action's core: runs the same syncs as `svc sync releases` and `svc sync game-builds`
 * (src/catalog/sync.ts) one after the other, each its own transaction, and reports what changed.
 * A failed target does not undo an earlier one: what succeeded is committed. On GitHub the action
 * pushes through the same catalog commit path as publication (src/github/catalog-push.ts).
 */
import { inlineCode } from "../bot/comments.ts";
import { type SyncOptions, syncGameBuilds, syncReleases } from "../catalog/sync.ts";
import { isSvcError } from "../errors.ts";
import { type CatalogPushResult, pushCatalogCommit } from "../github/catalog-push.ts";

export const SYNC_TARGETS = ["releases", "game-builds"] as const;
export type SyncTarget = (typeof SYNC_TARGETS)[number];

export type SyncOutcome =
  | { target: SyncTarget; ok: true; result: string; written: string[] }
  | { target: SyncTarget; ok: false; code: string; message: string };

/** "releases game-builds", "releases,game-builds": each target once, in the order given. */
export function parseSyncTargets(text: string): SyncTarget[] {
  const names = text.split(/[\s,]+/).filter((s) => s.length > 0);
  if (names.length === 0) throw new Error(`targets is empty: name one or more of ${SYNC_TARGETS.join(", ")}`);
  const unknown = names.filter((n) => !(SYNC_TARGETS as readonly string[]).includes(n));
  if (unknown.length > 0)
    throw new Error(`unknown sync target(s) ${unknown.join(", ")}: use ${SYNC_TARGETS.join(", ")}`);
  return [...new Set(names)] as SyncTarget[];
}

async function syncOne(target: SyncTarget, options: SyncOptions): Promise<SyncOutcome> {
  try {
    if (target === "releases") {
      const r = await syncReleases(options);
      return {
        target,
        ok: true,
        result: `manager ${r.manager.version}, framework ${r.framework.version}`,
        written: r.written,
      };
    }
    const r = await syncGameBuilds(options);
    return {
      target,
      ok: true,
      result: `${r.builds.length} build(s), supported: ${r.supportedGameBuilds.join(", ") || "none"}`,
      written: r.written,
    };
  } catch (error) {
    if (!isSvcError(error)) throw error;
    return { target, ok: false, code: error.code, message: error.message };
  }
}

export async function runSyncTargets(
  targets: readonly SyncTarget[],
  options: SyncOptions,
): Promise<SyncOutcome[]> {
  const outcomes: SyncOutcome[] = [];
  for (const target of targets) outcomes.push(await syncOne(target, options));
  return outcomes;
}

export interface SyncPushOptions {
  /** The checkout; the default branch it is at; the app's installation token. */
  cwd: string;
  branch: string;
  token: string;
  verify: () => Promise<void>;
  /**
   * Brings site/ (a build output the workflow restored, or none) in line with the checkout's records:
   * before the targets run, and after the commit path rebases onto or resets to a new head.
   */
  materialize?: () => Promise<void>;
  log?: (line: string) => void;
}

/**
 * Runs the targets and pushes what they wrote to the default branch. A conflicting rebase (a
 * publication landed meanwhile) resets to the new head and runs the targets again: a sync is a
 * reconciliation too, and the framework release it made is adopted, not duplicated.
 */
export async function syncAndPush(
  targets: readonly SyncTarget[],
  options: SyncOptions,
  push: SyncPushOptions,
): Promise<{ outcomes: SyncOutcome[]; push: CatalogPushResult }> {
  await push.materialize?.();
  let outcomes = await runSyncTargets(targets, options);
  const pushed = await pushCatalogCommit({
    cwd: push.cwd,
    branch: push.branch,
    token: push.token,
    message: () => `Sync ${targets.join(" and ")}`,
    verify: push.verify,
    redo: async () => {
      outcomes = await runSyncTargets(targets, options);
    },
    ...(push.materialize ? { materialize: push.materialize } : {}),
    ...(push.log ? { log: push.log } : {}),
  });
  return { outcomes, push: pushed };
}

/** The job summary: one row per target, then the files each changed. */
export function syncSummary(outcomes: readonly SyncOutcome[]): string {
  const out = ["## svc sync", "", "| target | result | files changed |", "|---|---|---|"];
  for (const o of outcomes) {
    out.push(
      o.ok
        ? `| \`${o.target}\` | :white_check_mark: ${o.result} | ${o.written.length} |`
        : `| \`${o.target}\` | :x: \`${o.code}\`: ${inlineCode(o.message, 300).replace(/\|/g, "\\|")} | 0 |`,
    );
  }
  const written = outcomes.flatMap((o) => (o.ok ? o.written : []));
  if (written.length > 0) {
    out.push("", "<details><summary>Changed files</summary>", "");
    for (const path of written.slice(0, 200)) out.push(`- \`${path}\``);
    if (written.length > 200) out.push(`- ... and ${written.length - 200} more`);
    out.push("", "</details>");
  } else out.push("", "Nothing changed.");
  return `${out.join("\n")}\n`;
}
