/**
 * bench:growth — how what users run grows with the catalog. For each size (mods x 5 versions,
 * records and site generated with the project's own renderSite, bench/lib/generate-portal.ts, packages
 * on GitHub Releases so none has to be written), the portal is signed with `svc keys init` and
 * `svc keys sign`, then every figure is the real CLI in a child process (spawn to exit, peak RSS and
 * CPU from /usr/bin/time -v), except the warm publish step (publishRelease in this process, as a
 * long-running portal runs it) and upload -> pending_review (the local portal's real upload route
 * and worker, assembled as `svc serve` does, in this process). Bytes fetched by `svc install` are
 * counted by the portal's own static server on loopback (bench/lib/counting-server.ts). Scanning is
 * real ClamAV with the test signature database.
 *
 * Each goal applies at the size it names and at every smaller one (a figure that grows with the
 * catalog must already be within it there). A MISSED exits 1.
 *
 *   npm run bench:growth   (or: node --max-old-space-size=8192 --import tsx bench/growth/run.ts
 *                           [--sizes 1000,10000,50000] [--versions 5] [--runs 1] [--keep]
 *                           [--rows validate,upload])
 *
 * --rows measures only the rows named (ids of ROWS below; the rows measured together are measured
 * together: importSigned with bytesRewritten, firstSync with refresh and publishWarm, rebuildRatio
 * with rebuildCost; firstSync, refresh and publishWarm also run the signed import, since they install
 * the probe mod it publishes), and skips the signing keys when no row named needs them.
 *
 * The bench process renders the whole site to generate it and again for the rebuild's floor: at
 * 5,000 mods that peaked at 395 MB, so 50,000 needs more than Node's default heap. The limit is the
 * bench's own; the svc children run with Node's defaults, as users run them.
 * A size this machine cannot finish in time is left out only by naming the others with --sizes.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { filesystemArtifactStore } from "../../src/catalog/artifact-store.ts";
import { commitFiles } from "../../src/catalog/atomic-files.ts";
import { type PackageValidator, publishRelease } from "../../src/catalog/publisher.ts";
import { loadSiteInputs, renderSite, serializeDocument } from "../../src/catalog/site.ts";
import { parseOnlineKeys } from "../../src/distribution/tuf-keys.ts";
import { modRelease, stubValidator } from "../../test/support/catalog-project.ts";
import { type BenchScanner, startBenchScanner } from "../lib/bench-scanner.ts";
import { cliBundleIsFresh, ensureCliBundle, SVC, staleBundleNote } from "../lib/cli-bundle.ts";
import { type SentResponse, startCountingServer } from "../lib/counting-server.ts";
import { benchModId, type GeneratedPortal, generatePortal } from "../lib/generate-portal.ts";
import {
  describeStats,
  judge,
  printTable,
  repeat,
  runPairs,
  summarize,
  verdictSummary,
} from "../lib/harness.ts";
import { type ProcessTiming, timeProcess } from "../lib/timed-process.ts";
import { startReviewPortal } from "./review-portal.ts";

const { values } = parseArgs({
  options: {
    sizes: { type: "string" },
    versions: { type: "string" },
    runs: { type: "string" },
    keep: { type: "boolean" },
    rows: { type: "string" },
  },
});
const SIZES = (values.sizes ?? "1000,10000,50000").split(",").map((s) => Number(s.replace(/_/g, "")));
const VERSIONS = Number(values.versions ?? 5);
const RUNS = Number(values.runs ?? 1);
if (SIZES.some((n) => !Number.isInteger(n) || n < 1 || n > 99_999))
  throw new Error(`--sizes takes mod counts from 1 to 99,999: ${values.sizes}`);

const KB = 1024;
const MB = 1_000_000;

/** A row of the table: its goal applies at `goalSize` mods and below; no goalSize, no goal. */
interface Row {
  label: string;
  goal: string;
  goalSize?: number;
}

