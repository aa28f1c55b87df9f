import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { crc32, crc32Table, hasNativeCrc32 } from "../../src/validation/zip/crc32.ts";
import { analyzeCollisions, analyzeName } from "../../src/validation/zip/names.ts";
import { inflateEntry, readZipStructure, type ZipCaps } from "../../src/validation/zip/reader.ts";
import { sniffFileType } from "../../src/validation/zip/sniff.ts";
import { buildZip, extraBlock, fakeElf, fakePe, fakePng } from "./zip-builder.ts";

const caps: ZipCaps = {
  maxEntries: 100,
  maxNameBytes: 200,
  maxPathDepth: 8,
  maxEntryUncompressedBytes: 10 * 1024 * 1024,
  maxTotalUncompressedBytes: 20 * 1024 * 1024,
  maxCompressionRatio: 100,
  compressionRatioMinBytes: 64 * 1024,
};

/**
 * The findings of an archive, read both ways the validator reads packages: whole in memory (one view
 * over every byte) and through positional reads of a source that holds none of them, as a package
 * over 16 MiB is read. The two must agree, hostile layouts included.
 */
function codes(bytes: Buffer, c: ZipCaps = caps): string[] {
  const whole = readZipStructure(bytes, c);
  const windowed = readZipStructure(
    { size: bytes.length, read: (offset, length) => Buffer.from(bytes.subarray(offset, offset + length)) },
    c,
  );
  expect(windowed).toEqual(whole);
  return whole.findings.map((f) => f.code);
}

function nameCodes(
  name: string | Buffer,
  extra: Partial<Parameters<typeof buildZip>[0][number]> = {},
): string[] {
  const s = readZipStructure(buildZip([{ name, data: "x", ...extra }]), caps);
  return s.entries.flatMap((e) => analyzeName(e, caps)).map((f) => f.code);
}

describe("crc32", () => {
  it("native and table implementations agree with the standard check value", () => {
    const check = Buffer.from("123456789");
    expect(crc32(check)).toBe(0xcbf43926);
    expect(crc32Table(check)).toBe(0xcbf43926);
    expect(hasNativeCrc32).toBe(true);
  });
});

