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
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { holderAlive, type LockHolder, removeLeftovers, tryLock } from "../../src/lib/lock-file.ts";
import { withFrozenDisk } from "../support/freeze-fs.ts";
import {
  commitFiles,
  type FileContent,
  FileExistsError,
  recoverTransactions,
} from "../../src/catalog/atomic-files.ts";

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "svc-atomic-"));
  mkdirSync(join(root, "api/v1/mods/a"), { recursive: true });
  writeFileSync(join(root, "api/v1/catalog.json"), "old catalog");
  writeFileSync(join(root, "api/v1/mods/a/index.json"), "old a");
  writeFileSync(join(root, "api/v1/stale.json"), "stale");
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function snapshot(): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string, rel: string) => {
    for (const name of readdirSync(dir)) {
      const full = join(dir, name);
      const r = rel ? `${rel}/${name}` : name;
      if (
        readdirSync(dir, { withFileTypes: true })
          .find((d) => d.name === name)!
          .isDirectory()
      )
        walk(full, r);
      else out[r] = readFileSync(full, "utf8");
    }
  };
  walk(root, "");
  return out;
}

const changes = () => ({
  write: new Map([
    ["api/v1/catalog.json", "new catalog"],
    ["api/v1/mods/a/index.json", "new a"],
    ["api/v1/mods/b/index.json", "new b"],
  ]),
  delete: ["api/v1/stale.json"],
});