const ROWS = {
  refresh: {
    label: "svc install, refresh after one publication (bytes fetched)",
    goal: "<= 10 KB at 50,000",
    goalSize: 50_000,
  },
  firstSync: {
    label: "svc install, first sync for one mod (bytes fetched, package included)",
    goal: "<= 50 KB at 50,000",
    goalSize: 50_000,
  },
  importSigned: {
    label: "svc import of one release with signing (wall, peak RSS)",
    goal: "<= 0.5 s and <= 200 MB at 50,000",
    goalSize: 50_000,
  },
  keysSign: { label: "svc keys sign, full (first signing)", goal: "<= 5 s at 50,000", goalSize: 50_000 },
  publishWarm: {
    label: "publish step, warm (publishRelease with signing, in process)",
    goal: "<= 0.3 s at 50,000",
    goalSize: 50_000,
  },
  bytesRewritten: { label: "bytes rewritten per publication (files + TUF metadata)", goal: "no goal" },
  validate: {
    label: "svc validate of a 4.7 KB package (--no-antivirus)",
    goal: "<= 0.3 s at 50,000",
    goalSize: 50_000,
  },
  importFresh: {
    label: "svc import, fresh process (no signing keys)",
    goal: "<= 0.5 s at 50,000",
    goalSize: 50_000,
  },
  rebuildRatio: {
    label: "full rebuild, svc build with signing: ratio to its floor",
    goal: "<= 1.5x at 10,000",
    goalSize: 10_000,
  },
  rebuildCost: {
    label: "full rebuild, svc build with signing: CPU, peak RSS",
    goal: "<= 60 s CPU and <= 1 GB at 50,000",
    goalSize: 50_000,
  },
  upload: {
    label: "upload -> pending_review (real route and worker, ClamAV)",
    goal: "<= 0.5 s at 10,000",
    goalSize: 10_000,
  },
} satisfies Record<string, Row>;
type RowId = keyof typeof ROWS;

const ONLY = values.rows ? new Set(values.rows.split(",")) : null;
for (const id of ONLY ?? []) if (!(id in ROWS)) throw new Error(`--rows: no row ${id}`);
/** Whether any of these rows is measured in this run. */
const wants = (...ids: RowId[]) => !ONLY || ids.some((id) => ONLY.has(id));

/** One size's cells: the figure with MET/MISSED where the row's goal applies at that size. */
class SizeResults {
  readonly cells = new Map<RowId, string>();
  constructor(readonly mods: number) {}

  record(id: RowId, text: string, met: boolean | null = null): void {
    const row: Row = ROWS[id];
    const applies = met !== null && row.goalSize !== undefined && this.mods <= row.goalSize;
    const cell = applies
      ? `${text} ${judge(met, `${row.label} at ${this.mods.toLocaleString("en")}`)}`
      : text;
    this.cells.set(id, cell);
    console.log(`  [${this.mods.toLocaleString("en")}] ${row.label}: ${cell}`);
  }
}

const seconds = (n: number) => `${n.toFixed(2)} s`;
const ms = (n: number) => `${n.toFixed(0)} ms`;
const kb = (n: number) => `${(n / KB).toFixed(1)} KB`;
const mb = (kib: number) => `${((kib * 1024) / MB).toFixed(0)} MB`;

/** The environment of the svc children: none of the keys or scanners a developer's shell may carry. */
function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ["SVC_TUF_ONLINE_KEYS", "SVC_CLAMD", "SVC_CLAMSCAN", "SVC_CLAMAV_DATABASE"])
    delete env[name];
  return { ...env, ...extra };
}

async function svc(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<ProcessTiming> {
  const t = await timeProcess(process.execPath, [SVC, ...args], options);
  if (t.status !== 0) throw new Error(`svc ${args.join(" ")} exited ${t.status}: ${t.stderr.slice(0, 2000)}`);
  return t;
}

/**
 * A real package of about 4.7 KB (svc-mod.json, a pak entry, and a block of pak data behind a fixed
 * header, so no byte pattern is sniffed as another archive), and its sidecar. Deterministic.
 */
function probeRelease(modId: string, version: string) {
  const chunks: Buffer[] = [Buffer.from("SVCPAK01")];
  for (let i = 0; chunks.length < 110; i++) chunks.push(createHash("sha256").update(`${modId}${i}`).digest());
  const pak = Buffer.concat(chunks).toString("latin1");
  return modRelease({ modId, version, name: modId, extraFiles: { "Content/Paks/Extra.pak": pak } });
}

function writeRelease(dir: string, release: ReturnType<typeof modRelease>) {
  const zip = join(dir, release.sidecar.package.fileName);
  const metadata = join(dir, `${release.sidecar.modId}-${release.sidecar.version}.json`);
  writeFileSync(zip, release.packageBytes);
  writeFileSync(metadata, JSON.stringify(release.sidecar));
  return { zip, metadata, size: release.packageBytes.length };
}

/** The three largest responses, for where the bytes of an install went. */
function largest(responses: SentResponse[]): string {
  return [...responses]
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 3)
    .map((r) => `${r.path} ${kb(r.bytes)}${r.gzip ? " gzip" : ""}`)
    .join(", ");
}

