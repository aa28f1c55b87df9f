import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Metadata, MetaFile, TargetFile, Targets } from "@tufjs/models";
import { describe, expect, it } from "vitest";
import {
  allBins,
  binForTarget,
  BIN_BIT_LENGTH,
  BIN_NAME_PREFIX,
  serializeCompact,
} from "../../src/distribution/tuf-layout.ts";
import { signerFor, TUF_SPEC_VERSION, type TufKeyFile } from "../../src/distribution/tuf-keys.ts";
import { LinearSnapshot, signedSnapshotText } from "../../src/distribution/tuf-snapshot.ts";
import { LinearTargets, signedBinText } from "../../src/distribution/tuf-targets.ts";
import { fsyncAll, PARALLEL_FSYNC_FROM } from "../../src/lib/fsync-many.ts";
import { catalogMods } from "../../src/distribution/tuf-site-targets.ts";
import { serializeDocument } from "../../src/catalog/site.ts";

function keyFile(): TufKeyFile {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return {
    schema: "svc.tuf-key.v1",
    role: "targets",
    keyid: "a".repeat(64),
    publicKey: publicKey.export({ type: "spki", format: "pem" }).toString(),
    privateKey: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  } as TufKeyFile;
}

describe("signing fast paths hold to the library's bytes", () => {
  it("signedBinText writes exactly what Metadata.sign + serializeCompact write for the same targets", () => {
    const signer = signerFor(keyFile());
    const targets = [
      { path: "api/v1/mods/b/versions.json", length: 912, sha256: "ab".repeat(32) },
      { path: "api/v1/mods/a/detail.json", length: 0, sha256: "cd".repeat(32) },
      {
        path: 'external/mods/q"uote\\back/1.0.0/x-1.0.0.zip',
        length: 123_456_789,
        sha256: "ef".repeat(32),
        url: 'https://example.test/rel/"x"\\y?z=1&é',
      },
      { path: "downloads/mods/é-mod/2.0.0/é-mod-2.0.0.zip", length: 42, sha256: "01".repeat(32) },
      // Written as itself by both JSONs (the common case), and with a control character or a surrogate pair.
      {
        path: "external/mods/plain/1.0.0/plain-1.0.0.zip",
        length: 7,
        sha256: "23".repeat(32),
        url: "https://github.example.test/o/r/releases/download/1.0.0/plain-1.0.0.zip",
      },
      { path: "api/v1/mods/tab\there/index.json", length: 1, sha256: "45".repeat(32) },
      {
        path: "api/v1/mods/emoji-\u{1F600}/index.json",
        length: 2,
        sha256: "67".repeat(32),
        url: "https://x.test/\u{1F600}",
      },
    ];
    const expires = "2027-02-24T12:00:00Z";
    const library = (set: typeof targets) => {
      const signed = new LinearTargets({ version: 7, specVersion: TUF_SPEC_VERSION, expires });
      for (const t of [...set].sort((a, b) => (a.path < b.path ? -1 : 1)))
        signed.addTarget(
          new TargetFile({
            path: t.path,
            length: t.length,
            hashes: { sha256: t.sha256 },
            ...(t.url ? { unrecognizedFields: { custom: { url: t.url } } } : {}),
          }),
        );
      const metadata = new Metadata(signed);
      metadata.sign(signer);
      return serializeCompact(metadata);
    };
    const plain = targets.filter(
      (t) => !/["\\\u0000-\u001f\ud800-\udfff]/.test(`${t.path}${t.sha256}${t.url ?? ""}`),
    );
    expect(plain).toHaveLength(4);
    // Every kind of value at once; only values written as themselves (the written-as-is path); and
    // each single escaped character among them (a quote alone, a backslash alone: the checks on the whole text).
    const sets = [
      targets,
      plain,
      [...plain, { path: 'api/v1/mods/q"uote/index.json', length: 3, sha256: "89".repeat(32) }],
      [...plain, { path: "api/v1/mods/back\\slash/index.json", length: 4, sha256: "89".repeat(32) }],
      [...plain, { path: "api/v1/mods/u/index.json", length: 5, sha256: '"'.repeat(64) }],
      [
        ...plain,
        { path: "api/v1/mods/v/index.json", length: 6, sha256: "ab".repeat(32), url: 'https://x.test/"' },
      ],
    ];
    for (const set of sets) expect(signedBinText(signer, 7, expires, set)).toBe(library(set));
    // And what the library reads back verifies with the key (the signature covers canonical JSON).
    const empty = new Metadata(new LinearTargets({ version: 1, specVersion: TUF_SPEC_VERSION, expires }));
    empty.sign(signer);
    expect(signedBinText(signer, 1, expires, [])).toBe(serializeCompact(empty));
  });

  it("signedSnapshotText writes exactly what Metadata.sign + serializeCompact write for a LinearSnapshot", () => {
    const signer = signerFor(keyFile());
    const expires = "2026-12-03T12:00:00Z";
    const roles = new Map<string, number>([
      ["bins-3ff.json", 1_795_726_017],
      ["targets.json", 1_795_726_100],
      ["bins-000.json", 2],
      ["bins-0a1.json", 1_795_726_018],
    ]);
    const meta: Record<string, MetaFile> = {
      "targets.json": new MetaFile({ version: roles.get("targets.json")! }),
    };
    for (const name of [...roles.keys()].filter((n) => n !== "targets.json").sort())
      meta[name] = new MetaFile({ version: roles.get(name)! });
    const metadata = new Metadata(
      new LinearSnapshot({ version: 1_795_726_101, specVersion: TUF_SPEC_VERSION, expires, meta }),
    );
    metadata.sign(signer);
    expect(signedSnapshotText(signer, 1_795_726_101, expires, roles)).toBe(serializeCompact(metadata));
  });

  it("binForTarget names the bin SuccinctRoles.getRoleForTarget names", () => {
    const roles = Targets.fromJSON({
      _type: "targets",
      spec_version: TUF_SPEC_VERSION,
      version: 1,
      expires: "2000-01-01T00:00:00Z",
      targets: {},
      delegations: {
        keys: {},
        succinct_roles: {
          keyids: [],
          threshold: 1,
          bit_length: BIN_BIT_LENGTH,
          name_prefix: BIN_NAME_PREFIX,
        },
      },
    }).delegations!.succinctRoles!;
    const seen = new Set<string>();
    for (let i = 0; i < 5000; i++) {
      const path = `api/v1/mods/mod-${i}/${i % 2 ? "detail" : "versions"}.json${i % 7 === 0 ? "é" : ""}`;
      const bin = binForTarget(path);
      expect(bin).toBe(roles.getRoleForTarget(path));
      seen.add(bin);
    }
    // 5,000 paths over 1,024 bins reach nearly all of them, and only names allBins lists.
    expect(seen.size).toBeGreaterThan(990);
    for (const bin of seen) expect(allBins()).toContain(bin);
  });
});

describe("catalogMods", () => {
  it("reads each mod of a catalog as serializeDocument writes it on its own, and any other layout whole, with the same result", () => {
    const version = (v: string) => ({
      version: v,
      fileName: `x-${v}.zip`,
      packageUrl: `https://example.test/x-${v}.zip`,
      packageSizeBytes: 10,
      sha256: "ab".repeat(32),
      dependencies: [{ modId: "dep", versionRange: "^1.0.0" }],
    });
    const catalog = {
      schema: "svc.catalog.v1",
      generatedAt: "2026-11-26T00:00:00.000Z",
      supportedGameBuilds: [{ build: "17000000", label: "a\n    }\n  ]\n}\n" }],
      mods: [
        { id: "a-mod", name: 'tricky "\n    }," name', versions: [version("1.0.0")] },
        { id: "b-mod", name: "B", tags: ["x"], versions: [version("2.0.0"), version("1.0.0")] },
        { id: "c-mod", name: "C", versions: [] },
      ],
    };
    const pretty = Buffer.from(serializeDocument(catalog));
    expect(catalogMods(pretty)).toEqual(catalog.mods);
    expect(catalogMods(Buffer.from(JSON.stringify(catalog)))).toEqual(catalog.mods);
    expect(catalogMods(Buffer.from(serializeDocument({ ...catalog, mods: [] })))).toEqual([]);
    // An entry that does not end where the layout says (hand-edited): the whole document decides.
    const edited = Buffer.from(
      serializeDocument(catalog).replace(
        '\n    },\n    {\n      "id": "b-mod"',
        '\n    }, {\n      "id": "b-mod"',
      ),
    );
    expect(catalogMods(edited)).toEqual(catalog.mods);
  });
});

describe("fsyncAll", () => {
  it("syncs many paths on a worker (files, their folder, a path already gone) and fails on one it cannot open", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-fsync-all-"));
    try {
      const files = Array.from({ length: PARALLEL_FSYNC_FROM + 10 }, (_, i) => join(dir, `${i}.json`));
      for (const file of files) writeFileSync(file, `{"n":${files.indexOf(file)}}`);
      expect(() => fsyncAll([...files, dir, join(dir, "gone.json")])).not.toThrow();
      // A component that is a file, not a folder: ENOTDIR is an error, reported with its code.
      let error: NodeJS.ErrnoException | null = null;
      try {
        fsyncAll([...files, join(files[0]!, "child")]);
      } catch (e) {
        error = e as NodeJS.ErrnoException;
      }
      expect(error?.code).toBe("ENOTDIR");
      expect(error?.message).toContain("child");
      // Below the threshold, the same outcome one path at a time.
      expect(() => fsyncAll(files.slice(0, 2))).not.toThrow();
      expect(() => fsyncAll([join(files[0]!, "child")])).toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