describe("commitFiles", () => {
  it("applies writes and deletes together and skips unchanged files", () => {
    const result = commitFiles(root, {
      write: new Map([...changes().write, ["api/v1/mods/a/index.json", "old a"]]),
      delete: ["api/v1/stale.json"],
    });
    expect(result).toEqual({
      written: ["api/v1/catalog.json", "api/v1/mods/b/index.json"],
      deleted: ["api/v1/stale.json"],
      unchanged: 1,
    });
    expect(snapshot()).toEqual({
      "api/v1/catalog.json": "new catalog",
      "api/v1/mods/a/index.json": "old a",
      "api/v1/mods/b/index.json": "new b",
    });
    expect(readdirSync(join(root, ".svc-tmp"))).toEqual([]);
  });

  it("compares a same-size file byte for byte, and writes a file the caller marks changed without comparing", () => {
    // "old catalog" and "new catalog" have the same size: the size check alone must not settle it.
    const sameSize = commitFiles(root, {
      write: new Map<string, string | Uint8Array>([
        ["api/v1/catalog.json", Buffer.from("new catalog")],
        ["api/v1/stale.json", "stale"],
      ]),
    });
    expect(sameSize).toMatchObject({ written: ["api/v1/catalog.json"], unchanged: 1 });
    const marked = commitFiles(root, {
      write: new Map([["api/v1/mods/a/index.json", "old a"]]),
      changed: new Set(["api/v1/mods/a/index.json"]),
    });
    expect(marked).toMatchObject({ written: ["api/v1/mods/a/index.json"], unchanged: 0 });
    expect(snapshot()).toMatchObject({
      "api/v1/catalog.json": "new catalog",
      "api/v1/mods/a/index.json": "old a",
    });
  });

  it("leaves every file byte-identical when a step before the commit point fails", () => {
    const before = snapshot();
    expect(() =>
      commitFiles(root, changes(), {
        beforeApply: (i) => {
          if (i === 2) throw new Error("disk full");
        },
      }),
    ).toThrow("disk full");
    expect(snapshot()).toEqual(before);
    expect(existsSync(join(root, "api/v1/mods/b"))).toBe(false);
    expect(readdirSync(join(root, ".svc-tmp"))).toEqual([]);
  });

  it("removes its own create-only files when the last check before the commit point fails, and never replaces one", () => {
    const before = snapshot();
    const create = new Map([["downloads/a/1.0.0/a.zip", "artifact bytes"]]);
    expect(() =>
      commitFiles(
        root,
        { ...changes(), create },
        {
          beforeCommit: () => {
            // Placed (create-only files land before the commit point), nothing else yet.
            expect(readFileSync(join(root, "downloads/a/1.0.0/a.zip"), "utf8")).toBe("artifact bytes");
            expect(readFileSync(join(root, "api/v1/catalog.json"), "utf8")).toBe("old catalog");
            throw new Error("not the hashed inode");
          },
        },
      ),
    ).toThrow("not the hashed inode");
    expect(snapshot()).toEqual(before);
    expect(existsSync(join(root, "downloads"))).toBe(false);
    commitFiles(root, { write: new Map(), create });
    expect(() =>
      commitFiles(root, { write: new Map(), create: new Map([["downloads/a/1.0.0/a.zip", "other"]]) }),
    ).toThrow(FileExistsError);
    expect(readFileSync(join(root, "downloads/a/1.0.0/a.zip"), "utf8")).toBe("artifact bytes");
  });

  it("rolls back a transaction journal of the previous format (backups) left by a crash", () => {
    const before = snapshot();
    const txn = join(root, ".svc-tmp/txn-1-legacy");
    mkdirSync(join(txn, "backup"), { recursive: true });
    mkdirSync(join(txn, "next"), { recursive: true });
    // The old publisher had renamed the new catalog in and written a new file, then died.
    writeFileSync(join(txn, "backup/0"), "old catalog");
    writeFileSync(join(root, "api/v1/catalog.json"), "new catalog");
    writeFileSync(join(root, "api/v1/new.json"), "new");
    writeFileSync(
      join(txn, "journal.json"),
      JSON.stringify([
        { path: "api/v1/catalog.json", next: "next/0", backup: "backup/0" },
        { path: "api/v1/new.json", next: "next/1", backup: null },
      ]),
    );
    expect(recoverTransactions(root)).toEqual({ rolledBack: 1, completed: 0 });
    expect(snapshot()).toEqual(before);
  });

  it("writes a spliced file from ranges of its source and new bytes in chunks larger than one read, with digests of every written file; a source changed since it was measured fails the commit", () => {
    // Over two chunks (1 MiB each) of copied source, so the chunked copy crosses a read boundary.
    const source = join(root, "api/v1/big.json");
    const original = Buffer.alloc(2_500_000);
    for (let i = 0; i < original.length; i++) original[i] = 97 + ((i * 7) % 26);
    writeFileSync(source, original);
    const stat = statSync(source);
    const expectStat = { size: stat.size, mtimeMs: stat.mtimeMs, ino: stat.ino };
    const parts = [
      Buffer.from("HEAD"),
      { start: 10, end: 1_300_000 },
      Buffer.from("<new entry>"),
      { start: 1_300_100, end: original.length },
    ];
    const expected = Buffer.concat([
      Buffer.from("HEAD"),
      original.subarray(10, 1_300_000),
      Buffer.from("<new entry>"),
      original.subarray(1_300_100),
    ]);
    const result = commitFiles(
      root,
      {
        write: new Map<string, FileContent>([
          ["api/v1/big.json", { splice: { source, expect: expectStat, parts } }],
          ["api/v1/catalog.json", "new catalog"],
        ]),
      },
      { digests: true },
    );
    expect(readFileSync(source).equals(expected)).toBe(true);
    const sha = (b: Buffer | string) => createHash("sha256").update(b).digest("hex");
    expect(result.digests).toEqual(
      new Map([
        ["api/v1/big.json", { length: expected.length, sha256: sha(expected) }],
        ["api/v1/catalog.json", { length: 11, sha256: sha("new catalog") }],
      ]),
    );
    // Without digests asked, none are measured.
    expect(commitFiles(root, { write: new Map([["api/v1/catalog.json", "newer"]]) }).digests).toBeUndefined();

    // The source changed after the splice was measured (same size, new bytes): nothing is written.
    const measured = statSync(source);
    const stale = {
      splice: {
        source,
        expect: { size: measured.size, mtimeMs: measured.mtimeMs, ino: measured.ino },
        parts: [Buffer.from("X"), { start: 0, end: 5 }],
      },
    };
    writeFileSync(join(root, "api/v1/mods/a/index.json"), "old a");
    const before = snapshot();
    writeFileSync(source, Buffer.alloc(measured.size, 120));
    utimesSync(source, new Date(), new Date(Date.now() + 5000));
    const changedBefore = { ...before, "api/v1/big.json": readFileSync(source, "utf8") };
    expect(() =>
      commitFiles(root, {
        write: new Map<string, FileContent>([
          ["api/v1/big.json", stale],
          ["api/v1/mods/a/index.json", "new a"],
        ]),
      }),
    ).toThrow(/changed after the splice was measured/);
    expect(snapshot()).toEqual(changedBefore);
  });

  it("refuses paths that leave the tree", () => {
    expect(() => commitFiles(root, { write: new Map([["../escape.json", "x"]]) })).toThrow(
      /outside the tree/,
    );
    expect(existsSync(join(root, "..", "escape.json"))).toBe(false);
  });
});

