import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { isDistributionError } from "../../src/distribution/errors.ts";
import { allBins, BIN_BIT_LENGTH, binForTarget, TUF_DIR } from "../../src/distribution/tuf-layout.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { modRelease, publisherOptions } from "../support/catalog-project.ts";
import { signedPortal } from "./support.ts";

type Portal = Awaited<ReturnType<typeof signedPortal>>;

interface SignedJson {
  signed: {
    version: number;
    meta: Record<string, { version: number }>;
    targets: Record<string, { length: number; hashes: { sha256: string } }>;
    delegations?: { succinct_roles?: { bit_length: number; name_prefix: string } };
  };
}

function tufFile(portal: Portal, name: string): SignedJson {
  return JSON.parse(readFileSync(join(portal.siteDir, TUF_DIR, name), "utf8")) as SignedJson;
}

/** The live snapshot's meta: role file name -> version. */
function snapshotMeta(portal: Portal): Record<string, number> {
  const timestamp = tufFile(portal, "timestamp.json");
  const snapshot = tufFile(portal, `${timestamp.signed.meta["snapshot.json"]!.version}.snapshot.json`);
  return Object.fromEntries(Object.entries(snapshot.signed.meta).map(([name, m]) => [name, m.version]));
}

function liveBin(portal: Portal, bin: string): { file: string; json: SignedJson } {
  const file = `${snapshotMeta(portal)[`${bin}.json`]}.${bin}.json`;
  return { file, json: tufFile(portal, file) };
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (isDistributionError(error)) return error.code;
    throw error;
  }
  throw new Error("expected the client to refuse");
}

const VERSIONS_DOC = "api/v1/mods/better-hud/versions.json";

describe("TUF hashed-bin delegation", () => {
  let portal: Portal;
  beforeAll(async () => {
    portal = await signedPortal();
    await portal.publish({ modId: "better-hud", version: "1.0.0" });
  });
  afterAll(() => portal.close());

  it("top-level targets delegates per-mod documents and artifacts to 1,024 succinct bins, listed in snapshot", () => {
    const meta = snapshotMeta(portal);
    const targets = tufFile(portal, `${meta["targets.json"]}.targets.json`);
    expect(targets.signed.delegations?.succinct_roles).toMatchObject({
      bit_length: BIN_BIT_LENGTH,
      name_prefix: "bins",
    });
    expect(Object.keys(targets.signed.targets)).toContain("api/v1/catalog.json");
    expect(Object.keys(targets.signed.targets)).not.toContain(VERSIONS_DOC);
    expect(Object.keys(meta).filter((name) => name.startsWith("bins-"))).toHaveLength(1024);
    expect(allBins()).toHaveLength(1024);
    const artifact = "downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip";
    expect(Object.keys(liveBin(portal, binForTarget(artifact)).json.signed.targets)).toContain(artifact);
  });

  it("a document listed in a bin is verified through the delegation, fetching only that bin", async () => {
    const client = portal.client("delegation");
    await client.refresh();
    portal.mirror.requests.length = 0;
    const bytes = await client.fetchDocument(VERSIONS_DOC);
    expect(bytes.equals(readFileSync(join(portal.siteDir, VERSIONS_DOC)))).toBe(true);
    const metadataFetched = portal.mirror.requests
      .map((r) => r.path)
      .filter((p) => p.startsWith(`${TUF_DIR}/`));
    expect(metadataFetched).toEqual([`${TUF_DIR}/${liveBin(portal, binForTarget(VERSIONS_DOC)).file}`]);
  });

  it("a bin whose signed content was altered is refused (catalog_tampered)", async () => {
    const { file, json } = liveBin(portal, binForTarget(VERSIONS_DOC));
    json.signed.targets[VERSIONS_DOC]!.hashes.sha256 = "0".repeat(64);
    portal.mirror.override.set(`${TUF_DIR}/${file}`, Buffer.from(JSON.stringify(json)));
    try {
      const client = portal.client("tampered-bin");
      await client.refresh();
      expect(await refusal(client.fetchDocument(VERSIONS_DOC))).toBe("catalog_tampered");
    } finally {
      portal.mirror.override.clear();
    }
  });

  it("a document whose bytes differ from its entry in a bin is refused (catalog_tampered)", async () => {
    const original = readFileSync(join(portal.siteDir, VERSIONS_DOC));
    portal.mirror.override.set(
      VERSIONS_DOC,
      Buffer.from(original.toString("utf8").replace("better-hud", "better-hux")),
    );
    try {
      const client = portal.client("tampered-document");
      await client.refresh();
      expect(await refusal(client.fetchDocument(VERSIONS_DOC))).toBe("catalog_tampered");
    } finally {
      portal.mirror.override.clear();
    }
  });

  it("a publication re-signs only the bins its files fall in, and a full pass then finds nothing to re-sign", async () => {
    const before = snapshotMeta(portal);
    const { packageBytes, sidecar } = modRelease({ modId: "better-hud", version: "1.1.0" });
    const result = await publishRelease(
      { ...publisherOptions(portal.project), signing: { keys: portal.keys.online } },
      { packageBytes, sidecar, source: { kind: "import" } },
    );
    const after = snapshotMeta(portal);
    const delegated = result.written
      .map((p) => p.replace(/^site\//, ""))
      .filter((p) => /^(api\/v1\/mods\/better-hud\/|downloads\/)/.test(p));
    expect(delegated.length).toBeGreaterThanOrEqual(3);
    const expected = [...new Set(delegated.map(binForTarget))].sort();
    const changed = Object.keys(after)
      .filter((name) => name.startsWith("bins-") && after[name] !== before[name])
      .map((name) => name.replace(/\.json$/, ""))
      .sort();
    expect(changed).toEqual(expected);
    for (const bin of changed) expect(after[`${bin}.json`]).toBe(before[`${bin}.json`]! + 1);
    // Each bin's previous versions stay for clients mid-refresh; nothing else was written.
    const binFiles = readdirSync(join(portal.siteDir, TUF_DIR)).filter((n) => /\.bins-/.test(n));
    expect(binFiles).toHaveLength(1024 + changed.length);

    // The incremental result is what a full re-sign of the same tree would sign.
    const full = signSite(portal.siteDir, portal.keys.online);
    expect(full.binsSigned).toEqual([]);

    const client = portal.client("after-publication");
    const versions = JSON.parse((await client.fetchDocument(VERSIONS_DOC)).toString("utf8")) as {
      versions: Array<{ version: string }>;
    };
    expect(versions.versions.map((v) => v.version)).toContain("1.1.0");
  });
});
