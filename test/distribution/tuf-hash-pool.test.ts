import { createHash, createPrivateKey, createPublicKey } from "node:crypto";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, sep } from "node:path";
import { Metadata } from "@tufjs/models";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FileWriter, signedText } from "../../src/distribution/tuf-file-writer.ts";
import {
  digestFiles,
  leading32,
  PARSE_CATALOG,
  PARSE_NONE,
  PARSE_VERSIONS,
  POOL_FROM,
} from "../../src/distribution/tuf-hash-pool.ts";
import {
  buildRoot,
  keyIdFor,
  type OnlineKeys,
  signerFor,
  type TufKeyFile,
  type TufRole,
} from "../../src/distribution/tuf-keys.ts";
import { allBins, BIN_BIT_LENGTH, binForTarget, TUF_DIR } from "../../src/distribution/tuf-layout.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { writeRoot } from "../../src/distribution/tuf-root.ts";
import { collectPlacedTargets, collectSiteTargets } from "../../src/distribution/tuf-site-targets.ts";

/** An ed25519 key from a fixed seed: its signatures (deterministic in ed25519) are too. */
function seededKey(role: TufRole, seed: number): TufKeyFile {
  const der = Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), Buffer.alloc(32, seed)]);
  const privateKey = createPrivateKey({ key: der, format: "der", type: "pkcs8" });
  const publicHex = createPublicKey(privateKey)
    .export({ format: "der", type: "spki" })
    .subarray(-32)
    .toString("hex");
  return {
    schema: "svc.tuf-key.v1",
    role,
    keyid: keyIdFor(publicHex),
    publicKey: publicHex,
    privateKey: privateKey.export({ format: "pem", type: "pkcs8" }).toString(),
  };
}

/** The builder's document layout (serializeDocument), written here so the fixture's bytes never follow the builder's. */
const serializeDocument = (document: unknown) => `${JSON.stringify(document, null, 2)}\n`;
const sha256 = (bytes: Buffer | string) => createHash("sha256").update(bytes).digest("hex");
const MODS = 1_100;
const BASE = "https://portal.example.test";

/**
 * A site of MODS mods written file by file (no builder: its bytes must not change with the
 * builder's): per mod a detail and a versions document, releases hosted elsewhere except every
 * 50th mod's, which the site serves; a catalog in serializeDocument's layout that also lists a
 * release no versions document lists; changes pages; an atomic writer's leftover (never a target).
 */
function writeFixtureSite(siteDir: string): void {
  const put = (path: string, text: string | Buffer) => {
    mkdirSync(dirname(join(siteDir, path)), { recursive: true });
    writeFileSync(join(siteDir, path), text);
  };
  const catalogMods = [];
  for (let m = 0; m < MODS; m++) {
    const id = `mod-${String(m).padStart(5, "0")}`;
    const versions = [];
    for (let v = 1; v <= 3; v++) {
      const version = `${v}.0.${m % 7}`;
      const fileName = `${id}-${version}.zip`;
      const served = m % 50 === 0;
      const bytes = Buffer.from(`package ${id} ${version}`);
      if (served) put(`downloads/mods/${id}/${version}/${fileName}`, bytes);
      versions.push({
        version,
        fileName,
        packageUrl: served
          ? `${BASE}/downloads/mods/${id}/${version}/${fileName}`
          : `https://github.example.test/${id}/releases/download/${version}/${fileName}?q="x"`,
        packageSizeBytes: bytes.length,
        sha256: sha256(bytes),
        dependencies: [],
      });
    }
    put(`api/v1/mods/${id}/index.json`, serializeDocument({ id, name: `Mod ${m}`, summary: 'é "quoted"' }));
    put(`api/v1/mods/${id}/versions.json`, serializeDocument({ modId: id, versions }));
    const listed =
      m % 97 === 0
        ? [...versions, { ...versions[0]!, version: "0.9.0", fileName: `${id}-0.9.0.zip` }]
        : versions;
    catalogMods.push({ id, name: `Mod ${m}`, versions: listed });
  }
  put(
    "api/v1/catalog.json",
    serializeDocument({ schema: "svc.catalog.v1", baseUrl: BASE, mods: catalogMods }),
  );
  put("api/v1/mods/index.json", serializeDocument({ mods: catalogMods.map((m) => m.id) }));
  for (const page of [1, 2, 3]) put(`api/v1/changes/${page}.json`, serializeDocument({ page }));
  put("api/v1/changes/head.json", serializeDocument({ newest: 3 }));
  put("api/v1/.catalog.json.tmp-1", "never a target");
}