describe("crash at every file operation (disk frozen in-process)", () => {
  const create = () => new Map([["downloads/b/1.0.0/b.zip", "artifact"]]);
  const all = () => ({ ...changes(), create: create() });

  function fresh(): { old: Record<string, string>; next: Record<string, string> } {
    rmSync(root, { recursive: true, force: true });
    mkdirSync(join(root, "api/v1/mods/a"), { recursive: true });
    writeFileSync(join(root, "api/v1/catalog.json"), "old catalog");
    writeFileSync(join(root, "api/v1/mods/a/index.json"), "old a");
    writeFileSync(join(root, "api/v1/stale.json"), "stale");
    return {
      old: snapshot(),
      next: {
        "api/v1/catalog.json": "new catalog",
        "api/v1/mods/a/index.json": "new a",
        "api/v1/mods/b/index.json": "new b",
        "downloads/b/1.0.0/b.zip": "artifact",
      },
    };
  }

  let profiled: { total: number; commitPoint: number } | undefined;
  /** How many mutating operations a whole commit takes, and which one is the commit point. */
  function profile(): { total: number; commitPoint: number } {
    profiled ??= measure();
    return profiled;
  }
  function measure(): { total: number; commitPoint: number } {
    fresh();
    const { operations } = withFrozenDisk(Number.POSITIVE_INFINITY, () => commitFiles(root, all()));
    // The commit point is the rename of txn-* to commit-*: find its index by freezing just after it.
    for (let n = 1; n <= operations; n++) {
      fresh();
      withFrozenDisk(n + 1, () => commitFiles(root, all()));
      const pending = existsSync(join(root, ".svc-tmp")) ? readdirSync(join(root, ".svc-tmp")) : [];
      if (pending.some((name) => name.startsWith("commit-"))) return { total: operations, commitPoint: n };
    }
    throw new Error("no commit point found");
  }

  it("recovery always ends in the complete old or new state: old before the commit point, new after", () => {
    const { total, commitPoint } = profile();
    expect(total).toBeGreaterThan(10);
    for (let n = 1; n <= total + 1; n++) {
      const { old, next } = fresh();
      const run = withFrozenDisk(n, () => commitFiles(root, all()));
      expect(run.frozen, `operation ${n}`).toBe(n <= total);
      recoverTransactions(root);
      expect(snapshot(), `crash before operation ${n} (commit point ${commitPoint})`).toEqual(
        n <= commitPoint ? old : next,
      );
      expect(existsSync(join(root, ".svc-tmp")) ? readdirSync(join(root, ".svc-tmp")) : []).toEqual([]);
    }
  });

  it("a crash during recovery is finished by the next recovery, on both sides of the commit point", () => {
    const { commitPoint } = profile();
    for (const crashAt of [commitPoint, commitPoint + 1, commitPoint + 3]) {
      let recoveryOps = 0;
      for (let m = 1; ; m++) {
        const { old, next } = fresh();
        withFrozenDisk(crashAt, () => commitFiles(root, all()));
        const during = withFrozenDisk(m, () => recoverTransactions(root));
        recoverTransactions(root);
        expect(snapshot(), `commit crashed at ${crashAt}, recovery at ${m}`).toEqual(
          crashAt <= commitPoint ? old : next,
        );
        if (!during.frozen) {
          recoveryOps = m;
          break;
        }
      }
      expect(recoveryOps).toBeGreaterThan(1);
    }
  });
});

