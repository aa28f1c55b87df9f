import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commitFiles } from "../../src/catalog/atomic-files.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { createAppContext } from "../../src/http/app.ts";
import type { AppContext } from "../../src/http/context.ts";
import { RECHECK_MS } from "../../src/http/published-artifacts.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import type { Store } from "../../src/store/index.ts";
import { openTestStore } from "../support/http-harness.ts";

/**
 * The download lane keeps per-record answers (paths, headers), per-target routes and a per-socket
 * client-address decision across requests. None of them may outlive what it was made from: every
 * request here goes over one keep-alive connection, and each change (a replaced versions
 * document, a hidden version, a new base URL, a revoked key) shows on the very next request.
 */
const modId = "cached-mod";
const version = "1.0.0";
const fileName = `${modId}-${version}.zip`;
const rel = `downloads/mods/${modId}/${version}/${fileName}`;
const lane = `/api/v1/${rel}`;

let root: string;
let siteDir: string;
let store: Store;
let app: AppContext;
let server: Server;
let port: number;
let apiKey: string;
let apiKeyId: string;
let accountId: string;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** The mod's versions document listing one version of `bytes`. */
function versionsDocument(bytes: Buffer, options: { downloadEnabled?: boolean; baseUrl?: string }): string {
  return JSON.stringify({
    schema: "svc.mod-versions.v1",
    modId,
    latestVersion: version,
    versions: [
      {
        version,
        fileName,
        packageUrl: `${options.baseUrl ?? app.config.baseUrl}/${rel}`,
        packageSizeBytes: bytes.length,
        sha256: createHash("sha256").update(bytes).digest("hex"),
        downloadEnabled: options.downloadEnabled ?? true,
        status: "published",
      },
    ],
  });
}

const documentRel = `api/v1/mods/${modId}/versions.json`;

/** Writes the artifact and the mod's versions document the way a publication of this process does. */
function publish(bytes: Buffer, options: { downloadEnabled?: boolean; baseUrl?: string } = {}): string {
  commitFiles(siteDir, {
    write: new Map<string, string | Uint8Array>([
      [rel, bytes],
      [documentRel, versionsDocument(bytes, options)],
    ]),
  });
  return createHash("sha256").update(bytes).digest("hex");
}

/** The same, by another process writing the site folder: plain renames this process never hears of. */
function publishFromOutside(bytes: Buffer, options: { downloadEnabled?: boolean } = {}): void {
  const artifact = join(siteDir, rel);
  writeFileSync(`${artifact}.tmp`, bytes);
  renameSync(`${artifact}.tmp`, artifact);
  const document = join(siteDir, documentRel);
  writeFileSync(`${document}.tmp`, versionsDocument(bytes, options));
  renameSync(`${document}.tmp`, document);
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  localPort: number;
}

function get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: Buffer.concat(chunks),
          localPort: req.socket?.localPort ?? 0,
        }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

const auth = () => ({ authorization: `Bearer ${apiKey}` });

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "svc-lane-cache-"));
  siteDir = join(root, "site");
  mkdirSync(join(siteDir, "downloads/mods", modId, version), { recursive: true });
  mkdirSync(join(siteDir, "api/v1/mods", modId), { recursive: true });
  store = await openTestStore("pglite");
  app = await createAppContext({
    config: loadPortalConfig(join(import.meta.dirname, "..", "..", "portal.config.json")),
    settings: parseSettings({ SVC_DEV_EMAIL: "auto-verify" }, { dataDir: join(root, ".data") }),
    siteDir,
    log: () => {},
    store,
  });
  server = createPortalServer(app);
  port = (await listen(server, 0, "127.0.0.1")).port;
  accountId = (
    await app.accounts!.createAccount({ email: "cache@example.com", displayName: "Cache", role: "player" })
  ).accountId;
  const created = await app.accounts!.createApiKey(accountId, "cache");
  apiKey = created.apiKey;
  apiKeyId = created.metadata.id;
});

