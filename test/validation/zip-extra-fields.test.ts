import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AntivirusScanner } from "../../src/validation/antivirus/scanner.ts";
import { zipCapsFromPolicy } from "../../src/validation/package-analysis.ts";
import { runValidation } from "../../src/validation/runner.ts";
import { readZipStructure } from "../../src/validation/zip/reader.ts";
import {
  EXTRACTORS,
  type Extraction,
  extract,
  missingReason,
  requireExtractor,
  type TreeNode,
} from "./extractors.ts";
import { catalog, gameBuilds, packageEntries, policy, sidecarFor } from "./fixtures.ts";
import { buildZip, extraBlock, type FixtureEntry } from "./zip-builder.ts";

/**
 * SECURITY.md: "a package is safe only if every common extractor reads the same tree". Each package
 * below is the good package of the runner tests with one entry's extra field or external attributes
 * changed, built byte by byte at test time. Before the extra fields and attributes were checked, 21
 * of these 28 passed validation (a Unicode Path block in the central directory, a link in the
 * external attributes and a local ZIP64 block were refused already); each must now be refused with
 * its own reason code. Where an extractor read something other than the central record says, the
 * test shows it on the real tool, so a regression names what a player would get.
 */

/** A scanner that answers clean for everything: this suite is about ZIP structure. Named as a fake. */
const fakeCleanScanner: AntivirusScanner = {
  description: "fake scanner (always clean; ZIP structure tests only)",
  scan: async () => ({ status: "clean" }),
};