describe("readZipStructure on good archives", () => {
  it("reads a well-formed archive, stored and deflated, and inflates with CRC checks", () => {
    const bytes = buildZip([
      { name: "svc-mod.json", data: '{"id":"a"}' },
      { name: "Binaries/", data: "" },
      { name: "Binaries/Win64/a.dll", data: fakePe(4096), method: 0 },
    ]);
    const s = readZipStructure(bytes, caps);
    expect(s.findings).toEqual([]);
    expect(s.unsafeToInflate).toBe(false);
    expect(s.entries.map((e) => [e.name, e.isDirectory])).toEqual([
      ["svc-mod.json", false],
      ["Binaries/", true],
      ["Binaries/Win64/a.dll", false],
    ]);
    const manifest = inflateEntry(bytes, s.entries[0]!);
    expect(manifest.ok && manifest.data.toString()).toBe('{"id":"a"}');
  });

  it("accepts archives written by Info-ZIP, including data descriptors from streamed input", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-zip-"));
    try {
      writeFileSync(join(dir, "a.txt"), "hello ".repeat(1000));
      writeFileSync(join(dir, "b.bin"), Buffer.alloc(3000, 1));
      execFileSync("zip", ["-q", "-r", "out.zip", "a.txt", "b.bin"], { cwd: dir });
      const bytes = readFileSync(join(dir, "out.zip"));
      const s = readZipStructure(bytes, caps);
      expect(s.findings).toEqual([]);
      for (const e of s.entries) expect(inflateEntry(bytes, e).ok).toBe(true);
      // `zip -` writes from a pipe, so it must use data descriptors; by default it also writes ZIP64
      // records (refused), and -fz- turns them off.
      const zip64 = execFileSync("sh", ["-c", "cat a.txt | zip -q - -"], { cwd: dir });
      expect(readZipStructure(zip64, caps).findings.map((f) => f.code)).toContain("zip64_unsupported");
      const streamed = execFileSync("sh", ["-c", "cat a.txt | zip -q -fz- - -"], { cwd: dir });
      const t = readZipStructure(streamed, caps);
      expect(t.findings).toEqual([]);
      expect(t.entries[0]!.flags & 0x0008).toBe(0x0008);
      expect(inflateEntry(streamed, t.entries[0]!).ok).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("accepts an empty archive and an archive comment without record signatures", () => {
    expect(codes(buildZip([]))).toEqual([]);
    expect(
      codes(buildZip([{ name: "a.txt", data: "a" }], { comment: Buffer.from("built by hand") })),
    ).toEqual([]);
  });

  it("accepts data descriptors written by hand", () => {
    const bytes = buildZip([{ name: "a.txt", data: "abc".repeat(50), dataDescriptor: true }]);
    const s = readZipStructure(bytes, caps);
    expect(s.findings).toEqual([]);
    expect(inflateEntry(bytes, s.entries[0]!).ok).toBe(true);
  });

  it("accepts a descriptor's local header that keeps the sizes it knew (libarchive writes the uncompressed size)", () => {
    const data = "abc".repeat(50);
    expect(
      codes(buildZip([{ name: "a.txt", data, dataDescriptor: true, local: { uncompressedSize: 150 } }])),
    ).toEqual([]);
    // A value that is neither the placeholder 0 nor the central one still disagrees.
    expect(
      codes(buildZip([{ name: "a.txt", data, dataDescriptor: true, local: { uncompressedSize: 149 } }])),
    ).toEqual(["local_header_mismatch"]);
  });
});

describe("readZipStructure refuses bad structure", () => {
  const good = () => buildZip([{ name: "a.txt", data: "aaaa" }]);

  it("non-ZIP files", () => {
    expect(codes(Buffer.from("7z\xbc\xaf\x27\x1c not a zip", "latin1"))).toEqual(["not_a_zip"]);
    expect(codes(Buffer.alloc(0))).toEqual(["not_a_zip"]);
    expect(codes(fakePng())).toEqual(["not_a_zip"]);
  });

  it("truncated end records", () => {
    expect(codes(good().subarray(0, good().length - 5))).toEqual(["eocd_missing"]);
    expect(
      codes(buildZip([{ name: "a.txt", data: "a" }], { comment: Buffer.from("hello"), truncate: 2 })),
    ).toEqual(["eocd_missing"]);
  });

  it("lying end records", () => {
    expect(
      codes(
        buildZip(
          [
            { name: "a", data: "a" },
            { name: "b", data: "b" },
          ],
          { eocd: { totalEntries: 1 } },
        ),
      ),
    ).toContain("eocd_invalid");
    expect(codes(buildZip([{ name: "a", data: "a" }], { eocd: { totalEntries: 2 } }))).toContain(
      "eocd_invalid",
    );
    expect(codes(buildZip([{ name: "a", data: "a" }], { eocd: { cdSize: 5000 } }))).toEqual(["eocd_invalid"]);
    expect(codes(buildZip([{ name: "a", data: "a" }], { eocd: { cdOffset: 3 } }))).toContain(
      "central_directory_invalid",
    );
    expect(codes(buildZip([{ name: "a", data: "a" }], { eocd: { disk: 1 } }))).toEqual(["eocd_invalid"]);
  });

  it("an archive comment that hides a second end record", () => {
    const inner = good();
    expect(codes(buildZip([{ name: "a", data: "a" }], { comment: inner }))).toEqual(["eocd_invalid"]);
  });

  it("ZIP64 markers", () => {
    expect(
      codes(buildZip([{ name: "a", data: "a" }], { zip64Locator: true, eocd: { cdOffset: undefined } })),
    ).toContain("zip64_unsupported");
    expect(codes(buildZip([{ name: "a", data: "a" }], { eocd: { totalEntries: 0xffff } }))).toEqual([
      "zip64_unsupported",
    ]);
    const extra = Buffer.alloc(20);
    extra.writeUInt16LE(0x0001, 0);
    extra.writeUInt16LE(16, 2);
    expect(codes(buildZip([{ name: "a", data: "a", extra }]))).toContain("zip64_unsupported");
  });

  it("data before the first entry, between entries, before the central directory and after the end", () => {
    expect(codes(buildZip([{ name: "a", data: "a" }], { prefix: fakePe(200) }))).toContain(
      "data_before_first_entry",
    );
    expect(
      codes(
        buildZip([
          { name: "a", data: "a", gapAfter: Buffer.from("hidden") },
          { name: "b", data: "b" },
        ]),
      ),
    ).toEqual(["data_between_entries"]);
    expect(codes(buildZip([{ name: "a", data: "a", gapAfter: Buffer.from("hidden") }]))).toEqual([
      "data_between_entries",
    ]);
    expect(codes(buildZip([{ name: "a", data: "a" }], { trailing: Buffer.from("appended") }))).toEqual([
      "data_after_central_directory",
    ]);
    expect(codes(buildZip([{ name: "a", data: "a" }], { beforeEnd: Buffer.from("between") }))).toEqual([
      "data_after_central_directory",
    ]);
  });

  it("local headers that disagree with the central directory", () => {
    for (const local of [
      { name: "b.txt" },
      { method: 0 },
      { crc: 1 },
      { uncompressedSize: 9 },
      { compressedSize: 1 },
      { flags: 0x0800 },
    ]) {
      const found = codes(buildZip([{ name: "a.txt", data: "hello hello hello", local }]));
      expect(found, JSON.stringify(local)).toContain("local_header_mismatch");
    }
  });

  it("extra fields past the first read of a local header are checked the same way", () => {
    // The windowed reader reads 256 bytes past a local header's name first; these fields run past it.
    const name = `${"d".repeat(250)}.txt`;
    const path = extraBlock.unicodePath(name, name);
    expect(codes(buildZip([{ name, data: "x", extra: path }]))).toEqual([]);
    const late = Buffer.concat([
      extraBlock.raw(0x5455, Buffer.from([0])),
      path,
      extraBlock.raw(0x756e, Buffer.alloc(10)),
    ]);
    expect(codes(buildZip([{ name, data: "x", local: { extra: late } }]))).toEqual([
      "zip_extra_field_unsupported",
    ]);
    const other = extraBlock.unicodePath(name, `${"e".repeat(250)}.txt`);
    const s = readZipStructure(buildZip([{ name, data: "x", local: { extra: other } }]), caps);
    expect(s.entries[0]!.unicodePathName).toBe(`${"e".repeat(250)}.txt`);
  });

  it("overlapping entries (one local file shared by many central records)", () => {
    const entries = [
      { name: "a", data: "x".repeat(1000) },
      ...Array.from({ length: 5 }, () => ({ name: "a", shareLocalOf: 0 })),
    ];
    const s = readZipStructure(buildZip(entries), caps);
    expect(s.findings.map((f) => f.code)).toContain("overlapping_entries");
    expect(s.unsafeToInflate).toBe(true);
  });

  it("encryption, unusual methods and symlinks", () => {
    expect(codes(buildZip([{ name: "a", data: "a", flags: 1 }]))).toContain("encrypted_entry");
    expect(codes(buildZip([{ name: "a", data: "a", flags: 0x40 | 1 }]))).toContain("encrypted_entry");
    expect(codes(buildZip([{ name: "a", data: "aaa", method: 12 }]))).toEqual([
      "unsupported_compression_method",
    ]);
    expect(codes(buildZip([{ name: "a", data: "aaa", method: 14 }]))).toEqual([
      "unsupported_compression_method",
    ]);
    expect(nameCodes("link", { unixMode: 0o120777 })).toEqual(["symlink_entry"]);
    expect(nameCodes("fifo", { unixMode: 0o010644 })).toEqual(["symlink_entry"]);
  });

  it("caps apply before inflating: entry count, per-entry size, total size and ratio", () => {
    const many = buildZip(Array.from({ length: 101 }, (_, i) => ({ name: `f${i}`, data: "x" })));
    expect(codes(many)).toEqual(["too_many_entries"]);
    const big = buildZip([{ name: "a", data: Buffer.alloc(11 * 1024 * 1024) }]);
    expect(codes(big)).toEqual(expect.arrayContaining(["entry_too_large", "compression_ratio_exceeded"]));
    const lying = buildZip([
      { name: "a", data: "tiny", uncompressedSize: 0x7fffffff, local: { uncompressedSize: 0x7fffffff } },
    ]);
    expect(codes(lying)).toEqual(expect.arrayContaining(["entry_too_large", "total_uncompressed_too_large"]));
    const total = buildZip(
      Array.from({ length: 3 }, (_, i) => ({
        name: `r${i}`,
        data: Buffer.alloc(8 * 1024 * 1024, i),
        method: 0,
      })),
    );
    expect(codes(total)).toEqual(["total_uncompressed_too_large"]);
  });
});

describe("inflateEntry", () => {
  it("refuses a bad CRC", () => {
    const bytes = buildZip([{ name: "a", data: "hello", crc: 1234 }]);
    const s = readZipStructure(bytes, caps);
    expect(s.findings).toEqual([]);
    const r = inflateEntry(bytes, s.entries[0]!);
    expect(r).toMatchObject({ ok: false, code: "crc_mismatch" });
  });

  it("stops at the declared size when an entry inflates to more (a lying size)", () => {
    const data = Buffer.alloc(1 << 20, 0x41);
    const bytes = buildZip([{ name: "a", data, uncompressedSize: 1000, crc: crc32(data.subarray(0, 1000)) }]);
    const s = readZipStructure(bytes, caps);
    const r = inflateEntry(bytes, s.entries[0]!);
    expect(r).toMatchObject({ ok: false, code: "declared_size_mismatch" });
  });

  it("refuses an entry that inflates to less, corrupt deflate data and bytes hidden after the stream", () => {
    const data = Buffer.from("hello world");
    const short = buildZip([{ name: "a", data, uncompressedSize: 50 }]);
    expect(inflateEntry(short, readZipStructure(short, caps).entries[0]!)).toMatchObject({
      code: "declared_size_mismatch",
    });
    const corrupt = buildZip([{ name: "a", data, compressed: Buffer.from([0xff, 0xff, 0xff, 0xff]) }]);
    expect(inflateEntry(corrupt, readZipStructure(corrupt, caps).entries[0]!)).toMatchObject({
      code: "corrupt_entry_data",
    });
    const hidden = buildZip([
      { name: "a", data, compressed: Buffer.concat([zlib.deflateRawSync(data), Buffer.from("PAYLOAD")]) },
    ]);
    expect(inflateEntry(hidden, readZipStructure(hidden, caps).entries[0]!)).toMatchObject({
      code: "declared_size_mismatch",
    });
  });
});

describe("name safety", () => {
  it.each([
    ["../evil.dll", "path_traversal"],
    ["a/../../evil", "path_traversal"],
    ["..\\evil", "path_traversal"],
    ["/etc/passwd", "absolute_path"],
    ["C:/Windows/evil.dll", "absolute_path"],
    ["c:evil", "absolute_path"],
    ["//server/share/x", "absolute_path"],
    ["a\\b.txt", "backslash_in_name"],
    ["a\u0000b", "control_character_in_name"],
    ["a\u0007b", "control_character_in_name"],
    ["readme\u202Etxt.exe", "bidi_character_in_name"],
    ["file.txt:stream", "colon_in_name"],
    ["what?.txt", "forbidden_character_in_name"],
    ["folder./a.txt", "trailing_dot_or_space"],
    ["a.txt ", "trailing_dot_or_space"],
    ["CON", "reserved_device_name"],
    ["sub/nul.txt", "reserved_device_name"],
    ["com1.dll", "reserved_device_name"],
    ["LPT9", "reserved_device_name"],
    ["a//b", "empty_path_segment"],
    ["a/./b", "dot_path_segment"],
    ["", "empty_path_segment"],
    [`${"x".repeat(201)}`, "name_too_long"],
    [`${"d/".repeat(8)}f`, "path_too_deep"],
  ])("%j -> %s", (name, code) => {
    expect(nameCodes(name)).toContain(code);
  });

  it("ordinary names pass", () => {
    for (const name of [
      "svc-mod.json",
      "Binaries/Win64/My Mod.dll",
      "Content/Paks/x_P.pak",
      "docs/über.txt",
      "console.txt",
    ]) {
      expect(nameCodes(name), name).toEqual([]);
    }
  });

  it("non-UTF-8 names without the flag, and invalid UTF-8 with it", () => {
    expect(nameCodes(Buffer.from([0x61, 0xe9, 0x62]))).toEqual(["non_utf8_name"]);
    expect(nameCodes(Buffer.from([0x61, 0xc3, 0x28]), { flags: 0x0800 })).toEqual(["non_utf8_name"]);
  });

  it("a Unicode Path extra field that names the entry differently", () => {
    const text = Buffer.from("evil.exe");
    const extra = Buffer.alloc(9 + text.length);
    extra.writeUInt16LE(0x7075, 0);
    extra.writeUInt16LE(5 + text.length, 2);
    extra.writeUInt8(1, 4);
    text.copy(extra, 9);
    expect(nameCodes("readme.txt", { extra })).toEqual(["name_field_mismatch"]);
  });

  it("unsafe modes and types the name does not say", () => {
    expect(nameCodes("a.dll", { unixMode: 0o104755 })).toEqual(["unsafe_file_mode"]);
    expect(nameCodes("a.txt", { unixMode: 0o100666 })).toEqual(["unsafe_file_mode"]);
    expect(nameCodes("a.txt", { unixMode: 0o102644 })).toEqual(["unsafe_file_mode"]);
    expect(nameCodes("a/", { data: "", unixMode: 0o041755 })).toEqual(["unsafe_file_mode"]);
    expect(nameCodes("a", { data: "", unixMode: 0o040755 })).toEqual(["entry_type_mismatch"]);
    expect(nameCodes("a/", { data: "", unixMode: 0o100644 })).toEqual(["entry_type_mismatch"]);
    expect(nameCodes("a", { data: "", madeBy: 0x0014, externalAttributes: 0x10 })).toEqual([
      "entry_type_mismatch",
    ]);
    // Executable and group-writable files, MS-DOS folders with their '/', mode-less entries pass.
    expect(nameCodes("a.exe", { unixMode: 0o100775 })).toEqual([]);
    expect(nameCodes("a/", { data: "", madeBy: 0x0014, externalAttributes: 0x10 })).toEqual([]);
    expect(nameCodes("a.txt", { madeBy: 0x0014, externalAttributes: 0x20 })).toEqual([]);
    expect(nameCodes("a.txt", { unixMode: 0o000644 })).toEqual([]);
  });

  it("collisions: duplicates, case twins, NFC twins, file/folder", () => {
    const collide = (names: string[]) =>
      analyzeCollisions(
        readZipStructure(buildZip(names.map((name) => ({ name, data: "x" }))), caps).entries,
      ).map((f) => f.code);
    expect(collide(["a.txt", "a.txt"])).toEqual(["duplicate_entry_name"]);
    expect(collide(["Mod.dll", "mod.DLL"])).toEqual(["case_insensitive_collision"]);
    expect(collide(["caf\u00e9.txt", "cafe\u0301.txt"])).toEqual(["unicode_normalization_collision"]);
    expect(collide(["a", "a/b"])).toEqual(["file_directory_collision"]);
    expect(collide(["a/b", "a/c", "A/d"])).toEqual([]);
    // One non-ASCII name makes normalization matter for all: U+212A KELVIN SIGN is "K" in NFC,
    // whichever comes first.
    expect(collide(["K.txt", "\u212a.txt"])).toEqual(["unicode_normalization_collision"]);
    expect(collide(["\u212a.txt", "K.txt"])).toEqual(["unicode_normalization_collision"]);
    // The parent-folder memo: siblings apart, a folder that is also a file seen late, deep first.
    expect(collide(["a/b/c", "a/b/d", "x/y", "a/b/e", "a/b"])).toEqual(["file_directory_collision"]);
    expect(collide(["p/q/r/s", "p/q", "p/t"])).toEqual(["file_directory_collision"]);
    expect(collide(["ab/c", "a/b", "a"])).toEqual(["file_directory_collision"]);
    expect(collide(["m/", "m/n", "m/o/", "m/o/p"])).toEqual([]);
  });
});

describe("sniffFileType", () => {
  it.each([
    [fakePe(), "pe"],
    [fakeElf(), "elf"],
    [Buffer.from([0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1]), "macho"],
    [Buffer.from([0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 2]), "macho"],
    [Buffer.from([0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 52]), "java_class"],
    [buildZip([]), "zip"],
    [Buffer.from([0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c, 0, 4]), "7z"],
    [Buffer.from("Rar!\x1a\x07\x01\x00", "latin1"), "rar"],
    [zlib.gzipSync("x"), "gzip"],
    [fakePng(), "png"],
    [Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0]), "jpeg"],
    [Buffer.concat([Buffer.from("DDS "), Buffer.alloc(124)]), "dds"],
    [Buffer.from([0x4c, 0, 0, 0, 1, 0x14, 2, 0, 0, 0]), "lnk"],
    [Buffer.from("#!/bin/sh\necho hi\n"), "shebang"],
    [Buffer.from('{"a": 1}\n'), "text"],
    [Buffer.alloc(0), "empty"],
    [Buffer.from([0, 1, 2, 3, 0xff]), "unknown"],
  ])("%#: %s", (bytes, kind) => {
    expect(sniffFileType(bytes)).toBe(kind);
  });
});
