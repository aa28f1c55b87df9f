import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { createPgliteStore, migrate } from "../../src/store/index.ts";
import { catalogProject, modRelease, publisherOptions } from "../support/catalog-project.ts";
import {
  copyTree,
  phasePoints,
  pool,
  publishedFolders,
  readOperations,
  runSvc,
  startServe,
  contentHashes,
  treeProblems,
} from "../support/crash.ts";
import { asProject, differences, withClock } from "../support/crash-fixtures.ts";
import { runCli } from "../support/run-cli.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { readRelease } from "../support/records.ts";

/**
 * A signed portal (`svc keys init`, SVC_TUF_ONLINE_KEYS set): every publication signs what it
 * committed. `svc import` is SIGKILLed from its commit point through its signing (the operations
 * before the commit point are the unsigned sweep's, crash-import.test.ts), then the next command a
 * user would run, with the keys, must leave a tree a manager verifies. Without the keys, a
 * publication is refused, naming the variable, instead of leaving the signed metadata behind.
 */
// One fixed clock for the killed runs (identical bytes in each), near the real one: managers judge
// the signed timestamp's expiry by the real clock.
const NOW = new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString();
type Next = "check" | "build" | "import" | "serve";
const NEXT: Next[] = ["check", "build", "import", "serve"];

