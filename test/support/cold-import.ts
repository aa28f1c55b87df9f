import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * How long a module takes to import in a fresh plain `node` process (no tsx, no loader of the test
 * run): wall time and the process's CPU time from just before `import()` until it settles. Node's
 * own start-up is outside both. Used on the built Vercel functions (test/http/vercel-build.test.ts)
 * and by the functions bench.
 */
export interface ImportTime {
  wallMs: number;
  cpuMs: number;
}

const PROBE = `
const cpu = process.cpuUsage();
const started = performance.now();
await import(process.argv[1]);
const wallMs = performance.now() - started;
const used = process.cpuUsage(cpu);
process.stdout.write(JSON.stringify({ wallMs, cpuMs: (used.user + used.system) / 1000 }));
process.exit(0);
`;

export function importOnce(file: string, cwd: string, env: Record<string, string> = {}): ImportTime {
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", PROBE, pathToFileURL(file).href], {
    cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", TZ: "UTC", ...env },
    encoding: "utf8",
    timeout: 60_000,
  });
  if (run.status !== 0) throw new Error(`importing ${file} failed (${run.status}):\n${run.stderr}`);
  return JSON.parse(run.stdout) as ImportTime;
}

/** The lower middle value: a value that was measured. */
export function medianOf(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

export interface ColdImportFigures {
  subject: ImportTime[];
  /** An empty ES module imported the same way, each run just before the subject's. */
  floor: ImportTime[];
  wallMs: number;
  cpuMs: number;
  floorWallMs: number;
  floorCpuMs: number;
}

/**
 * `runs` alternated pairs (empty module, subject, empty module, subject, ...), each in a fresh
 * process: on a shared machine neighbouring runs see nearly the same load, so the floor says how
 * slow Node's module loading was while the subject was measured.
 */
export function measureColdImport(
  file: string,
  options: { cwd: string; runs?: number; env?: Record<string, string> },
): ColdImportFigures {
  const dir = mkdtempSync(join(tmpdir(), "svc-cold-import-"));
  try {
    const empty = join(dir, "empty.mjs");
    writeFileSync(empty, "export default null;\n");
    const subject: ImportTime[] = [];
    const floor: ImportTime[] = [];
    for (let i = 0; i < (options.runs ?? 5); i++) {
      floor.push(importOnce(empty, options.cwd, options.env));
      subject.push(importOnce(file, options.cwd, options.env));
    }
    return {
      subject,
      floor,
      wallMs: medianOf(subject.map((t) => t.wallMs)),
      cpuMs: medianOf(subject.map((t) => t.cpuMs)),
      floorWallMs: medianOf(floor.map((t) => t.wallMs)),
      floorCpuMs: medianOf(floor.map((t) => t.cpuMs)),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The goal of issue 27, item 6: a function's cold import. The gate is the median CPU time of the
 * import (its own work: resolving, reading, compiling and running the bundle's modules), which a
 * shared machine's load barely moves; wall time on this 2-core machine under a test suite's load is
 * two to ten times the CPU time, and swings as much between neighbouring runs, so it is printed
 * beside the floor measured in the same run rather than asserted.
 */
export const COLD_IMPORT_BUDGET_MS = 100;

export function describeColdImport(name: string, figures: ColdImportFigures): string {
  const ms = (value: number) => `${value.toFixed(1)} ms`;
  return (
    `cold import ${name}: median ${ms(figures.cpuMs)} CPU, ${ms(figures.wallMs)} wall ` +
    `[${figures.subject.map((t) => t.wallMs.toFixed(0)).join(" ")}]; an empty module in the same runs: ` +
    `${ms(figures.floorCpuMs)} CPU, ${ms(figures.floorWallMs)} wall ` +
    `(the function costs ${(figures.cpuMs / figures.floorCpuMs).toFixed(1)}x its CPU, ${(figures.wallMs / figures.floorWallMs).toFixed(1)}x its wall time)`
  );
}
