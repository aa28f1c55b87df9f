// The TUF specification's endless-data and slow-retrieval attacks against the reference manager:
// a mirror (or anyone on the path) that sends a body which never ends, or sends it a byte at a time.
// Every request the client makes — TUF metadata through tuf-js, signed documents, packages — must
// stop at its cap and within its timeouts, with a stable code, and leave the installation as it was.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type DistributionError, isDistributionError } from "../../src/distribution/errors.ts";
import type { ManagerClient } from "../../src/distribution/manager-client.ts";
import { DEFAULT_MIRROR_LIMITS, type MirrorLimits } from "../../src/distribution/mirror-transfer.ts";
import { binForTarget, TUF_DIR } from "../../src/distribution/tuf-layout.ts";
import { endlessBody, type ResponseWatch, silentAnswer, tricklingBody } from "./hostile-responses.ts";
import { signedPortal, treeHashes } from "./support.ts";

type Portal = Awaited<ReturnType<typeof signedPortal>>;

const VERSIONS = "api/v1/mods/better-hud/versions.json";
const CATALOG = "api/v1/catalog.json";
const ARTIFACT = "downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip";
// Loopback socket buffers (send and receive, auto-tuned) plus the HTTP client's own queue: what a
// server can hand over before the client's cap is even reached, not what the client keeps.
const SOCKET_SLACK = 16 * 1024 * 1024;
// One read from the socket (64 KiB on loopback here), with room to spare.
const MAX_CHUNK = 256 * 1024;
// Small on purpose: a test waits seconds, not the production defaults' half minute.
const TEST_LIMITS: Partial<MirrorLimits> = {
  connectTimeoutMs: 400,
  idleTimeoutMs: 400,
  minProgressBytes: 64,
};
// How long a client may take to give up before the test calls it stuck (the old client: forever).
const GENEROUS_BOUND_MS = 10_000;

async function refusal(promise: Promise<unknown>): Promise<DistributionError> {
  try {
    await promise;
  } catch (error) {
    if (isDistributionError(error)) return error;
    throw error;
  }
  throw new Error("expected the client to refuse");
}

/** The refusal, or a failure naming the bound when the client is still waiting after it. */
async function refusalWithin(promise: Promise<unknown>, boundMs: number): Promise<DistributionError> {
  promise.catch(() => {});
  let timer: NodeJS.Timeout | undefined;
  const stuck = new Promise<"stuck">((resolve) => {
    timer = setTimeout(() => resolve("stuck"), boundMs);
  });
  const outcome = await Promise.race([refusal(promise), stuck]);
  clearTimeout(timer);
  if (outcome === "stuck") throw new Error(`the client was still waiting after ${boundMs} ms`);
  return outcome;
}

function tufJson(portal: Portal, name: string) {
  return JSON.parse(readFileSync(join(portal.siteDir, TUF_DIR, name), "utf8")) as {
    signed: {
      meta: Record<string, { version: number; length?: number }>;
      targets: Record<string, { length: number }>;
    };
  };
}

/** The live metadata file names and the signed lengths the attacks below aim at. */
function liveMetadata(portal: Portal) {
  const timestamp = tufJson(portal, "timestamp.json");
  const snapshotMeta = timestamp.signed.meta["snapshot.json"]!;
  const snapshot = tufJson(portal, `${snapshotMeta.version}.snapshot.json`);
  const bin = binForTarget(VERSIONS);
  const binFile = `${snapshot.signed.meta[`${bin}.json`]!.version}.${bin}.json`;
  const targets = tufJson(portal, `${snapshot.signed.meta["targets.json"]!.version}.targets.json`);
  return {
    snapshotFile: `${snapshotMeta.version}.snapshot.json`,
    snapshotLength: snapshotMeta.length!,
    binFile,
    catalogLength: targets.signed.targets[CATALOG]!.length,
    versionsLength: tufJson(portal, binFile).signed.targets[VERSIONS]!.length,
  };
}

let portal: Portal;
let clients = 0;
const client = (limits: Partial<MirrorLimits> = TEST_LIMITS): ManagerClient =>
  portal.client(`hostile-${++clients}`, { limits });
