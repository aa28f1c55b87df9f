/**
 * Benchmark of catalog publication at scale: a catalog of 10,000 mods x 5 versions (records generated
 * in a temp folder, bench/lib/generate-portal.ts), then
 *   - publish one more release in this process (validation stubbed: bench:validate measures the
 *     checks), first with cold code, then `--runs` more, each paired with its floor (A B A B ...);
 *   - `svc import` of one more release as a user runs it: the real command in a child process, real
 *     validation (ClamAV with the test signature database), timed from spawn to exit;
 *   - a full rebuild, the real `svc build` in a child process, paired with its floor;
 * the floor being serializing the same documents and writing the same files with one atomic commit
 * (into a fresh folder each run), nothing else. Also catalog bytes and gzip bytes per version, a
 * manager's full fetch (catalog.json; and, as a figure without a goal, a mirror of every
 * versions.json too), and the bytes the reference manager reader transfers to refresh after the
 * publication (read from the site on disk). And what the portal costs git (issue 24, item 10): the
 * generated portal is made a git repository (records/ and portal.config.json; site/ is a build
 * output the publish job deploys, not committed; the submissions/ inbox is empty once published
 * sidecars are removed), and the files and bytes on the default branch (those plus this
 * repository's own files outside site/), its widest directory, and the blob bytes the first
 * publication's commit changes under records/ are goals too. Each goal prints MET or MISSED; a
 * MISSED exits 1.
 *
 *   npm run bench:publish   (or: node --import tsx bench/publish/run.ts [--mods N] [--versions N] [--runs N] [--keep])
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { filesystemArtifactStore } from "../../src/catalog/artifact-store.ts";
import { commitFiles } from "../../src/catalog/atomic-files.ts";
import { type PackageValidator, publishRelease, type ValidationReport } from "../../src/catalog/publisher.ts";
import { loadSiteInputs, renderSite, serializeDocument, writeSite } from "../../src/catalog/site.ts";
import {
  fetchManagerIndex,
  type ManagerFetch,
  refreshManagerIndex,
} from "../../src/contracts/manager-reader.ts";
import { modRelease, stubValidator } from "../../test/support/catalog-project.ts";
import { startBenchScanner } from "../lib/bench-scanner.ts";
import { cliBundleIsFresh, ensureCliBundle, REPO_ROOT, SVC, staleBundleNote } from "../lib/cli-bundle.ts";
import { benchModId, generatePortal } from "../lib/generate-portal.ts";
import { commitAndMeasure, commitPortal, filesAt, widestDirectory } from "../lib/git-footprint.ts";
import { describeStats, printTable, repeat, runPairs, verdict, verdictSummary } from "../lib/harness.ts";
import { timeProcess } from "../lib/timed-process.ts";

const { values } = parseArgs({
  options: {
    mods: { type: "string" },
    versions: { type: "string" },
    runs: { type: "string" },
    keep: { type: "boolean" },
  },
});
const MODS = Number(values.mods ?? 10_000);
const VERSIONS = Number(values.versions ?? 5);
const RUNS = Number(values.runs ?? 3);

function time<T>(fn: () => T): { ms: number; value: T } {
  const start = process.hrtime.bigint();
  const value = fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}
async function timeAsync<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const start = process.hrtime.bigint();
  const value = await fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}

/** The environment of the svc children: no signing keys or scanner a developer's shell may carry. */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const name of ["SVC_TUF_ONLINE_KEYS", "SVC_CLAMD", "SVC_CLAMSCAN", "SVC_CLAMAV_DATABASE"])
    delete env[name];
  return env;
}