describe("lock files", () => {
  const holder = (over: Partial<LockHolder>): LockHolder => ({
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    purpose: "test",
    token: "t",
    ...over,
  });

  it("tells a live holder from a dead one: gone pid, reused pid, this process's previous life; another host counts as live", async () => {
    const sleeper = spawn("sleep", ["30"]);
    try {
      await new Promise((r) => setTimeout(r, 100));
      const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
      expect(holderAlive(holder({ pid: sleeper.pid!, startedAt: new Date().toISOString() }))).toBe(true);
      // The pid exists but its process started after the lock was taken: the pid was reused.
      expect(holderAlive(holder({ pid: sleeper.pid!, startedAt: hourAgo }))).toBe(false);
      expect(holderAlive(holder({ pid: 4194305 }))).toBe(false);
      expect(holderAlive(holder({ pid: 4194305, host: "another-host" }))).toBe(true);
      // Our own pid on a lock we do not hold: a previous process that had the same pid.
      expect(holderAlive(holder({ token: "not-ours" }))).toBe(false);
    } finally {
      sleeper.kill();
    }
  });

  it("tells a reused pid by the holder's start tick and boot id, never by comparing wall-clock time with /proc", async () => {
    const sleeper = spawn("sleep", ["30"]);
    try {
      await new Promise((r) => setTimeout(r, 100));
      const stat = readFileSync(`/proc/${sleeper.pid}/stat`, "utf8");
      const startTicks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
      const bootId = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
      // A wall clock an hour off (a VM whose clock was stepped) does not make the live holder dead.
      const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
      expect(holderAlive(holder({ pid: sleeper.pid!, startedAt: hourAgo, startTicks, bootId }))).toBe(true);
      // The same pid with another start tick, or on another boot, is another process.
      expect(holderAlive(holder({ pid: sleeper.pid!, startTicks: startTicks - 1, bootId }))).toBe(false);
      expect(holderAlive(holder({ pid: sleeper.pid!, startTicks, bootId: "another-boot" }))).toBe(false);
      // What this process writes into a lock it takes names its own start tick and boot.
      const path = join(root, "ticks.lock");
      const mine = tryLock(path, "ticks");
      const written = JSON.parse(readFileSync(path, "utf8")) as LockHolder;
      expect(written).toMatchObject({ pid: process.pid, bootId });
      expect(written.startTicks).toBeGreaterThan(0);
      if (mine.ok) mine.release();
    } finally {
      sleeper.kill();
    }
  });

  it("takes over a dead holder's lock, refuses a live one naming it, and clears old leftovers", () => {
    const path = join(root, "x.lock");
    writeFileSync(path, `${JSON.stringify(holder({ pid: 4194305, token: "dead" }))}\n`);
    const first = tryLock(path, "first");
    expect(first.ok).toBe(true);
    const second = tryLock(path, "second");
    expect(second).toMatchObject({ ok: false, holder: { pid: process.pid, purpose: "first" } });
    if (first.ok) first.release();
    expect(existsSync(path)).toBe(false);
    writeFileSync(`${path}.leftover`, "");
    utimesSync(`${path}.leftover`, new Date(Date.now() - 120_000), new Date(Date.now() - 120_000));
    writeFileSync(`${path}.fresh`, "");
    removeLeftovers(path);
    expect(readdirSync(root).filter((n) => n.startsWith("x.lock"))).toEqual(["x.lock.fresh"]);
  });
});
