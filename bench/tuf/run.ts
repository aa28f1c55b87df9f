/**
 * Benchmark of TUF signing and of a current manager's refresh at scale: a signed site of 10,000 mods
 * x 5 versions (per-mod index.json and versions.json, 50,000 artifacts, the changes feed's pages),
 * then one publication (one mod gets a sixth version). Prints, beside the same-run baseline of the
 * previous layout (one top-level targets.json listing every target):
 *   - the bytes a current manager transfers to refresh, read the changes feed (head and open page,
 *     synthetic here, shaped like src/catalog/changes.ts) and fetch the changed mod's versions.json,
 *     served by the portal's own static server (gzip where the manager accepts it, as Pages does),
 *     beside the goal (<= 10 KB) and the size of the single targets.json it would re-download;
 *   - the signing time of the publication (incremental: only the touched bins) beside a full
 *     re-sign of the same site, the full re-sign paired with the previous layout's (hash everything,
 *     sign one targets.json), in turn (A B A B ...), the ratio pair by pair.
 * The goal prints MET or MISSED; a MISSED exits 1.
 * Artifacts are externally hosted here (GitHub release URLs, `external/...` targets), so the bench
 * does not write 50,000 package files; a locally served artifact is one more target of the same size.
 *
 *   npm run bench:tuf            (or: node --import tsx bench/tuf/run.ts [--mods N] [--versions N] [--runs N])
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { gzipSync } from "node:zlib";
import { Metadata, TargetFile } from "@tufjs/models";
import { ManagerClient } from "../../src/distribution/manager-client.ts";
import {
  addDays,
  buildRoot,
  EXPIRY_DAYS,
  type OnlineKeys,
  signerFor,
  TUF_SPEC_VERSION,
  tufTime,
} from "../../src/distribution/tuf-keys.ts";
import { serializeMetadata } from "../../src/distribution/tuf-layout.ts";
import { signAfterCommit, signSite } from "../../src/distribution/tuf-repository.ts";
import { writeRoot } from "../../src/distribution/tuf-root.ts";
import { collectSiteTargets } from "../../src/distribution/tuf-site-targets.ts";
import { LinearTargets } from "../../src/distribution/tuf-targets.ts";
import { operatorKeys } from "../../test/distribution/support.ts";
import { startCountingServer } from "../lib/counting-server.ts";
import { describeStats, runPairs, verdict, verdictSummary } from "../lib/harness.ts";

const { values } = parseArgs({
  options: { mods: { type: "string" }, versions: { type: "string" }, runs: { type: "string" } },
});
const MODS = Number(values.mods ?? 10_000);
const VERSIONS = Number(values.versions ?? 5);
const RUNS = Number(values.runs ?? 1);
const PAGE_SIZE = 32;
const GOAL_BYTES = 10 * 1024;

function time<T>(fn: () => T): { ms: number; value: T } {
  const start = process.hrtime.bigint();
  const value = fn();
  return { ms: Number(process.hrtime.bigint() - start) / 1e6, value };
}

const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const modId = (i: number) => `mod-${String(i).padStart(5, "0")}`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const ms = (n: number) => `${n.toFixed(0)} ms`;

function write(siteDir: string, path: string, text: string): void {
  mkdirSync(dirname(join(siteDir, path)), { recursive: true });
  writeFileSync(join(siteDir, path), text);
}

function versionEntry(id: string, n: number) {
  const version = `1.0.${n}`;
  const fileName = `${id}-${version}.zip`;
  return {
    version,
    targetGameBuild: "1.0",
    packageUrl: `https://github.com/portal/mods/releases/download/${id}-${version}/${fileName}`,
    fileName,
    packageSizeBytes: 100_000 + n,
    sha256: sha(`${id}@${version}`),
    artifactStatus: "published",
    downloadEnabled: true,
    dependencies: [],
    entrypoints: [],
    publishedAt: "2026-01-01T00:00:00.000Z",
    status: n === VERSIONS - 1 ? "published" : "superseded",
    releaseNotes: `Release ${version} of ${id}.`,
  };
}

function versionsDocument(id: string, count: number): string {
  const versions = Array.from({ length: count }, (_, n) => versionEntry(id, n)).reverse();
  return `${JSON.stringify(
    {
      schema: "svc.mod-versions.v1",
      generatedAt: "2026-01-01T00:00:00.000Z",
      modId: id,
      latestVersion: versions[0]!.version,
      versions,
    },
    null,
    2,
  )}\n`;
}

function detailDocument(id: string, latest: string): string {
  return `${JSON.stringify({ schema: "svc.mod-detail.v1", id, name: id, summary: `The ${id} mod.`, latestVersion: latest }, null, 2)}\n`;
}

function catalogDocument(latest: (i: number) => string): string {
  const mods = Array.from({ length: MODS }, (_, i) => ({ id: modId(i), latestVersion: latest(i) }));
  return `${JSON.stringify({ schema: "svc.catalog.v1", baseUrl: "http://portal.invalid", mods })}\n`;
}

function changesPage(page: number, entries: number): string {
  const lines = Array.from({ length: entries }, (_, k) => {
    const sequence = page * PAGE_SIZE + k + 1;
    return JSON.stringify({ sequence, modId: modId(sequence % MODS), version: "1.0.0", kind: "publish" });
  });
  return `{"schema":"svc.changes-page.v1","page":${page},"entries":[\n${lines.join(",\n")}\n]}\n`;
}

/** The previous layout, for the baseline: one targets.json listing every target, pretty-printed. */
function singleTargetsFile(siteDir: string, keys: OnlineKeys): string {
  const targets = new LinearTargets({
    version: 1,
    specVersion: TUF_SPEC_VERSION,
    expires: tufTime(addDays(new Date(), EXPIRY_DAYS.targets)),
  });
  for (const t of collectSiteTargets(siteDir)) {
    targets.addTarget(
      new TargetFile({
        path: t.path,
        length: t.length,
        hashes: { sha256: t.sha256 },
        ...(t.url ? { unrecognizedFields: { custom: { url: t.url } } } : {}),
      }),
    );
  }
  const metadata = new Metadata(targets);
  metadata.sign(signerFor(keys.keys.targets));
  return serializeMetadata(metadata);
}