const install = (c: ManagerClient) => c.install(portal.installDir(), [{ modId: "better-hud", range: "*" }]);

beforeAll(async () => {
  portal = await signedPortal();
  await portal.publish({ version: "1.0.0" });
  await portal.client().install(portal.installDir(), [{ modId: "better-hud", range: "1.0.0" }]);
});
afterEach(() => {
  portal.mirror.respond.clear();
});
afterAll(() => portal.close());

describe("endless-data attack: every response stops at its cap (response_too_large)", () => {
  async function expectCutAt(
    watch: ResponseWatch,
    error: DistributionError,
    cap: number,
    before: Map<string, string>,
  ) {
    expect(error.code, error.message).toBe("response_too_large");
    expect(error.details).toMatchObject({ cap });
    // The client read past the cap by at most the chunk that crossed it (a socket read).
    const { received } = error.details as { received: number };
    expect(received).toBeGreaterThan(cap);
    expect(received).toBeLessThanOrEqual(cap + MAX_CHUNK);
    // Then it hung up: the attacker's writes stopped near the cap, not at its 64 MiB give-up.
    await expect.poll(() => watch.closedAfterMs, { timeout: 5_000 }).not.toBeNull();
    expect(watch.bytesSent).toBeLessThan(cap + SOCKET_SLACK);
    expect(treeHashes(portal.installDir())).toEqual(before);
  }

  it("an endless timestamp.json (no signed length) stops at the documented timestamp cap", async () => {
    const before = treeHashes(portal.installDir());
    const { watch, responder } = endlessBody();
    portal.mirror.respond.set(`${TUF_DIR}/timestamp.json`, responder);
    const error = await refusal(install(client()));
    await expectCutAt(watch, error, DEFAULT_MIRROR_LIMITS.timestampMaxBytes, before);
  });

  it("an endless snapshot stops at the length the timestamp signs for it", async () => {
    const before = treeHashes(portal.installDir());
    const { snapshotFile, snapshotLength } = liveMetadata(portal);
    const { watch, responder } = endlessBody();
    portal.mirror.respond.set(`${TUF_DIR}/${snapshotFile}`, responder);
    const error = await refusal(install(client()));
    await expectCutAt(watch, error, snapshotLength, before);
  });

  it("an endless hashed bin (snapshot signs no length for it) stops at the documented targets cap", async () => {
    const before = treeHashes(portal.installDir());
    const { binFile } = liveMetadata(portal);
    const { watch, responder } = endlessBody();
    portal.mirror.respond.set(`${TUF_DIR}/${binFile}`, responder);
    const error = await refusal(install(client({ ...TEST_LIMITS, targetsMaxBytes: 1024 * 1024 })));
    await expectCutAt(watch, error, 1024 * 1024, before);
  });

  it("an endless catalog.json stops at its signed length", async () => {
    const before = treeHashes(portal.installDir());
    const { catalogLength } = liveMetadata(portal);
    const { watch, responder } = endlessBody();
    portal.mirror.respond.set(CATALOG, responder);
    const error = await refusal(client().fetchDocument(CATALOG));
    await expectCutAt(watch, error, catalogLength, before);
  });

  it("an endless versions.json during svc install stops at its signed length", async () => {
    const before = treeHashes(portal.installDir());
    const { versionsLength } = liveMetadata(portal);
    const { watch, responder } = endlessBody();
    portal.mirror.respond.set(VERSIONS, responder);
    const error = await refusal(install(client()));
    await expectCutAt(watch, error, versionsLength, before);
  });

  it("an endless package stops at its signed length, and nothing of it is kept", async () => {
    const before = treeHashes(portal.installDir());
    const length = readFileSync(join(portal.siteDir, ARTIFACT)).length;
    const { watch, responder } = endlessBody();
    portal.mirror.respond.set(ARTIFACT, responder);
    const name = `hostile-${++clients}`;
    const error = await refusal(install(portal.client(name, { limits: TEST_LIMITS })));
    await expectCutAt(watch, error, length, before);
    expect([...treeHashes(join(portal.work, name, "cache", "packages")).keys()]).toEqual([]);
  });
});