/** name -> size and mtime of every signed metadata file, to tell what a publication re-signed. */
function tufListing(siteDir: string): Map<string, { size: number; mtimeMs: number }> {
  const dir = join(siteDir, "tuf");
  return new Map(
    readdirSync(dir).map((name) => {
      const s = statSync(join(dir, name));
      return [name, { size: s.size, mtimeMs: s.mtimeMs }] as const;
    }),
  );
}

async function measure(n: number, scanner: BenchScanner, results: SizeResults): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), `svc-bench-growth-${n}-`));
  const root = join(base, "portal");
  const keysDir = join(base, "keys");
  const work = join(base, "work");
  mkdirSync(root);
  mkdirSync(work);
  const mods = n.toLocaleString("en");
  // The portal's own static server on loopback, counting what it sends: the portal's baseUrl, so
  // the packages it hosts are fetched from it too, as from a real portal.
  const mirror = await startCountingServer(join(root, "site"));
  try {
    const portal: GeneratedPortal = generatePortal({
      root,
      mods: n,
      versions: VERSIONS,
      artifacts: "external",
      site: true,
      baseUrl: mirror.url,
    });
    const { siteDir } = portal;
    console.log(
      `\n${mods} mods x ${VERSIONS} versions: records ${seconds(portal.recordsMs / 1000)}, site ${seconds(portal.siteMs / 1000)}`,
    );
    const plain = childEnv();
    const keysFile = join(keysDir, "online.keys.json");
    const signed = childEnv({ SVC_TUF_ONLINE_KEYS: keysFile });
    let signing: { keys: ReturnType<typeof parseOnlineKeys> } | null = null;
    if (
      wants(
        "keysSign",
        "importSigned",
        "bytesRewritten",
        "firstSync",
        "refresh",
        "publishWarm",
        "rebuildRatio",
        "rebuildCost",
      )
    ) {
      await svc(["keys", "init", "--keys", keysDir, "--site", siteDir], { cwd: root, env: plain });
      signing = { keys: parseOnlineKeys(readFileSync(keysFile, "utf8"), keysFile) };
      const sign = await svc(["keys", "sign", "--site", siteDir], { cwd: root, env: signed });
      results.record("keysSign", `${seconds(sign.seconds)}, ${mb(sign.maxRssKiB ?? 0)}`, sign.seconds <= 5);
    }

    const probe = writeRelease(work, probeRelease("growth-probe", "1.0.0"));
    if (wants("validate")) {
      const validate = await repeat(
        RUNS,
        async () => {
          const t = await timeProcess(
            process.execPath,
            [
              SVC,
              "validate",
              "--package",
              probe.zip,
              "--metadata",
              probe.metadata,
              "--site",
              siteDir,
              "--json",
              "--no-antivirus",
            ],
            { cwd: root, env: plain },
          );
          const failed = (
            JSON.parse(t.stdout) as { checks: Array<{ status: string; reasonCode: string | null }> }
          ).checks
            .filter((c) => c.status !== "passed")
            .map((c) => c.reasonCode);
          if (failed.join() !== "antivirus_disabled")
            throw new Error(`svc validate failed: ${failed.join(", ")}`);
          return t;
        },
        (t) => t.seconds,
      );
      results.record(
        "validate",
        `${describeStats(validate.stats, seconds)} (${(probe.size / KB).toFixed(1)} KB package)`,
        validate.stats.median <= 0.3,
      );
    }

    // The install rows install the probe this import publishes.
    if (wants("importSigned", "bytesRewritten", "firstSync", "refresh", "publishWarm")) {
      const tufBefore = tufListing(siteDir);
      const imported = await svc(
        ["import", "--package", probe.zip, "--metadata", probe.metadata, "--json", ...scanner.cliArgs],
        { cwd: root, env: signed },
      );
      results.record(
        "importSigned",
        `${seconds(imported.seconds)}, ${mb(imported.maxRssKiB ?? 0)}`,
        imported.seconds <= 0.5 && ((imported.maxRssKiB ?? Infinity) * 1024) / MB <= 200,
      );
      const written = (JSON.parse(imported.stdout) as { written: string[] }).written;
      const fileBytes = written.reduce((sum, path) => sum + statSync(join(root, path)).size, 0);
      let tufBytes = 0;
      let tufFiles = 0;
      for (const [name, now] of tufListing(siteDir)) {
        const before = tufBefore.get(name);
        if (before && before.size === now.size && before.mtimeMs === now.mtimeMs) continue;
        tufBytes += now.size;
        tufFiles++;
      }
      results.record(
        "bytesRewritten",
        `${kb(fileBytes + tufBytes)} (${written.length} files ${kb(fileBytes)}, ${tufFiles} TUF files ${kb(tufBytes)})`,
      );
    }

    if (wants("firstSync", "refresh", "publishWarm")) {
      const install = () =>
        svc(
          [
            "install",
            "growth-probe",
            "--dir",
            join(work, "mods"),
            "--cache",
            join(work, "cache"),
            "--mirror",
            mirror.url,
            "--trusted-root",
            join(siteDir, "tuf", "1.root.json"),
          ],
          { cwd: work, env: plain },
        );
      mirror.take();
      await install();
      const first = mirror.take();
      const firstBytes = first.reduce((sum, r) => sum + r.bytes, 0);
      const packageBytes = first.filter((r) => r.path.endsWith(".zip")).reduce((sum, r) => sum + r.bytes, 0);
      results.record(
        "firstSync",
        `${kb(firstBytes)} in ${first.length} requests (package ${kb(packageBytes)})`,
        firstBytes <= 50 * KB,
      );
      console.log(`      largest: ${largest(first)}`);

      // The warm publish step: one publication warms the code (and is the one the refresh below
      // follows), then `RUNS` more are timed.
      const publishStep = async (m: number) => {
        const release = modRelease({ modId: benchModId(m), name: `Mod ${m}`, version: "2.0.0" });
        const files = (
          await stubValidator()({
            packageBytes: release.packageBytes,
          } as unknown as Parameters<PackageValidator>[0])
        ).files;
        const started = performance.now();
        await publishRelease(
          {
            root,
            recordsDir: portal.recordsDir,
            siteDir,
            config: portal.config,
            store: filesystemArtifactStore({ root, siteDir, baseUrl: portal.config.baseUrl }),
            validate: async () => ({ passed: true, checks: [], files }),
            signing: signing!,
          },
          { packageBytes: release.packageBytes, sidecar: release.sidecar, source: { kind: "import" } },
        );
        return performance.now() - started;
      };
      await publishStep(Math.min(1, n - 1));
      mirror.take();
      await install();
      const refresh = mirror.take();
      const refreshBytes = refresh.reduce((sum, r) => sum + r.bytes, 0);
      results.record("refresh", `${kb(refreshBytes)} in ${refresh.length} requests`, refreshBytes <= 10 * KB);
      console.log(`      largest: ${largest(refresh)}`);
      const warm = await repeat(
        RUNS,
        (i) => publishStep(Math.min(2 + i, n - 1)),
        (t) => t,
      );
      results.record("publishWarm", describeStats(warm.stats, ms), warm.stats.median <= 300);
    }

    if (wants("upload")) {
      const review = await startReviewPortal(portal, scanner.env, signing);
      try {
        const uploads = await repeat(
          RUNS,
          (i) => review.uploadUntilReview(probeRelease(`growth-upload-${i}`, "1.0.0")),
          (t) => t,
        );
        results.record("upload", describeStats(uploads.stats, ms), uploads.stats.median <= 500);
      } finally {
        await review.stop();
      }
    }

    if (wants("importFresh")) {
      const fresh = await repeat(
        RUNS,
        async (i) => {
          const plainRelease = writeRelease(work, probeRelease(`growth-plain-${i}`, "1.0.0"));
          return svc(
            [
              "import",
              "--package",
              plainRelease.zip,
              "--metadata",
              plainRelease.metadata,
              ...scanner.cliArgs,
            ],
            { cwd: root, env: plain },
          );
        },
        (t) => t.seconds,
      );
      results.record("importFresh", describeStats(fresh.stats, seconds), fresh.stats.median <= 0.5);
    }
    if (!wants("rebuildRatio", "rebuildCost")) return;

    // The floor of a rebuild: serialize every document and write every file atomically into a
    // fresh folder, nothing else. Paired with the real `svc build` (with signing: it also re-hashes
    // the whole site, which repairs the signatures the unsigned import above left behind).
    let parsed: Array<{ path: string; doc: unknown }> | null = [
      ...renderSite(loadSiteInputs(portal.config, portal.recordsDir), siteDir),
    ].map(([path, text]) => ({ path, doc: path.endsWith(".json") ? (JSON.parse(text) as unknown) : text }));
    let floorRuns = 0;
    const rebuild = await runPairs({
      runs: RUNS,
      baseline: () => {
        const dir = join(work, `floor-${floorRuns++}`);
        const started = performance.now();
        const files = new Map<string, string>();
        for (const p of parsed!)
          files.set(p.path, typeof p.doc === "string" ? p.doc : serializeDocument(p.doc));
        commitFiles(dir, { write: files });
        const elapsed = (performance.now() - started) / 1000;
        rmSync(dir, { recursive: true, force: true });
        return elapsed;
      },
      subject: () => svc(["build", "--root", root], { cwd: root, env: signed }),
      baselineValue: (s) => s,
      subjectValue: (t) => t.seconds,
    });
    parsed = null;
    const cpu = summarize(rebuild.runs.map((r) => r.subject.cpuSeconds ?? Infinity));
    const rss = Math.max(...rebuild.runs.map((r) => r.subject.maxRssKiB ?? Infinity));
    results.record(
      "rebuildRatio",
      `${describeStats(rebuild.ratio, (x) => `${x.toFixed(2)}x`)} (svc build ${describeStats(rebuild.subject, seconds)}, floor ${describeStats(rebuild.baseline, seconds)})`,
      rebuild.ratio.median <= 1.5,
    );
    results.record(
      "rebuildCost",
      `CPU ${describeStats(cpu, seconds)}, ${mb(rss)}`,
      cpu.median <= 60 && (rss * 1024) / MB <= 1000,
    );
  } finally {
    await mirror.close();
    if (values.keep) console.log(`kept ${base}`);
    else rmSync(base, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  await ensureCliBundle();
  const scanner = await startBenchScanner();
  if (!scanner) {
    process.stderr.write(
      "bench:growth runs the real svc import and upload worker, which need ClamAV (apt-get install clamav-daemon); the bench installs nothing\n",
    );
    process.exitCode = 1;
    return;
  }
  console.log(
    `bench:growth: sizes ${SIZES.map((n) => n.toLocaleString("en")).join(", ")} mods x ${VERSIONS} versions; ` +
      `${RUNS} run(s) per figure (median (min-max) when more); node ${process.version}; scanner: ${scanner.describe}`,
  );
  const all: SizeResults[] = [];
  try {
    for (const n of SIZES) {
      const results = new SizeResults(n);
      all.push(results);
      try {
        await measure(n, scanner, results);
      } catch (error) {
        // A size that fails (a child killed, memory exhausted) misses every goal it did not reach.
        const message = error instanceof Error ? error.message.split("\n")[0]! : String(error);
        console.log(`  [${n.toLocaleString("en")}] FAILED: ${message}`);
        for (const id of Object.keys(ROWS) as RowId[])
          if (wants(id) && !results.cells.has(id))
            results.record(id, "not measured (the size failed)", false);
      }
    }
  } finally {
    await scanner.stop();
  }
  console.log("");
  printTable(
    ["figure", "goal", ...all.map((r) => `${r.mods.toLocaleString("en")} mods`)],
    (Object.keys(ROWS) as RowId[])
      .filter((id) => wants(id))
      .map((id) => [ROWS[id].label, ROWS[id].goal, ...all.map((r) => r.cells.get(id) ?? "-")]),
  );
  process.stdout.write(staleBundleNote(await cliBundleIsFresh()));
  console.log(verdictSummary());
}

await main();
