/**
 * Benchmark of `svc validate` against the baseline a person would use to check a ZIP by hand,
 * `sha256sum` + `unzip -t`, both measured on the same files in the same run.
 *
 *   npm run bench:validate            (or: node --import tsx bench/validate/run.ts [--runs N] [--keep])
 *
 * Packages are generated in a temp folder: ~97 MiB with ~2,000 entries (random pak data plus
 * compressible text), and 20,000 small entries. Targets: without antivirus at most 1.5x the
 * baseline; peak RSS at most twice the package size. The antivirus run uses a real clamd with the
 * test signature database (the full ClamAV database scans slower; see docs/validation.md).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { clamdPath, clamscanPath, makeSignatureDatabase, startClamd } from "../../test/validation/clamav.ts";
import { buildZip, type FixtureEntry } from "../../test/validation/zip-builder.ts";
import {
  describeStats,
  fmt,
  type PairedResult,
  printTable,
  runPairs,
  summarize,
  verdict,
  verdictSummary,
} from "../lib/harness.ts";
import { hasTimeCommand, timeProcess } from "../lib/timed-process.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The CLI bundle this bench runs, built from src/ at its start into a folder of its own (ignored
 * by git, one level below the root like dist/). bin/svc.js runs dist/svc.js only while no file
 * under src/ is newer, so on a tree others edit during a run it switched to the sources through
 * tsx now and then, and those runs measured tsx's start-up instead of svc.
 */
const BENCH_CLI_DIR = join(ROOT, ".svc-cli-dist-bench-validate");
const SVC = join(BENCH_CLI_DIR, "svc-entry.mjs");

/** Builds the bench's bundle and its entry, which does what bin/svc.js does with a fresh bundle. */
async function buildBenchCli(): Promise<void> {
  // @ts-expect-error: plain .mjs scripts without types
  const { cleanCliBuild, cliBuildOptions } = await import("../../bin/build-cli.mjs");
  const { build } = await import("esbuild");
  cleanCliBuild(BENCH_CLI_DIR);
  await build(await cliBuildOptions(BENCH_CLI_DIR));
  writeFileSync(
    SVC,
    [
      "// bin/svc.js with the bundle bench/validate/run.ts built beside this file: the same walk over",
      "// src/ that bin/svc.js makes to see whether dist/svc.js is fresh (its answer is not needed here),",
      "// then the bundle's main.",
      'import { bundleIsFresh } from "../bin/cli-entry.mjs";',
      "bundleIsFresh();",
      'const { main } = await import("./svc.js");',
      "process.exitCode = await main(process.argv.slice(2));",
      "",
    ].join("\n"),
  );
}
const FLOOR = join(ROOT, "bench/validate/floor.mjs");

const SITE = join(ROOT, "site");
const { values } = parseArgs({
  options: { runs: { type: "string" }, keep: { type: "boolean" }, "generate-only": { type: "boolean" } },
});
const RUNS = Number(values.runs ?? 3);

