import { deflateRawSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import {
  analyzeCollisions,
  analyzeCollisionsFully,
  analyzeName,
  analyzeNameFully,
  isReservedDeviceName,
} from "../../src/validation/zip/names.ts";
import { inflateFacts, inflateFactsBorrowed } from "../../src/validation/zip/inflate-raw.mjs";
import {
  bufferSource,
  inflateEntry,
  inflateEntryBorrowed,
  inflateOneShot,
  readZipStructure,
  reusedInflater,
  type ZipEntry,
} from "../../src/validation/zip/reader.ts";
import { buildZip } from "./zip-builder.ts";
import {
  FILE_KINDS,
  looksLikeText,
  sniffByEveryMagic,
  sniffFileType,
} from "../../src/validation/zip/sniff.ts";

// The validator takes shortcuts for the common case (plain ASCII names, content whose first byte
// opens no known magic). Each must give exactly what the general path gives.

const caps = { maxNameBytes: 200, maxPathDepth: 8 };

function entryNamed(name: string): ZipEntry {
  const rawName = Buffer.from(name, "utf8");
  return {
    index: 0,
    rawName,
    name,
    nameDecoded: true,
    utf8Flag: true,
    flags: 0x0800,
    method: 8,
    crc32: 0,
    compressedSize: 1,
    uncompressedSize: 1,
    localHeaderOffset: 0,
    dataOffset: 30,
    endOffset: 31,
    versionMadeBy: (3 << 8) | 20,
    externalAttributes: ((name.endsWith("/") ? 0o040755 : 0o100644) << 16) >>> 0,
    unixMode: name.endsWith("/") ? 0o040755 : 0o100644,
    isDirectory: name.endsWith("/"),
    unicodePathName: null,
  };
}

/** The per-character name tests as the validator ran them on every name before the shortcut. */
function characterFindings(name: string): string[] {
  const out: string[] = [];
  const add = (code: string, why: string) => out.push(`${code} ${JSON.stringify(name)}: ${why}`);
  if (name.includes("\u0000")) add("control_character_in_name", "name contains NUL");
  else if (/[\u0000-\u001f\u007f-\u009f]/.test(name))
    add("control_character_in_name", "name contains a control character");
  if (/[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/.test(name))
    add("bidi_character_in_name", "name contains a bidi override or invisible character");
  if (name.includes("\\")) add("backslash_in_name", "name contains a backslash");
  if (/^[/\\]{2}/.test(name)) add("absolute_path", "name is a UNC path");
  else if (/^[/\\]/.test(name)) add("absolute_path", "name is an absolute path");
  else if (/^[A-Za-z]:/.test(name)) add("absolute_path", "name starts with a drive letter");
  if (name.includes(":")) add("colon_in_name", "name contains ':' (drive or NTFS stream syntax)");
  if (/[<>"|?*]/.test(name)) add("forbidden_character_in_name", 'name contains one of < > " | ? *');
  return out;
}

const CHARACTER_CODES = new Set([
  "control_character_in_name",
  "bidi_character_in_name",
  "backslash_in_name",
  "absolute_path",
  "colon_in_name",
  "forbidden_character_in_name",
]);

describe("plain-name shortcut in analyzeName", () => {
  const samples = [
    ...Array.from({ length: 0xa1 }, (_, i) => String.fromCharCode(i)),
    ...[0xe9, 0x061c, 0x200b, 0x200f, 0x202a, 0x202e, 0x2060, 0x2066, 0x2069, 0x4e2d, 0xfeff].map((c) =>
      String.fromCharCode(c),
    ),
  ];
  it("finds the same character problems as the full tests, for every ASCII character and the risky Unicode ones", () => {
    let compared = 0;
    for (const c of samples) {
      for (const name of [`${c}a/b.txt`, `a${c}/b.txt`, `a/b${c}.txt`, `${c}${c}x`, `C${c}x`, `${c}`]) {
        const got = analyzeName(entryNamed(name), caps)
          .filter((f) => CHARACTER_CODES.has(f.code))
          .map((f) => `${f.code} ${f.message}`);
        expect(got, JSON.stringify(name)).toEqual(characterFindings(name));
        compared++;
      }
    }
    expect(compared).toBe(samples.length * 6);
  });
});

describe("clean-name shortcut in analyzeName", () => {
  const segments = [
    "a",
    "Content",
    "d00",
    ".hidden",
    "a b",
    "x.",
    "x ",
    "x. ",
    ".",
    "..",
    "...",
    "",
    "CON",
    "con.txt",
    "Con .txt",
    "conx",
    "com1",
    "COM9.dll",
    "LPT1",
    "nul",
    "aux.",
    "prn.a.b",
    "CONOUT$",
    "conin$.x",
    "Console",
    "lpt¹",
    "a:b",
    "a\\b",
  ];
  const names = new Set<string>();
  for (const a of segments) {
    names.add(a);
    names.add(`${a}/`);
    for (const b of segments) {
      names.add(`${a}/${b}`);
      names.add(`${a}/${b}/`);
      names.add(`Mod/${a}/x/${b}`);
    }
  }
  const depth = (n: number) => Array.from({ length: n }, (_, i) => `d${i}`).join("/");
  for (const n of [7, 8, 9]) for (const tail of ["", "/", "/f.txt"]) names.add(depth(n) + tail);
  names.add("a".repeat(200));
  names.add("a".repeat(201));
  names.add(`${"b/".repeat(99)}c`);

  it("answers exactly like every rule applied, for files, folders, links, unsafe modes and mismatched names or types", () => {
    let clean = 0;
    let compared = 0;
    for (const name of names) {
      const variants: ZipEntry[] = [
        entryNamed(name),
        { ...entryNamed(name), isDirectory: true },
        { ...entryNamed(name), unixMode: 0o120777, externalAttributes: (0o120777 << 16) >>> 0 },
        { ...entryNamed(name), unixMode: 0o010644 },
        { ...entryNamed(name), unixMode: 0o104755 },
        { ...entryNamed(name), unixMode: 0o100666 },
        { ...entryNamed(name), unixMode: 0o041777 },
        { ...entryNamed(name), unixMode: 0o040755 },
        { ...entryNamed(name), unixMode: 0o100644 },
        { ...entryNamed(name), unixMode: 0o000644 },
        { ...entryNamed(name), unixMode: null, externalAttributes: 0x10 },
        { ...entryNamed(name), unixMode: null, externalAttributes: 0x20 },
        { ...entryNamed(name), unixMode: null },
        { ...entryNamed(name), unicodePathName: `${name}x` },
        { ...entryNamed(name), unicodePathName: name },
        { ...entryNamed(name), nameDecoded: false },
      ];
      for (const entry of variants) {
        const full = analyzeNameFully(entry, caps);
        expect(analyzeName(entry, caps), JSON.stringify(entry.name)).toEqual(full);
        if (full.length === 0) clean++;
        compared++;
      }
    }
    // Both kinds were compared in numbers: clean names (the shortcut's answer) and refused ones.
    expect(clean).toBeGreaterThan(500);
    expect(compared - clean).toBeGreaterThan(10000);
  });
});

describe("first-byte shortcut in sniffFileType", () => {
  // Every magic the sniffer tests at offset 0, each followed by filler long enough for its length rules.
  const magics = [
    "MZ",
    "\x7fELF",
    "\xfe\xed\xfa\xce",
    "\xfe\xed\xfa\xcf",
    "\xce\xfa\xed\xfe",
    "\xcf\xfa\xed\xfe",
    "\xca\xfe\xba\xbe\x00\x00\x00\x02",
    "\x00asm",
    "PK\x03\x04",
    "PK\x05\x06",
    "PK\x07\x08",
    "7z\xbc\xaf\x27\x1c",
    "Rar!\x1a\x07",
    "\x1f\x8b",
    "BZh",
    "\xfd7zXZ\x00",
    "\x28\xb5\x2f\xfd",
    "MSCF",
    "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
    "L\x00\x00\x00\x01\x14\x02\x00",
    "\x89PNG\r\n\x1a\n",
    "\xff\xd8\xff",
    "GIF87a",
    "GIF89a",
    "BM",
    "RIFF",
    "\x00\x01\x00\x00\x00",
    "true",
    "OTTO",
    "Microsoft C/C++ MSF 7.00",
    "DDS ",
    "OggS",
    "fLaC",
    "ID3",
    "\xff\xfb",
    "%PDF-",
    "\xc1\x83\x2a\x9e",
    "#!",
  ];
  const withTar = Buffer.alloc(512, 0x20);
  withTar.write("ustar", 257, "latin1");
  const withTga = Buffer.concat([Buffer.alloc(40, 0x01), Buffer.from("TRUEVISION-XFILE.\0", "latin1")]);
  const withPak = Buffer.concat([
    Buffer.alloc(300, 0x02),
    Buffer.from([0xe1, 0x12, 0x6f, 0x5a]),
    Buffer.alloc(8),
  ]);
  const bodies = [
    ...magics.map((m) => Buffer.concat([Buffer.from(m, "latin1"), Buffer.alloc(300, 0x41)])),
    withTar,
    withTga,
    withPak,
    Buffer.from("health_1 = 2 ; 3\n".repeat(20)),
    Buffer.from([0x05, 0x06, 0x07]),
  ];

  it("gives what every magic test in order gives, whatever the first byte", () => {
    const kinds = new Set<string>();
    for (const body of bodies) {
      for (let first = 0; first < 256; first++) {
        const bytes = Buffer.from(body);
        bytes[0] = first;
        const expected = sniffByEveryMagic(bytes);
        expect(sniffFileType(bytes), `first byte ${first} of ${body.subarray(0, 8).toString("hex")}`).toBe(
          expected,
        );
        kinds.add(expected);
      }
      expect(sniffFileType(body)).toBe(sniffByEveryMagic(body));
    }
    // The samples reach the magic kinds as well as the kinds without one.
    for (const kind of ["pe", "zip", "mp3", "tar", "tga", "ue_pak", "text", "unknown"])
      expect(kinds).toContain(kind);
  });

  it("answers only kinds FILE_KINDS lists (the inflate worker sends a kind as its index there), each listed once", () => {
    const answered = new Set<string>([sniffFileType(Buffer.alloc(0))]);
    for (const body of bodies) answered.add(sniffFileType(body));
    for (const kind of answered) expect(FILE_KINDS).toContain(kind);
    expect(answered.size).toBeGreaterThan(30);
    expect(new Set(FILE_KINDS).size).toBe(FILE_KINDS.length);
  });
});

describe("the reused inflater", () => {
  const text = Buffer.from("health_1 = 2 ; 3\n".repeat(60));
  const deflated = deflateRawSync(text);
  // Stored (uncompressed) deflate blocks, as deflate writes for incompressible data.
  const stored = deflateRawSync(Buffer.from(Array.from({ length: 300 }, (_, i) => (i * 7919) % 251)), {
    level: 0,
  });
  const cases: Array<[string, Buffer, number]> = [
    ["a small text", deflated, text.length],
    ["stored blocks", stored, 300],
    ["an empty file", deflateRawSync(Buffer.alloc(0)), 0],
    ["a declared size one byte short", deflated, text.length - 1],
    ["a declared size far too small", deflated, 10],
    ["a declared size larger than the data", deflated, text.length + 5],
    ["bytes after the end of the stream", Buffer.concat([deflated, Buffer.from("hidden")]), text.length],
    ["a truncated stream", deflated.subarray(0, deflated.length - 4), text.length],
    ["no data at all", Buffer.alloc(0), 10],
    ["corrupt data", Buffer.from([0xff, 0xff, 0xff, 0xff, 0x00, 0x01]), 10],
    ["a block type that does not exist", Buffer.from([0x07, 0x00]), 10],
  ];

  it("is available on this runtime (else every small entry pays for a zlib stream of its own)", () => {
    expect(reusedInflater()).not.toBeNull();
  });

  it("answers every case as inflateRawSync does, also right after a failure", () => {
    const reused = reusedInflater()!;
    // Twice through, so each case also follows the others (a failure must not leak into the next).
    for (const round of [1, 2]) {
      for (const [label, data, declared] of cases) {
        const want = inflateOneShot(data, declared);
        const got = reused(data, declared);
        expect({ round, label, got }).toEqual({ round, label, got: want });
      }
    }
    expect(reused(deflated, text.length)).toEqual({ data: text, unread: 0 });
  });

  it("gives inflateFacts' answer through the borrowed output buffer too, case after case, stored and deflated", () => {
    const withMethod: Array<[string, Buffer, number, number]> = [
      ...cases.map(([label, data, declared]): [string, Buffer, number, number] => [label, data, declared, 8]),
      ["a stored entry", text, text.length, 0],
      ["a large entry (past the borrowed buffer)", deflateRawSync(Buffer.alloc(300_000, 0x61)), 300_000, 8],
    ];
    for (const round of [1, 2]) {
      for (const [label, data, declared, method] of withMethod) {
        const want = inflateFacts(data, method, declared);
        const got = inflateFactsBorrowed(data, method, declared);
        // Compared at once: the borrowed data is valid only until the next call.
        expect({ round, label, got }).toEqual({ round, label, got: want });
      }
    }
  });

  it("lends one buffer: a later call overwrites the data, so the runner copies what it keeps", () => {
    const other = Buffer.from("shield_2 = 4 ; 5\n".repeat(60));
    const first = inflateFactsBorrowed(deflated, 8, text.length) as { data: Buffer };
    const kept = Buffer.from(first.data);
    inflateFactsBorrowed(deflateRawSync(other), 8, other.length);
    expect(kept).toEqual(text);
    expect(first.data.equals(text)).toBe(false);
  });
});

describe("inflateEntryBorrowed", () => {
  it("gives inflateEntry's verdict and data for every entry of a package, including broken ones", () => {
    const files = [
      { name: "svc-mod.json", data: Buffer.from('{"id":"x"}') },
      ...Array.from({ length: 40 }, (_, i) => ({
        name: `Content/f${i}.txt`,
        data: Buffer.from(`line ${i}\n`.repeat(i * 7)),
      })),
    ];
    const zip = buildZip(files.map((f) => ({ name: f.name, data: f.data })));
    const structure = readZipStructure(zip, {
      maxEntries: 1000,
      maxNameBytes: 200,
      maxPathDepth: 8,
      maxEntryUncompressedBytes: 1 << 20,
      maxTotalUncompressedBytes: 1 << 24,
      maxCompressionRatio: 1000,
      compressionRatioMinBytes: 1 << 20,
    });
    expect(structure.findings).toEqual([]);
    const lying = structure.entries.map((entry, i) =>
      i % 3 === 1
        ? { ...entry, crc32: (entry.crc32 ^ 1) >>> 0 }
        : i % 3 === 2
          ? { ...entry, uncompressedSize: entry.uncompressedSize + 1 }
          : entry,
    );
    for (const entry of [...structure.entries, ...lying]) {
      const want = inflateEntry(zip, entry);
      const got = inflateEntryBorrowed(bufferSource(zip), entry);
      expect({ name: entry.name, got }).toEqual({ name: entry.name, got: want });
    }
  });
});

describe("fourth-character shortcut in isReservedDeviceName", () => {
  const devices = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];
  for (const prefix of ["COM", "LPT"]) for (const d of "123456789¹²³") devices.push(prefix + d);
  /** The rule without the shortcut, as it was: the stem before the first dot, trailing spaces off, uppercased. */
  function reference(segment: string): boolean {
    const dot = segment.indexOf(".");
    const stem = (dot === -1 ? segment : segment.slice(0, dot)).replace(/ +$/, "");
    return devices.includes(stem.toUpperCase());
  }
  it("answers as the full comparison does for devices, near misses and every fourth character", () => {
    const segments = ["Content", "Config", "console", "conin", "CONOUT", "Data", "com", "lpt0", "COM10"];
    for (const device of devices) {
      for (const cased of [device, device.toLowerCase(), device[0] + device.slice(1).toLowerCase()])
        for (const tail of ["", ".txt", " ", "  .dll", "x", "1", ".tar.gz"]) segments.push(cased + tail);
    }
    // Every fourth character after each device prefix, ASCII and a few that uppercase to ASCII.
    const fourths = [
      ...Array.from({ length: 128 }, (_, c) => String.fromCharCode(c)),
      "ı",
      "¹",
      "²",
      "³",
      "ſ",
      "K",
    ];
    for (const head of ["CON", "con", "COM", "lpt", "Nul", "aux", "PRN"])
      for (const fourth of fourths)
        for (const tail of ["", "N$", "n$", "UT$", "ut$", "x", "..", " "])
          segments.push(head + fourth + tail);
    let devicesSeen = 0;
    for (const segment of segments) {
      const want = reference(segment);
      if (want) devicesSeen++;
      expect({ segment, got: isReservedDeviceName(segment) }).toEqual({ segment, got: want });
      // The same segment inside a path, as isCleanPlainName asks.
      const path = `Mods/${segment}/x`;
      expect({ path, got: isReservedDeviceName(path, 5, 5 + segment.length) }).toEqual({ path, got: want });
    }
    // The dotless i: "conın$" uppercases to CONIN$.
    expect(isReservedDeviceName("conın$")).toBe(true);
    expect(devicesSeen).toBeGreaterThan(devices.length * 3);
  });
});

describe("looksLikeText", () => {
  /** The loop it replaced: any NUL or C0 control other than tab, LF, VT, FF, CR and ESC in the first 4 KiB. */
  function byLoop(bytes: Uint8Array): boolean {
    const n = Math.min(bytes.length, 4096);
    for (let i = 0; i < n; i++) {
      const b = bytes[i]!;
      if (b === 0) return false;
      if (b < 0x09 || (b > 0x0d && b < 0x20 && b !== 0x1b)) return false;
    }
    return true;
  }
  it("answers as the byte loop does for every byte value at the start, the middle, the 4 KiB edge and past it", () => {
    const text = Buffer.from("health_1 = 2 ; 3\n".repeat(400));
    let notText = 0;
    for (let b = 0; b < 256; b++) {
      for (const at of [0, 1, 777, 4095, 4096, 6000]) {
        const bytes = Buffer.from(text);
        bytes[at] = b;
        const want = byLoop(bytes);
        if (!want) notText++;
        expect({ b, at, got: looksLikeText(bytes) }).toEqual({ b, at, got: want });
        // A plain Uint8Array view of part of a larger buffer reads the same bytes.
        const view = new Uint8Array(bytes.buffer, bytes.byteOffset + 1, bytes.length - 1);
        expect({ b, at, view: looksLikeText(view) }).toEqual({ b, at, view: byLoop(view) });
      }
    }
    // 26 byte values are not text (0-8, 14-26, 28-31), each seen at the four positions inside the first 4 KiB.
    expect(notText).toBe(26 * 4);
    expect(looksLikeText(Buffer.alloc(0))).toBe(true);
  });
});

describe("ASCII shortcut in analyzeCollisions", () => {
  // Names that are equal, equal but for case, a file and a folder of one name, a folder as an
  // entry and as an ancestor, trailing slashes, and folders by their mode only.
  const pool = [
    "a",
    "A",
    "a/",
    "A/",
    "a//",
    "a/b",
    "A/b",
    "a/B",
    "a/b/",
    "a/b/c.txt",
    "A/B/C.TXT",
    "a/b/c.txt/",
    "a/b/c.txt/d",
    "b",
    "B/",
    "b/x",
    "c.txt",
    "C.txt",
    "d/e/f/g",
    "d/e",
    "D/E/",
    "Content/Data/f0.txt",
    "content/data/F0.txt",
    "Content/Data/",
  ];
  function entry(name: string, index: number, mode: "plain" | "dir-mode" | "file-mode"): ZipEntry {
    const base = entryNamed(name);
    if (mode === "dir-mode") return { ...base, index, unixMode: 0o040755, isDirectory: true };
    if (mode === "file-mode") return { ...base, index, unixMode: 0o100644 };
    return { ...base, index };
  }
  // A fixed pseudo-random sequence: the same lists on every run.
  let seed = 27;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return (seed >>> 8) % n;
  };

  it("reports what the general path reports, in the same order, for thousands of lists of those names", () => {
    let withFindings = 0;
    const codes = new Set<string>();
    for (let list = 0; list < 4000; list++) {
      const length = 1 + next(12);
      const entries = Array.from({ length }, (_, i) =>
        entry(pool[next(pool.length)]!, i, (["plain", "plain", "dir-mode", "file-mode"] as const)[next(4)]!),
      );
      const full = analyzeCollisionsFully(entries);
      expect(analyzeCollisions(entries), JSON.stringify(entries.map((e) => [e.name, e.isDirectory]))).toEqual(
        full,
      );
      if (full.length > 0) withFindings++;
      for (const f of full) codes.add(f.code);
    }
    // Every collision the ASCII path can meet was met, in many lists.
    expect(codes).toEqual(
      new Set(["duplicate_entry_name", "case_insensitive_collision", "file_directory_collision"]),
    );
    expect(withFindings).toBeGreaterThan(2000);
  });

  it("leaves a list with one non-ASCII name to the general path (NFC applies to every name then)", () => {
    const entries = [entryNamed("K.txt"), entryNamed("\u212a.txt"), entryNamed("k.txt")].map((e, index) => ({
      ...e,
      index,
    }));
    expect(analyzeCollisions(entries)).toEqual(analyzeCollisionsFully(entries));
    expect(analyzeCollisions(entries).map((f) => f.code)).toEqual([
      "unicode_normalization_collision",
      "case_insensitive_collision",
    ]);
  });
});
