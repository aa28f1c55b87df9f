import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { zipCapsFromPolicy } from "../../src/validation/package-analysis.ts";
import { validatePackage } from "../../src/validation/runner.ts";
import { type ByteSource, bufferSource, readZipStructure } from "../../src/validation/zip/reader.ts";
import { gameBuilds, manifestFor, policy, sidecarFor } from "./fixtures.ts";

/**
 * Per-file hashes come from the runner's own pass: the list equals what Info-ZIP's unzip and
 * sha256sum make of the same package, and no entry's bytes are read a second time for it.
 */
let work = "";
let packageBytes: Buffer;
const TREE: Record<string, Buffer | string> = {
  "svc-mod.json": `${JSON.stringify(manifestFor(), null, 2)}\n`,
  "Binaries/Win64/BetterHud.dll": Buffer.concat([Buffer.from("MZ"), randomBytes(40_000)]),
  "Content/Paks/deep/er/still/BetterHud_P.pak": randomBytes(70_000),
  "Content/Paks/deep/readme.txt": "nested text\n".repeat(500),
  "config/empty.ini": "",
  "README.md": "# Better HUD\n",
};

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "svc-file-hashes-"));
  const tree = join(work, "tree");
  for (const [path, data] of Object.entries(TREE)) {
    mkdirSync(dirname(join(tree, path)), { recursive: true });
    writeFileSync(join(tree, path), data);
  }
  // zip -r writes a folder entry for every directory, as modders' tools do.
  execFileSync("zip", ["-q", "-r", "-X", join(work, "pkg.zip"), "."], { cwd: tree });
  packageBytes = readFileSync(join(work, "pkg.zip"));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const CAPS = zipCapsFromPolicy(policy());

function independentHashes(): Array<{ path: string; sizeBytes: number; sha256: string }> {
  const out = join(work, "unzipped");
  rmSync(out, { recursive: true, force: true });
  execFileSync("unzip", ["-q", join(work, "pkg.zip"), "-d", out]);
  const listing = execFileSync("sh", ["-c", "find . -type f -print0 | sort -z | xargs -0 sha256sum"], {
    cwd: out,
    encoding: "utf8",
  });
  return listing
    .trim()
    .split("\n")
    .map((line) => {
      const [sha256, path] = [line.slice(0, 64), line.slice(66).replace(/^\.\//, "")];
      return { path, sizeBytes: readFileSync(join(out, path)).length, sha256 };
    });
}

function run(source: { bytes: Uint8Array } | { source: ByteSource }) {
  return validatePackage({
    package: source,
    sidecar: sidecarFor(packageBytes),
    policy: policy(),
    catalog: null,
    gameBuilds: gameBuilds(),
    scanner: null,
    clock: () => new Date("2026-11-21T10:00:00.000Z"),
  });
}

describe("per-file hashes from the validator's pass", () => {
  it("lists every file entry (folders excluded) with the size and sha256 unzip + sha256sum give", async () => {
    const structure = readZipStructure(packageBytes, CAPS);
    expect(structure.entries.filter((e) => e.isDirectory).length).toBeGreaterThanOrEqual(7);
    const { files } = await run({ bytes: packageBytes });
    expect(files).not.toBeNull();
    const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : 1);
    expect([...files!].sort(byPath)).toEqual(independentHashes().sort(byPath));
    expect(files!.map((f) => f.path).sort()).toEqual(Object.keys(TREE).sort());
  });

  it("reads each entry's bytes once: the hashes add no read of the package", async () => {
    const reads: Array<{ offset: number; length: number }> = [];
    const plain = bufferSource(packageBytes);
    const watched: ByteSource = {
      size: plain.size,
      read(offset, length) {
        reads.push({ offset, length });
        return plain.read(offset, length);
      },
    };
    const { files } = await run({ source: watched });
    expect(files).toHaveLength(Object.keys(TREE).length);
    // The package sha256 is one pass over the whole file (one chunk at this size).
    expect(reads.filter((r) => r.offset === 0 && r.length >= packageBytes.length)).toHaveLength(1);
    const structure = readZipStructure(packageBytes, CAPS);
    for (const entry of structure.entries) {
      if (entry.isDirectory || entry.compressedSize === 0) continue;
      const dataReads = reads.filter(
        (r) => r.offset === entry.dataOffset && r.length === entry.compressedSize,
      ).length;
      // The manifest is also inflated early (its modConfig names the files the checks keep).
      expect(dataReads, entry.name).toBe(entry.name === "svc-mod.json" ? 2 : 1);
    }
  });

  it("gives no list when an entry does not inflate to its declared bytes", async () => {
    const broken = Buffer.from(packageBytes);
    const structure = readZipStructure(broken, CAPS);
    const pak = structure.entries.find((e) => e.name.endsWith("BetterHud_P.pak"))!;
    broken[pak.dataOffset + 10] = broken[pak.dataOffset + 10]! ^ 0xff;
    const { report, files } = await run({ bytes: broken });
    expect(files).toBeNull();
    expect(report.passed).toBe(false);
  });
});
