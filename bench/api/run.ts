/**
 * bench:api — the fast-download lane against a plain static file server in the same run, and the
 * latency of API-key-authenticated requests under 50 concurrent clients. Loopback only, bounded.
 *
 *   npm run bench:api            (SVC_BENCH_MIB=100 by default; DATABASE_URL switches to PostgreSQL)
 */
import { createHash, randomBytes } from "node:crypto";
import { createReadStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { Agent, createServer, get, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadPortalConfig } from "../../src/config/portal-config.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { createAppContext } from "../../src/http/app.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import { createStore } from "../../src/store/index.ts";

const MIB = 1024 * 1024;
const SIZE = Number(process.env.SVC_BENCH_MIB ?? 100) * MIB;
const ROUNDS = 5;
const CLIENTS = 50;
const REQUESTS_PER_CLIENT = 40;

function log(line: string) {
  process.stdout.write(`${line}\n`);
}

/** Downloads a URL once over a fresh connection, counting bytes; returns MiB/s. */
function download(
  url: string,
  headers: Record<string, string>,
): Promise<{ mibPerSecond: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    get(url, { headers, agent: false }, (res) => {
      if (res.statusCode !== 200) {
        reject(new Error(`${url}: HTTP ${res.statusCode}`));
        res.resume();
        return;
      }
      let bytes = 0;
      res.on("data", (chunk: Buffer) => {
        bytes += chunk.length;
      });
      res.on("end", () => {
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        resolve({ mibPerSecond: bytes / MIB / seconds, bytes });
      });
      res.on("error", reject);
    }).on("error", reject);
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function main() {
  const root = mkdtempSync(join(tmpdir(), "svc-bench-api-"));
  const servers: Server[] = [];
  try {
    const config = loadPortalConfig(join(import.meta.dirname, "..", "..", "portal.config.json"));
    config.limits.rateLimits.apiKeyLifecycle = { limit: 1000, windowSeconds: 60 };
    const siteDir = join(root, "site");
    const fileName = "bench-mod-1.0.0.zip";
    const artifactDir = join(siteDir, "downloads/mods/bench-mod/1.0.0");
    mkdirSync(artifactDir, { recursive: true });
    mkdirSync(join(siteDir, "api/v1"), { recursive: true });
    const artifactPath = join(artifactDir, fileName);
    log(`writing a ${SIZE / MIB} MiB artifact ...`);
    const hash = createHash("sha256");
    const block = randomBytes(MIB);
    for (let written = 0; written < SIZE; written += MIB) {
      const chunk = block.subarray(0, Math.min(MIB, SIZE - written));
      writeFileSync(artifactPath, chunk, { flag: written === 0 ? "w" : "a" });
      hash.update(chunk);
    }
    const sha256 = hash.digest("hex");
    // The lane reads only the catalog's download-enabled versions; a minimal catalog is enough here.
    writeFileSync(
      join(siteDir, "api/v1/catalog.json"),
      JSON.stringify({
        schema: "svc.catalog.v1",
        mods: [
          {
            id: "bench-mod",
            versions: [
              {
                version: "1.0.0",
                fileName,
                packageUrl: `${config.baseUrl}/downloads/mods/bench-mod/1.0.0/${fileName}`,
                packageSizeBytes: SIZE,
                sha256,
                downloadEnabled: true,
              },
            ],
          },
        ],
      }),
    );

    const settings = parseSettings(
      {
        SVC_DEV_EMAIL: "auto-verify",
        ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
      },
      { dataDir: join(root, ".data") },
    );
    const store = await createStore(settings);
    const app = await createAppContext({ config, settings, siteDir, log: () => {}, store });
    const accounts = app.accounts!;
    // auto-verify: the account is usable at once, no mail round trip.
    const { accountId } = await accounts.createAccount({
      email: `bench-${Date.now()}@example.com`,
      displayName: "Bench",
      role: "player",
    });
    const { apiKey } = await accounts.createApiKey(accountId, "bench");

    const portal = createPortalServer(app);
    servers.push(portal);
    const portalPort = (await listen(portal, 0, "127.0.0.1")).port;
    // The baseline: the plainest static file server Node offers, default stream settings.
    const plain = createServer((_req, res) => {
      res.writeHead(200, {
        "content-type": "application/zip",
        "content-length": statSync(artifactPath).size,
      });
      createReadStream(artifactPath).pipe(res);
    });
    servers.push(plain);
    const plainPort = (await listen(plain, 0, "127.0.0.1")).port;

    const laneUrl = `http://127.0.0.1:${portalPort}/api/v1/downloads/mods/bench-mod/1.0.0/${fileName}`;
    const plainUrl = `http://127.0.0.1:${plainPort}/${fileName}`;
    const auth = { authorization: `Bearer ${apiKey}` };

    // Warm both (page cache, JIT) before measuring; then alternate so drift hits both equally.
    await download(plainUrl, {});
    await download(laneUrl, auth);
    const lane: number[] = [];
    const baseline: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      baseline.push((await download(plainUrl, {})).mibPerSecond);
      lane.push((await download(laneUrl, auth)).mibPerSecond);
    }
    const ratio = median(lane) / median(baseline);

    const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
    const latencies: number[] = [];
    const small = (): Promise<number> =>
      new Promise((resolve, reject) => {
        const started = process.hrtime.bigint();
        get(laneUrl, { agent, headers: { ...auth, range: "bytes=0-4095" } }, (res) => {
          if (res.statusCode !== 206) reject(new Error(`HTTP ${res.statusCode}`));
          res.resume();
          res.on("end", () => resolve(Number(process.hrtime.bigint() - started) / 1e6));
        }).on("error", reject);
      });
    for (let i = 0; i < CLIENTS; i++) await small(); // open the pool
    const started = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let i = 0; i < REQUESTS_PER_CLIENT; i++) latencies.push(await small());
      }),
    );
    const wallSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    agent.destroy();

    const result = {
      database: store.kind,
      artifactMiB: SIZE / MIB,
      download: {
        laneMiBps: Math.round(median(lane)),
        plainMiBps: Math.round(median(baseline)),
        ratio: Number(ratio.toFixed(2)),
        target: 0.7,
        rounds: ROUNDS,
      },
      apiKeyLatency: {
        clients: CLIENTS,
        requests: latencies.length,
        p50ms: Number(percentile(latencies, 50).toFixed(2)),
        p99ms: Number(percentile(latencies, 99).toFixed(2)),
        requestsPerSecond: Math.round(latencies.length / wallSeconds),
      },
    };
    log("");
    log(`fast download, ${SIZE / MIB} MiB, median of ${ROUNDS} (database: ${store.kind})`);
    log(`  api_key_mod_download  ${result.download.laneMiBps} MiB/s`);
    log(`  plain node:http       ${result.download.plainMiBps} MiB/s`);
    log(
      `  ratio                 ${result.download.ratio}x (target >= 0.7x) ${ratio >= 0.7 ? "OK" : "BELOW TARGET"}`,
    );
    log(`API-key request (Range 4 KiB), ${CLIENTS} concurrent clients x ${REQUESTS_PER_CLIENT}`);
    log(
      `  p50 ${result.apiKeyLatency.p50ms} ms   p99 ${result.apiKeyLatency.p99ms} ms   ${result.apiKeyLatency.requestsPerSecond} req/s`,
    );
    log(JSON.stringify(result));
    await store.close();
    process.exitCode = ratio >= 0.7 ? 0 : 1;
  } finally {
    for (const server of servers) {
      server.closeAllConnections();
      server.close();
    }
    rmSync(root, { recursive: true, force: true });
  }
}

await main();
