/**
 * Cold imports of the Vercel functions (issue 27, item 6): each bundle bin/build-functions.mjs
 * makes, imported in a fresh plain `node` process, alternated with an empty ES module (the floor)
 * in the same conditions.
 *
 *   npm run bench:functions            (or: node --import tsx bench/functions/run.ts [--runs N])
 *
 * Builds dist/functions/ first (as a deployment does) and imports each bundle from there, so the
 * packages left outside the bundles resolve from this checkout's node_modules; the vercel build
 * test (test/http/vercel-build.test.ts) measures the same in the functions' own folders. Goal: at
 * most 100 ms of CPU per cold import (median); wall time is printed beside the floor's, because on
 * a shared machine it moves with the load (docs/api.md, "Small cold starts").
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { COLD_IMPORT_BUDGET_MS, importOnce } from "../../test/support/cold-import.ts";
import {
  describeStats,
  fmt,
  judge,
  printTable,
  runPairs,
  summarize,
  verdictSummary,
} from "../lib/harness.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const { values } = parseArgs({ options: { runs: { type: "string" } } });
const RUNS = Number(values.runs ?? 7);

// @ts-expect-error: plain .mjs scripts without types
const build = await import("../../bin/build-functions.mjs");

const EMPTY = join(mkdtempSync(join(tmpdir(), "svc-bench-functions-")), "empty.mjs");
writeFileSync(EMPTY, "export default null;\n");
const rows: string[][] = [];
for (const [name, entry] of Object.entries(build.functionEntries() as Record<string, string>)) {
  const { files }: { files: string[] } = await build.buildFunction(name, entry);
  const bundle = join(build.FUNCTIONS_OUT, name, "index.js");
  const cpu = await runPairs({
    runs: RUNS,
    baseline: () => importOnce(EMPTY, ROOT),
    subject: () => importOnce(bundle, ROOT),
    baselineValue: (t) => t.cpuMs,
    subjectValue: (t) => t.cpuMs,
  });
  const wall = {
    baseline: cpu.runs.map((r) => r.baseline.wallMs),
    subject: cpu.runs.map((r) => r.subject.wallMs),
  };
  const ms = (n: number) => `${fmt(n, 1)} ms`;
  rows.push([
    name,
    String(files.length),
    describeStats(cpu.subject, ms),
    describeStats(summarize(wall.subject), ms),
    `${ms(cpu.baseline.median)} / ${ms(summarize(wall.baseline).median)}`,
    `${fmt(cpu.ratio.median, 1)}x`,
    judge(
      cpu.subject.median <= COLD_IMPORT_BUDGET_MS,
      `${name} cold import <= ${COLD_IMPORT_BUDGET_MS} ms CPU`,
    ),
  ]);
}

console.log(`cold imports on plain Node ${process.version}, ${RUNS} alternated pairs each\n`);
printTable(
  [
    "function",
    "bundle files",
    "CPU median (min-max)",
    "wall median (min-max)",
    "empty module CPU / wall",
    "CPU vs floor",
    `goal <= ${COLD_IMPORT_BUDGET_MS} ms CPU`,
  ],
  rows,
);
console.log(`\n${verdictSummary()}`);
rmSync(dirname(EMPTY), { recursive: true, force: true });