const siteDir = mkdtempSync(join(tmpdir(), "svc-bench-tuf-"));
const work = mkdtempSync(join(tmpdir(), "svc-bench-tuf-client-"));
try {
  const totalChanges = MODS * VERSIONS;
  const pages = Math.ceil(totalChanges / PAGE_SIZE);
  const generated = time(() => {
    for (let i = 0; i < MODS; i++) {
      const id = modId(i);
      write(siteDir, `api/v1/mods/${id}/versions.json`, versionsDocument(id, VERSIONS));
      write(siteDir, `api/v1/mods/${id}/index.json`, detailDocument(id, `1.0.${VERSIONS - 1}`));
    }
    for (let page = 0; page < pages; page++) {
      const entries = Math.min(PAGE_SIZE, totalChanges - page * PAGE_SIZE);
      write(siteDir, `api/v1/changes/${page}.json`, changesPage(page, entries));
    }
    write(
      siteDir,
      "api/v1/catalog.json",
      catalogDocument(() => `1.0.${VERSIONS - 1}`),
    );
    write(siteDir, "api/v1/mods/index.json", `${JSON.stringify({ mods: MODS, at: 0 })}\n`);
    write(
      siteDir,
      "api/v1/changes/head.json",
      `${JSON.stringify({ sequence: totalChanges, lastPage: pages - 1 })}\n`,
    );
    for (const doc of [
      "runtime/latest.json",
      "framework/latest.json",
      "game-builds/latest.json",
      "readiness.json",
    ])
      write(siteDir, `api/v1/${doc}`, `${JSON.stringify({ doc })}\n`);
  });
  process.stdout.write(
    `site: ${MODS} mods x ${VERSIONS} versions, ${pages} changes pages, generated in ${(generated.ms / 1000).toFixed(1)} s\n`,
  );

  const keys = operatorKeys();
  const root = new Metadata(buildRoot(1, { root: keys.root, ...keys.online.keys }, new Date()));
  root.sign(signerFor(keys.root));
  writeRoot(siteDir, root);
  // The previous layout (hash everything, sign one targets.json) and a full re-sign of this one, in
  // turn (A B A B ...), the ratio pair by pair.
  const signing = await runPairs({
    runs: RUNS,
    baseline: () => time(() => singleTargetsFile(siteDir, keys.online)),
    subject: () => time(() => signSite(siteDir, keys.online, () => new Date(), { force: true })),
    baselineValue: (t) => t.ms,
    subjectValue: (t) => t.ms,
  });
  const fullSign = signing.runs.at(-1)!.subject;
  const scheduled = time(() => signSite(siteDir, keys.online));
  const singleBytes = Buffer.from(signing.runs[0]!.baseline.value);

  // The portal's own static server (gzip for JSON over 512 bytes), counting the body bytes it sends.
  const server = await startCountingServer(siteDir);
  const mirrorUrl = server.url;
  const changed = modId(Math.floor(MODS / 2));
  const changedPath = `api/v1/mods/${changed}/versions.json`;
  const client = () =>
    new ManagerClient({
      mirrorUrl,
      cacheDir: join(work, "cache"),
      trustedRootFile: join(siteDir, "tuf", "1.root.json"),
    });

  // A manager that is current: it refreshed and read this mod's versions before the publication.
  const first = client();
  await first.refresh();
  await first.fetchDocument("api/v1/changes/head.json");
  await first.fetchDocument(changedPath);
  const firstBytes = server.take().reduce((sum, r) => sum + r.bytes, 0);

  // One publication: the mod's sixth version, as the publisher writes it (documents + changes feed).
  const sequence = totalChanges + 1;
  const lastPage = Math.floor((sequence - 1) / PAGE_SIZE);
  const written = [
    changedPath,
    `api/v1/mods/${changed}/index.json`,
    "api/v1/catalog.json",
    "api/v1/mods/index.json",
    "api/v1/changes/head.json",
    `api/v1/changes/${lastPage}.json`,
  ];
  write(siteDir, changedPath, versionsDocument(changed, VERSIONS + 1));
  write(siteDir, `api/v1/mods/${changed}/index.json`, detailDocument(changed, `1.0.${VERSIONS}`));
  write(
    siteDir,
    "api/v1/catalog.json",
    catalogDocument((i) => (modId(i) === changed ? `1.0.${VERSIONS}` : `1.0.${VERSIONS - 1}`)),
  );
  write(siteDir, "api/v1/mods/index.json", `${JSON.stringify({ mods: MODS, at: sequence })}\n`);
  write(siteDir, "api/v1/changes/head.json", `${JSON.stringify({ sequence, lastPage })}\n`);
  write(siteDir, `api/v1/changes/${lastPage}.json`, changesPage(lastPage, sequence - lastPage * PAGE_SIZE));
  const incremental = time(() => signAfterCommit(siteDir, { keys: keys.online }, { written, deleted: [] })!);

  // What a current manager reads after it: the feed's head and open page, then the changed mod.
  const after = client();
  await after.refresh();
  await after.fetchDocument("api/v1/changes/head.json");
  await after.fetchDocument(`api/v1/changes/${lastPage}.json`);
  await after.fetchDocument(changedPath);
  const refresh = server.take();
  await server.close();

  const total = refresh.reduce((sum, r) => sum + r.bytes, 0);
  const metadataBytes = refresh
    .filter((r) => r.path.startsWith("/tuf/"))
    .reduce((sum, r) => sum + r.bytes, 0);
  const rows: Array<[string, string]> = [
    [
      "current manager: refresh + feed head + open page + changed versions.json",
      `${kb(total)} transferred (${refresh.length} requests; TUF metadata ${kb(metadataBytes)})  ${verdict(total <= GOAL_BYTES, `<= ${kb(GOAL_BYTES)}`, "manager refresh bytes")}`,
    ],
    [
      "  previous layout, same catalog",
      `targets.json alone ${kb(singleBytes.length)} raw, ${kb(gzipSync(singleBytes).length)} gzip, re-downloaded on every publication`,
    ],
    ["  first refresh (cold cache)", `${kb(firstBytes)}`],
    [
      "signing one publication (incremental)",
      `${incremental.ms.toFixed(0)} ms, bins re-signed: ${incremental.value.binsSigned.join(", ") || "none"}`,
    ],
    [
      `  full re-sign of the same site (${RUNS} pairs)`,
      `${describeStats(signing.subject, ms)} (${fullSign.value.targetCount} targets, ${fullSign.value.binsSigned.length} bins), ${describeStats(signing.ratio, (r) => `${r.toFixed(2)}x`)} the previous layout, pair by pair (no goal)`,
    ],
    [
      "  full pass, nothing changed (svc keys sign)",
      `${scheduled.ms.toFixed(0)} ms (${scheduled.value.binsSigned.length} bins re-signed)`,
    ],
    ["  previous layout: hash all + sign one targets.json", describeStats(signing.baseline, ms)],
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  for (const [name, value] of rows) process.stdout.write(`${name.padEnd(width)}  ${value}\n`);
  process.stdout.write("\nrequests of the refresh after the publication (body bytes on the wire):\n");
  for (const r of refresh)
    process.stdout.write(`  ${r.path.padEnd(48)} ${String(r.bytes).padStart(7)} B${r.gzip ? " gzip" : ""}\n`);
  process.stdout.write(`${verdictSummary()}\n`);
} finally {
  rmSync(siteDir, { recursive: true, force: true });
  rmSync(work, { recursive: true, force: true });
}
