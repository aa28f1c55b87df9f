import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hideRelease, publishRelease, unhideRelease } from "../../src/catalog/publisher.ts";
import { loadSiteInputs } from "../../src/catalog/site.ts";
import type { ReleaseRecord } from "../../src/contracts/records.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";

/**
 * Issue 25 item 6: statuses are settled after every publication, hide and unhide. The walk takes
 * every order of the nine operations over three versions (each version published, hidden, then
 * unhidden: 9! / (3! 3! 3!) = 1,680 orders) through the real publisher, and after every step checks
 * the records and the catalog, mods index, detail and versions documents (and the mod page's badges)
 * against the contract table.
 *
 * Orders share their prefixes (a depth-first walk forks a copy of the portal where two orders part),
 * and two prefixes that leave the same stored records (timestamps aside) and the same operations to
 * do have the same futures: the publisher reads nothing else that decides a status or a flag. The
 * walk therefore checks such a state's futures once and counts every order that passes through it.
 */

const MOD = "better-hud";
const VERSIONS = ["1.0.0", "1.1.0", "2.0.0"] as const;
type Op = "publish" | "hide" | "unhide";
/** Per version: how many of its operations (publish, hide, unhide) are done. */
const OPS: Op[] = ["publish", "hide", "unhide"];

/** The contract table (seed contract, States and transitions) for the states a release record takes. */
const CONTRACT = {
  published: { publicCatalogVisible: true, downloadEnabled: true },
  superseded: { publicCatalogVisible: true, downloadEnabled: true },
  hidden: { publicCatalogVisible: false, downloadEnabled: false },
} as const;

interface Tree {
  root: string;
  recordsDir: string;
  siteDir: string;
}

// fsync costs tens of milliseconds a file on a disk and nothing on tmpfs; the walk commits hundreds
// of transactions, so its portals live on tmpfs where there is one.
const previousTmp = process.env.TMPDIR;
if (existsSync("/dev/shm")) process.env.TMPDIR = "/dev/shm";
const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
  if (previousTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = previousTmp;
});

function fork(tree: Tree): Tree {
  const root = mkdtempSync(join(tmpdir(), "svc-status-walk-"));
  made.push(root);
  cpSync(tree.root, root, { recursive: true });
  return { root, recordsDir: join(root, "records"), siteDir: join(root, "site") };
}

const json = <T>(tree: Tree, path: string): T => JSON.parse(readFileSync(join(tree.root, path), "utf8")) as T;

function records(project: CatalogProject, tree: Tree): ReleaseRecord[] {
  return loadSiteInputs(project.config, tree.recordsDir).records.filter((r) => r.modId === MOD);
}

/** What decides the future of a state: the operations left and the records, timestamps aside. */
function fingerprint(project: CatalogProject, tree: Tree, done: number[]): string {
  const stored = records(project, tree)
    .map(({ updatedAt: _u, publishedAt: _p, ...rest }) => rest)
    .sort((a, b) => (a.version < b.version ? -1 : 1));
  return JSON.stringify({ done, stored });
}

interface VersionDoc {
  version: string;
  status: string;
  downloadEnabled: boolean;
}