const AT = new Date("2026-11-20T12:00:00Z");
const KEYS = {
  root: seededKey("root", 1),
  targets: seededKey("targets", 2),
  snapshot: seededKey("snapshot", 3),
  timestamp: seededKey("timestamp", 4),
};
const ONLINE: OnlineKeys = {
  schema: "svc.tuf-online-keys.v1",
  keys: { targets: KEYS.targets, snapshot: KEYS.snapshot, timestamp: KEYS.timestamp },
};

/** Every file under site/tuf, name and bytes, as one sha256 (and their count). */
function tufDigest(siteDir: string): { files: number; sha256: string } {
  const dir = join(siteDir, TUF_DIR);
  const names = readdirSync(dir).sort();
  const h = createHash("sha256");
  for (const name of names)
    h.update(`${name}\0`)
      .update(readFileSync(join(dir, name)))
      .update("\0");
  return { files: names.length, sha256: h.digest("hex") };
}

/** The site's targets as signing collected them before the hashing pool: one thread, the same rules. */
function referenceTargets(siteDir: string) {
  const files: string[] = [];
  const walk = (rel: string) => {
    let entries: string[];
    try {
      entries = readdirSync(join(siteDir, rel)).sort();
    } catch {
      return;
    }
    for (const name of entries) {
      if (name.startsWith(".")) continue;
      const path = `${rel}/${name}`;
      try {
        readdirSync(join(siteDir, path));
        walk(path);
      } catch {
        files.push(path);
      }
    }
  };
  walk("api/v1");
  walk("downloads");
  const targets = new Map<string, { path: string; length: number; sha256: string; url?: string }>();
  for (const path of files) {
    const bytes = readFileSync(join(siteDir, path));
    targets.set(path, { path, length: bytes.length, sha256: sha256(bytes) });
  }
  const external = (
    modId: string,
    v: { version: string; fileName: string; packageUrl: string; packageSizeBytes: number; sha256: string },
  ) => {
    const site = `downloads/mods/${modId}/${v.version}/${v.fileName}`;
    if (v.packageUrl.endsWith(`/${site}`)) return;
    const path = `external/mods/${modId}/${v.version}/${v.fileName}`;
    targets.set(path, { path, length: v.packageSizeBytes, sha256: v.sha256, url: v.packageUrl });
  };
  const catalog = JSON.parse(readFileSync(join(siteDir, "api/v1/catalog.json"), "utf8"));
  for (const mod of catalog.mods) for (const v of mod.versions) external(mod.id, v);
  for (const path of files) {
    const modId = /^api\/v1\/mods\/([^/]+)\/versions\.json$/.exec(path)?.[1];
    if (!modId) continue;
    for (const v of JSON.parse(readFileSync(join(siteDir, path), "utf8")).versions) external(modId, v);
  }
  return [...targets.values()].sort((a, b) => (a.path < b.path ? -1 : 1));
}

