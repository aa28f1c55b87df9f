// What a manager fetches: only the signed metadata it must (the next root, the timestamp, and when
// something changed the snapshot and the top-level targets), then the hashed bins and the signed
// versions.json of the mods it needs, and their packages. Never api/v1/catalog.json or
// api/v1/mods/index.json, which list every mod: both are served here with bytes that match no
// signature, so a client that read either would also be refused. Every request is counted on the
// loopback mirror and compared with the exact list expected.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { isDistributionError } from "../../src/distribution/errors.ts";
import { binForTarget, TUF_DIR } from "../../src/distribution/tuf-layout.ts";
import { runCli } from "../support/run-cli.ts";
import { signedPortal } from "./support.ts";

type Portal = Awaited<ReturnType<typeof signedPortal>>;

const versionsOf = (modId: string) => `api/v1/mods/${modId}/versions.json`;
const packageOf = (modId: string, version: string) =>
  `downloads/mods/${modId}/${version}/${modId}-${version}.zip`;
const EVERY_MOD = ["api/v1/catalog.json", "api/v1/mods/index.json"];

/** The live metadata's file names, as a client walks them: next root, timestamp, snapshot, targets, bins. */
function live(portal: Portal) {
  const read = (name: string) =>
    JSON.parse(readFileSync(join(portal.siteDir, TUF_DIR, name), "utf8")).signed as {
      version: number;
      meta: Record<string, { version: number }>;
    };
  const snapshotVersion = read("timestamp.json").meta["snapshot.json"]!.version;
  const snapshot = read(`${snapshotVersion}.snapshot.json`);
  const binOf = (target: string) => `${binForTarget(target)}.json`;
  return {
    nextRoot: `${TUF_DIR}/${read("root.json").version + 1}.root.json`,
    timestamp: `${TUF_DIR}/timestamp.json`,
    snapshot: `${TUF_DIR}/${snapshotVersion}.snapshot.json`,
    targets: `${TUF_DIR}/${snapshot.meta["targets.json"]!.version}.targets.json`,
    /** The file of the bin that signs a target. */
    bin: (target: string) => `${TUF_DIR}/${snapshot.meta[binOf(target)]!.version}.${binOf(target)}`,
    binVersion: (target: string) => snapshot.meta[binOf(target)]!.version,
  };
}

let portal: Portal;
let dir: string;
const flags = () => ["--mirror", portal.mirror.origin, "--trusted-root", portal.trustedRoot];
/** Every path requested in this file, for the last test. */
const seen: string[] = [];
const take = () => {
  const paths = portal.mirror.requests.splice(0).map((r) => r.path);
  seen.push(...paths);
  return paths;
};
const sorted = (paths: string[]) => [...paths].sort();

async function svc(...args: string[]) {
  const result = await runCli(args, portal.work);
  expect(result.code, result.stderr).toBe(0);
  return result;
}

beforeAll(async () => {
  portal = await signedPortal();
  await portal.publish({ modId: "core-lib", name: "Core Lib", version: "1.0.0" });
  await portal.publish({ version: "1.0.0", dependencies: [{ modId: "core-lib", versionRange: "^1.0.0" }] });
  await portal.publish({ modId: "other-mod", name: "Other", version: "1.0.0" });
  for (const path of EVERY_MOD) portal.mirror.override.set(path, Buffer.from("{}\n"));
  dir = portal.installDir("sparse");
  portal.mirror.requests.length = 0;
});
beforeEach(() => {
  take();
});
afterAll(() => portal.close());

