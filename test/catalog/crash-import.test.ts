import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { createPgliteStore, migrate } from "../../src/store/index.ts";
import { catalogProject, modRelease, publisherOptions } from "../support/catalog-project.ts";
import { asProject, differences, withClock } from "../support/crash-fixtures.ts";
import { runCli } from "../support/run-cli.ts";
import {
  copyTree,
  emptyFolders,
  pool,
  publishedFolders,
  readOperations,
  runSvc,
  spawnSvc,
  startServe,
  treeHashes,
  treeProblems,
} from "../support/crash.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { modRecordsPath, readRelease } from "../support/records.ts";

/**
 * `svc import` (the real CLI, its own process) is SIGKILLed at every file operation of a
 * publication in turn (test/support/fault-injection.mjs). After each kill the next command a user
 * would run (svc check, svc build, the same import again, svc serve) must find the complete old or
 * the complete new tree, byte for byte; svc check must pass; and the next publication must delete
 * nothing of it.
 */
const NOW = "2026-11-02T12:00:00.000Z";
const KILLED = [modRecordsPath("better-hud"), "site/downloads/mods/better-hud/1.1.0/better-hud-1.1.0.zip"];
type Next = "check" | "build" | "import" | "serve";
const NEXT: Next[] = ["check", "build", "import"];
/** Kill points relative to the commit point after which svc serve is the next command. */
const SERVE_AT = new Set([0, 1]);

let work: string;
let base: string;
let inputs: string;
let database: string;
let data: string;
let oldTree: Record<string, string>;
let newTree: Record<string, string>;
let operations: string[];
let commitPoint: number;