describe("full signing on both cores", () => {
  let work: string;
  let siteDir: string;
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), "svc-hash-pool-"));
    siteDir = join(work, "site");
    writeFixtureSite(siteDir);
  });
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("digestFiles reads every file exactly once, on two threads, with each length, sha256 and listed release", () => {
    const paths: string[] = [];
    for (const dir of ["api/v1/mods"]) {
      for (const mod of readdirSync(join(siteDir, dir)).sort()) {
        if (mod === "index.json") continue;
        paths.push(join(siteDir, dir, mod, "index.json"), join(siteDir, dir, mod, "versions.json"));
      }
    }
    paths.push(join(siteDir, "api/v1/catalog.json"));
    expect(paths.length).toBeGreaterThanOrEqual(POOL_FROM);
    const kinds = new Uint8Array(paths.length);
    paths.forEach((p, i) => {
      kinds[i] = p.endsWith("versions.json")
        ? PARSE_VERSIONS
        : p.endsWith("catalog.json")
          ? PARSE_CATALOG
          : PARSE_NONE;
    });
    const sitePaths = paths.map((p) => relative(siteDir, p).split(sep).join("/"));
    // Each file once: the two threads' reads add up to the files (how they share them depends on
    // when the worker starts; a worker left alone reads every one).
    const alone = digestFiles(siteDir, sitePaths, kinds, BIN_BIT_LENGTH, { workerOnly: true });
    expect(alone.reads).toEqual({ main: 0, worker: paths.length });
    const digests = digestFiles(siteDir, sitePaths, kinds, BIN_BIT_LENGTH);
    expect(digests.reads.main + digests.reads.worker).toBe(paths.length);
    for (let i = 0; i < paths.length; i++) {
      expect(alone.sha256(i)).toBe(digests.sha256(i));
      if (i < paths.length - 1) expect(alone.listed.get(i)).toEqual(digests.listed.get(i));
    }
    // The thread that parsed the catalog and every versions document passes on, of the catalog's
    // releases, only its served ones and the externally hosted ones no versions document lists.
    expect(alone.listed.get(paths.length - 1)).toHaveLength(
      5 * (3 * Math.ceil(MODS / 50) + Math.ceil(MODS / 97)),
    );
    paths.forEach((p, i) => {
      const bytes = readFileSync(p);
      expect(digests.length(i)).toBe(bytes.length);
      expect(digests.sha256(i)).toBe(sha256(bytes));
    });
    paths.forEach((p, i) => {
      expect(allBins()[digests.bin(i)]).toBe(binForTarget(relative(siteDir, p).split(sep).join("/")));
    });
    // Each release: its target path, that path's bin, and the size, sha256 and URL its document records.
    const versionsAt = paths.findIndex((p) => p.endsWith("mod-00050/versions.json"));
    const versions = JSON.parse(readFileSync(paths[versionsAt]!, "utf8")).versions;
    expect(digests.listed.get(versionsAt)).toEqual(
      versions.flatMap(
        (v: {
          version: string;
          fileName: string;
          packageSizeBytes: number;
          sha256: string;
          packageUrl: string;
        }) => {
          const path = `downloads/mods/mod-00050/${v.version}/${v.fileName}`;
          return [path, allBins().indexOf(binForTarget(path)), v.packageSizeBytes, v.sha256, v.packageUrl];
        },
      ),
    );
    // The catalog: every served release (each is checked), and of its externally hosted ones at
    // least those no versions document lists (the thread that parsed the catalog drops those its
    // own versions documents list: theirs are signed).
    const catalog = digests.listed.get(paths.length - 1)!;
    const catalogPaths = catalog.filter((_, k) => k % 5 === 0) as string[];
    const served = catalogPaths.filter((p) => p.startsWith("downloads/"));
    expect(served).toHaveLength(3 * Math.ceil(MODS / 50));
    const extras = Array.from({ length: Math.ceil(MODS / 97) }, (_, k) => {
      const id = `mod-${String(k * 97).padStart(5, "0")}`;
      return `external/mods/${id}/0.9.0/${id}-0.9.0.zip`;
    });
    expect(catalogPaths).toEqual(expect.arrayContaining(extras));
    expect(catalogPaths.length).toBeLessThan(served.length + extras.length + 3 * MODS);
    const first = catalog.indexOf("downloads/mods/mod-00000/1.0.0/mod-00000-1.0.0.zip");
    expect(catalog.slice(first, first + 5)).toEqual([
      "downloads/mods/mod-00000/1.0.0/mod-00000-1.0.0.zip",
      allBins().indexOf(binForTarget("downloads/mods/mod-00000/1.0.0/mod-00000-1.0.0.zip")),
      "package mod-00000 1.0.0".length,
      sha256("package mod-00000 1.0.0"),
      `${BASE}/downloads/mods/mod-00000/1.0.0/mod-00000-1.0.0.zip`,
    ]);
    expect(digests.listed.has(0)).toBe(false); // a detail document is hashed, never parsed
  });

  it("a file gone before it is read fails the call, whichever thread reads it", () => {
    const paths = Array.from({ length: POOL_FROM + 10 }, (_, i) =>
      i === POOL_FROM - 5 ? "api/v1/gone.json" : "api/v1/changes/head.json",
    );
    expect(() => digestFiles(siteDir, paths, new Uint8Array(paths.length), BIN_BIT_LENGTH)).toThrow(/ENOENT/);
  });

  it("collects the same targets as the one-thread rules", () => {
    const targets = collectSiteTargets(siteDir);
    expect(targets.length).toBe(2 * MODS + 1 + 1 + 4 + 3 * MODS + 12);
    expect(targets).toEqual(referenceTargets(siteDir));
    for (const t of collectPlacedTargets(siteDir)) expect(allBins()[t.bin]).toBe(binForTarget(t.path));
  });

  it("a full signing writes byte for byte what signing wrote before the hashing pool (checked digest)", () => {
    const copy = join(work, "signed");
    rmSync(copy, { recursive: true, force: true });
    mkdirSync(copy);
    const site = join(copy, "site");
    // The same site in a folder of its own, so signing it leaves the fixture unsigned for the other tests.
    writeFixtureSite(site);
    const root = new Metadata(buildRoot(1, KEYS, AT));
    root.sign(signerFor(KEYS.root));
    writeRoot(site, root);
    const result = signSite(site, ONLINE, () => AT);
    expect(result.targetCount).toBe(5 * MODS + 18);
    expect(result.binsSigned).toHaveLength(1024);
    // What the signer of d6f44c6 (one thread, before the hashing pool) wrote for this fixture, keys and clock.
    expect(tufDigest(site)).toEqual({ files: EXPECTED_FILES, sha256: EXPECTED_SHA256 });
  });
});