function has(binary: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${binary}`]).status === 0;
}

function pe(size: number): Buffer {
  const b = randomBytes(size);
  b.write("MZ", 0, "latin1");
  b.writeUInt32LE(0x80, 0x3c);
  b.write("PE\0\0", 0x80, "latin1");
  return b;
}

/**
 * Incompressible pak data behind a fixed header, as real pak files have one: bare random bytes start
 * with some archive's magic now and then (gzip's is two bytes: about one package in 60 would carry a
 * "nested archive" and fail the bench's expected report).
 */
function pak(size: number): Buffer {
  const b = randomBytes(size);
  b.write("SVCPAK01", 0, "latin1");
  return b;
}

/** Text that deflates about 4:1, like real config, localisation and script files. */
function compressibleText(size: number, seed: number): Buffer {
  const words = [
    "health",
    "shield",
    "ammo",
    "reload",
    "sprint",
    "vector",
    "quest",
    "dialog",
    "spawn",
    "mesh",
  ];
  const out: string[] = [];
  let n = 0;
  let x = seed;
  while (n < size) {
    x = (x * 1103515245 + 12345) >>> 0;
    const line = `${words[x % 10]}_${x % 997} = ${(x >>> 8) % 100000} ; ${(x >>> 4) % 4096}\n`;
    out.push(line);
    n += line.length;
  }
  return Buffer.from(out.join("").slice(0, size));
}

interface Spec {
  label: string;
  files: Array<{ name: string; data: Buffer }>;
}

function largeSpec(): Spec {
  const files: Spec["files"] = [
    { name: "Binaries/Win64/BenchMod.dll", data: pe(2 * 1024 * 1024) },
    { name: "Binaries/Win64/BenchModCore.dll", data: pe(512 * 1024) },
  ];
  for (let i = 0; i < 1000; i++)
    files.push({ name: `Content/Paks/chunk${String(i).padStart(4, "0")}.pak`, data: pak(84 * 1024) });
  for (let i = 0; i < 1000; i++) {
    files.push({
      name: `Content/Data/table${String(i).padStart(4, "0")}.txt`,
      data: compressibleText(40 * 1024, i + 1),
    });
  }
  return { label: "2,000 entries, ~97 MiB", files };
}

function manySpec(): Spec {
  const files: Spec["files"] = [{ name: "Binaries/Win64/BenchMod.dll", data: pe(64 * 1024) }];
  for (let i = 0; i < 19_998; i++) {
    const dir = `Content/Data/d${String(Math.floor(i / 500)).padStart(2, "0")}`;
    files.push({ name: `${dir}/f${String(i).padStart(5, "0")}.txt`, data: compressibleText(768, i + 7) });
  }
  return { label: "20,000 small entries", files };
}

function manifest(modId: string, build: string) {
  return {
    schema: "svc.mod-manifest.v1",
    id: modId,
    name: "Bench Mod",
    version: "1.0.0",
    targetGameBuild: build,
    dependencies: [],
    entrypoints: [{ path: "Binaries/Win64/BenchMod.dll", kind: "native" }],
  };
}

/** Writes the ZIP with Info-ZIP when present (what modders use), else with our own small writer. */
function writePackage(dir: string, spec: Spec, modId: string, build: string): string {
  const files = [
    { name: "svc-mod.json", data: Buffer.from(JSON.stringify(manifest(modId, build), null, 2)) },
    ...spec.files,
  ];
  const zipPath = join(dir, `${modId}-1.0.0.zip`);
  if (has("zip")) {
    const tree = join(dir, `${modId}-tree`);
    for (const f of files) {
      mkdirSync(dirname(join(tree, f.name)), { recursive: true });
      writeFileSync(join(tree, f.name), f.data);
    }
    // -X: no extra attributes; -D: no folder entries; names come from a file list for a stable order.
    writeFileSync(join(dir, `${modId}.list`), `${files.map((f) => f.name).join("\n")}\n`);
    execFileSync(
      "sh",
      ["-c", `zip -q -X -D ${JSON.stringify(zipPath)} -@ < ${JSON.stringify(join(dir, `${modId}.list`))}`],
      { cwd: tree },
    );
    rmSync(tree, { recursive: true, force: true });
  } else {
    const entries: FixtureEntry[] = files.map((f) => ({ name: f.name, data: f.data }));
    writeFileSync(zipPath, buildZip(entries));
  }
  return zipPath;
}

function writeSidecar(dir: string, zipPath: string, modId: string, build: string): string {
  const bytes = readFileSync(zipPath);
  const sidecar = {
    schema: "svc.mod-release-submission.v1",
    modId,
    name: "Bench Mod",
    version: "1.0.0",
    targetGameBuild: build,
    summary: "A generated package for the validation benchmark.",
    releaseNotes: "Benchmark build.",
    package: {
      fileName: `${modId}-1.0.0.zip`,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      sizeBytes: bytes.length,
    },
    dependencies: [],
    entrypoints: [{ path: "Binaries/Win64/BenchMod.dll", kind: "native" }],
    authors: [{ name: "Bench" }],
  };
  const path = join(dir, `${modId}.json`);
  writeFileSync(path, JSON.stringify(sidecar, null, 2));
  return path;
}

async function baseline(zipPath: string): Promise<number> {
  // Both tools read the same file; the page cache is warm for everyone after the first run.
  const a = await timeProcess("sha256sum", [zipPath]);
  const b = await timeProcess("unzip", ["-tqq", zipPath]);
  if (a.status !== 0 || b.status !== 0) throw new Error(`baseline failed on ${zipPath}`);
  return a.seconds + b.seconds;
}

async function floorRun(zipPath: string): Promise<number> {
  const t = await timeProcess(process.execPath, [FLOOR, zipPath]);
  if (t.status !== 0) throw new Error(`the floor script failed on ${zipPath}`);
  return t.seconds;
}

interface SvcRun {
  seconds: number;
  maxRssKiB: number | null;
  passedChecks: number;
  failed: string[];
}

/**
 * Where one run's time goes: `svc validate --timings` step by step, grouped, beside the floor
 * script's own steps on the same package (a run of each outside the timed ones).
 */
function stepTable(zipPath: string, metadata: string): string[][] {
  const r = spawnSync(process.execPath, [...validateArgs(SVC, zipPath, metadata, null), "--timings"], {
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  const steps = new Map(
    [...r.stderr.matchAll(/^ {2}(\S.*?) +(\d+\.\d) ms +\d+\.\d%$/gm)].map((m) => [m[1]!, Number(m[2])]),
  );
  if (!steps.has("total"))
    throw new Error(`svc validate --timings printed no table: ${r.stderr.slice(0, 500)}`);
  const floor = JSON.parse(
    execFileSync(process.execPath, [FLOOR, zipPath, "--timings"], { encoding: "utf8" }),
  ) as {
    start: number;
    hash: number;
    entries: number;
  };
  const take = (test: (step: string) => boolean) => {
    let sum = 0;
    for (const [step, ms] of steps)
      if (step !== "total" && test(step)) {
        sum += ms;
        steps.delete(step);
      }
    return sum;
  };
  const ms = (n: number) => `${n.toFixed(0)} ms`;
  const rows: Array<[string, number, number | null, string]> = [
    [
      "start Node, load the code",
      take((s) => s === "start Node and load svc" || s === "load the checks"),
      floor.start,
      "svc's modules over Node's own start",
    ],
    ["hash the package", take((s) => s === "hash the package"), floor.hash, "the same sha256"],
    [
      "inflate, CRC and sha256 each entry",
      take((s) => s === "inflate, verify and hash the entries"),
      floor.entries,
      "svc also sniffs each entry's type and keeps config files; the floor also walks the directory here",
    ],
    [
      "read the ZIP structure",
      take((s) => s === "read the ZIP structure"),
      null,
      "every header against its central record, caps, layout",
    ],
    [
      "name and collision rules",
      take((s) => s === "check the names"),
      null,
      "16 name rules per entry, 4 collision rules between entries",
    ],
    ["the checks", take((s) => s.startsWith("check ")), null, "the contract's checks on the report"],
  ];
  rows.push(["the rest", take(() => true), null, "documents, sidecar, manifest, report"]);
  const total = rows.reduce((t, [, svcMs]) => t + svcMs, 0);
  const floorTotal = floor.start + floor.hash + floor.entries;
  return [
    ...rows.map(([step, svcMs, floorMs, note]) => [
      step,
      ms(svcMs),
      floorMs === null ? "-" : ms(floorMs),
      note,
    ]),
    ["total", ms(total), ms(floorTotal), `svc ${(total / floorTotal).toFixed(2)}x the floor`],
  ];
}

/** `svc validate --json` on a package, with the given antivirus options or none (--no-antivirus). */
function validateArgs(
  entry: string,
  zipPath: string,
  metadata: string,
  antivirus: string[] | null,
): string[] {
  return [
    entry,
    "validate",
    "--package",
    zipPath,
    "--metadata",
    metadata,
    "--site",
    SITE,
    "--json",
    ...(antivirus ?? ["--no-antivirus"]),
  ];
}

async function svc(
  zipPath: string,
  metadata: string,
  antivirus: string[] | null,
  entry = SVC,
): Promise<SvcRun> {
  const t = await timeProcess(process.execPath, validateArgs(entry, zipPath, metadata, antivirus));
  if (t.status !== 0 && t.status !== 1)
    throw new Error(`svc validate exited ${t.status}: ${t.stdout.slice(0, 2000)}`);
  const report = JSON.parse(t.stdout) as {
    checks: Array<{ id: string; status: string; reasonCode: string | null }>;
  };
  return {
    seconds: t.seconds,
    maxRssKiB: t.maxRssKiB,
    passedChecks: report.checks.filter((c) => c.status === "passed").length,
    failed: report.checks.filter((c) => c.status !== "passed").map((c) => `${c.id}:${c.reasonCode}`),
  };
}

interface AntivirusRow {
  label: string;
  /** svc validate --clamd against a fresh clamd, paired with clamscan alone (limits covering the package). */
  pairs: PairedResult<ClamscanRun | null, SvcRun>;
}

interface ClamscanRun {
  full: number;
  defaults: number;
}

const CLAMSCAN_FULL_LIMITS = [
  "--max-files=30000",
  "--max-filesize=110M",
  "--max-scansize=400M",
  "--alert-exceeds-max=yes",
];

/**
 * clamscan alone on the whole ZIP, with the same signature database as the bench's clamd: once with
 * limits that cover the package (what svc asks of clamd, so the same work), once with clamscan's
 * defaults, which stop unpacking after 10,000 files without saying so (AlertExceedsMax is off).
 */
async function clamscanRun(zipPath: string, db: string): Promise<ClamscanRun | null> {
  if (!clamscanPath) return null;
  const run = async (extra: string[]) => {
    const t = await timeProcess(clamscanPath!, ["--no-summary", "-d", db, ...extra, zipPath]);
    if (t.status !== 0)
      throw new Error(`clamscan exited ${t.status} on ${zipPath}: ${t.stdout.slice(0, 500)}`);
    return t.seconds;
  };
  return { full: await run(CLAMSCAN_FULL_LIMITS), defaults: await run([]) };
}

/** svc validate --clamd with a fresh daemon: its clean-file cache (on, as deployed) has never seen the package, as with a new upload. */
async function svcWithFreshClamd(zipPath: string, metadata: string): Promise<SvcRun> {
  const fresh = await startClamd();
  try {
    const run = await svc(zipPath, metadata, ["--clamd", fresh.socket]);
    if (run.failed.length > 0) throw new Error(`antivirus run failed: ${run.failed.join(", ")}`);
    return run;
  } finally {
    await fresh.stop();
  }
}

function printAntivirus(rows: AntivirusRow[]): void {
  const goal = 1.5;
  console.log(
    "\nantivirus: svc validate --clamd (a fresh clamd per run, started by the bench: test signature database)\n" +
      "paired with clamscan alone on the whole ZIP with the same database (clamscan first, then svc, A B A B ...)",
  );
  const head = [
    "package",
    "svc with clamd",
    "clamscan, limits covering the package",
    "ratio, pair by pair",
    "verdict",
    "clamscan, default limits (stops at 10,000 files)",
    "ratio",
  ];
  const s = (n: number) => `${fmt(n)} s`;
  const x = (n: number) => `${fmt(n)}x`;
  const cells = rows.map(({ label, pairs }) => {
    const clamscan = pairs.runs.map((r) => r.baseline);
    if (clamscan.some((c) => c === null))
      return [
        label,
        describeStats(pairs.subject, s),
        "n/a (no clamscan)",
        "n/a",
        verdict(false, `<= ${goal}x clamscan (not installed)`, `${label}: antivirus ratio`),
        "n/a",
        "n/a",
      ];
    const defaults = summarize(clamscan.map((c) => c!.defaults));
    const defaultRatios = summarize(pairs.runs.map((r) => r.subject.seconds / r.baseline!.defaults));
    return [
      label,
      describeStats(pairs.subject, s),
      describeStats(summarize(clamscan.map((c) => c!.full)), s),
      describeStats(pairs.ratio, x),
      verdict(pairs.ratio.median <= goal, `<= ${goal}x, median of pairs`, `${label}: antivirus ratio`),
      describeStats(defaults, s),
      describeStats(defaultRatios, x),
    ];
  });
  printTable(head, cells);
}

async function main(): Promise<void> {
  for (const tool of ["sha256sum", "unzip"])
    if (!has(tool)) throw new Error(`${tool} is needed for the baseline`);
  // site/ is a build output (not in git): a fresh clone has none until `svc build` (npm start and
  // npm test make it), and svc validate reads the portal's catalog from it.
  const latest = join(SITE, "api/v1/game-builds/latest.json");
  if (!existsSync(latest)) {
    console.log("no site/ yet: svc build ...");
    execFileSync(process.execPath, [join(ROOT, "bin/svc.js"), "build"], { cwd: ROOT, stdio: "inherit" });
  }
  const gameBuilds = JSON.parse(readFileSync(latest, "utf8")) as {
    supportedGameBuilds: string[];
  };
  const build = gameBuilds.supportedGameBuilds[0]!;
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-validate-"));
  try {
    console.log(`generating packages in ${dir} (writer: ${has("zip") ? "Info-ZIP zip" : "built-in"}) ...`);
    const packages = [
      { spec: largeSpec(), modId: "bench-large" },
      { spec: manySpec(), modId: "bench-many" },
    ].map(({ spec, modId }) => {
      const zipPath = writePackage(dir, spec, modId, build);
      console.log(`  ${spec.label}: ${statSync(zipPath).size} bytes`);
      return {
        label: spec.label,
        zipPath,
        metadata: writeSidecar(dir, zipPath, modId, build),
        size: statSync(zipPath).size,
      };
    });
    if (values["generate-only"]) {
      values.keep = true;
      return;
    }
    await buildBenchCli();
    if (!clamdPath)
      console.log("clamd not installed: the antivirus figures are skipped (apt-get install clamav-daemon)");
    // The same test signature database as the clamd runs, for clamscan alone.
    const signatures = makeSignatureDatabase(join(dir, "clamscan"));

    console.log(
      `\n${RUNS} pair(s) per package: the baseline, then svc validate, then the node floor, in turn (A B C A B C ...); ` +
        `figures are median (min-max), ratios taken pair by pair; node ${process.version}\n`,
    );
    const rows: string[][] = [];
    const stepTables: Array<[string, string[][]]> = [];
    const antivirusRows: AntivirusRow[] = [];
    const s = (n: number) => `${fmt(n)} s`;
    const x = (n: number) => `${fmt(n)}x`;
    for (const p of packages) {
      // Warm the page cache and the CLI's code once, outside the timings.
      await baseline(p.zipPath);
      await svc(p.zipPath, p.metadata, null);
      await floorRun(p.zipPath);
      const pairs = await runPairs({
        runs: RUNS,
        baseline: () => baseline(p.zipPath),
        subject: async () => {
          const off = await svc(p.zipPath, p.metadata, null);
          return { off, floor: await floorRun(p.zipPath) };
        },
        baselineValue: (seconds) => seconds,
        subjectValue: (r) => r.off.seconds,
      });
      const expectedFail = ["antivirus_scan:antivirus_disabled"];
      for (const { subject } of pairs.runs)
        if (subject.off.failed.join() !== expectedFail.join())
          throw new Error(`unexpected failures: ${subject.off.failed.join(", ")}`);
      const floor = summarize(pairs.runs.map((r) => r.subject.floor));
      const floorRatio = summarize(pairs.runs.map((r) => r.subject.floor / r.baseline));
      const svcOverFloor = summarize(pairs.runs.map((r) => r.subject.off.seconds / r.subject.floor));
      const offRss = Math.max(...pairs.runs.map((r) => r.subject.off.maxRssKiB ?? 0)) * 1024;
      let clamd = "n/a";
      if (clamdPath) {
        const antivirus = await runPairs({
          runs: RUNS,
          baseline: () => clamscanRun(p.zipPath, signatures),
          subject: () => svcWithFreshClamd(p.zipPath, p.metadata),
          baselineValue: (c) => c?.full ?? Number.NaN,
          subjectValue: (r) => r.seconds,
        });
        antivirusRows.push({ label: p.label, pairs: antivirus });
        const rss = Math.max(...antivirus.runs.map((r) => r.subject.maxRssKiB ?? 0));
        clamd = `${describeStats(antivirus.subject, s)}, ${fmt(rss / 1024, 0)} MiB`;
      }
      const engineArgs = [
        "--import",
        "tsx",
        join(ROOT, "bench/validate/engine.ts"),
        p.zipPath,
        p.metadata,
        SITE,
      ];
      const engine = summarize(
        Array.from({ length: RUNS }, () => {
          const out = execFileSync(process.execPath, engineArgs, { cwd: ROOT, encoding: "utf8" });
          return (JSON.parse(out) as { seconds: number }).seconds;
        }),
      );
      stepTables.push([p.label, stepTable(p.zipPath, p.metadata)]);
      // Node itself takes ~50-90 MiB, so the RSS goal is about the ~100 MiB package only.
      const rssVerdict =
        p.size > 50 * 1048576
          ? verdict(offRss / p.size <= 2, "<= 2x the package", `${p.label}: peak RSS`)
          : "(no goal)";
      rows.push([
        p.label,
        `${fmt(p.size / 1048576, 1)} MiB`,
        describeStats(pairs.baseline, s),
        describeStats(pairs.subject, s),
        describeStats(pairs.ratio, x),
        verdict(pairs.ratio.median <= 1.5, "<= 1.5x, median of pairs", `${p.label}: ratio`),
        `${describeStats(floor, s)}; ${fmt(floorRatio.median)}x base, svc ${fmt(svcOverFloor.median)}x it`,
        `${fmt(offRss / 1048576, 0)} MiB (${fmt(offRss / p.size)}x) ${rssVerdict}`,
        `${describeStats(engine, s)} (${fmt(engine.median / pairs.baseline.median)}x)`,
        clamd,
      ]);
    }
    printTable(
      [
        "package",
        "size",
        "sha256sum+unzip -t",
        "svc (no AV)",
        "ratio, pair by pair",
        "verdict",
        "node floor",
        "svc peak RSS",
        "engine only",
        "svc with clamd",
      ],
      rows,
    );
    console.log(
      "\nsvc: svc validate --json through the CLI bundle built from src/ at the bench's start (bin/svc.js's path: its freshness walk, then the bundle; start-up included); " +
        "engine only: runValidation in a warm process; node floor: bench/validate/floor.mjs, the least a\n" +
        "Node.js process can do for the same check (start, hash the file, inflate, CRC and hash each entry; nothing else)." +
        (hasTimeCommand() ? "" : " [peak RSS unavailable without /usr/bin/time]"),
    );
    for (const [label, table] of stepTables) {
      console.log(
        `\nwhere the time goes, ${label} (one run of svc validate --timings beside floor.mjs --timings)`,
      );
      printTable(["step", "svc validate", "node floor", "what"], table);
    }
    if (antivirusRows.length > 0) printAntivirus(antivirusRows);
    console.log(verdictSummary());
  } finally {
    rmSync(BENCH_CLI_DIR, { recursive: true, force: true });
    if (values.keep) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

await main();