let work: string;
let base: string;
let inputs: string;
let database: string;
let data: string;
let keysFile: string;
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
const keysEnv = () => ({ SVC_TUF_ONLINE_KEYS: keysFile });

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))(
  "a signed portal's import killed between commit and signing",
  () => {
    let oldTree: Record<string, string>;
    let newTree: Record<string, string>;

    beforeAll(async () => {
      work = mkdtempSync(join(tmpdir(), "svc-crash-signing-"));
      database = makeSignatureDatabase(join(work, "clamav"));
      inputs = join(work, "inputs");
      mkdirSync(inputs);
      const release = modRelease({ version: "1.1.0" });
      writeFileSync(join(inputs, "pkg.zip"), release.packageBytes);
      writeFileSync(join(inputs, "release.json"), JSON.stringify(release.sidecar));
      const project = catalogProject();
      const keysDir = join(work, "keys");
      const init = await runCli(["keys", "init", "--keys", keysDir], project.root);
      expect(init.code, init.stderr).toBe(0);
      keysFile = join(keysDir, "online.keys.json");
      const keys = JSON.parse(readFileSync(keysFile, "utf8"));
      const first = modRelease({ version: "1.0.0" });
      await publishRelease(publisherOptions(project, { signing: { keys } }), {
        packageBytes: first.packageBytes,
        sidecar: first.sidecar,
        source: { kind: "import" },
      });
      base = join(work, "base");
      copyTree(project.root, base);
      project.cleanup();
      expect(await treeProblems(base)).toEqual([]);
      oldTree = contentHashes(base);
      data = join(work, "data");
      const store = await createPgliteStore(data);
      await migrate(store);
      await store.close();
      const reference = join(work, "reference");
      copyTree(base, reference);
      const log = join(work, "operations.log");
      const run = await runSvc(importArgs(), {
        cwd: reference,
        env: keysEnv(),
        fault: { scope: publishedFolders(reference), log, now: NOW },
      });
      expect(run.code, run.stderr).toBe(0);
      expect(await treeProblems(reference)).toEqual([]);
      newTree = contentHashes(reference);
      operations = readOperations(log);
      commitPoint = operations.findIndex((op) => / rename .*\/txn-\S+ -> .*\/commit-/.test(op)) + 1;
    }, 180_000);

    afterAll(() => {
      if (work) rmSync(work, { recursive: true, force: true });
    });

    it("the next command with the keys re-signs what the journal committed: a manager verifies the tree", async () => {
      expect(commitPoint).toBeGreaterThan(5);
      const signing = operations.findIndex((op) => op.includes("/site/tuf/"));
      expect(signing).toBeGreaterThan(commitPoint);
      // From the signing note on (what comes before it is the unsigned sweep's), the first and last
      // operation of each phase (phasePoints; SVC_CRASH_POINTS=all: every operation, 30,31: those).
      const note = operations.findIndex((op) => op.includes("signing-owed")) + 1;
      expect(note).toBeGreaterThan(0);
      expect(note).toBeLessThan(commitPoint);
      const only = process.env.SVC_CRASH_POINTS?.split(",").map(Number);
      const points = only?.every(Number.isInteger) ? only : phasePoints(operations, note);
      const failed: string[] = [];
      await pool(points, 2, async (killAt) => {
        const root = mkdtempSync(join(work, `kill-${killAt}-`));
        copyTree(base, root);
        const op = operations[killAt - 1]!.replaceAll(root, ".");
        const next = NEXT[killAt % NEXT.length]!;
        const what = `killed before operation ${killAt}/${operations.length} (${op}; commit point ${commitPoint}), then svc ${next}`;
        const problems: string[] = [];
        try {
          const killed = await runSvc(importArgs(), {
            cwd: root,
            env: keysEnv(),
            fault: { scope: publishedFolders(root), killAt, now: NOW },
          });
          expect(killed.signal, `kill before ${op}\n${killed.stderr}`).toBe("SIGKILL");
          const committed = killAt > commitPoint;
          if (next === "check" || next === "build") {
            const result = await runCli([next], root, keysEnv());
            if (result.code !== 0) problems.push(`svc ${next} exit ${result.code}: ${result.stderr}`);
          } else if (next === "import") {
            const again = await withClock(NOW, () => runCli(importArgs(), root, keysEnv()));
            if (again.code !== 0) problems.push(`svc import exit ${again.code}: ${again.stderr}`);
          } else {
            copyTree(data, join(root, ".data"));
            const portal = await startServe(root, { env: keysEnv() });
            const stopped = await portal.stop();
            if (stopped.code !== 0 && stopped.signal !== "SIGTERM")
              problems.push(`svc serve: ${portal.stderr()}`);
          }
          const expected = committed || next === "import" ? newTree : oldTree;
          const differ = differences(contentHashes(root), expected);
          if (differ.length > 0)
            problems.push(`not the ${expected === newTree ? "new" : "old"} tree: ${differ}`);
          problems.push(...(await treeProblems(root)));
          // The next publication (another mod) leaves a tree a manager verifies as well.
          const other = modRelease({ modId: "other-mod", name: "Other" });
          const keys = JSON.parse(readFileSync(keysFile, "utf8"));
          await publishRelease(publisherOptions(asProject(root), { signing: { keys } }), {
            packageBytes: other.packageBytes,
            sidecar: other.sidecar,
            source: { kind: "import" },
          });
          problems.push(...(await treeProblems(root)).map((p) => `after another publication: ${p}`));
        } catch (error) {
          problems.push((error as Error).message);
        }
        if (problems.length > 0) failed.push(`${what}:\n  ${problems.join("\n  ")}`);
        rmSync(root, { recursive: true, force: true });
      });
      console.log(
        `svc import on a signed portal: ${points.length} kill points (${points.join(",")} of ${operations.length} operations), ${failed.length} failing trees`,
      );
      expect(failed).toEqual([]);
    }, 900_000);

    it("without the keys, the next publication is refused naming SVC_TUF_ONLINE_KEYS; with them, it signs", async () => {
      const root = mkdtempSync(join(work, "no-keys-"));
      copyTree(base, root);
      const killed = await runSvc(importArgs(), {
        cwd: root,
        env: keysEnv(),
        fault: { scope: publishedFolders(root), killAfter: "rename:/commit-", now: NOW },
      });
      expect(killed.signal, killed.stderr).toBe("SIGKILL");
      const other = modRelease({ modId: "other-mod", name: "Other" });
      writeFileSync(join(root, "other.zip"), other.packageBytes);
      writeFileSync(join(root, "other.json"), JSON.stringify(other.sidecar));
      const otherArgs = [
        "import",
        "--package",
        "other.zip",
        "--metadata",
        "other.json",
        "--clamscan-db",
        database,
      ];
      const refused = await runCli(otherArgs, root);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain("SVC_TUF_ONLINE_KEYS");
      expect(readRecordExists(root, "other-mod")).toBe(false);
      const unsignedCheck = await runCli(["check"], root);
      expect(unsignedCheck.code).toBe(1);
      expect(unsignedCheck.stderr).toContain("SVC_TUF_ONLINE_KEYS");
      const published = await runCli(otherArgs, root, keysEnv());
      expect(published.code, published.stderr).toBe(0);
      expect(await treeProblems(root)).toEqual([]);
      expect((await runCli(["check"], root)).code).toBe(0);
      rmSync(root, { recursive: true, force: true });
    }, 180_000);

    it("a signing owed without the keys is settled by a later svc keys sign: svc check passes and drops the note", async () => {
      const root = mkdtempSync(join(work, "keys-sign-"));
      copyTree(base, root);
      const killed = await runSvc(importArgs(), {
        cwd: root,
        env: keysEnv(),
        fault: { scope: publishedFolders(root), killAfter: "rename:/commit-", now: NOW },
      });
      expect(killed.signal, killed.stderr).toBe("SIGKILL");
      expect((await runCli(["check"], root)).code).toBe(1);
      const signed = await runCli(["keys", "sign"], root, keysEnv());
      expect(signed.code, signed.stderr).toBe(0);
      const check = await runCli(["check"], root);
      expect(check.code, check.stderr).toBe(0);
      expect(existsSync(join(root, ".svc-tmp/signing-owed.json"))).toBe(false);
      expect(await treeProblems(root)).toEqual([]);
      rmSync(root, { recursive: true, force: true });
    }, 180_000);
  },
);

function readRecordExists(root: string, modId: string): boolean {
  return readRelease(root, modId, "1.0.0") !== null;
}