const EXPECTED_FILES = 1029;
const EXPECTED_SHA256 = "b9ab98a9dca5cbfb7b9bd198a39bb5a026f292c9c36591d96214c2f2552c66a1";

describe("sha256Leading32", () => {
  it("is the leftmost 32 bits of node:crypto's sha256 for paths of every length and alphabet", () => {
    const alphabet = ["a", "/", "-", "0", ".", "é", "\u{1F600}", "\u4e2d", '"', "\\", "\u0000"];
    let seed = 7;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const texts = [
      "",
      "a",
      "x".repeat(55),
      "x".repeat(56),
      "x".repeat(64),
      "x".repeat(119),
      "x".repeat(1000),
    ];
    for (let n = 0; n < 3000; n++) {
      let text = "";
      const length = Math.floor(random() * 160);
      for (let k = 0; k < length; k++) text += alphabet[Math.floor(random() * alphabet.length)];
      texts.push(text);
    }
    for (const text of texts)
      expect(leading32(text)).toBe(createHash("sha256").update(text, "utf8").digest().readUInt32BE(0));
  });
});

describe("FileWriter", () => {
  it("rethrows a file it could not write on the waiting thread, and hard-links files with the same bytes", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-file-writer-"));
    try {
      const missing = FileWriter.start(join(dir, "gone"), null)!;
      missing.write("1.bins-000.json", "{}\n");
      expect(() => missing.finish()).toThrow(expect.objectContaining({ code: "ENOENT" }));

      const writer = FileWriter.start(dir, { pem: KEYS.targets.privateKey, keyid: KEYS.targets.keyid })!;
      writer.writeSigned("2.bins-001.json", '{"a":1}', '{"a":1}');
      writer.writeSigned("2.bins-002.json", '{"a":1}', '{"a":1}');
      writer.write("3.snapshot.json", "snapshot\n");
      writer.finish();
      const signed = readFileSync(join(dir, "2.bins-001.json"), "utf8");
      expect(signed).toBe(signedText(signerFor(KEYS.targets)(Buffer.from('{"a":1}')), '{"a":1}'));
      expect(statSync(join(dir, "2.bins-002.json")).ino).toBe(statSync(join(dir, "2.bins-001.json")).ino);
      expect(readFileSync(join(dir, "3.snapshot.json"), "utf8")).toBe("snapshot\n");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
