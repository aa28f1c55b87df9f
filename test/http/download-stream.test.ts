import { randomBytes } from "node:crypto";
import { readdirSync, readlinkSync } from "node:fs";
import { get, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { parseSettings } from "../../src/config/settings.ts";
import type { AppContext } from "../../src/http/context.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";

/**
 * The download path (one streamFile for the static site and the API-key lane) reads 1 MiB at a
 * time into pooled buffers. These tests pin what that must never break: exact bytes at every
 * boundary, no buffer reused while a write still holds it, and no file left open by a client that
 * goes away. The static lane is enough to drive it; the API-key lane's own tests stream through it
 * too (download-hidden, accounts-flow).
 */
let project: CatalogProject;
let server: Server;
let origin: string;
let artifact: Buffer;
const MIB = 1024 * 1024;
const PATH = "/downloads/mods/big-mod/1.0.0/big-mod-1.0.0.zip";

beforeAll(async () => {
  project = catalogProject();
  // Large and random enough that socket buffers fill behind a paused client and a mixed-up chunk shows.
  const { packageBytes, sidecar } = modRelease({
    modId: "big-mod",
    extraFiles: { "Content/Paks/Noise.pak": randomBytes(18 * MIB).toString("base64") },
  });
  artifact = Buffer.from(packageBytes);
  await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });
  const app = {
    config: project.config,
    settings: parseSettings({}, { dataDir: join(project.root, ".data") }),
    siteDir: project.siteDir,
    startedAt: new Date(),
    now: () => new Date(),
    log: () => {},
  } as AppContext;
  server = createPortalServer(app);
  origin = `http://127.0.0.1:${(await listen(server, 0, "127.0.0.1")).port}`;
});
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  project?.cleanup();
});

/** A download read at the client's pace: paused for pauseMs after the headers (so the server's writes queue). */
function download(headers: Record<string, string>, pauseMs: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    get(`${origin}${PATH}`, { headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      response.pause();
      setTimeout(() => response.resume(), pauseMs);
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("end", () => resolve(Buffer.concat(chunks)));
      response.on("error", reject);
    }).on("error", reject);
  });
}

/** Descriptors of this process that point at the artifact (the server runs in-process). */
function openArtifactDescriptors(): number {
  let count = 0;
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      if (readlinkSync(join("/proc/self/fd", fd)).endsWith("big-mod-1.0.0.zip")) count += 1;
    } catch {
      // closed while listing
    }
  }
  return count;
}

describe("streaming downloads", () => {
  it("sends exact bytes for the whole file and for ranges that straddle read boundaries", async () => {
    const full = await fetch(origin + PATH);
    expect(full.status).toBe(200);
    expect(Buffer.from(await full.arrayBuffer()).equals(artifact)).toBe(true);
    const ranges: Array<[string, number, number]> = [
      [`bytes=${MIB - 10}-${MIB + 10}`, MIB - 10, MIB + 10],
      [`bytes=1000-${2 * MIB + 5}`, 1000, 2 * MIB + 5],
      ["bytes=-70000", artifact.length - 70000, artifact.length - 1],
      [`bytes=${12 * MIB}-`, 12 * MIB, artifact.length - 1],
      ["bytes=0-0", 0, 0],
    ];
    for (const [range, start, end] of ranges) {
      const part = await fetch(origin + PATH, { headers: { range } });
      expect(part.status, range).toBe(206);
      expect(part.headers.get("content-range")).toBe(`bytes ${start}-${end}/${artifact.length}`);
      const body = Buffer.from(await part.arrayBuffer());
      expect(body.equals(artifact.subarray(start, end + 1)), range).toBe(true);
    }
  });

  it("gives every one of many concurrent downloads its own bytes, also behind paused clients", async () => {
    // Paused clients fill the socket buffers, so the server's writes queue while others read on:
    // a read buffer handed back to the pool before its write completed would show up here.
    const downloads = Array.from({ length: 8 }, (_, i) => {
      const start = (i * 300_007) % MIB;
      return download({ range: `bytes=${start}-` }, i % 3 === 0 ? 400 : 0).then((body) => ({ start, body }));
    });
    for (const { start, body } of await Promise.all(downloads)) {
      expect(body.length, `from ${start}`).toBe(artifact.length - start);
      expect(body.equals(artifact.subarray(start)), `from ${start}`).toBe(true);
    }
  });

  it("closes the file when a client goes away mid-download, and keeps serving", async () => {
    // Small range reads keep one descriptor of a published artifact open on purpose; streams do not.
    const baseline = openArtifactDescriptors();
    expect(baseline).toBeLessThanOrEqual(1);
    await Promise.all(
      Array.from(
        { length: 6 },
        () =>
          new Promise<void>((resolve, reject) => {
            const request = get(`${origin}${PATH}`, { agent: false }, (response) => {
              response.once("data", () => {
                request.destroy();
                resolve();
              });
            });
            request.on("error", (error) => {
              if ((error as NodeJS.ErrnoException).code !== "ECONNRESET") reject(error);
            });
          }),
      ),
    );
    const deadline = Date.now() + 5000;
    while (openArtifactDescriptors() > baseline && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    expect(openArtifactDescriptors()).toBe(baseline);
    const after = await fetch(origin + PATH);
    expect(Buffer.from(await after.arrayBuffer()).equals(artifact)).toBe(true);
  });
});