const DLL = "Binaries/Win64/BetterHud.dll";
const README = "README.md";
const isRoot = process.getuid?.() === 0;
const work = mkdtempSync(join(tmpdir(), "svc-zip-extra-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** The good package with entry `name` changed, and `more` entries after it. */
function packageWith(name: string, change: Partial<FixtureEntry>, more: FixtureEntry[] = []): Buffer {
  return buildZip([
    ...packageEntries().map((entry) => (entry.name === name ? { ...entry, ...change } : entry)),
    ...more,
  ]);
}

/** README.md as a stored 11-byte file whose content is a link target, for the link tricks. */
const linkText = { data: "/etc/passwd", method: 0 } as const;

type ToolName = "bsdtar" | "unzip" | "7z" | "python";
type Reading = (run: Extraction, node: (path: string) => TreeNode | undefined) => void;

interface HostileCase {
  title: string;
  bytes: Buffer;
  check: string;
  reasonCode: string;
  /** What the extractors that read it differently made of it. */
  readings?: Partial<Record<ToolName, Reading>>;
}

const file = (size?: number) => (n: TreeNode | undefined) => {
  expect(n?.type).toBe("file");
  if (size !== undefined) expect(n?.sizeBytes).toBe(size);
};

const CASES: HostileCase[] = [
  {
    title: "README.md a symbolic link to /etc/passwd by its external attributes (0o120777)",
    bytes: packageWith(README, { ...linkText, unixMode: 0o120777 }),
    check: "zip_path_safety",
    reasonCode: "symlink_entry",
    readings: {
      bsdtar: (_, node) => expect(node(README)).toMatchObject({ type: "symlink", target: "/etc/passwd" }),
      unzip: (_, node) => expect(node(README)).toMatchObject({ type: "symlink", target: "/etc/passwd" }),
      "7z": (_, node) => expect(node(README)?.type).toBe("symlink"),
      python: (_, node) => file(11)(node(README)),
    },
  },
  {
    title:
      "README.md a symbolic link by an ASi Unix extra (0x756e) in both headers, a file by its attributes",
    bytes: packageWith(README, { ...linkText, extra: extraBlock.asiUnix(0o120777, "/etc/passwd") }),
    check: "file_signature",
    reasonCode: "zip_extra_field_unsupported",
  },
  {
    title: "the same ASi Unix link in the local header only",
    bytes: packageWith(README, {
      ...linkText,
      local: { extra: extraBlock.asiUnix(0o120777, "/etc/passwd") },
    }),
    check: "file_signature",
    reasonCode: "zip_extra_field_unsupported",
  },
  {
    title: "a PKWARE Unix extra (0x000d) carrying a link target",
    bytes: packageWith(README, { ...linkText, extra: extraBlock.pkwareUnix("/etc/passwd") }),
    check: "file_signature",
    reasonCode: "zip_extra_field_unsupported",
  },
  {
    title: "a libarchive 'xl' extra (0x6c78) in the local header giving README.md a symbolic-link mode",
    bytes: packageWith(README, {
      ...linkText,
      local: { extra: extraBlock.libarchive(0x031e, (0o120777 << 16) >>> 0) },
    }),
    check: "file_signature",
    reasonCode: "zip_extra_field_unsupported",
    readings: {
      bsdtar: (_, node) => expect(node(README)).toMatchObject({ type: "symlink", target: "/etc/passwd" }),
      unzip: (_, node) => file(11)(node(README)),
      "7z": (_, node) => file(11)(node(README)),
      python: (_, node) => file(11)(node(README)),
    },
  },
  {
    title: "a Unicode Path extra (0x7075) in the central directory naming README.md Binaries/evil.dll",
    bytes: packageWith(README, { extra: extraBlock.unicodePath(README, "Binaries/evil.dll") }),
    check: "zip_path_safety",
    reasonCode: "name_field_mismatch",
    readings: {
      bsdtar: (_, node) =>
        expect([node(README), node("Binaries/evil.dll")?.type]).toEqual([undefined, "file"]),
      unzip: (_, node) =>
        expect([node(README), node("Binaries/evil.dll")?.type]).toEqual([undefined, "file"]),
      "7z": (_, node) => expect([node(README), node("Binaries/evil.dll")?.type]).toEqual([undefined, "file"]),
      python: (_, node) => file()(node(README)),
    },
  },
  {
    title: "a Unicode Path extra in both headers naming README.md ../x",
    bytes: packageWith(README, { extra: extraBlock.unicodePath(README, "../x") }),
    check: "zip_path_safety",
    reasonCode: "name_field_mismatch",
    readings: {
      bsdtar: (run, node) => {
        expect(run.output).toContain("../x: Path contains '..'");
        expect(node(README)).toBeUndefined();
      },
      unzip: (_, node) => expect([node(README), node("x")?.type]).toEqual([undefined, "file"]),
      "7z": (_, node) => expect([node(README), node("x")?.type]).toEqual([undefined, "file"]),
      python: (_, node) => file()(node(README)),
    },
  },
  {
    title: "a Unicode Path extra in the local header only renaming the DLL Binaries/Win64/Other.dll",
    bytes: packageWith(DLL, { local: { extra: extraBlock.unicodePath(DLL, "Binaries/Win64/Other.dll") } }),
    check: "zip_path_safety",
    reasonCode: "name_field_mismatch",
    readings: {
      bsdtar: (_, node) =>
        expect([node(DLL), node("Binaries/Win64/Other.dll")?.type]).toEqual([undefined, "file"]),
      unzip: (run, node) => {
        expect(run.output).toContain('mismatching "local" filename (Binaries/Win64/Other.dll)');
        file()(node(DLL));
      },
      "7z": (_, node) => file()(node(DLL)),
      python: (_, node) => file()(node(DLL)),
    },
  },
  {
    title: "a Unicode Path extra on a name flagged UTF-8 (bit 11), naming README.md Other.md",
    bytes: packageWith(README, { flags: 0x0800, extra: extraBlock.unicodePath(README, "Other.md") }),
    check: "zip_path_safety",
    reasonCode: "name_field_mismatch",
    readings: {
      bsdtar: (_, node) => expect([node(README), node("Other.md")?.type]).toEqual([undefined, "file"]),
      unzip: (_, node) => file()(node(README)),
      "7z": (_, node) => file()(node(README)),
      python: (_, node) => file()(node(README)),
    },
  },
  {
    title: "a Unicode Path extra that repeats the name with another name's CRC-32",
    bytes: packageWith(README, { extra: extraBlock.unicodePath(README, README, { crc: 0x12345678 }) }),
    check: "file_signature",
    reasonCode: "zip_extra_field_invalid",
  },
  {
    title: "two Unicode Path blocks, the first agreeing, the second naming Other.md",
    bytes: packageWith(README, {
      extra: Buffer.concat([
        extraBlock.unicodePath(README, README),
        extraBlock.unicodePath(README, "Other.md"),
      ]),
    }),
    check: "file_signature",
    reasonCode: "zip_extra_field_invalid",
  },
  {
    title: "an NTFS extra (0x000a) with a tag other than 1",
    bytes: packageWith(README, { extra: extraBlock.ntfs({ tag: 2, tagSize: 8 }) }),
    check: "file_signature",
    reasonCode: "zip_extra_field_invalid",
  },
  {
    title: "NTFS extras with another modification time in the local header than in the central one",
    bytes: packageWith(README, {
      extra: extraBlock.ntfs(),
      local: { extra: extraBlock.ntfs({ mtime: 116_444_736_000_000_000n }) },
    }),
    check: "file_signature",
    reasonCode: "zip_extra_field_mismatch",
  },
  {
    title: "Info-ZIP 'ux' owners that differ: uid 1234 in the local header, 0 in the central one",
    bytes: packageWith(README, {
      extra: extraBlock.unixOwner(0, 0),
      local: { extra: extraBlock.unixOwner(1234, 1234) },
    }),
    check: "file_signature",
    reasonCode: "zip_extra_field_mismatch",
    // Only root restores owners.
    readings: isRoot ? { bsdtar: (_, node) => expect(node(README)?.uid).toBe(1234) } : {},
  },
  {
    title: "extended timestamps with another modification time in the local header",
    bytes: packageWith(README, {
      extra: extraBlock.timestamp(1, [1_700_000_000]),
      local: { extra: extraBlock.timestamp(1, [1_600_000_000]) },
    }),
    check: "file_signature",
    reasonCode: "zip_extra_field_mismatch",
  },
  {
    title: "an 'ux' owner with 1-byte ids (libarchive skips them, unzip reads them)",
    bytes: packageWith(README, { extra: extraBlock.unixOwner(7, 7, 1) }),
    check: "file_signature",
    reasonCode: "zip_extra_field_invalid",
  },
  {
    title: "an extra field block that runs past the field",
    bytes: packageWith(README, { extra: Buffer.from([0x55, 0x54, 0x20, 0x00, 0x01]) }),
    check: "file_signature",
    reasonCode: "zip_extra_field_invalid",
    readings: {
      bsdtar: (run) => {
        expect(run.status).not.toBe(0);
        expect(run.output).toContain("Extra data overflow");
      },
      unzip: (_, node) => file()(node(README)),
      "7z": (_, node) => file()(node(README)),
      python: (run) => expect(run.output).toContain("BadZipFile"),
    },
  },
  {
    title: "two bytes after the last extra field block",
    bytes: packageWith(README, {
      extra: Buffer.concat([extraBlock.timestamp(1, [1_700_000_000]), Buffer.alloc(2)]),
    }),
    check: "file_signature",
    reasonCode: "zip_extra_field_invalid",
  },
  {
    title: "a Unicode Comment extra (0x6375) in a local header, which has no comment",
    bytes: packageWith(README, { local: { extra: extraBlock.unicodeComment(Buffer.alloc(0), "hi") } }),
    check: "file_signature",
    reasonCode: "zip_extra_field_unsupported",
  },
  {
    title: "a Unicode Comment extra that is not the entry comment",
    bytes: packageWith(README, {
      comment: Buffer.from("docs"),
      extra: extraBlock.unicodeComment(Buffer.from("docs"), "something else"),
    }),
    check: "file_signature",
    reasonCode: "zip_extra_field_mismatch",
  },
  {
    title: "a Windows NT security descriptor extra (0x4453), which svc does not accept",
    bytes: packageWith(README, { extra: extraBlock.raw(0x4453, Buffer.alloc(12)) }),
    check: "file_signature",
    reasonCode: "zip_extra_field_unsupported",
  },
  {
    title: "a ZIP64 extra in the local header only",
    bytes: packageWith(README, { local: { extra: extraBlock.raw(0x0001, Buffer.alloc(16)) } }),
    check: "file_signature",
    reasonCode: "zip64_unsupported",
  },
  {
    title: "the DLL setuid and world-writable (0o104777)",
    bytes: packageWith(DLL, { unixMode: 0o104777 }),
    check: "zip_path_safety",
    reasonCode: "unsafe_file_mode",
    readings: {
      ...(isRoot
        ? {
            bsdtar: (_: Extraction, node: (p: string) => TreeNode | undefined) =>
              expect(node(DLL)?.mode).toBe(0o4777),
          }
        : {}),
      python: (_, node) => expect(node(DLL)?.mode).toBe(0o644),
    },
  },
  {
    title: "README.md world-writable (0o100666)",
    bytes: packageWith(README, { unixMode: 0o100666 }),
    check: "zip_path_safety",
    reasonCode: "unsafe_file_mode",
    readings: {
      unzip: (_, node) => expect(node(README)?.mode).toBe(0o666),
      python: (_, node) => expect(node(README)?.mode).toBe(0o644),
    },
  },
  {
    title: "the Binaries/ folder sticky and world-writable (0o041777)",
    bytes: packageWith("Binaries/", { unixMode: 0o041777 }),
    check: "zip_path_safety",
    reasonCode: "unsafe_file_mode",
  },
  {
    title: "an empty entry Content/Notes.txt with a folder mode and no trailing '/'",
    bytes: packageWith(README, {}, [{ name: "Content/Notes.txt", data: "", method: 0, unixMode: 0o040755 }]),
    check: "zip_path_safety",
    reasonCode: "entry_type_mismatch",
    readings: {
      bsdtar: (_, node) => expect(node("Content/Notes.txt")?.type).toBe("folder"),
      unzip: (_, node) => file(0)(node("Content/Notes.txt")),
      "7z": (_, node) => expect(node("Content/Notes.txt")?.type).toBe("folder"),
      python: (_, node) => file(0)(node("Content/Notes.txt")),
    },
  },
  {
    title:
      "an empty entry Content/Notes.txt made on MS-DOS with the folder attribute (0x10) and no trailing '/'",
    bytes: packageWith(README, {}, [
      { name: "Content/Notes.txt", data: "", method: 0, madeBy: 0x0014, externalAttributes: 0x10 },
    ]),
    check: "zip_path_safety",
    reasonCode: "entry_type_mismatch",
    readings: {
      bsdtar: (_, node) => expect(node("Content/Notes.txt")?.type).toBe("folder"),
      unzip: (_, node) => file(0)(node("Content/Notes.txt")),
      "7z": (_, node) => expect(node("Content/Notes.txt")?.type).toBe("folder"),
      python: (_, node) => file(0)(node("Content/Notes.txt")),
    },
  },
  {
    title: "a folder entry Content/Empty/ with a regular-file mode (0o100644)",
    bytes: packageWith(README, {}, [{ name: "Content/Empty/", data: "", method: 0, unixMode: 0o100644 }]),
    check: "zip_path_safety",
    reasonCode: "entry_type_mismatch",
    readings: {
      unzip: (_, node) => expect(node("Content/Empty")).toMatchObject({ type: "folder", mode: 0o644 }),
      python: (_, node) => expect(node("Content/Empty")).toMatchObject({ type: "folder", mode: 0o755 }),
    },
  },
];

async function validate(bytes: Buffer) {
  return runValidation({
    package: { bytes },
    sidecar: sidecarFor(bytes),
    policy: policy(),
    catalog: catalog(),
    gameBuilds: gameBuilds(),
    scanner: fakeCleanScanner,
    clock: () => new Date("2026-11-21T10:00:00.000Z"),
  });
}

const caps = zipCapsFromPolicy(policy());

describe("extra fields and external attributes extractors read differently are refused", () => {
  it.each(CASES.map((c) => [c.title, c] as const))("%s", async (_title, c) => {
    // The reader answers the same whole in memory and through positional reads.
    const windowed = readZipStructure(
      { size: c.bytes.length, read: (o, n) => Buffer.from(c.bytes.subarray(o, o + n)) },
      caps,
    );
    expect(windowed).toEqual(readZipStructure(c.bytes, caps));
    const report = await validate(c.bytes);
    expect(report.passed).toBe(false);
    const check = report.checks.find((r) => r.id === c.check)!;
    expect({ status: check.status, reasonCode: check.reasonCode }, check.log.join("\n")).toEqual({
      status: "failed",
      reasonCode: c.reasonCode,
    });
    // The finding is the only one: every other check passes or waits on it, so the code is what a
    // modder sees.
    const others = report.checks.filter(
      (r) => r.id !== c.check && r.status !== "passed" && !r.reasonCode?.startsWith("blocked_by_"),
    );
    expect(others.map((r) => [r.id, r.reasonCode])).toEqual([]);
  });
});

describe("what the extractors made of them", () => {
  let serial = 0;
  for (const c of CASES) {
    for (const extractor of EXTRACTORS) {
      const reading = c.readings?.[extractor.name as ToolName];
      if (!reading) continue;
      const skip = missingReason(extractor);
      it.skipIf(skip !== null)(`${c.title}: ${extractor.name}${skip ? ` (skipped: ${skip})` : ""}`, () => {
        requireExtractor(extractor);
        const zip = join(work, `case-${serial++}.zip`);
        writeFileSync(zip, c.bytes);
        const run = extract(extractor, zip, work);
        reading(run, (path) => run.tree.find((n) => n.path === path));
      });
    }
  }
});
