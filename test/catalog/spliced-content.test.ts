import { createHash, randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { commitFiles, type FileContent, recoverTransactions } from "../../src/catalog/atomic-files.ts";
import { fsyncGroup, warmCommitHelper } from "../../src/catalog/spliced-content.ts";
import { freezeDisk, withFrozenDisk } from "../support/freeze-fs.ts";

const REPO = join(import.meta.dirname, "../..");

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "svc-spliced-"));
  mkdirSync(join(root, "api/v1/mods"), { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const sha = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");

/** A file of `size` random bytes under root, and the splice of it that replaces [at, at + cut) with `entry`. */
function sourceAndSplice(path: string, size: number, at: number, cut: number, entry: string) {
  const original = randomBytes(size);
  const source = join(root, path);
  writeFileSync(source, original);
  const { size: measured, mtimeMs, ino } = statSync(source);
  const content = {
    splice: {
      source,
      expect: { size: measured, mtimeMs, ino },
      parts: [Buffer.from("HEAD"), { start: 4, end: at }, Buffer.from(entry), { start: at + cut, end: size }],
    },
  };
  const expected = Buffer.concat([
    Buffer.from("HEAD"),
    original.subarray(4, at),
    Buffer.from(entry),
    original.subarray(at + cut),
  ]);
  return { source, content, expected };
}

describe("spliced index documents written beside the committing thread", () => {
  it("writes the largest splice on the helper thread and the rest here, with the digests of the bytes written", async () => {
    warmCommitHelper();
    // Both above the size the helper takes: the larger goes to the helper, the other stays here.
    const catalog = sourceAndSplice("api/v1/catalog.json", 9_000_000, 4_500_000, 1_000, "<catalog entry>");
    const index = sourceAndSplice("api/v1/mods/index.json", 5_000_000, 100, 10, "<index entry>");
    const result = commitFiles(
      root,
      {
        write: new Map<string, FileContent>([
          ["api/v1/catalog.json", catalog.content],
          ["api/v1/mods/index.json", index.content],
          ["api/v1/mods/a.json", "small"],
        ]),
      },
      { digests: true },
    );
    expect(readFileSync(catalog.source).equals(catalog.expected)).toBe(true);
    expect(readFileSync(index.source).equals(index.expected)).toBe(true);
    expect(result.digests).toEqual(
      new Map([
        ["api/v1/catalog.json", { length: catalog.expected.length, sha256: sha(catalog.expected) }],
        ["api/v1/mods/index.json", { length: index.expected.length, sha256: sha(index.expected) }],
        ["api/v1/mods/a.json", { length: 5, sha256: sha("small") }],
      ]),
    );
    // The replaced documents were kept out of the renames (linked into the finished transaction's
    // folder) and that folder is removed in the background, leaving nothing to recover.
    const left = readdirSync(join(root, ".svc-tmp"));
    expect(left.every((name) => name.startsWith(`trash-${process.pid}-commit-`))).toBe(true);
    for (let waited = 0; readdirSync(join(root, ".svc-tmp")).length > 0 && waited < 5000; waited += 20)
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(readdirSync(join(root, ".svc-tmp"))).toEqual([]);
  });

  it("a process that exits at once leaves no replaced document behind in .svc-tmp", () => {
    writeFileSync(join(root, "api/v1/catalog.json"), "x".repeat(3_000_000));
    const script = join(root, "commit-and-exit.mts");
    writeFileSync(
      script,
      [
        `import { commitFiles } from ${JSON.stringify(join(REPO, "src/catalog/atomic-files.ts"))};`,
        `import { warmCommitHelper } from ${JSON.stringify(join(REPO, "src/catalog/spliced-content.ts"))};`,
        "warmCommitHelper();",
        `commitFiles(${JSON.stringify(root)}, { write: new Map([["api/v1/catalog.json", "y".repeat(3_000_000)]]) });`,
        "process.exit(0);",
      ].join("\n"),
    );
    const run = spawnSync(process.execPath, ["--import", "tsx", script], { cwd: REPO, encoding: "utf8" });
    expect(run.status, run.stderr).toBe(0);
    expect(readFileSync(join(root, "api/v1/catalog.json"), "utf8")).toBe("y".repeat(3_000_000));
    expect(readdirSync(join(root, ".svc-tmp"))).toEqual([]);
  });

  it("leaves another process's trash to recovery, which removes it", () => {
    mkdirSync(join(root, ".svc-tmp/trash-1-commit-1"), { recursive: true });
    writeFileSync(join(root, ".svc-tmp/trash-1-commit-1/old-w0"), "old catalog");
    expect(recoverTransactions(root)).toEqual({ rolledBack: 0, completed: 0 });
    expect(readdirSync(join(root, ".svc-tmp"))).toEqual([]);
  });

  it("a crash at any operation around a kept old file ends, after recovery, in the old or the new tree", async () => {
    const big = "x".repeat(2_000_000);
    const write = () =>
      new Map<string, FileContent>([
        ["api/v1/catalog.json", `${big}new`],
        ["api/v1/mods/a.json", "new a"],
      ]);
    const reset = () => {
      rmSync(root, { recursive: true, force: true });
      mkdirSync(join(root, "api/v1/mods"), { recursive: true });
      writeFileSync(join(root, "api/v1/catalog.json"), `${big}old`);
      writeFileSync(join(root, "api/v1/mods/a.json"), "old a");
    };
    const tree = () => [
      readFileSync(join(root, "api/v1/catalog.json"), "utf8").slice(-3),
      readFileSync(join(root, "api/v1/mods/a.json"), "utf8"),
    ];
    reset();
    const dry = freezeDisk(Number.POSITIVE_INFINITY);
    commitFiles(root, { write: write() });
    const kept = dry.stop().operations;
    // The kept link is one of the operations: the roll-forward links the old catalog before its rename.
    expect(dry.log.some((op) => op.name === "linkSync" && op.path.endsWith("api/v1/catalog.json"))).toBe(
      true,
    );
    expect(kept).toBeGreaterThan(5);
    let sawNew = false;
    for (let n = 1; n <= kept; n++) {
      reset();
      expect(withFrozenDisk(n, () => commitFiles(root, { write: write() })).frozen).toBe(true);
      recoverTransactions(root);
      const after = tree();
      expect(
        [
          ["old", "old a"],
          ["new", "new a"],
        ],
        `crash at operation ${n}`,
      ).toContainEqual(after);
      sawNew ||= after[0] === "new";
      const left = () => (existsSync(join(root, ".svc-tmp")) ? readdirSync(join(root, ".svc-tmp")) : []);
      for (let waited = 0; left().length > 0 && waited < 5000; waited += 20)
        await new Promise((resolve) => setTimeout(resolve, 20));
      expect(left(), `crash at operation ${n}`).toEqual([]);
    }
    expect(sawNew).toBe(true);
  });

  it("fails the whole commit when the helper finds its source changed, and leaves the tree as it was", () => {
    warmCommitHelper();
    const catalog = sourceAndSplice("api/v1/catalog.json", 6_000_000, 3_000_000, 0, "<entry>");
    writeFileSync(join(root, "api/v1/mods/a.json"), "old a");
    // Same size, new bytes, a new mtime: not the file the splice was measured on.
    writeFileSync(catalog.source, Buffer.alloc(6_000_000, 120));
    utimesSync(catalog.source, new Date(), new Date(Date.now() + 5000));
    expect(() =>
      commitFiles(root, {
        write: new Map<string, FileContent>([
          ["api/v1/catalog.json", catalog.content],
          ["api/v1/mods/a.json", "new a"],
        ]),
      }),
    ).toThrow(/changed after the splice was measured/);
    expect(readFileSync(catalog.source).equals(Buffer.alloc(6_000_000, 120))).toBe(true);
    expect(readFileSync(join(root, "api/v1/mods/a.json"), "utf8")).toBe("old a");
    expect(readdirSync(join(root, ".svc-tmp"))).toEqual([]);
  });

  it("fsyncs a group on the helper: gone paths are skipped, a failure names the path", () => {
    warmCommitHelper();
    writeFileSync(join(root, "a"), "a");
    expect(() => fsyncGroup([join(root, "a"), join(root, "api"), join(root, "gone")])).not.toThrow();
    // A path under a file cannot be opened: ENOTDIR, reported with its path.
    expect(() => fsyncGroup([join(root, "a"), join(root, "a", "b")])).toThrow(
      /fsync failed for 1 path\(s\), first .*a\/b/,
    );
  });
});
