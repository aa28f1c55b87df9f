import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { modRecordsText } from "../../src/catalog/records.ts";
import {
  loadSiteInputs,
  projectPaths,
  renderSite,
  renderSiteFiles,
  type SiteInputs,
  streamSiteInputs,
} from "../../src/catalog/site.ts";
import { renderAndWriteSite } from "../../src/catalog/site-write.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { ENDPOINTS } from "../../src/contracts/endpoints.ts";
import { RECORD_PATHS, type ReleaseRecord } from "../../src/contracts/records.ts";
import { releaseRecord, repoConfig } from "../support/temp-project.ts";

/**
 * The full build's work grows with the mods, not with their square (issue 27, item 7). Wall time
 * belongs in bench:growth; these count the work itself: the elements array methods visit while the
 * site is rendered (a page or document that looks at every mod once per mod, as every mod page once
 * did to find which dependencies to link, makes that count grow four times when the mods double),
 * and the files a build reads.
 */

// Every file the process reads (readFileSync, or openSync for reading), by path (node:fs as every
// module of this test file sees it).
const reads = vi.hoisted(() => ({ paths: [] as string[] }));
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const readFileSync = ((path: Parameters<typeof fs.readFileSync>[0], ...rest: unknown[]) => {
    reads.paths.push(String(path));
    return (fs.readFileSync as (...args: unknown[]) => unknown)(path, ...rest);
  }) as typeof fs.readFileSync;
  const openSync = ((path: Parameters<typeof fs.openSync>[0], flags?: unknown, ...rest: unknown[]) => {
    if (flags === undefined || flags === "r") reads.paths.push(String(path));
    return (fs.openSync as (...args: unknown[]) => unknown)(path, flags, ...rest);
  }) as typeof fs.openSync;
  return { ...fs, readFileSync, openSync, default: { ...fs, readFileSync, openSync } };
});

const VERSIONS = 3;
const modId = (m: number) => `mod-${String(m).padStart(5, "0")}`;

/** `mods` mods x VERSIONS versions; every fifth depends on the first, so mod pages link dependencies. */
function records(mods: number): ReleaseRecord[] {
  const out: ReleaseRecord[] = [];
  for (let m = 0; m < mods; m++)
    for (let v = 0; v < VERSIONS; v++)
      out.push(
        releaseRecord({
          modId: modId(m),
          version: `1.${v}.0`,
          name: `Mod ${m}`,
          tags: ["gameplay", `tag-${m % 7}`],
          status: v === VERSIONS - 1 ? "published" : "superseded",
          dependencies: m % 5 === 1 ? [{ modId: modId(0), versionRange: "^1.0.0" }] : [],
          publishedAt: new Date(Date.UTC(2026, 0, 1 + v, 0, m % 60)).toISOString(),
        }),
      );
  return out;
}

/** Writes the records as records/mods/{shard}/{modId}.json files. */
function writeRecords(recordsDir: string, list: readonly ReleaseRecord[]): void {
  const byMod = new Map<string, ReleaseRecord[]>();
  for (const record of list) byMod.set(record.modId, [...(byMod.get(record.modId) ?? []), record]);
  for (const [id, releases] of byMod) {
    const file = join(recordsDir, RECORD_PATHS.modRecords(id));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, modRecordsText(id, releases));
  }
}

/** Every file under dir (relative paths) with its text, but the commit's own folder. */
function filesUnder(dir: string, base = dir, out = new Map<string, string>()): Map<string, string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.name === ".svc-tmp") continue;
    if (entry.isDirectory()) filesUnder(full, base, out);
    else out.set(full.slice(base.length + 1), readFileSync(full, "utf8"));
  }
  return out;
}

function inputs(mods: number): SiteInputs {
  const config = repoConfig();
  return {
    config,
    records: records(mods),
    manager: null,
    framework: null,
    gameBuilds: config.gameBuilds,
    postPublishSmoke: null,
    backendSmoke: null,
    endpoints: ENDPOINTS,
  };
}

const METHODS = [
  "map",
  "filter",
  "find",
  "findIndex",
  "some",
  "every",
  "includes",
  "indexOf",
  "forEach",
  "reduce",
  "flatMap",
  "sort",
] as const;

/** How many elements Array.prototype's searching and mapping methods visit while `fn` runs. */
function arrayWork(fn: () => void): number {
  let visited = 0;
  const proto = Array.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
  const originals = METHODS.map((name) => [name, proto[name]!] as const);
  for (const [name, original] of originals) {
    proto[name] = function (this: unknown[], ...args: unknown[]) {
      visited += this.length;
      return original.apply(this, args);
    };
  }
  try {
    fn();
  } finally {
    for (const [name, original] of originals) proto[name] = original;
  }
  return visited;
}

afterAll(() => {
  vi.resetModules();
});

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "svc-render-work-"));
  dirs.push(dir);
  return dir;
}