describe("slow-retrieval attack: every request has a connect and an idle timeout", () => {
  const trickle = () => tricklingBody({ intervalMs: 2_000, giveUpAfterMs: 30_000 });

  async function expectStalled(path: string, act: (c: ManagerClient) => Promise<unknown>) {
    const before = treeHashes(portal.installDir());
    const { watch, responder } = trickle();
    portal.mirror.respond.set(path, responder);
    const error = await refusalWithin(act(client()), GENEROUS_BOUND_MS);
    expect(error.code, error.message).toBe("download_stalled");
    // The trickled request was dropped after one idle window (400 ms) and a little: nowhere near
    // the 30 s the trickle would take.
    await expect.poll(() => watch.closedAfterMs, { timeout: 5_000 }).not.toBeNull();
    expect(watch.closedAfterMs).toBeLessThan(2_000);
    expect(treeHashes(portal.installDir())).toEqual(before);
  }

  it("timestamp.json trickled one byte every 2 s (through tuf-js's updater)", async () => {
    await expectStalled(`${TUF_DIR}/timestamp.json`, (c) => c.refresh());
  });

  it("catalog.json trickled one byte every 2 s", async () => {
    await expectStalled(CATALOG, (c) => c.fetchDocument(CATALOG));
  });

  it("versions.json trickled one byte every 2 s during svc install", async () => {
    await expectStalled(VERSIONS, install);
  });

  it("the package trickled one byte every 2 s", async () => {
    await expectStalled(ARTIFACT, install);
  });

  it("a trickle that never pauses for a whole idle window still has to make progress", async () => {
    // 20 bytes a second: a byte arrives every 50 ms, so no single wait reaches the 400 ms idle
    // timeout, yet each 400 ms window brings 8 bytes, under the 64 the limits ask for.
    const { responder } = tricklingBody({ intervalMs: 50, giveUpAfterMs: 30_000 });
    portal.mirror.respond.set(CATALOG, responder);
    const error = await refusalWithin(client().fetchDocument(CATALOG), GENEROUS_BOUND_MS);
    expect(error.code, error.message).toBe("download_stalled");
  });

  it("a mirror that accepts the connection and never answers (connect_timeout)", async () => {
    const { watch, responder } = silentAnswer(30_000);
    portal.mirror.respond.set(`${TUF_DIR}/timestamp.json`, responder);
    const error = await refusalWithin(client().refresh(), GENEROUS_BOUND_MS);
    expect(error.code, error.message).toBe("connect_timeout");
    await expect.poll(() => watch.closedAfterMs, { timeout: 5_000 }).not.toBeNull();
    expect(watch.closedAfterMs).toBeLessThan(2_000);
  });

  it("a slow but steady mirror is not a stalled one", async () => {
    // 128 bytes every 50 ms: ~1 KB per 400 ms window, over the 64 asked for; the catalog arrives.
    const catalog = readFileSync(join(portal.siteDir, CATALOG));
    portal.mirror.respond.set(CATALOG, (_req, res) => {
      res.writeHead(200);
      let offset = 0;
      const timer = setInterval(() => {
        res.write(catalog.subarray(offset, offset + 128));
        offset += 128;
        if (offset >= catalog.length) {
          clearInterval(timer);
          res.end();
        }
      }, 50);
      res.on("close", () => clearInterval(timer));
    });
    const verified = JSON.parse((await client().fetchDocument(CATALOG)).toString("utf8"));
    expect(verified.mods.map((m: { id: string }) => m.id)).toEqual(["better-hud"]);
  });

  it("the defaults are the ones docs/distribution.md documents", () => {
    const docs = readFileSync(join(import.meta.dirname, "../../docs/distribution.md"), "utf8");
    for (const [name, value] of Object.entries(DEFAULT_MIRROR_LIMITS)) {
      const row = `| \`${name}\` | ${value.toLocaleString("en-US")} |`;
      expect(docs.includes(row), `docs/distribution.md has no row ${row}`).toBe(true);
    }
  });
});