afterAll(async () => {
  agent.destroy();
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await app?.accounts?.flushPendingWrites();
  await store?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("API-key lane answers kept across requests", () => {
  it("follows a replaced versions document on the same connection: new bytes, ETag, sha256 and length", async () => {
    const first = Buffer.alloc(10_000, 1);
    const firstSha = publish(first);
    const before = await get(lane, { ...auth(), range: "bytes=0-99" });
    expect(before.status).toBe(206);
    expect(before.headers.etag).toBe(`"${firstSha}"`);
    expect(before.headers["content-range"]).toBe("bytes 0-99/10000");

    const second = Buffer.alloc(12_345, 2);
    const secondSha = publish(second);
    const after = await get(lane, { ...auth(), range: "bytes=0-99" });
    expect(after.localPort).toBe(before.localPort);
    expect(after.status).toBe(206);
    expect(after.headers.etag).toBe(`"${secondSha}"`);
    expect(after.headers["x-svc-sha256"]).toBe(secondSha);
    expect(after.headers["content-range"]).toBe("bytes 0-99/12345");
    expect(after.body.equals(second.subarray(0, 100))).toBe(true);
    const whole = await get(lane, auth());
    expect(whole.status).toBe(200);
    expect(whole.body.equals(second)).toBe(true);
    // The old validator no longer matches: a 304 would hand out the replaced bytes' identity.
    expect((await get(lane, { ...auth(), "if-none-match": `"${firstSha}"` })).status).toBe(200);
    expect((await get(lane, { ...auth(), "if-none-match": `"${secondSha}"` })).status).toBe(304);
  });

  it("answers 404 on the next request once the version is no longer download-enabled, and serves it again after", async () => {
    const bytes = Buffer.alloc(5000, 3);
    publish(bytes);
    expect((await get(lane, auth())).status).toBe(200);
    publish(bytes, { downloadEnabled: false });
    const hidden = await get(lane, auth());
    expect(hidden.status).toBe(404);
    expect((await get(`/${rel}`)).status).toBe(404);
    publish(bytes);
    expect((await get(lane, auth())).status).toBe(200);
  });

  it("follows another process's publication within RECHECK_MS, without a stat per request before that", async () => {
    const bytes = Buffer.alloc(4000, 6);
    publish(bytes);
    expect((await get(lane, auth())).status).toBe(200);
    publishFromOutside(bytes, { downloadEnabled: false });
    const checkedBefore = Date.now();
    // Until the document is looked at again the lane still answers from what it read.
    const stillKnown = await get(lane, auth());
    if (Date.now() - checkedBefore < RECHECK_MS / 2) expect(stillKnown.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, RECHECK_MS + 50));
    expect((await get(lane, auth())).status).toBe(404);
    expect((await get(`/${rel}`)).status).toBe(404);
    // This process's own publication after it is seen at once again.
    publish(bytes);
    expect((await get(lane, auth())).status).toBe(200);
  });

  it("redirects once the record points at another host, and serves locally again when it points back", async () => {
    const bytes = Buffer.alloc(3000, 4);
    publish(bytes);
    expect((await get(lane, auth())).status).toBe(200);
    const elsewhere = "https://releases.example.net/store";
    publish(bytes, { baseUrl: elsewhere });
    const moved = await get(lane, auth());
    expect(moved.status).toBe(302);
    expect(moved.headers.location).toBe(`${elsewhere}/${rel}`);
    // Same record, new portal configuration: the prepared answer follows the configuration too.
    const original = app.config;
    app.config = { ...original, baseUrl: elsewhere };
    try {
      expect((await get(lane, auth())).status).toBe(200);
    } finally {
      app.config = original;
    }
    expect((await get(lane, auth())).status).toBe(302);
  });

  it("refuses a key revoked through this process on the next request of the same connection", async () => {
    publish(Buffer.alloc(2000, 5));
    expect((await get(lane, auth())).status).toBe(200);
    await app.accounts!.revokeApiKey(accountId, apiKeyId);
    const refused = await get(lane, auth());
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.body.toString()).code).toBe("invalid_api_key");
  });
});