describe("a manager reads only the signed documents of the mods it needs", () => {
  it("first install into a fresh manager: the metadata, the bins and documents of the mod and its dependency, the packages", async () => {
    const m = live(portal);
    await svc("install", "better-hud", "--dir", dir, ...flags());
    const bins = new Set([m.bin(versionsOf("better-hud")), m.bin(versionsOf("core-lib"))]);
    expect(sorted(take())).toEqual(
      sorted([
        m.nextRoot,
        m.timestamp,
        m.snapshot,
        m.targets,
        ...bins,
        versionsOf("better-hud"),
        versionsOf("core-lib"),
        packageOf("better-hud", "1.0.0"),
        packageOf("core-lib", "1.0.0"),
      ]),
    );
  });

  it("a refresh when nothing changed is two requests: the next root and the timestamp", async () => {
    const m = live(portal);
    await svc("install", "better-hud", "--dir", dir, ...flags());
    expect(take()).toEqual([m.nextRoot, m.timestamp]);
    await svc("verify", "--dir", dir, ...flags());
    expect(take()).toEqual([m.nextRoot, m.timestamp]);
    await svc("repair", "--dir", dir, ...flags());
    expect(take()).toEqual([m.nextRoot, m.timestamp]);
  });

  it("after another mod's publication: the timestamp, the snapshot and the top-level targets, no bin", async () => {
    const before = live(portal);
    await portal.publish({ modId: "other-mod", name: "Other", version: "1.1.0" });
    const m = live(portal);
    // The fixture's ids: the publication re-signed neither bin this manager reads.
    for (const modId of ["better-hud", "core-lib"])
      expect(m.binVersion(versionsOf(modId))).toBe(before.binVersion(versionsOf(modId)));
    expect(m.snapshot).not.toBe(before.snapshot);
    take();
    await svc("install", "better-hud", "--dir", dir, ...flags());
    expect(take()).toEqual([m.nextRoot, m.timestamp, m.snapshot, m.targets]);
    await svc("verify", "--dir", dir, ...flags());
    expect(take()).toEqual([m.nextRoot, m.timestamp]);
  });

  it("an update: the changed mod's bin, versions.json and package, nothing of its unchanged dependency", async () => {
    await portal.publish({ version: "1.1.0", dependencies: [{ modId: "core-lib", versionRange: "^1.0.0" }] });
    const m = live(portal);
    await svc("install", "better-hud@^1.1.0", "--dir", dir, ...flags());
    const paths = take();
    expect(sorted(paths)).toEqual(
      sorted([
        m.nextRoot,
        m.timestamp,
        m.snapshot,
        m.targets,
        m.bin(versionsOf("better-hud")),
        versionsOf("better-hud"),
        packageOf("better-hud", "1.1.0"),
      ]),
    );
  });

  it("svc fetch with a fresh cache: the mod's bin, its versions.json and its package", async () => {
    const m = live(portal);
    const cache = join(portal.work, "fetch-cache");
    await svc("fetch", "core-lib", "--out", join(portal.work, "out"), "--cache", cache, ...flags());
    expect(sorted(take())).toEqual(
      sorted([
        m.nextRoot,
        m.timestamp,
        m.snapshot,
        m.targets,
        m.bin(versionsOf("core-lib")),
        versionsOf("core-lib"),
        packageOf("core-lib", "1.0.0"),
      ]),
    );
  });

  it("never requests the documents that list every mod", () => {
    take();
    expect(seen.length).toBeGreaterThan(20);
    expect(seen.filter((path) => EVERY_MOD.includes(path))).toEqual([]);
  });
});

describe("a package is taken only as its mod's signed versions.json lists it", () => {
  it("refuses a release whose sha256 or size differs from the signed listing (catalog_tampered), fetching nothing", async () => {
    const client = portal.client("sparse-direct");
    const listed = (await client.modListing("core-lib"))![0]!;
    take();
    for (const version of [
      { ...listed, sha256: "0".repeat(64) },
      { ...listed, packageSizeBytes: listed.packageSizeBytes + 1 },
      { ...listed, packageUrl: `${portal.mirror.origin}/elsewhere.zip` },
    ]) {
      const error = await client.downloadPackage({ modId: "core-lib", version }).catch((e: unknown) => e);
      expect(isDistributionError(error) && error.code, String(error)).toBe("catalog_tampered");
    }
    const unlisted = await client
      .downloadPackage({ modId: "core-lib", version: { ...listed, version: "9.9.9" } })
      .catch((e: unknown) => e);
    expect(isDistributionError(unlisted) && unlisted.code, String(unlisted)).toBe("target_unknown");
    expect(take()).toEqual([]);
  });
});
