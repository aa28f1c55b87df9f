/**
 * Incremental signing (signAfterCommit from the commit's file list) must sign exactly what a full
 * pass over the same tree signs: after each incremental run, a full signSite finds no role to
 * re-sign. Synthetic sites (no portal), so each case takes milliseconds.
 */
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { Metadata } from "@tufjs/models";
import { afterEach, describe, expect, it } from "vitest";
import { isDistributionError } from "../../src/distribution/errors.ts";
import { buildRoot, signerFor } from "../../src/distribution/tuf-keys.ts";
import { binForTarget, TUF_DIR } from "../../src/distribution/tuf-layout.ts";
import { signAfterCommit, signSite } from "../../src/distribution/tuf-repository.ts";
import { writeRoot } from "../../src/distribution/tuf-root.ts";
import { operatorKeys } from "./support.ts";

const sites: string[] = [];
afterEach(() => {
  for (const dir of sites.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function site() {
  const dir = mkdtempSync(join(tmpdir(), "svc-bins-"));
  sites.push(dir);
  const keys = operatorKeys();
  const root = new Metadata(buildRoot(1, { root: keys.root, ...keys.online.keys }, new Date()));
  root.sign(signerFor(keys.root));
  writeRoot(dir, root);
  const write = (path: string, text: string | Buffer) => {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  };
  const json = <T>(name: string): T => JSON.parse(readFileSync(join(dir, TUF_DIR, name), "utf8")) as T;
  const meta = () => {
    const ts = json<{ signed: { meta: Record<string, { version: number }> } }>("timestamp.json");
    const snap = json<{ signed: { meta: Record<string, { version: number }> } }>(
      `${ts.signed.meta["snapshot.json"]!.version}.snapshot.json`,
    );
    return Object.fromEntries(Object.entries(snap.signed.meta).map(([k, v]) => [k, v.version]));
  };
  const targetsOf = (
    role: string,
  ): Record<string, { hashes: { sha256: string }; custom?: { url?: string } }> =>
    json<{ signed: { targets: Record<string, { hashes: { sha256: string } }> } }>(
      `${meta()[`${role}.json`]}.${role}.json`,
    ).signed.targets;
  return { dir, keys, write, meta, targetsOf, signing: { keys: keys.online } };
}

const versionsDoc = (
  modId: string,
  versions: Array<{ version: string; url: string; sha256: string; size: number }>,
) =>
  `${JSON.stringify({
    schema: "svc.mod-versions.v1",
    modId,
    versions: versions.map((v) => ({
      version: v.version,
      fileName: `${modId}-${v.version}.zip`,
      packageUrl: v.url,
      packageSizeBytes: v.size,
      sha256: v.sha256,
    })),
  })}\n`;

describe("incremental signing after a commit", () => {
  it("a new changes page takes the top-level place and the previous newest page moves to its bin", () => {
    const s = site();
    s.write("api/v1/changes/head.json", '{"lastPage":1}\n');
    s.write("api/v1/changes/0.json", '{"page":0}\n');
    s.write("api/v1/changes/1.json", '{"page":1}\n');
    signSite(s.dir, s.keys.online);
    expect(Object.keys(s.targetsOf("targets"))).toEqual([
      "api/v1/changes/1.json",
      "api/v1/changes/head.json",
    ]);

    s.write("api/v1/changes/head.json", '{"lastPage":2}\n');
    s.write("api/v1/changes/2.json", '{"page":2}\n');
    const result = signAfterCommit(s.dir, s.signing, {
      written: ["site/api/v1/changes/head.json", "site/api/v1/changes/2.json", "records/changes/0/2.json"],
      deleted: [],
    });
    expect(result?.binsSigned).toEqual([binForTarget("api/v1/changes/1.json")]);
    expect(Object.keys(s.targetsOf("targets"))).toEqual([
      "api/v1/changes/2.json",
      "api/v1/changes/head.json",
    ]);
    expect(Object.keys(s.targetsOf(binForTarget("api/v1/changes/1.json")))).toContain(
      "api/v1/changes/1.json",
    );
    const before = s.meta();
    const full = signSite(s.dir, s.keys.online);
    expect(full.binsSigned).toEqual([]);
    expect(s.meta()["targets.json"]).toBe(before["targets.json"]);
  });

  it("a commit's measured digests are signed as given, for written paths only; other paths are hashed from disk", () => {
    const s = site();
    s.write("api/v1/catalog.json", '{"mods":[]}\n');
    s.write("api/v1/mods/a/detail.json", '{"id":"a"}\n');
    signSite(s.dir, s.keys.online);
    s.write("api/v1/catalog.json", '{"mods":["a"]}\n');
    s.write("api/v1/mods/a/detail.json", '{"id":"a","v":2}\n');
    // What the commit measured while writing catalog.json is what is signed: the file is not read
    // back (a stand-in digest shows which was used); detail.json has none and is hashed from disk;
    // a digest for a path the change did not write is ignored.
    const measured = { length: 15, sha256: "0f".repeat(32) };
    signAfterCommit(s.dir, s.signing, {
      written: ["site/api/v1/catalog.json", "site/api/v1/mods/a/detail.json"],
      deleted: [],
      digests: new Map([
        ["site/api/v1/catalog.json", measured],
        ["site/api/v1/mods/b/detail.json", { length: 1, sha256: "aa".repeat(32) }],
      ]),
    });
    expect(s.targetsOf("targets")["api/v1/catalog.json"]!.hashes.sha256).toBe(measured.sha256);
    const detailSha = createHash("sha256").update('{"id":"a","v":2}\n').digest("hex");
    expect(
      s.targetsOf(binForTarget("api/v1/mods/a/detail.json"))["api/v1/mods/a/detail.json"]!.hashes.sha256,
    ).toBe(detailSha);
    expect(
      s.targetsOf(binForTarget("api/v1/mods/b/detail.json"))["api/v1/mods/b/detail.json"],
    ).toBeUndefined();
    // A full pass hashes the file itself and corrects the stand-in.
    signSite(s.dir, s.keys.online);
    expect(s.targetsOf("targets")["api/v1/catalog.json"]!.hashes.sha256).toBe(
      createHash("sha256").update('{"mods":["a"]}\n').digest("hex"),
    );
  });

  it("a changed versions document brings its externally hosted artifacts and drops a deleted document", () => {
    const s = site();
    const url = "https://github.com/o/r/releases/download/hud-v1.0.0/hud-1.0.0.zip";
    s.write(
      "api/v1/mods/hud/versions.json",
      versionsDoc("hud", [{ version: "1.0.0", url, sha256: "a".repeat(64), size: 10 }]),
    );
    s.write("api/v1/mods/old/index.json", "{}\n");
    signSite(s.dir, s.keys.online);

    const url2 = url.replaceAll("1.0.0", "1.1.0");
    s.write(
      "api/v1/mods/hud/versions.json",
      versionsDoc("hud", [
        { version: "1.1.0", url: url2, sha256: "b".repeat(64), size: 11 },
        { version: "1.0.0", url, sha256: "a".repeat(64), size: 10 },
      ]),
    );
    rmSync(join(s.dir, "api/v1/mods/old/index.json"));
    signAfterCommit(s.dir, s.signing, {
      written: ["api/v1/mods/hud/versions.json"],
      deleted: ["api/v1/mods/old/index.json"],
    });
    const external = "external/mods/hud/1.1.0/hud-1.1.0.zip";
    expect(s.targetsOf(binForTarget(external))[external]).toMatchObject({
      hashes: { sha256: "b".repeat(64) },
      custom: { url: url2 },
    });
    expect(
      s.targetsOf(binForTarget("api/v1/mods/old/index.json"))["api/v1/mods/old/index.json"],
    ).toBeUndefined();
    expect(signSite(s.dir, s.keys.online).binsSigned).toEqual([]);
  });

  it("a served artifact whose bytes differ from its versions document is refused (artifact_mismatch), signing nothing", () => {
    const s = site();
    signSite(s.dir, s.keys.online);
    const before = s.meta();
    const url = "http://portal.test/downloads/mods/hud/1.0.0/hud-1.0.0.zip";
    s.write("downloads/mods/hud/1.0.0/hud-1.0.0.zip", Buffer.from("swapped bytes"));
    s.write(
      "api/v1/mods/hud/versions.json",
      versionsDoc("hud", [{ version: "1.0.0", url, sha256: "c".repeat(64), size: 13 }]),
    );
    let code = "";
    try {
      signAfterCommit(s.dir, s.signing, {
        written: ["site/api/v1/mods/hud/versions.json", "site/downloads/mods/hud/1.0.0/hud-1.0.0.zip"],
        deleted: [],
      });
    } catch (error) {
      code = isDistributionError(error) ? error.code : String(error);
    }
    expect(code).toBe("artifact_mismatch");
    expect(s.meta()).toEqual(before);
  });
});
