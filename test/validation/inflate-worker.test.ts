/**
 * The inflate worker (issue 27, item 4): a worker thread inflates, verifies and hashes a share of a
 * package's entries beside the main thread. Whatever share it takes, the outcome (report, per-file
 * hashes, inventory) is the one the main thread alone gives, failures included.
 */
import { deflateRawSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { InflateWorker, inspectEntry, sharedCopy } from "../../src/validation/inflate-pool.ts";
import { zipCapsFromPolicy } from "../../src/validation/package-analysis.ts";
import { validatePackage } from "../../src/validation/runner.ts";
import { readZipStructure } from "../../src/validation/zip/reader.ts";
import type { ValidationInput, ValidationOutcome } from "../../src/validation/types.ts";
import { catalog, gameBuilds, MOD_CONFIG, packageEntries, policy, sidecarFor } from "./fixtures.ts";
import { buildZip, type FixtureEntry, fakePng } from "./zip-builder.ts";

/** More entries than two chunks of the shared counter hold, of every kind the sniffer tells apart. */
function manyEntries(count: number): FixtureEntry[] {
  return Array.from({ length: count }, (_, i) => ({
    name: `Content/Data/d${Math.floor(i / 100)}/f${String(i).padStart(4, "0")}.${i % 7 === 0 ? "png" : "txt"}`,
    data:
      i % 7 === 0 ? fakePng() : `line ${i}\n`.repeat(1 + (i % 40)) + (i % 13 === 0 ? "x".repeat(9000) : ""),
    ...(i % 11 === 0 ? { method: 0 } : {}),
  }));
}

async function outcome(
  bytes: Buffer,
  sidecar: unknown,
  inflateWorker: "never" | "always" | "worker_only",
): Promise<ValidationOutcome> {
  const input: ValidationInput = {
    package: { bytes },
    sidecar,
    policy: policy(),
    catalog: catalog(),
    gameBuilds: gameBuilds(),
    scanner: { description: "fake scanner (always clean)", scan: async () => ({ status: "clean" }) },
    clock: () => new Date("2026-11-21T10:00:00.000Z"),
    inflateWorker,
  };
  return validatePackage(input);
}

describe("the inflate worker", () => {
  it("gives the main thread's outcome for a package that passes", async () => {
    const spec = { modConfig: MOD_CONFIG, extra: manyEntries(700) };
    const bytes = buildZip(packageEntries(spec));
    const sidecar = sidecarFor(bytes, spec);
    const inline = await outcome(bytes, sidecar, "never");
    expect(inline.report.passed).toBe(true);
    expect(inline.files).toHaveLength(inline.inventory!.files.length);
    expect(await outcome(bytes, sidecar, "always")).toEqual(inline);
    expect(await outcome(bytes, sidecar, "worker_only")).toEqual(inline);
  });

  it("gives the main thread's outcome, in archive order, with a bad CRC, corrupt deflate data and lying sizes", async () => {
    const bad: FixtureEntry[] = [
      { name: "Content/Bad/crc.txt", data: "the CRC of this entry is wrong\n", crc: 0xdeadbeef },
      {
        name: "Content/Bad/corrupt.txt",
        data: "x".repeat(500),
        compressed: Buffer.from([0xff, 0xfe, 0xfd, 0xfc]),
      },
      { name: "Content/Bad/longer.txt", data: "y".repeat(300), uncompressedSize: 200 },
      {
        name: "Content/Bad/trailing.txt",
        data: "z".repeat(300),
        compressed: Buffer.concat([deflateRawSync(Buffer.from("z".repeat(300))), Buffer.from("hidden")]),
      },
    ];
    const many = manyEntries(600);
    const spec = {
      extra: [...many.slice(0, 250), bad[0]!, ...many.slice(250, 520), ...bad.slice(1), ...many.slice(520)],
    };
    const bytes = buildZip(packageEntries(spec));
    const sidecar = sidecarFor(bytes, spec);
    const inline = await outcome(bytes, sidecar, "never");
    const failed = inline.report.checks.find((c) => c.id === "file_signature")!;
    expect(failed.reasonCode).toBe("crc_mismatch");
    expect(failed.log.join("\n")).toContain("Content/Bad/crc.txt: CRC-32 is");
    expect(failed.log.join("\n")).toContain("Content/Bad/corrupt.txt: deflate data is corrupt");
    expect(failed.log.join("\n")).toContain("Content/Bad/trailing.txt: 6 byte(s) hide after the end");
    expect(inline.inventory!.complete).toBe(false);
    expect(await outcome(bytes, sidecar, "always")).toEqual(inline);
    expect(await outcome(bytes, sidecar, "worker_only")).toEqual(inline);
  });

  it("answers every chunk on the worker thread as the main thread does, and a worker gone leaves them to the main thread", async () => {
    const bytes = sharedCopy(
      buildZip([
        ...manyEntries(900),
        { name: "Content/Bad/crc.txt", data: "the CRC of this entry is wrong\n", crc: 0xdeadbeef },
      ]),
    );
    const caps = zipCapsFromPolicy(policy());
    const entries = readZipStructure(bytes, caps).entries;
    const expected = entries.map((e) => (e.isDirectory ? undefined : inspectEntry(bytes, e)));
    expect(expected.at(-1)!.verdict).toMatchObject({ ok: false, code: "crc_mismatch" });
    expect(new Set(expected.map((r) => r?.kind))).toEqual(new Set(["png", "text", null]));

    const worker = InflateWorker.start(bytes, caps)!;
    try {
      expect(await worker.finish(entries, { mainThreadHelps: false })).toEqual(expected);
      // Every chunk (256 entries each) came from the worker thread, and every sound entry's answer.
      expect(worker.workerChunks).toBe(Math.ceil(entries.length / 256));
      expect(worker.workerEntries).toBe(expected.filter((r) => r?.verdict.ok).length);
    } finally {
      await worker.close();
    }

    const gone = InflateWorker.start(bytes, caps)!;
    await gone.close();
    expect(await gone.finish(entries, { mainThreadHelps: false })).toEqual(expected);
    expect(gone.workerChunks).toBe(0);
  });

  it("uses no answer for an entry the main thread's reader found elsewhere, or sized, or checked otherwise", async () => {
    const bytes = sharedCopy(buildZip(manyEntries(600)));
    const caps = zipCapsFromPolicy(policy());
    const entries = readZipStructure(bytes, caps).entries;
    // What the worker read for these entries is not what the main thread's entries say (as where
    // a hostile central directory made the two walks differ): their answers must not be taken.
    const moved = entries.map((e, i) =>
      i === 3
        ? { ...e, crc32: (e.crc32 ^ 1) >>> 0 }
        : i === 300
          ? { ...e, uncompressedSize: e.uncompressedSize + 1 }
          : i === 500
            ? { ...e, dataOffset: e.dataOffset + 1, compressedSize: e.compressedSize - 1 }
            : e,
    );
    const expected = moved.map((e) => (e.isDirectory ? undefined : inspectEntry(bytes, e)));
    expect(expected[3]!.verdict).toMatchObject({ ok: false, code: "crc_mismatch" });
    expect(expected[300]!.verdict).toMatchObject({ ok: false, code: "declared_size_mismatch" });
    expect(expected[500]!.verdict.ok).toBe(false);
    const worker = InflateWorker.start(bytes, caps)!;
    try {
      expect(await worker.finish(moved, { mainThreadHelps: false })).toEqual(expected);
      expect(worker.workerChunks).toBe(Math.ceil(entries.length / 256));
      expect(worker.workerEntries).toBe(expected.filter((r) => r !== undefined).length - 3);
    } finally {
      await worker.close();
    }
    // A structure of another length than the end record announced: the main thread does it all.
    const fewer = InflateWorker.start(bytes, caps)!;
    try {
      const first = entries.slice(0, 400);
      expect(await fewer.finish(first)).toEqual(
        first.map((e) => (e.isDirectory ? undefined : inspectEntry(bytes, e))),
      );
      expect(fewer.workerChunks).toBe(0);
    } finally {
      await fewer.close();
    }
  });

  it("inflates nothing past the policy's caps, and starts on no package without a plain end record", () => {
    const bytes = sharedCopy(buildZip(manyEntries(300)));
    const caps = zipCapsFromPolicy(policy());
    expect(InflateWorker.start(sharedCopy(Buffer.concat([bytes, Buffer.from("x")])), caps)).toBeNull();
    expect(InflateWorker.start(Buffer.from(bytes), caps)).toBeNull();
    expect(InflateWorker.start(bytes, { ...caps, maxEntries: 299 })).toBeNull();
    expect(InflateWorker.start(bytes, { ...caps, maxTotalUncompressedBytes: Number.NaN })).toBeNull();
  });

  it("leaves the main thread every entry past the caps", async () => {
    const bytes = sharedCopy(buildZip(manyEntries(600)));
    const caps = zipCapsFromPolicy(policy());
    const entries = readZipStructure(bytes, caps).entries;
    const expected = entries.map((e) => (e.isDirectory ? undefined : inspectEntry(bytes, e)));
    // Caps so low that the worker inflates nothing: every answer comes from the main thread.
    const worker = InflateWorker.start(bytes, {
      ...caps,
      maxEntryUncompressedBytes: 0,
      maxTotalUncompressedBytes: 0,
    })!;
    try {
      expect(await worker.finish(entries, { mainThreadHelps: false })).toEqual(expected);
      expect(worker.workerEntries).toBe(0);
    } finally {
      await worker.close();
    }
  });
});