describe("the full build's work grows linearly with the mods", () => {
  it("rendering twice the mods visits about twice the array elements, not four times", () => {
    const work = (mods: number) => {
      const siteInputs = inputs(mods);
      const siteDir = tempDir();
      let files = 0;
      const visited = arrayWork(() =>
        renderSiteFiles(
          siteInputs,
          siteDir,
          () => files++,
          () => new Date("2026-11-01T00:00:00.000Z"),
        ),
      );
      expect(files).toBeGreaterThan(mods * 3);
      return visited;
    };
    work(20); // warm-up: schema validators, module state
    const small = work(300);
    const large = work(600);
    // Linear work doubles (the sorts add a log factor: 2.2x); the quadratic mod pages made it ~3x
    // at these sizes and grew without bound.
    expect(large / small).toBeLessThan(2.4);
    expect(large / small).toBeGreaterThan(1.6);
  });

  it("svc build over an unchanged site reads each file once and writes none", async () => {
    const root = tempDir();
    const config = repoConfig();
    writeFileSync(join(root, "portal.config.json"), `${JSON.stringify(config, null, 2)}\n`);
    const paths = projectPaths(root);
    const loaded = loadPortalConfig(paths.configPath);
    const byMod = new Map<string, ReleaseRecord[]>();
    for (const record of records(40).map((r) => ({
      ...r,
      packageUrl: `${loaded.baseUrl}/downloads/mods/${r.modId}/${r.version}/${r.fileName}`,
    })))
      byMod.set(record.modId, [...(byMod.get(record.modId) ?? []), record]);
    for (const [id, list] of byMod) {
      const file = join(paths.recordsDir, RECORD_PATHS.modRecords(id));
      mkdirSync(dirname(file), { recursive: true });
      writeFileSync(file, modRecordsText(id, list));
    }
    // The suites share a worker's module cache (vitest.config.ts, isolate: false): the build is
    // imported afresh so it reads through the counting node:fs above, and forgotten after the file.
    vi.resetModules();
    const { buildSite } = await import("../../src/catalog/site-build.ts");
    const first = await buildSite(paths, loaded);
    expect(first.written.length).toBe(first.files);

    reads.paths.length = 0;
    const again = await buildSite(paths, loaded);
    expect(again.written).toEqual([]);
    expect(again.unchanged).toBe(first.files);
    const siteReads = reads.paths.filter((p) => p.startsWith(`${paths.siteDir}/`));
    const perFile = new Map<string, number>();
    for (const path of siteReads) perFile.set(path, (perFile.get(path) ?? 0) + 1);
    expect([...perFile].filter(([, n]) => n > 1)).toEqual([]);
    // Every file of the site was compared (read once), and only the site's own files were read.
    expect(perFile.size).toBe(first.files);
  });

  it("a build whose changed files outgrow memory stages them and writes the same bytes", () => {
    const siteInputs = inputs(30);
    const now = () => new Date("2026-11-01T00:00:00.000Z");
    const expected = renderSite(siteInputs, join(tempDir(), "none"), now);
    const siteDir = tempDir();
    const staging = join(tempDir(), "staging");
    // Every changed file past the first 4 KB goes through a staging file.
    const result = renderAndWriteSite(siteInputs, siteDir, { now, staging, heldBytes: 4096 });
    expect(result.staged).toBeGreaterThan(expected.size - 10);
    expect(result.written.length).toBe(expected.size);
    for (const [path, text] of expected) expect(readFileSync(join(siteDir, path), "utf8")).toBe(text);
    // The commit copied them; the staging folder is the caller's to remove, and nothing else is left.
    expect(existsSync(staging)).toBe(true);
    expect(readdirSync(join(siteDir, ".svc-tmp"))).toEqual([]);
  });

  it("svc build reads the records one mod at a time and writes exactly what renderSite writes", () => {
    const root = tempDir();
    const config = repoConfig();
    writeFileSync(join(root, "portal.config.json"), `${JSON.stringify(config, null, 2)}\n`);
    const paths = projectPaths(root);
    const loaded = loadPortalConfig(paths.configPath);
    const at = (r: ReleaseRecord) => ({
      ...r,
      packageUrl: `${loaded.baseUrl}/downloads/mods/${r.modId}/${r.version}/${r.fileName}`,
    });
    // mod-00001 links a mod read after it whose versions are all hidden (its page is made again)
    // and one read after it that is listed; mod-00003 links a hidden one read before it.
    const hidden = "zz-hidden";
    const hiddenFirst = "a-hidden";
    const hiddenRecords = (id: string) =>
      ["1.0.0", "1.1.0"].map((version) =>
        releaseRecord({ modId: id, version, status: "hidden", statusBeforeHidden: "published" }),
      );
    const list = [
      ...records(12).map((r) =>
        r.modId === modId(1) || r.modId === modId(3)
          ? {
              ...r,
              dependencies: [
                { modId: r.modId === modId(1) ? hidden : hiddenFirst, versionRange: "^1.0.0" },
                { modId: modId(7), versionRange: "^1.0.0" },
              ],
            }
          : r,
      ),
      ...hiddenRecords(hidden),
      ...hiddenRecords(hiddenFirst),
    ].map(at);
    writeRecords(paths.recordsDir, list);
    const now = () => new Date("2026-11-01T00:00:00.000Z");
    const later = () => new Date("2026-11-02T00:00:00.000Z");
    const reads = new Map<string, number>();
    const streamed = () => {
      const source = streamSiteInputs(loaded, paths.recordsDir);
      return {
        ...source,
        modRecords: (id: string) => {
          reads.set(id, (reads.get(id) ?? 0) + 1);
          return source.modRecords(id);
        },
      };
    };
    const expectBuild = (clock: () => Date) => {
      // What renderSite (every record loaded) writes over the site as it is now.
      const expected = renderSite(loadSiteInputs(loaded, paths.recordsDir), paths.siteDir, clock);
      reads.clear();
      const result = renderAndWriteSite(streamed(), paths.siteDir, {
        now: clock,
        staging: join(root, "staging"),
        heldBytes: 2048,
      });
      const site = filesUnder(paths.siteDir);
      expect([...site.keys()].sort()).toEqual([...expected.keys()].sort());
      for (const [path, text] of expected) expect(site.get(path), path).toBe(text);
      // Each mod's records were read once; mod-00001's twice (its page, again with the hidden mod
      // known to list nothing).
      expect(reads.get(modId(1))).toBe(2);
      expect([...reads].filter(([id, n]) => id !== modId(1) && n !== 1)).toEqual([]);
      expect(reads.size).toBe(14);
      return { expected, result };
    };

    const first = expectBuild(now);
    expect(first.result.written.length).toBe(first.expected.size);
    expect(first.expected.get(`mods/${modId(1)}/index.html`)).toContain(
      `${hidden} <span class="note">(not in this catalog)</span>`,
    );
    expect(first.expected.get(`mods/${modId(1)}/index.html`)).toContain(`<a href="../${modId(7)}/">`);
    expect(first.expected.get(`mods/${modId(3)}/index.html`)).toContain(
      `${hiddenFirst} <span class="note">(not in this catalog)</span>`,
    );

    // Nothing changed: nothing written, and the documents that list every mod were compared with
    // the disk without being made whole (handed over as "" with onDisk "same").
    expect(expectBuild(later).result.written).toEqual([]);
    const handed = new Map<string, [string, string | undefined]>();
    renderSiteFiles(
      streamed(),
      paths.siteDir,
      (path, text, onDisk) => handed.set(path, [text, onDisk]),
      later,
      {
        textOfSame: false,
      },
    );
    expect(handed.get("api/v1/catalog.json")).toEqual(["", "same"]);
    expect(handed.get("api/v1/mods/index.json")).toEqual(["", "same"]);

    // One mod changed: the lists are stamped anew, the other documents keep their bytes.
    writeRecords(
      paths.recordsDir,
      list.filter((r) => r.modId === modId(5)).map((r) => ({ ...r, summary: "Changed." })),
    );
    const changed = expectBuild(later);
    expect(changed.result.written.sort()).toEqual(
      [
        "api/v1/catalog.json",
        "api/v1/mods/index.json",
        `api/v1/mods/${modId(5)}/index.json`,
        "index.html",
        `mods/${modId(5)}/index.html`,
      ].sort(),
    );

    // A catalog.json formatted by hand with the same content keeps its timestamp (it is parsed).
    const catalogPath = join(paths.siteDir, "api/v1/catalog.json");
    const stampOf = (text: string) => (JSON.parse(text) as { generatedAt: string }).generatedAt;
    const kept = stampOf(readFileSync(catalogPath, "utf8"));
    writeFileSync(catalogPath, JSON.stringify(JSON.parse(readFileSync(catalogPath, "utf8"))));
    const reformatted = expectBuild(() => new Date("2026-11-03T00:00:00.000Z"));
    expect(reformatted.result.written).toEqual(["api/v1/catalog.json"]);
    expect(stampOf(readFileSync(catalogPath, "utf8"))).toBe(kept);
  });

  it("names an entry of catalog.json that fails its schema by its place in the list", () => {
    // Entries are checked a batch at a time: one in the second batch keeps its own index.
    const siteInputs = inputs(400);
    siteInputs.records = siteInputs.records.map((r) =>
      r.modId === modId(300) ? { ...r, sha256: "not-a-hash" } : r,
    );
    const render = () =>
      renderSiteFiles(
        siteInputs,
        join(tempDir(), "none"),
        () => {},
        () => new Date("2026-11-01T00:00:00.000Z"),
      );
    expect(render).toThrow(/api\/v1\/catalog\.json \(catalog\):\n\/mods\/300\/versions\/0\/sha256 /);
  });
});
