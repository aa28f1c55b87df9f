import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { AntivirusScanner } from "../../src/validation/antivirus/scanner.ts";
import { zipCapsFromPolicy } from "../../src/validation/package-analysis.ts";
import { validatePackage } from "../../src/validation/runner.ts";
import { readZipStructure } from "../../src/validation/zip/reader.ts";
import {
  EXTRACTORS,
  type Extractor,
  extract,
  missingReason,
  requireExtractor,
  type Tool,
  type TreeNode,
} from "./extractors.ts";
import { catalog, gameBuilds, packageEntries, policy, sidecarFor } from "./fixtures.ts";
import { buildZip, extraBlock, type FixtureEntry } from "./zip-builder.ts";

/**
 * The other half of "a package is safe only if every common extractor reads the same tree"
 * (SECURITY.md): every package svc accepts, whoever wrote it, is extracted with bsdtar, unzip, 7-Zip
 * and Python's zipfile, and each must make exactly the files svc reported (names, sizes, sha256),
 * the folders the names imply, and nothing else: no link, no device, no setuid, setgid, sticky or
 * world-writable bit. In CI a missing extractor fails its tests; elsewhere they are skipped with the
 * Debian package to install.
 */

/** A scanner that answers clean for everything: this suite is about what extractors make. Named as a fake. */
const fakeCleanScanner: AntivirusScanner = {
  description: "fake scanner (always clean; extractor differential tests only)",
  scan: async () => ({ status: "clean" }),
};

