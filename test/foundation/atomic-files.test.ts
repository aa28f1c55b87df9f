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
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { commitFiles, recoverTransactions, SimulatedCrash } from "../../src/catalog/atomic-files.ts";

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

  it("leaves every file byte-identical when a rename fails part-way", () => {
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
  });

  it("rolls a crashed transaction back on recovery, byte for byte", () => {
    const before = snapshot();
    expect(() =>
      commitFiles(root, changes(), {
        beforeApply: (i) => {
          if (i === 3) throw new SimulatedCrash("killed");
        },
      }),
    ).toThrow(SimulatedCrash);
    // Mid-crash the tree is half-applied; recovery restores it.
    expect(readFileSync(join(root, "api/v1/catalog.json"), "utf8")).toBe("new catalog");
    expect(recoverTransactions(root)).toEqual({ rolledBack: 1 });
    expect(snapshot()).toEqual(before);
  });

  it("recovers a crash before the next commit starts", () => {
    const before = snapshot();
    expect(() =>
      commitFiles(root, changes(), {
        beforeApply: (i) => {
          if (i === 1) throw new SimulatedCrash("killed");
        },
      }),
    ).toThrow();
    const result = commitFiles(root, { write: new Map([["api/v1/other.json", "x"]]) });
    expect(result.written).toEqual(["api/v1/other.json"]);
    expect(snapshot()).toEqual({ ...before, "api/v1/other.json": "x" });
  });

  it("refuses paths that leave the tree", () => {
    expect(() => commitFiles(root, { write: new Map([["../escape.json", "x"]]) })).toThrow(
      /outside the tree/,
    );
    expect(existsSync(join(root, "..", "escape.json"))).toBe(false);
  });
});
