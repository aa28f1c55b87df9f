import { createRequire, syncBuiltinESMExports } from "node:module";

/**
 * An in-process crash for unit tests: from the Nth mutating file operation on, every mutating
 * operation throws Frozen without touching the disk, so the disk keeps exactly what a crash at that
 * instant leaves, whatever catch and finally blocks then try (they cannot write). The process-level
 * crash tests (fault-injection.mjs) SIGKILL real CLI and server processes; this one is fast enough
 * to try every operation of a transaction and of its recovery.
 */
export class Frozen extends Error {}

const require = createRequire(import.meta.url);
const fs = require("node:fs") as Record<string, (...args: unknown[]) => unknown>;
const MUTATING = [
  "renameSync",
  "linkSync",
  "unlinkSync",
  "writeFileSync",
  "appendFileSync",
  "mkdirSync",
  "rmSync",
  "rmdirSync",
  "fsyncSync",
  "writeSync",
  "copyFileSync",
] as const;

export interface FrozenDisk {
  /** Restores the real file operations; says whether the freeze was reached. */
  stop(): { frozen: boolean; operations: number };
  /** The operations that ran (name and first argument), in order. */
  readonly log: ReadonlyArray<{ name: string; path: string }>;
}

/** Freezes the disk from the nth mutating operation (1-based) until stop(); sync or async code alike. */
export function freezeDisk(n: number): FrozenDisk {
  const originals = new Map(MUTATING.map((name) => [name, fs[name]!]));
  const log: Array<{ name: string; path: string }> = [];
  let depth = 0;
  for (const name of MUTATING) {
    const original = originals.get(name)!;
    fs[name] = function (this: unknown, ...args: unknown[]) {
      // fsync is counted (a crash point) but not performed, also inside writeFileSync's flush: these
      // tests are about which bytes a crash leaves, and real fsyncs would make every point slow.
      if (depth > 0) return name === "fsyncSync" ? undefined : original.apply(this, args);
      log.push({ name, path: String(args[0]) });
      if (log.length >= n) throw new Frozen(`disk frozen at operation ${n} (${name})`);
      if (name === "fsyncSync") return undefined;
      depth++;
      try {
        return original.apply(this, args);
      } finally {
        depth--;
      }
    };
  }
  syncBuiltinESMExports();
  return {
    log,
    stop() {
      for (const [name, original] of originals) fs[name] = original;
      syncBuiltinESMExports();
      return { frozen: log.length >= n, operations: log.length };
    },
  };
}

/** Runs fn with the disk frozen from the nth mutating operation; a Frozen throw counts as the crash. */
export function withFrozenDisk<T>(
  n: number,
  fn: () => T,
): { result?: T; frozen: boolean; operations: number } {
  const disk = freezeDisk(n);
  try {
    const result = fn();
    return { result, ...disk.stop() };
  } catch (error) {
    const state = disk.stop();
    if (!state.frozen) throw error;
    return state;
  }
}