/** Every check of one state, from what the walk did (done) alone. */
function expectSettled(project: CatalogProject, tree: Tree, done: number[], order: string) {
  const visible = VERSIONS.filter((_, i) => done[i] === 1 || done[i] === 3);
  const newest = visible.at(-1);
  const expected = new Map<string, keyof typeof CONTRACT>();
  VERSIONS.forEach((v, i) => {
    if (done[i] === 0) return;
    expected.set(v, done[i] === 2 ? "hidden" : v === newest ? "published" : "superseded");
  });

  const stored = records(project, tree);
  expect(stored.map((r) => [r.version, r.status]).sort(), `${order}: records`).toEqual([...expected].sort());
  for (const r of stored) {
    if (r.status === "hidden") expect(r.statusBeforeHidden, `${order}: ${r.version}`).toBeDefined();
    else expect(r.statusBeforeHidden, `${order}: ${r.version}`).toBeUndefined();
  }

  // The documents list exactly the versions the contract table makes public, with its flags.
  const listed = [...expected]
    .filter(([, status]) => CONTRACT[status].publicCatalogVisible)
    .map(([version, status]) => ({ version, status, downloadEnabled: CONTRACT[status].downloadEnabled }))
    .reverse();
  const catalog = json<{ mods: Array<{ id: string; latestVersion: string; versions: VersionDoc[] }> }>(
    tree,
    "site/api/v1/catalog.json",
  );
  const index = json<{ mods: Array<{ id: string; latestVersion: string; versionCount: number }> }>(
    tree,
    "site/api/v1/mods/index.json",
  );
  const detailPath = `site/api/v1/mods/${MOD}/index.json`;
  const versionsPath = `site/api/v1/mods/${MOD}/versions.json`;
  const pagePath = `site/mods/${MOD}/index.html`;
  if (listed.length === 0) {
    expect(catalog.mods, `${order}: catalog`).toEqual([]);
    expect(index.mods, `${order}: mods index`).toEqual([]);
    for (const path of [detailPath, versionsPath, pagePath])
      expect(existsSync(join(tree.root, path)), `${order}: ${path}`).toBe(false);
    return;
  }
  const pick = (v: VersionDoc) => ({
    version: v.version,
    status: v.status,
    downloadEnabled: v.downloadEnabled,
  });
  expect(
    catalog.mods.map((m) => [m.id, m.latestVersion, m.versions.map(pick)]),
    `${order}: catalog`,
  ).toEqual([[MOD, newest, [listed[0]]]]);
  expect(
    index.mods.map((m) => [m.id, m.latestVersion, m.versionCount]),
    `${order}: mods index`,
  ).toEqual([[MOD, newest, listed.length]]);
  const detail = json<{ latestVersion: string; versions: VersionDoc[] }>(tree, detailPath);
  expect([detail.latestVersion, detail.versions.map(pick)], `${order}: detail`).toEqual([newest, listed]);
  const versions = json<{ latestVersion: string; versions: VersionDoc[] }>(tree, versionsPath);
  expect([versions.latestVersion, versions.versions.map(pick)], `${order}: versions`).toEqual([
    newest,
    listed,
  ]);
  // The page labels the newest version Latest and every older listed one Superseded.
  const page = readFileSync(join(tree.root, pagePath), "utf8");
  for (const { version, status } of listed) {
    const heading = new RegExp(`<h3 id="v${version.replaceAll(".", "\\.")}-h">([^\n]*)</h3>`).exec(page)?.[1];
    expect(heading, `${order}: page ${version}`).toBeDefined();
    expect(heading!.includes("Superseded"), `${order}: page ${version}`).toBe(status === "superseded");
    expect(heading!.includes("Latest"), `${order}: page ${version}`).toBe(version === newest);
  }
}

describe("status settlement", () => {
  it("walks every order of publish, hide and unhide over three versions; the flags always match the contract table", async () => {
    const project = catalogProject();
    made.push(project.root);
    // The contract table is the workflow document's (publicCatalogVisible, downloadEnabled per state).
    const workflow = JSON.parse(project.read("site/api/v1/publishing/workflow.json")) as {
      states: Array<{ id: string; publicCatalogVisible: boolean; downloadEnabled: boolean }>;
    };
    for (const [state, flags] of Object.entries(CONTRACT)) {
      expect(
        workflow.states.find((s) => s.id === state),
        state,
      ).toMatchObject(flags);
    }
    const releases = VERSIONS.map((version) => modRelease({ modId: MOD, version }));
    let minute = 0;
    let steps = 0;
    const seen = new Map<string, number>();

    /** Runs one operation on the tree; returns the orders of the state it leads to. */
    const step = async (tree: Tree, done: number[], i: number, order: string): Promise<number> => {
      const options = {
        ...publisherOptions(project),
        ...tree,
        now: () => new Date(Date.UTC(2026, 10, 2, 10, minute++)),
      };
      const version = VERSIONS[i]!;
      const op = OPS[done[i]!]!;
      if (op === "publish") {
        const { packageBytes, sidecar } = releases[i]!;
        await publishRelease(options, { packageBytes, sidecar, source: { kind: "import" } });
      } else if (op === "hide") await hideRelease(options, MOD, version);
      else await unhideRelease(options, MOD, version);
      steps++;
      const next = done.map((d, j) => (j === i ? d + 1 : d));
      const path = `${order} ${op} ${version}`;
      expectSettled(project, tree, next, path);
      return walk(tree, next, path);
    };

    /** The number of complete orders from this state, each step of each checked. */
    const walk = async (tree: Tree, done: number[], order: string): Promise<number> => {
      const key = fingerprint(project, tree, done);
      const known = seen.get(key);
      if (known !== undefined) return known;
      const open = VERSIONS.map((_, i) => i).filter((i) => done[i]! < OPS.length);
      let orders = open.length === 0 ? 1 : 0;
      for (const [n, i] of open.entries()) {
        // The last branch goes on in this tree; the others in copies of it.
        orders += await step(n === open.length - 1 ? tree : fork(tree), done, i, order);
      }
      seen.set(key, orders);
      return orders;
    };

    const start = { root: project.root, recordsDir: project.recordsDir, siteDir: project.siteDir };
    expect(await walk(start, [0, 0, 0], "")).toBe(1680);
    // Every operation of a distinct state was run once: far fewer than 1,680 x 9.
    expect(steps).toBeGreaterThan(100);
  }, 300_000);
});