await ensureCliBundle();
const scanner = await startBenchScanner();
if (!scanner) {
  process.stderr.write(
    "bench:publish runs the real `svc import`, which needs ClamAV (apt-get install clamav-daemon); the bench installs nothing\n",
  );
  process.exit(1);
}
const root = mkdtempSync(join(tmpdir(), "svc-bench-publish-"));
const scratch = mkdtempSync(join(tmpdir(), "svc-bench-floor-"));
try {
  const portal = generatePortal({
    root,
    mods: MODS,
    versions: VERSIONS,
    artifacts: "portal",
    site: false,
    history: true,
  });
  const { config, recordsDir, siteDir } = portal;
  const initial = time(() => writeSite(siteDir, renderSite(loadSiteInputs(config, recordsDir), siteDir)));
  // The portal's default branch: records/ and its configuration (site/ is not committed).
  const committed = time(() => commitPortal(root, ["records", "portal.config.json"]));

  // A manager reading the generated site from disk (the same bytes a static host serves), counting them.
  let transferred = 0;
  const diskFetch: ManagerFetch = async (url) => {
    const path = join(siteDir, url.slice(config.baseUrl.length));
    if (!existsSync(path)) return new Response(null, { status: 404 });
    const bytes = readFileSync(path);
    transferred += bytes.length;
    return new Response(bytes);
  };
  const catalogUrl = `${config.baseUrl}/api/v1/catalog.json`;
  const managerFull = await timeAsync(() => fetchManagerIndex(catalogUrl, diskFetch));
  const fullFetchRawBytes = transferred;

  /**
   * Publishes one release with a stub validator; the per-file hashes the publisher stores are listed
   * first, outside the timed publication.
   */
  const timedPublication = async (release: ReturnType<typeof modRelease>) => {
    const files = (
      await stubValidator()({
        packageBytes: release.packageBytes,
      } as unknown as Parameters<PackageValidator>[0])
    ).files;
    const report: ValidationReport = { passed: true, checks: [], files };
    return timeAsync(() =>
      publishRelease(
        {
          root,
          recordsDir,
          siteDir,
          config,
          store: filesystemArtifactStore({ root, siteDir, baseUrl: config.baseUrl }),
          validate: async () => report,
        },
        { packageBytes: release.packageBytes, sidecar: release.sidecar, source: { kind: "import" } },
      ),
    );
  };

  const publish = await timedPublication(
    modRelease({ modId: benchModId(42), name: "Mod 42", version: "2.0.0" }),
  );
  const written = publish.value.written;
  // What that publication's commit changes on the default branch (records/ only: site/ is deployed).
  const publicationCommit = commitAndMeasure(root, ["records"]);
  const branchFiles = [
    ...filesAt(root),
    ...filesAt(REPO_ROOT).filter((f) => !f.path.startsWith("site/") && !f.path.startsWith("records/")),
  ];
  const branchBytes = branchFiles.reduce((sum, f) => sum + f.bytes, 0);
  const widest = widestDirectory(branchFiles.map((f) => f.path));

  transferred = 0;
  const refresh = await refreshManagerIndex(managerFull.value, diskFetch);
  const refreshBytes = transferred;

  // Floor for the publication: serialize the same documents and write the same files in one atomic
  // commit into a fresh folder, nothing else (no record loading, rendering, schema or rule checks).
  const documents = written.map((path) => {
    const bytes = readFileSync(join(root, path));
    return path.endsWith(".json")
      ? { path, doc: JSON.parse(bytes.toString("utf8")) as unknown }
      : { path, bytes };
  });
  let floorRuns = 0;
  const publishFloor = () => {
    const dir = join(scratch, `publish-${floorRuns++}`);
    const t = time(() => {
      const files = new Map<string, string | Uint8Array>();
      for (const d of documents) files.set(d.path, "doc" in d ? serializeDocument(d.doc) : d.bytes);
      commitFiles(dir, { write: files });
    });
    rmSync(dir, { recursive: true, force: true });
    return t.ms;
  };
  // The first publication's own pair: its floor runs right after it.
  const firstFloor = publishFloor();

  // Later publications into the same catalog (warm code, as in a long-running portal), each paired
  // with a floor run just before it.
  let nextMod = 43;
  const warm = await runPairs({
    runs: RUNS,
    baseline: publishFloor,
    subject: async () => {
      const n = nextMod++;
      return (
        await timedPublication(modRelease({ modId: benchModId(n), name: `Mod ${n}`, version: "2.0.0" }))
      ).ms;
    },
    baselineValue: (ms) => ms,
    subjectValue: (ms) => ms,
  });

  // svc import as a user runs it: a fresh process, the shipped CLI, every check (ClamAV included).
  const packages = join(root, "..", `${root.split("/").at(-1)}-packages`);
  mkdirSync(packages, { recursive: true });
  const imports = await repeat(
    RUNS,
    async (i) => {
      const n = nextMod + i;
      const { packageBytes, sidecar } = modRelease({
        modId: benchModId(n),
        name: `Mod ${n}`,
        version: "2.0.0",
      });
      const zip = join(packages, `${sidecar.modId}.zip`);
      const metadata = join(packages, `${sidecar.modId}.json`);
      writeFileSync(zip, packageBytes);
      writeFileSync(metadata, JSON.stringify(sidecar));
      const t = await timeProcess(
        process.execPath,
        [SVC, "import", "--root", root, "--package", zip, "--metadata", metadata, ...scanner.cliArgs],
        { env: childEnv() },
      );
      if (t.status !== 0) throw new Error(`svc import exited ${t.status}: ${t.stderr.slice(0, 2000)}`);
      return t;
    },
    (t) => t.seconds * 1000,
  );
  rmSync(packages, { recursive: true, force: true });

  // Full rebuild, the real `svc build`, paired with its floor: serialize every document and write
  // every file atomically into a fresh folder.
  const everything = renderSite(loadSiteInputs(config, recordsDir), siteDir);
  const parsed = [...everything].map(([path, text]) => ({
    path,
    doc: path.endsWith(".json") ? (JSON.parse(text) as unknown) : text,
  }));
  const rebuild = await runPairs({
    runs: RUNS,
    baseline: () => {
      const dir = join(scratch, `rebuild-${floorRuns++}`);
      const t = time(() => {
        const files = new Map<string, string>();
        for (const p of parsed)
          files.set(p.path, typeof p.doc === "string" ? p.doc : serializeDocument(p.doc));
        commitFiles(dir, { write: files });
      });
      rmSync(dir, { recursive: true, force: true });
      return t.ms;
    },
    subject: async () => {
      const t = await timeProcess(process.execPath, [SVC, "build", "--root", root], { env: childEnv() });
      if (t.status !== 0) throw new Error(`svc build exited ${t.status}: ${t.stderr.slice(0, 2000)}`);
      return t;
    },
    baselineValue: (ms) => ms,
    subjectValue: (t) => t.seconds * 1000,
  });
  const rebuildSummary = /svc build: (\d+) files, (\d+) written/.exec(rebuild.runs[0]!.subject.stdout);

  const catalogBytes = readFileSync(join(siteDir, "api/v1/catalog.json"));
  const gzipBytes = gzipSync(catalogBytes).length;
  const versions = MODS * VERSIONS + 1 + RUNS * 2;
  const otherModFiles = written.filter((p) => /\/mods\/mod-\d+/.test(p) && !p.includes(benchModId(42)));
  // A full fetch of every version: the catalog plus each versions.json, each gzipped on its own (as a
  // static host sends them).
  let versionsGzip = 0;
  for (let m = 0; m < MODS; m++)
    versionsGzip += gzipSync(
      readFileSync(join(siteDir, `api/v1/mods/${benchModId(m)}/versions.json`)),
    ).length;

  const ms = (n: number) => `${n.toFixed(0)} ms`;
  const s = (n: number) => `${(n / 1000).toFixed(1)} s`;
  const x = (n: number) => `${n.toFixed(2)}x`;
  const firstRatio = publish.ms / firstFloor;
  const importStats = imports.stats;
  const importRss = Math.max(...imports.results.map((r) => r.maxRssKiB ?? 0));
  const rows: string[][] = [
    [
      "publish one release, first in the process",
      `${ms(publish.ms)}, ${written.length} files (${otherModFiles.length} of other mods)`,
      ms(firstFloor),
      x(firstRatio),
      verdict(publish.ms <= 300 && firstRatio <= 2, "<= 0.3 s and <= 2x", "first publication"),
    ],
    [
      `publish, warm (${RUNS} pairs)`,
      describeStats(warm.subject, ms),
      describeStats(warm.baseline, ms),
      describeStats(warm.ratio, x),
      verdict(
        warm.subject.median <= 300 && warm.ratio.median <= 2,
        "<= 0.3 s and <= 2x, medians",
        "warm publication",
      ),
    ],
    [
      `svc import, fresh process (${RUNS} runs)`,
      `${describeStats(importStats, ms)}, peak RSS ${(importRss / 1024).toFixed(0)} MiB`,
      "-",
      "-",
      verdict(importStats.median <= 500, "<= 0.5 s, median", "svc import fresh process"),
    ],
    [
      `full rebuild, svc build (${RUNS} pairs)`,
      `${describeStats(rebuild.subject, s)}, ${rebuildSummary?.[2] ?? "?"} of ${rebuildSummary?.[1] ?? "?"} files written`,
      describeStats(rebuild.baseline, s),
      describeStats(rebuild.ratio, x),
      verdict(rebuild.ratio.median <= 1.5, "<= 1.5x, median of pairs", "full rebuild"),
    ],
    [
      "full fetch: catalog.json gzip",
      `${gzipBytes.toLocaleString("en")} B, ${(gzipBytes / versions).toFixed(1)} B/version`,
      "-",
      "-",
      verdict(gzipBytes / versions <= 60, "<= 60 B/version", "catalog gzip per version"),
    ],
    [
      "manager refresh after the publication",
      `${refreshBytes.toLocaleString("en")} B raw (${refresh.mode}, ${refresh.changedMods.join(", ")})`,
      "-",
      "-",
      verdict(refresh.mode === "changes" && refreshBytes <= 10_000, "<= 10 KB", "manager refresh"),
    ],
    [
      "default branch: files (records/, config, this repository outside site/)",
      `${branchFiles.length.toLocaleString("en")} files, ${(branchBytes / 1e6).toFixed(1)} MB`,
      "-",
      "-",
      verdict(branchFiles.length < 15_000, "< 15,000 files", "default branch files"),
    ],
    [
      "default branch: widest directory",
      `${widest.dir}/: ${widest.entries.toLocaleString("en")} entries`,
      "-",
      "-",
      verdict(widest.entries <= 1_000, "<= 1,000 entries", "widest directory"),
    ],
    [
      "changed blobs of one publication (records/)",
      `${publicationCommit.bytes.toLocaleString("en")} B in ${publicationCommit.files.length} files (${publicationCommit.deleted.length} deleted)`,
      "-",
      "-",
      verdict(publicationCommit.bytes < 200_000, "< 200 KB", "changed blobs per publication"),
    ],
  ];
  console.log(
    `catalog: ${MODS.toLocaleString("en")} mods x ${VERSIONS} versions; records ${s(portal.recordsMs)}, ` +
      `initial build ${s(initial.ms)} (${initial.value.written.length} files); node ${process.version}; ` +
      `figures: median (min-max); pairs alternate floor and svc (A B A B), ratio pair by pair\n` +
      `svc import: node bin/svc.js import (the shipped bundle), validation with ${scanner.describe}, spawn to exit\n`,
  );
  printTable(["figure", "svc", "floor", "ratio", "verdict"], rows);
  const info: Array<[string, string]> = [
    [
      "catalog.json",
      `${catalogBytes.length.toLocaleString("en")} bytes, ${(catalogBytes.length / versions).toFixed(0)} bytes/version`,
    ],
    [
      "mirror: catalog + every versions.json gzip",
      // Not the goal (a manager's full fetch is catalog.json; a mod's versions document is fetched when
      // that mod is opened or changes): every version's own record carries its package sha256, 32
      // bytes of entropy that no compression removes, and its per-file list.
      `${(gzipBytes + versionsGzip).toLocaleString("en")} bytes, ${((gzipBytes + versionsGzip) / versions).toFixed(1)} B/version  (every version's full record; not a goal)`,
    ],
    [
      "manager full fetch (reader, raw)",
      `${fullFetchRawBytes.toLocaleString("en")} bytes in ${s(managerFull.ms)}`,
    ],
  ];
  console.log("");
  for (const [k, v] of info) console.log(`${k.padEnd(44)}  ${v}`);
  console.log(`files written by the first publication:\n${written.map((p) => `  ${p}`).join("\n")}`);
  console.log(
    `its commit on the default branch (git init in the portal, committed in ${s(committed.ms)}):\n${publicationCommit.files.map((p) => `  ${p}`).join("\n")}`,
  );
  if (otherModFiles.length > 0) {
    console.error(`FAIL: the publication rewrote other mods' files: ${otherModFiles.join(", ")}`);
    process.exitCode = 1;
  }
  process.stdout.write(staleBundleNote(await cliBundleIsFresh()));
  console.log(verdictSummary());
} finally {
  await scanner.stop();
  rmSync(scratch, { recursive: true, force: true });
  if (values.keep) console.log(`kept ${root}`);
  else rmSync(root, { recursive: true, force: true });
}