const importArgs = () => [
  "import",
  "--package",
  join(inputs, "pkg.zip"),
  "--metadata",
  join(inputs, "release.json"),
  "--clamscan-db",
  database,
];

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))("svc import killed at every file operation", () => {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "svc-crash-import-"));
    database = makeSignatureDatabase(join(work, "clamav"));
    inputs = join(work, "inputs");
    const release = modRelease({ version: "1.1.0" });
    mkdirSync(inputs);
    writeFileSync(join(inputs, "pkg.zip"), release.packageBytes);
    writeFileSync(join(inputs, "release.json"), JSON.stringify(release.sidecar));
    // The old state: a portal with 1.0.0 published (1.1.0 supersedes it: two records change).
    const project = catalogProject();
    const first = modRelease({ version: "1.0.0" });
    await publishRelease(publisherOptions(project), {
      packageBytes: first.packageBytes,
      sidecar: first.sidecar,
      source: { kind: "import" },
    });
    base = join(work, "base");
    copyTree(project.root, base);
    project.cleanup();
    oldTree = treeHashes(base);
    // svc serve opens PGlite: one migrated data folder, copied for each serve start.
    data = join(work, "data");
    const store = await createPgliteStore(data);
    await migrate(store);
    await store.close();
    // The new state, and the list of file operations a publication makes.
    const reference = join(work, "reference");
    copyTree(base, reference);
    const log = join(work, "operations.log");
    const run = await runSvc(importArgs(), {
      cwd: reference,
      fault: { scope: publishedFolders(reference), log, now: NOW },
    });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    newTree = treeHashes(reference);
    operations = readOperations(log);
    commitPoint = operations.findIndex((op) => / rename .*\/txn-\S+ -> .*\/commit-/.test(op)) + 1;
  }, 120_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("svc serve waits for a running import instead of undoing its transaction, and one portal per data folder", async () => {
    const root = mkdtempSync(join(work, "live-"));
    copyTree(base, root);
    copyTree(data, join(root, ".data"));
    // The import stops (SIGSTOP) halfway through rolling its commit forward, holding the lock.
    const importing = spawnSvc(importArgs(), {
      cwd: root,
      fault: { scope: publishedFolders(root), stopAfter: "rename:/commit-,rename:catalog.json", now: NOW },
    });
    const imported = new Promise<number | null>((resolve) => importing.once("exit", (code) => resolve(code)));
    const stdout: string[] = [];
    const stderr: string[] = [];
    importing.stdout!.on("data", (d: Buffer) => stdout.push(d.toString()));
    importing.stderr!.on("data", (d: Buffer) => stderr.push(d.toString()));
    for (let waited = 0; !stopped(importing.pid!); waited += 50) {
      if (importing.exitCode !== null || waited > 60_000)
        throw new Error(`the import never stopped: ${stdout}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // The new record is in place (renamed before the catalog); a serve start must not undo it.
    expect(readRelease(root, "better-hud", "1.1.0")).not.toBeNull();
    let served = false;
    const serving = startServe(root).then((portal) => {
      served = true;
      return portal;
    });
    await new Promise((r) => setTimeout(r, 1500));
    // Still waiting for the publish lock: nothing of the import was rolled back, nothing served.
    expect(served).toBe(false);
    expect(readRelease(root, "better-hud", "1.1.0")).not.toBeNull();
    process.kill(importing.pid!, "SIGCONT");
    expect(await imported, stderr.join("")).toBe(0);
    expect(stdout.join("")).toMatch(/published better-hud@1\.1\.0/);
    const portal = await serving;
    expect(differences(treeHashes(root), newTree)).toEqual([]);
    // A second portal on the same data folder is refused, naming the first.
    const second = await runSvc(["serve", "--port", "0", "--root", root], { cwd: root });
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(new RegExp(`data_dir_locked: .* in use by pid ${portal.child.pid} on `));
    // The portal keeps running; the CLI beside it waits its turn on the publish lock.
    expect((await runCli(["check"], root)).code).toBe(0);
    await portal.stop();
    rmSync(root, { recursive: true, force: true });
  }, 120_000);

  it("a kill between the artifact folder's mkdir and its link leaves no folder behind, and the version publishes", async () => {
    const root = mkdtempSync(join(work, "link-"));
    copyTree(base, root);
    const killed = await runSvc(importArgs(), {
      cwd: root,
      fault: {
        scope: publishedFolders(root),
        killBefore: "link:/downloads/mods/better-hud/1.1.0/",
        now: NOW,
      },
    });
    expect(killed.signal, killed.stderr).toBe("SIGKILL");
    expect(existsSync(join(root, "site/downloads/mods/better-hud/1.1.0"))).toBe(true);
    const check = await runCli(["check", "--hashes"], root);
    expect(check.code, check.stderr).toBe(0);
    expect(emptyFolders(root)).toEqual([]);
    expect(differences(treeHashes(root), oldTree)).toEqual([]);
    const again = await withClock(NOW, () => runCli(importArgs(), root));
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/published better-hud@1\.1\.0/);
    expect(differences(treeHashes(root), newTree)).toEqual([]);
    expect(await treeProblems(root)).toEqual([]);
    rmSync(root, { recursive: true, force: true });
  }, 120_000);

  it("ends in the complete old or new tree after a kill at every operation, and nothing is deleted later", async () => {
    expect(commitPoint).toBeGreaterThan(5);
    expect(operations.length).toBeGreaterThan(commitPoint + 5);
    expect(Object.keys(newTree)).toEqual(expect.arrayContaining(KILLED));
    // SVC_CRASH_POINTS=27,28 narrows the run to those kill points while debugging.
    const only = process.env.SVC_CRASH_POINTS?.split(",").map(Number);
    const points = operations.map((_, i) => i + 1).filter((n) => !only || only.includes(n));
    const failed: string[] = [];
    await pool(points, 2, async (killAt) => {
      const root = mkdtempSync(join(work, `kill-${killAt}-`));
      copyTree(base, root);
      const op = operations[killAt - 1]!.replaceAll(root, ".");
      try {
        await killAndRecover(root, killAt, op);
      } catch (error) {
        failed.push(`killed before operation ${killAt} (${op}): ${(error as Error).message}`);
      }
      rmSync(root, { recursive: true, force: true });
    });
    console.log(`svc import: ${points.length} kill points (every operation), ${failed.length} failing trees`);
    expect(failed).toEqual([]);
  }, 600_000);

  /** One kill point: the killed import, the next command, the checks; throws on the first problem. */
  async function killAndRecover(root: string, killAt: number, op: string): Promise<void> {
    const killed = await runSvc(importArgs(), {
      cwd: root,
      fault: { scope: publishedFolders(root), killAt, now: NOW },
    });
    expect(killed.signal, `kill before ${op}\n${killed.stderr}`).toBe("SIGKILL");
    // svc serve (a PGlite start, the slowest) right at the commit point and just after it; the
    // other three commands in turn everywhere else.
    const next: Next = SERVE_AT.has(killAt - commitPoint) ? "serve" : NEXT[killAt % NEXT.length]!;
    const committed = killAt > commitPoint;
    const what = `killed before operation ${killAt}/${operations.length} (${op}; commit point ${commitPoint}), then svc ${next}`;
    if (next === "check" || next === "build") {
      const result = await runCli([next], root);
      expect(result.code, `${what}\n${result.stderr}`).toBe(0);
    } else if (next === "import") {
      // The same import again: it finishes the crashed one, or publishes anew, or finds it done.
      // In-process with the killed run's clock, so a fresh publication writes the same bytes.
      const again = await withClock(NOW, () => runCli(importArgs(), root));
      expect(again.code, `${what}\n${again.stderr}`).toBe(0);
      expect(again.stdout).toMatch(
        committed ? /already published with these exact bytes/ : /published better-hud@1\.1\.0/,
      );
    } else {
      copyTree(data, join(root, ".data"));
      const portal = await startServe(root);
      const stopped = await portal.stop();
      expect(stopped.code === 0 || stopped.signal === "SIGTERM", `${what}\n${portal.stderr()}`).toBe(true);
      if (committed) expect(portal.stderr()).toMatch(/svc serve: recovered an interrupted publication/);
    }
    const expected = committed || next === "import" ? newTree : oldTree;
    expect(differences(treeHashes(root), expected), what).toEqual([]);
    expect(await treeProblems(root), what).toEqual([]);
    if (next !== "check") {
      const check = await runCli(["check"], root);
      expect(check.code, `${what}\n${check.stderr}`).toBe(0);
    }
    // The next publication (another mod) runs recovery again: it must not undo anything.
    const other = modRelease({ modId: "other-mod", name: "Other" });
    await publishRelease(publisherOptions(asProject(root)), {
      packageBytes: other.packageBytes,
      sidecar: other.sidecar,
      source: { kind: "import" },
    });
    const after = treeHashes(root);
    for (const path of KILLED) expect(after[path], `${path}: ${what}`).toBe(expected[path]);
    expect(await treeProblems(root), `after another publication: ${what}`).toEqual([]);
  }
});

/** Whether a process is stopped (state T in /proc): the SIGSTOP of the fault preload took effect. */
function stopped(pid: number): boolean {
  try {
    return / T /.test(readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\)/, ""));
  } catch {
    return false;
  }
}