const work = mkdtempSync(join(tmpdir(), "svc-differential-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const TIME = 1_700_000_000;

/** The good package's tree as files on disk, for the writers that zip a folder. */
function writeTree(entries: FixtureEntry[]): { root: string; top: string[] } {
  const root = mkdtempSync(join(work, "tree-"));
  const top = new Set<string>();
  for (const entry of entries) {
    const name = entry.name as string;
    top.add(name.split("/")[0]!);
    if (name.endsWith("/")) mkdirSync(join(root, name), { recursive: true });
    else {
      mkdirSync(dirname(join(root, name)), { recursive: true });
      writeFileSync(join(root, name), entry.data ?? "");
    }
  }
  return { root, top: [...top] };
}

function byTool(binary: string, args: (out: string, top: string[]) => string[]): () => Buffer {
  return () => {
    const { root, top } = writeTree(packageEntries());
    const out = join(work, `${binary}-${Math.random().toString(36).slice(2)}.zip`);
    const run = spawnSync(binary, args(out, top), { cwd: root, encoding: "utf8" });
    if (run.error || run.status !== 0) throw run.error ?? new Error(`${binary}: ${run.stderr}`);
    return readFileSync(out);
  };
}

/** Every extra field block svc accepts, on every entry, each header as its writer lays it out. */
function withEveryAcceptedExtra(entry: FixtureEntry, index: number): FixtureEntry {
  const owner = extraBlock.unixOwner(1000, 1000);
  const ntfs = extraBlock.ntfs();
  return {
    ...entry,
    // Info-ZIP's central records hold the modification time only, the local headers all three.
    extra: Buffer.concat([
      extraBlock.timestamp(7, [TIME]),
      extraBlock.unixOld(TIME, TIME),
      extraBlock.unixIds(),
      owner,
      ntfs,
      ...(index === 0 ? [extraBlock.raw(0xcafe, Buffer.alloc(0))] : []),
    ]),
    local: {
      ...entry.local,
      extra: Buffer.concat([
        ...(index === 0 ? [extraBlock.raw(0xcafe, Buffer.alloc(0))] : []),
        extraBlock.timestamp(7, [TIME, TIME + 1, TIME + 2]),
        extraBlock.unixOld(TIME, TIME, { uid: 1000, gid: 1000 }),
        extraBlock.unixIds({ uid: 1000, gid: 1000 }),
        owner,
        ntfs,
      ]),
    },
  };
}

const NON_ASCII = "docs/über uns.txt";
const COMMENT = Buffer.from("notes for players");

interface AcceptedPackage {
  title: string;
  /** The tool that writes it, when one does: without it the package is not made. */
  writer?: Tool;
  bytes: () => Buffer;
}

const PACKAGES: AcceptedPackage[] = [
  { title: "the runner tests' good package (test ZIP writer)", bytes: () => buildZip(packageEntries()) },
  {
    title: "the good package zipped by Info-ZIP zip -r (extended timestamp and 'ux' extras)",
    writer: { binary: "zip", debianPackage: "zip" },
    bytes: byTool("zip", (out, top) => ["-q", "-r", out, ...top]),
  },
  {
    title: "the good package zipped by bsdtar (timestamps, 'ux' extras, data descriptors)",
    writer: EXTRACTORS.find((x) => x.name === "bsdtar")!,
    bytes: byTool("bsdtar", (out, top) => ["--format", "zip", "-cf", out, ...top]),
  },
  {
    title: "the good package zipped by 7-Zip (NTFS extras in the central directory)",
    writer: EXTRACTORS.find((x) => x.name === "7z")!,
    bytes: byTool("7z", (out, top) => ["a", "-tzip", "-bso0", "-bsp0", out, ...top]),
  },
  {
    title: "the good package zipped by Python's zipfile (no extras)",
    writer: EXTRACTORS.find((x) => x.name === "python")!,
    bytes: byTool("python3", (out, top) => ["-m", "zipfile", "-c", out, ...top]),
  },
  {
    title: "every accepted extra on every entry, local and central as their writers lay them out",
    bytes: () => buildZip(packageEntries().map(withEveryAcceptedExtra)),
  },
  {
    title: "a UTF-8 name with an agreeing Unicode Path extra, and a comment with an agreeing Unicode Comment",
    bytes: () =>
      buildZip(
        packageEntries({
          extra: [
            { name: NON_ASCII, data: "Über uns\n", extra: extraBlock.unicodePath(NON_ASCII, NON_ASCII) },
            {
              name: "docs/notes.txt",
              data: "notes\n",
              comment: COMMENT,
              extra: extraBlock.unicodeComment(COMMENT, COMMENT.toString()),
              local: { extra: Buffer.alloc(0) },
            },
          ],
        }),
      ),
  },
  {
    title:
      "MS-DOS attributes (archive bit, folder bit on folders), no folder entries, stored and descriptor entries",
    bytes: () =>
      buildZip(
        packageEntries()
          .filter((entry) => !(entry.name as string).endsWith("/") || entry.name === "Binaries/")
          .map((entry, i) => ({
            ...entry,
            madeBy: 0x0014,
            externalAttributes: (entry.name as string).endsWith("/") ? 0x10 : 0x20,
            ...(i % 2 === 1 && entry.method !== 0 && entry.data ? { dataDescriptor: true } : {}),
          }))
          .concat([{ name: "config/empty.ini", data: "", madeBy: 0x0014, externalAttributes: 0x20 }]),
      ),
  },
];

const caps = zipCapsFromPolicy(policy());

/** What svc reports of a package: its files with size and sha256, and the folders its names make. */
async function svcReading(bytes: Buffer): Promise<TreeNode[]> {
  const { report, files } = await validatePackage({
    package: { bytes },
    sidecar: sidecarFor(bytes),
    policy: policy(),
    catalog: catalog(),
    gameBuilds: gameBuilds(),
    scanner: fakeCleanScanner,
    clock: () => new Date("2026-11-21T10:00:00.000Z"),
  });
  expect(
    report.checks.filter((c) => c.status !== "passed").map((c) => [c.id, c.reasonCode, c.log.join("\n")]),
  ).toEqual([]);
  const folders = new Set<string>();
  const addParents = (path: string) => {
    for (let slash = path.lastIndexOf("/"); slash > 0; slash = path.lastIndexOf("/", slash - 1))
      folders.add(path.slice(0, slash));
  };
  for (const entry of readZipStructure(bytes, caps).entries) {
    if (!entry.isDirectory) continue;
    const path = entry.name.replace(/\/$/, "");
    folders.add(path);
    addParents(path);
  }
  for (const f of files!) addParents(f.path);
  return [
    ...files!.map((f) => ({ path: f.path, type: "file" as const, sizeBytes: f.sizeBytes, sha256: f.sha256 })),
    ...[...folders].map((path) => ({ path, type: "folder" as const })),
  ].sort((a, b) => (a.path < b.path ? -1 : 1)) as TreeNode[];
}

/** What an extractor made, in svc's terms, after checking that nothing in it is a link or has an unsafe mode. */
function comparable(tree: TreeNode[]) {
  for (const node of tree) {
    expect(node.type === "file" || node.type === "folder", `${node.path} is a ${node.type}`).toBe(true);
    expect(node.mode & 0o7002, `${node.path} mode ${node.mode.toString(8)}`).toBe(0);
  }
  return tree.map(({ path, type, sizeBytes, sha256 }) =>
    type === "file" ? { path, type, sizeBytes, sha256 } : { path, type },
  );
}

describe("every package svc accepts reads the same in bsdtar, unzip, 7-Zip and Python", () => {
  let serial = 0;
  for (const pkg of PACKAGES) {
    for (const extractor of EXTRACTORS) {
      const tools = pkg.writer ? [pkg.writer, extractor] : [extractor];
      const skip = tools.map((tool) => missingReason(tool)).find((reason) => reason !== null) ?? null;
      it.skipIf(skip !== null)(
        `${pkg.title}: ${extractor.name}${skip ? ` (skipped: ${skip})` : ""}`,
        async () => {
          for (const tool of tools) requireExtractor(tool);
          const bytes = pkg.bytes();
          const expected = await svcReading(bytes);
          const zip = join(work, `pkg-${serial++}.zip`);
          writeFileSync(zip, bytes);
          const run = extract(extractor, zip, work);
          expect(run.status, run.output).toBe(0);
          expect(comparable(run.tree)).toEqual(
            expected.map(({ path, type, sizeBytes, sha256 }) =>
              type === "file" ? { path, type, sizeBytes, sha256 } : { path, type },
            ),
          );
        },
      );
    }
  }
});

describe("a missing extractor", () => {
  const ghost: Extractor = {
    name: "ghost",
    binary: "svc-no-such-extractor",
    debianPackage: "svc-ghost-tools",
    args: () => [],
  };

  it("fails the test in CI, naming the Debian package", () => {
    expect(missingReason(ghost, { CI: "true" })).toBeNull();
    expect(() => requireExtractor(ghost)).toThrow(/required in CI.*Debian package svc-ghost-tools/);
  });

  it("is a skip elsewhere, with the Debian package in the reason", () => {
    expect(missingReason(ghost, {})).toBe(
      "svc-no-such-extractor is not installed (Debian package svc-ghost-tools)",
    );
  });
});
