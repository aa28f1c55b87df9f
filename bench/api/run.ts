/**
 * bench:api — the portal's download lanes and the API-key request path, each beside nginx
 * (Debian's) serving the same file in the same run. Loopback only; the clients (curl, and a raw
 * keep-alive load generator in its own process) never share the portal's event loop.
 *
 *   source .ci/postgres.sh            # a throwaway PostgreSQL; DATABASE_URL exported
 *   npm run bench:api                 # SVC_BENCH_MIB=100 by default
 *   svc_postgres_stop
 *
 * Three parts, each measured against nginx in the same run:
 *
 * 1. One process (this bench's own, PGlite or DATABASE_URL), nginx with one worker like it (issue
 *    14): one download of the whole file >= 0.9x nginx on both lanes; the API-key request (Range
 *    4 KiB, 50 concurrent clients) p99 <= 10 ms and >= 5,000 req/s. Four parallel downloads and
 *    the 50 KB JSON document are printed beside it, not judged: one Node thread copies every byte
 *    of all four (issue 27 item 5 puts those goals on `--workers`, part 3). Beside them, what Node
 *    itself reaches on the machine (bare node:http) and nginx copying through user space.
 * 2. Behind nginx with X-Accel-Redirect (issue 27): nginx proxies the request to the portal, which
 *    checks the key and answers with the internal path; nginx sends the bytes. Goal >= 0.95x nginx
 *    serving the file directly, one download and four in parallel, A B A B with the order swapped
 *    every round, ratio pair by pair.
 * 3. `svc serve --workers N` (default 2; needs DATABASE_URL) beside nginx with N workers (issue 27):
 *    four parallel downloads >= 0.9x nginx on both lanes, the API-key request p99 <= 10 ms and
 *    >= 5,000 req/s, the 50 KB JSON document >= 0.5x nginx's requests/s. Without DATABASE_URL
 *    these goals are reported MISSED (not measured) and the exit code is 1.
 *
 * Downloads alternate with their baseline (A B, then B A) and take the ratio pair by pair; loads
 * run nginx then the portal (A B A B ...), ratio pair by pair; everything prints as median
 * (min-max). Each goal is printed MET or MISSED; the exit code is 1 when one is missed. The bench
 * installs nothing: without nginx it says how to install it and exits 1.
 *
 * SVC_BENCH_ONLY=requests skips the downloads and the workers (for profiling the request path:
 * `SVC_BENCH_ONLY=requests node --cpu-prof --import tsx bench/api/run.ts`; the portal runs in this
 * process, the load generator in its own).
 *
 *   --runs N      pairs of downloads (default 7) and of loads (default 3)
 *   --seconds N   length of each load (default 5)
 *   --workers N   serving processes of part 3 (default 2, one per core here)
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  createReadStream,
  existsSync,
  fstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer as createNetServer, connect } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { createAppContext } from "../../src/http/app.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import { createStore } from "../../src/store/index.ts";
import {
  describeStats,
  judge,
  printTable,
  type Stats,
  summarize,
  verdict,
  verdictSummary,
} from "../lib/harness.ts";
import { startWorkersPortal } from "./workers.ts";

const MIB = 1024 * 1024;
const SIZE = Number(process.env.SVC_BENCH_MIB ?? 100) * MIB;
const { values: options } = parseArgs({
  options: { runs: { type: "string" }, seconds: { type: "string" }, workers: { type: "string" } },
});
const ROUNDS = Number(options.runs ?? 7);
const LOAD_PAIRS = Number(options.runs ?? 3);
const WORKERS = Number(options.workers ?? 2);
const PARALLEL = 4;
const CLIENTS = 50;
const WARMUP_MS = 1000;
const DURATION_MS = Number(options.seconds ?? 5) * 1000;
const GOALS = { downloadRatio: 0.9, accelRatio: 0.95, p99Ms: 10, requestsPerSecond: 5000, jsonRatio: 0.5 };
/** The JSON document of the small-document row: about 50 KB, like a mod's versions.json with many releases. */
const JSON_BYTES = 50 * 1024;
const ONLY_REQUESTS = process.env.SVC_BENCH_ONLY === "requests";

function log(line = "") {
  process.stdout.write(`${line}\n`);
}

function findNginx(): string | null {
  for (const candidate of ["/usr/sbin/nginx", "/usr/bin/nginx"]) if (existsSync(candidate)) return candidate;
  try {
    return execFileSync("sh", ["-c", "command -v nginx"], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

async function waitForPort(port: number, child: ChildProcess, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (open) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what} did not listen on ${port}`);
}

/**
 * Debian's nginx with the settings a static host uses (sendfile, tcp_nopush), `workers` worker
 * processes (one beside the one-process portal, N beside `--workers N`). A second server of the
 * same process has sendfile off: nginx then copies each byte through user space with read(2) and
 * write(2), as every Node.js server must (Node has no sendfile), so that row is the ceiling of a
 * read+write server, measured beside the real baseline. A third server sits in front of a portal
 * with SVC_ACCEL_REDIRECT=/internal-downloads/, configured as docs/api.md ("Behind nginx") tells
 * operators to: the upstream kept alive (no new connection per download), the request proxied
 * with HTTP/1.1, and the internal location served by the same static handler as the first server
 * (sendfile and tcp_nopush inherited). The portal's answer has no body, so proxy buffering has
 * nothing to buffer. A fourth server is the same front with nginx itself as the authorizer (a
 * server of the same process that answers every request with the X-Accel-Redirect header and no
 * check at all): the ceiling of any X-Accel-Redirect deployment, the portal's part taken out.
 */
async function startNginx(
  binary: string,
  root: string,
  name: string,
  workers: number,
  siteDir: string,
  accelPortalPort: number | null,
): Promise<{
  port: number;
  copyPort: number;
  accelPort: number | null;
  accelSelfPort: number | null;
  stop(): void;
}> {
  const port = await freePort();
  const copyPort = await freePort();
  const accelPort = accelPortalPort === null ? null : await freePort();
  const accelSelfPort = accelPortalPort === null ? null : await freePort();
  const authorizerPort = await freePort();
  const dir = join(root, name);
  const conf = join(dir, "nginx.conf");
  const temp = (what: string) => join(dir, "temp", what);
  mkdirSync(join(dir, "temp"), { recursive: true });
  chmodSync(dir, 0o755);
  writeFileSync(
    conf,
    [
      `worker_processes ${workers};`,
      `pid ${join(dir, "nginx.pid")};`,
      `error_log ${join(dir, "nginx-error.log")};`,
      "events { worker_connections 1024; }",
      "http {",
      "  access_log off;",
      "  sendfile on;",
      "  tcp_nopush on;",
      // The load generator keeps its 50 connections for the whole run (nginx closes after 1,000 by default).
      "  keepalive_requests 100000000;",
      "  types { application/zip zip; application/json json; }",
      "  default_type application/octet-stream;",
      `  client_body_temp_path ${temp("body")}; proxy_temp_path ${temp("proxy")};`,
      `  fastcgi_temp_path ${temp("fastcgi")}; uwsgi_temp_path ${temp("uwsgi")}; scgi_temp_path ${temp("scgi")};`,
      `  server { listen 127.0.0.1:${port}; root ${siteDir}; }`,
      // Reads of 1 MiB, the size the portal's lanes read in.
      `  server { listen 127.0.0.1:${copyPort}; root ${siteDir}; sendfile off; output_buffers 2 1m; }`,
      ...(accelPortalPort === null
        ? []
        : [
            `  upstream svc_portal { server 127.0.0.1:${accelPortalPort}; keepalive 64; }`,
            `  server { listen 127.0.0.1:${accelPort};`,
            '    location / { proxy_pass http://svc_portal; proxy_http_version 1.1; proxy_set_header Connection ""; }',
            `    location /internal-downloads/ { internal; alias ${siteDir}/; }`,
            "  }",
            `  server { listen 127.0.0.1:${authorizerPort};`,
            '    location ~ ^/api/v1/(.*)$ { add_header X-Accel-Redirect /internal-downloads/$1; return 200 ""; }',
            "  }",
            `  upstream nginx_authorizer { server 127.0.0.1:${authorizerPort}; keepalive 64; }`,
            `  server { listen 127.0.0.1:${accelSelfPort};`,
            '    location / { proxy_pass http://nginx_authorizer; proxy_http_version 1.1; proxy_set_header Connection ""; }',
            `    location /internal-downloads/ { internal; alias ${siteDir}/; }`,
            "  }",
          ]),
      "}",
      "",
    ].join("\n"),
  );
  const child = spawn(binary, ["-c", conf, "-p", dir, "-g", "daemon off;"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  try {
    await waitForPort(port, child, "nginx");
  } catch (error) {
    child.kill("SIGKILL");
    throw new Error(`${(error as Error).message}: ${stderr}`);
  }
  await waitForPort(copyPort, child, "nginx (sendfile off)");
  if (accelPort !== null) await waitForPort(accelPort, child, "nginx (X-Accel-Redirect)");
  if (accelSelfPort !== null) await waitForPort(accelSelfPort, child, "nginx (X-Accel-Redirect, itself)");
  return { port, copyPort, accelPort, accelSelfPort, stop: () => child.kill("SIGQUIT") };
}

/**
 * The floor of Node itself on this machine: node:http in this process answering the same range from
 * a descriptor with one pread and no routing, authentication or validation at all; and the whole
 * file the way a Node server streams one (a read stream of 1 MiB chunks piped into the response),
 * and, at `?loop`, the least a Node server can do for it: synchronous 1 MiB preads into a buffer
 * written straight to the response, the next read once the socket took the last (no routing, no
 * checks, no pool). The portal's lanes do that plus their checks; the row is their ceiling in Node.
 */
async function startBareNode(path: string): Promise<{ port: number; stop(): void }> {
  const fd = openSync(path, "r");
  const size = fstatSync(fd).size;
  const server = createHttpServer(async (req, res) => {
    if (req.headers.range === undefined && req.url?.endsWith("?loop")) {
      res.writeHead(200, { "content-type": "application/zip", "content-length": size });
      const buffer = Buffer.allocUnsafeSlow(MIB);
      for (let position = 0; position < size && !res.destroyed; ) {
        const bytes = readSync(fd, buffer, 0, Math.min(MIB, size - position), position);
        position += bytes;
        // The buffer is read into again only once the socket took it (or the client went away).
        await new Promise<void>((resolve) => {
          res.once("close", resolve);
          res.write(bytes === MIB ? buffer : buffer.subarray(0, bytes), () => {
            res.off("close", resolve);
            resolve();
          });
        });
      }
      res.end();
      return;
    }
    if (req.headers.range === undefined) {
      res.writeHead(200, { "content-type": "application/zip", "content-length": size });
      createReadStream(path, { highWaterMark: MIB }).pipe(res);
      return;
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
    const start = Number(m?.[1] ?? 0);
    const end = Math.min(Number(m?.[2] ?? size - 1), size - 1);
    const body = Buffer.allocUnsafe(end - start + 1);
    readSync(fd, body, 0, body.length, start);
    res.writeHead(206, {
      "content-type": "application/zip",
      "content-length": body.length,
      "content-range": `bytes ${start}-${end}/${size}`,
    });
    res.end(body);
  });
  const { port } = await listen(server, 0, "127.0.0.1");
  return {
    port,
    stop: () => {
      server.closeAllConnections();
      server.close();
      closeSync(fd);
    },
  };
}

/** bench/api/bare-cluster.ts in its own process: bare node:http in `workers` processes on one port. */
async function startBareCluster(
  workers: number,
  artifact: string,
  json: string,
): Promise<{ port: number; stop(): Promise<void> }> {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      join(import.meta.dirname, "bare-cluster.ts"),
      JSON.stringify({ workers, artifact, json }),
    ],
    { cwd: join(import.meta.dirname, "..", ".."), stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening (\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`bare-cluster.ts exited with ${code}`)));
  });
  return {
    port,
    stop: async () => {
      child.kill("SIGTERM");
      await exited;
    },
  };
}

interface CurlResult {
  status: number;
  bytes: number;
  seconds: number;
}

function curl(url: string, headers: Record<string, string>): Promise<CurlResult> {
  const args = ["-s", "-o", "/dev/null", "-w", "%{http_code} %{size_download} %{time_total}"];
  for (const [name, value] of Object.entries(headers)) args.push("-H", `${name}: ${value}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const child = spawn("curl", args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => {
      const [status, bytes, seconds] = out.trim().split(" ").map(Number);
      if (code !== 0 || status !== 200 || bytes !== SIZE) {
        reject(new Error(`curl ${url}: exit ${code}, HTTP ${status}, ${bytes} bytes`));
      } else resolve({ status: status!, bytes: bytes!, seconds: seconds! });
    });
  });
}

/** MiB/s of `parallel` simultaneous downloads of the whole file: all bytes over the slowest one's time. */
async function downloadRate(url: string, headers: Record<string, string>, parallel: number): Promise<number> {
  const runs = await Promise.all(Array.from({ length: parallel }, () => curl(url, headers)));
  return runs.reduce((sum, r) => sum + r.bytes, 0) / MIB / Math.max(...runs.map((r) => r.seconds));
}

interface LoadResult {
  requests: number;
  requestsPerSecond: number;
  p50ms: number;
  p99ms: number;
  maxMs: number;
  unexpected: number;
  firstUnexpected: string;
  /** CPU time of this process (the portal's) per request over the whole load, warm-up included. */
  portalCpuUsPerRequest?: number;
}

/** portal: the server under load runs in this process, so its CPU time per request is measured too. */
function load(
  port: number,
  path: string,
  headers: Record<string, string>,
  portal: boolean,
  expectStatus = 206,
): Promise<LoadResult> {
  const options = {
    host: "127.0.0.1",
    port,
    path,
    headers,
    clients: CLIENTS,
    warmupMs: WARMUP_MS,
    durationMs: DURATION_MS,
    expectStatus,
  };
  // Asynchronous on purpose: the portal answers from this very process while the child runs.
  return new Promise((resolve, reject) => {
    const cpuBefore = process.cpuUsage();
    const child = spawn(
      process.execPath,
      ["--import", "tsx", join(import.meta.dirname, "load.ts"), JSON.stringify(options)],
      { cwd: join(import.meta.dirname, "..", ".."), stdio: ["ignore", "pipe", "inherit"] },
    );
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`load generator exited with ${code}`));
      const result = JSON.parse(out) as LoadResult & { answered: number };
      if (portal && result.answered > 0) {
        const cpu = process.cpuUsage(cpuBefore);
        result.portalCpuUsPerRequest = (cpu.user + cpu.system) / result.answered;
      }
      if (result.unexpected > 0) {
        return reject(
          new Error(`${path}: ${result.unexpected} unexpected answers (${result.firstUnexpected})`),
        );
      }
      resolve(result);
    });
  });
}

/** A versions document for `modId` with as many releases as fit in about `bytes`, pretty-printed as the site writes it. */
function versionsDocumentOf(modId: string, baseUrl: string, bytes: number): string {
  const versions: Array<Record<string, unknown>> = [];
  const render = () => {
    const latestVersion = versions[0]?.version ?? "1.0.0";
    return `${JSON.stringify({ schema: "svc.mod-versions.v1", modId, latestVersion, versions }, null, 2)}\n`;
  };
  for (let n = 0; Buffer.byteLength(render()) < bytes; n++) {
    const version = `1.0.${n}`;
    const fileName = `${modId}-${version}.zip`;
    for (const older of versions) older.status = "superseded";
    versions.unshift({
      version,
      fileName,
      packageUrl: `${baseUrl}/downloads/mods/${modId}/${version}/${fileName}`,
      packageSizeBytes: 100_000 + n,
      sha256: createHash("sha256").update(`${modId}@${version}`).digest("hex"),
      downloadEnabled: true,
      status: "published",
      releaseNotes: `Release ${version}: fixes and improvements.`,
    });
  }
  return render();
}

async function main(): Promise<number> {
  const nginx = findNginx();
  if (!nginx) {
    process.stderr.write(
      "bench:api measures the portal beside nginx, which is not installed.\n" +
        "Install it (the bench installs nothing itself): sudo apt-get install nginx\n",
    );
    return 1;
  }
  const root = mkdtempSync(join(tmpdir(), "svc-bench-api-"));
  // nginx's worker drops root for nobody: the files it serves must be readable by anyone.
  chmodSync(root, 0o755);
  const stops: Array<() => void | Promise<void>> = [];
  try {
    const config = loadPortalConfig(join(import.meta.dirname, "..", "..", "portal.config.json"));
    const siteDir = join(root, "site");
    const modId = "bench-mod";
    const fileName = `${modId}-1.0.0.zip`;
    const rel = `downloads/mods/${modId}/1.0.0/${fileName}`;
    mkdirSync(join(siteDir, "downloads/mods", modId, "1.0.0"), { recursive: true });
    mkdirSync(join(siteDir, "api/v1/mods", modId), { recursive: true });
    log(`writing a ${SIZE / MIB} MiB artifact ...`);
    const hash = createHash("sha256");
    const block = randomBytes(MIB);
    for (let written = 0; written < SIZE; written += MIB) {
      const chunk = block.subarray(0, Math.min(MIB, SIZE - written));
      writeFileSync(join(siteDir, rel), chunk, { flag: written === 0 ? "w" : "a", mode: 0o644 });
      hash.update(chunk);
    }
    // Both lanes serve what the mod's versions document lists as download-enabled; nothing else is needed.
    const versionsRel = `api/v1/mods/${modId}/versions.json`;
    const versionsText = JSON.stringify({
      schema: "svc.mod-versions.v1",
      modId,
      latestVersion: "1.0.0",
      versions: [
        {
          version: "1.0.0",
          fileName,
          packageUrl: `${config.baseUrl}/${rel}`,
          packageSizeBytes: SIZE,
          sha256: hash.digest("hex"),
          downloadEnabled: true,
          status: "published",
        },
      ],
    });
    writeFileSync(join(siteDir, versionsRel), versionsText);

    // The small-document row: a mod's versions.json of about 50 KB (many releases), served as it is.
    const jsonPath = "api/v1/mods/bench-json/versions.json";
    const jsonText = versionsDocumentOf("bench-json", config.baseUrl, JSON_BYTES);
    const jsonBytes = Buffer.byteLength(jsonText);
    mkdirSync(join(siteDir, "api/v1/mods/bench-json"), { recursive: true });
    writeFileSync(join(siteDir, jsonPath), jsonText, { mode: 0o644 });

    const settings = parseSettings(
      {
        SVC_DEV_EMAIL: "auto-verify",
        ...(process.env.DATABASE_URL ? { DATABASE_URL: process.env.DATABASE_URL } : {}),
      },
      { dataDir: join(root, ".data") },
    );
    const store = await createStore(settings);
    stops.push(() => store.close());
    const app = await createAppContext({ config, settings, siteDir, log: () => {}, store });
    const accounts = app.accounts!;
    stops.push(() => accounts.flushPendingWrites());
    const { accountId } = await accounts.createAccount({
      email: `bench-${Date.now()}@example.com`,
      displayName: "Bench",
      role: "player",
    });
    const { apiKey } = await accounts.createApiKey(accountId, "bench");
    const portal = createPortalServer(app);
    const portalPort = (await listen(portal, 0, "127.0.0.1")).port;
    stops.push(() => {
      portal.closeAllConnections();
      portal.close();
    });
    // The same portal (same database and key) once more, answering its fast lane with X-Accel-Redirect.
    const accelApp = await createAppContext({
      config,
      settings: { ...settings, accelRedirect: "/internal-downloads/" },
      siteDir,
      log: () => {},
      store,
    });
    stops.push(() => accelApp.accounts?.flushPendingWrites());
    const accelPortal = createPortalServer(accelApp);
    const accelPortalPort = (await listen(accelPortal, 0, "127.0.0.1")).port;
    stops.push(() => {
      accelPortal.closeAllConnections();
      accelPortal.close();
    });
    const web = await startNginx(nginx, root, "nginx", 1, siteDir, accelPortalPort);
    stops.push(web.stop);
    const nginxVersion = spawnSync(nginx, ["-v"], { encoding: "utf8" }).stderr;

    const bare = await startBareNode(join(siteDir, rel));
    stops.push(bare.stop);

    // Part 3's portal: `svc serve --workers N` on the same database (the key above is in it), and
    // nginx with as many workers beside it.
    const databaseUrl = process.env.DATABASE_URL?.trim();
    let workers: { port: number; nginxPort: number; barePort: number; line: string } | null = null;
    if (databaseUrl && !ONLY_REQUESTS) {
      const portalRoot = join(root, "workers-portal");
      const started = await startWorkersPortal({
        root: portalRoot,
        workers: WORKERS,
        databaseUrl,
        files: [
          { rel, linkFrom: join(siteDir, rel) },
          { rel: versionsRel, text: versionsText },
          { rel: jsonPath, text: jsonText },
        ],
      });
      stops.push(() => started.stop());
      const webN = await startNginx(nginx, root, "nginx-workers", WORKERS, join(portalRoot, "site"), null);
      stops.push(webN.stop);
      const bareN = await startBareCluster(WORKERS, join(siteDir, rel), join(siteDir, jsonPath));
      stops.push(bareN.stop);
      workers = { port: started.port, nginxPort: webN.port, barePort: bareN.port, line: started.workersLine };
    }

    const auth = { authorization: `Bearer ${apiKey}` };
    const urls = {
      nginx: { url: `http://127.0.0.1:${web.port}/${rel}`, headers: {} },
      bare: { url: `http://127.0.0.1:${bare.port}/${rel}`, headers: {} },
      loop: { url: `http://127.0.0.1:${bare.port}/${rel}?loop`, headers: {} },
      copy: { url: `http://127.0.0.1:${web.copyPort}/${rel}`, headers: {} },
      static: { url: `http://127.0.0.1:${portalPort}/${rel}`, headers: {} },
      lane: { url: `http://127.0.0.1:${portalPort}/api/v1/${rel}`, headers: auth },
      accel: { url: `http://127.0.0.1:${web.accelPort}/api/v1/${rel}`, headers: auth },
      accelSelf: { url: `http://127.0.0.1:${web.accelSelfPort}/api/v1/${rel}`, headers: auth },
      nginxN: { url: `http://127.0.0.1:${workers?.nginxPort}/${rel}`, headers: {} },
      staticN: { url: `http://127.0.0.1:${workers?.port}/${rel}`, headers: {} },
      laneN: { url: `http://127.0.0.1:${workers?.port}/api/v1/${rel}`, headers: auth },
      bareN: { url: `http://127.0.0.1:${workers?.barePort}/${rel}`, headers: {} },
    };
    type Target = keyof typeof urls;
    const oneProcess: Target[] = ["nginx", "static", "lane", "bare", "loop", "copy"];
    const uptime = () =>
      `load average ${loadavg()
        .map((n) => n.toFixed(2))
        .join(" ")}`;
    log(
      `${uptime()} (2 cores: above ~0.5 the figures are noisy), node ${process.version}, ${nginxVersion.trim() || "nginx"}, database ${store.kind}`,
    );
    if (workers) log(`svc serve --workers ${WORKERS}: ${workers.line}`);

    // Page cache and JIT warm for everyone first.
    const rates: Record<string, number[]> = {};
    const record = (target: Target, parallel: number, rate: number) => {
      const key = `${target}x${parallel}`;
      rates[key] = [...(rates[key] ?? []), rate];
    };
    const measure = async (target: Target, parallel: number) =>
      record(target, parallel, await downloadRate(urls[target].url, urls[target].headers, parallel));
    if (!ONLY_REQUESTS) {
      for (const target of [...oneProcess, "accel" as const, "accelSelf" as const])
        await curl(urls[target].url, urls[target].headers);
      if (workers)
        for (const target of ["nginxN", "staticN", "laneN", "bareN"] as const)
          await curl(urls[target].url, urls[target].headers);
    }
    // Baselines recorded beside each subject, pair by pair: `${subject}/${baseline}x${parallel}`.
    const pairedBaselines: Record<string, number[]> = {};
    /** One round: the baseline and the subject back to back, the order swapped every other round. */
    const pair = async (baseline: Target, subject: Target, parallel: number, round: number) => {
      const order = round % 2 === 0 ? [baseline, subject] : [subject, baseline];
      const got: Partial<Record<Target, number>> = {};
      for (const target of order)
        got[target] = await downloadRate(urls[target].url, urls[target].headers, parallel);
      record(subject, parallel, got[subject]!);
      const key = `${subject}/${baseline}x${parallel}`;
      pairedBaselines[key] = [...(pairedBaselines[key] ?? []), got[baseline]!];
    };
    for (const parallel of ONLY_REQUESTS ? [] : [1, PARALLEL]) {
      for (let round = 0; round < ROUNDS; round++) {
        // Part 1: the order rotates every round, each lane's ratio taken within its round.
        for (let i = 0; i < oneProcess.length; i++)
          await measure(oneProcess[(i + round) % oneProcess.length]!, parallel);
        // Part 2: nginx alone and nginx with the portal authorizing, back to back.
        await pair("nginx", "accel", parallel, round);
        await pair("nginx", "accelSelf", parallel, round);
        // Part 3: nginx with N workers and the portal with N workers, back to back, each lane.
        if (workers) {
          await pair("nginxN", "staticN", parallel, round);
          await pair("nginxN", "laneN", parallel, round);
          await pair("nginxN", "bareN", parallel, round);
        }
      }
    }
    const rate = (target: Target, parallel: number) => summarize(rates[`${target}x${parallel}`]!);
    /** Part 1: target / nginx, round by round. */
    const ratio = (target: Target, parallel: number) =>
      summarize(rates[`${target}x${parallel}`]!.map((r, i) => r / rates[`nginxx${parallel}`]![i]!));
    const pairedBaseline = (subject: Target, baseline: Target, parallel: number) =>
      summarize(pairedBaselines[`${subject}/${baseline}x${parallel}`]!);
    /** Parts 2 and 3: subject / the baseline measured beside it, pair by pair. */
    const pairedRatio = (subject: Target, baseline: Target, parallel: number) =>
      summarize(
        rates[`${subject}x${parallel}`]!.map(
          (r, i) => r / pairedBaselines[`${subject}/${baseline}x${parallel}`]![i]!,
        ),
      );

    // Loads in pairs: nginx, then the portal (A B A B ...), for the 4 KiB range on the API-key lane
    // and for the 50 KB JSON document on the static routes; bare node:http answers the range after
    // each pair, as Node's own floor. With workers, the same against nginx with N workers.
    const range = { range: "bytes=0-4095" };
    const rangePairs: Array<{ nginx: LoadResult; lane: LoadResult; bare: LoadResult }> = [];
    const jsonPairs: Array<{ nginx: LoadResult; portal: LoadResult }> = [];
    const workerRangePairs: Array<{ nginx: LoadResult; portal: LoadResult; bare: LoadResult }> = [];
    const workerJsonPairs: Array<{ nginx: LoadResult; portal: LoadResult; bare: LoadResult }> = [];
    const loadAverages: number[] = [loadavg()[0]!];
    for (let p = 0; p < LOAD_PAIRS; p++) {
      const nginxRange = await load(web.port, `/${rel}`, range, false);
      const lane = await load(portalPort, `/api/v1/${rel}`, { ...auth, ...range }, true);
      const bareRange = await load(bare.port, `/${rel}`, range, true);
      rangePairs.push({ nginx: nginxRange, lane, bare: bareRange });
      const nginxJson = await load(web.port, `/${jsonPath}`, {}, false, 200);
      const portalJson = await load(portalPort, `/${jsonPath}`, {}, true, 200);
      jsonPairs.push({ nginx: nginxJson, portal: portalJson });
      if (workers) {
        workerRangePairs.push({
          nginx: await load(workers.nginxPort, `/${rel}`, range, false),
          portal: await load(workers.port, `/api/v1/${rel}`, { ...auth, ...range }, false),
          bare: await load(workers.barePort, `/${rel}`, range, false),
        });
        workerJsonPairs.push({
          nginx: await load(workers.nginxPort, `/${jsonPath}`, {}, false, 200),
          portal: await load(workers.port, `/${jsonPath}`, {}, false, 200),
          bare: await load(workers.barePort, `/${jsonPath}`, {}, false, 200),
        });
      }
      loadAverages.push(loadavg()[0]!);
    }

    const x = (n: number) => `${n.toFixed(2)}x`;
    const mibps = (n: number) => n.toFixed(0);
    const rows: Array<{ what: string; value: Stats; baseline: Stats; ratio: Stats; met: boolean | null }> =
      [];
    const goalCell = (met: boolean | null, goal: number, what: string) =>
      met === null ? "" : verdict(met, `>= ${goal}x nginx, median`, what);
    /**
     * One download lane of parts 1 and 3 (its ratio against the part's own baseline): its row for the
     * verdicts and its cells in the table. Judged against GOALS.downloadRatio when `judged`, else
     * printed with `elsewhere` (where that goal is judged) in the verdict column.
     */
    const downloadRow = (
      cells: string[][],
      lane: { target: Target; label: string; parallel: number },
      baseline: Stats,
      r: Stats,
      verdictOn: { judged: boolean; elsewhere: string; goal: string },
    ) => {
      const { target, label, parallel } = lane;
      const met = verdictOn.judged ? r.median >= GOALS.downloadRatio : null;
      rows.push({ what: `${target}x${parallel}`, value: rate(target, parallel), baseline, ratio: r, met });
      cells.push([
        `${label} x${parallel}`,
        describeStats(rate(target, parallel), mibps),
        describeStats(baseline, mibps),
        describeStats(r, x),
        met === null ? verdictOn.elsewhere : goalCell(met, GOALS.downloadRatio, verdictOn.goal),
      ]);
    };

    if (!ONLY_REQUESTS) {
      log("");
      log(
        `1. One process. Download of ${SIZE / MIB} MiB with curl on loopback, ${ROUNDS} rounds, the order rotating, nginx with 1 worker (MiB/s, median (min-max); x${PARALLEL}: aggregate; ratio round by round)`,
      );
      const cells: string[][] = [];
      for (const parallel of [1, PARALLEL]) {
        const baseline = rate("nginx", parallel);
        for (const [target, label] of [
          ["static", "static /downloads/"],
          ["lane", "API-key lane"],
        ] as const) {
          // Four downloads on one Node thread: printed, judged on --workers (part 3).
          downloadRow(cells, { target, label, parallel }, baseline, ratio(target, parallel), {
            judged: parallel === 1,
            elsewhere: "one thread; goal on --workers (part 3)",
            goal: `${label} x${parallel} download`,
          });
        }
        // Not goals: how fast Node itself streams a file here, the usual way and the least a Node
        // server can do (the ceiling of any Node server on this machine); and nginx itself without
        // sendfile, the ceiling of copying through user space.
        for (const [target, label, note] of [
          ["bare", "(node:http, piped stream)", "Node, the usual way"],
          ["loop", "(node:http, pread loop)", "Node's own ceiling"],
          ["copy", "(nginx, sendfile off)", "read+write ceiling"],
        ] as const) {
          cells.push([
            `${label} x${parallel}`,
            describeStats(rate(target, parallel), mibps),
            describeStats(baseline, mibps),
            describeStats(ratio(target, parallel), x),
            note,
          ]);
        }
      }
      printTable(["lane", "portal", "nginx", "ratio", "verdict"], cells);

      log("");
      log(
        `2. Behind nginx (X-Accel-Redirect): nginx proxies to the portal, which checks the key; nginx sends the bytes. ${ROUNDS} pairs, nginx alone beside it (A B, B A, ...), ratio pair by pair`,
      );
      const accelCells: string[][] = [];
      for (const parallel of [1, PARALLEL]) {
        const r = pairedRatio("accel", "nginx", parallel);
        const met = r.median >= GOALS.accelRatio;
        const baseline = pairedBaseline("accel", "nginx", parallel);
        rows.push({ what: `accelx${parallel}`, value: rate("accel", parallel), baseline, ratio: r, met });
        accelCells.push([
          `API-key lane via X-Accel-Redirect x${parallel}`,
          describeStats(rate("accel", parallel), mibps),
          describeStats(baseline, mibps),
          describeStats(r, x),
          goalCell(met, GOALS.accelRatio, `X-Accel-Redirect x${parallel} download`),
        ]);
      }
      for (const parallel of [1, PARALLEL]) {
        accelCells.push([
          `(nginx authorizing itself, no portal) x${parallel}`,
          describeStats(rate("accelSelf", parallel), mibps),
          describeStats(pairedBaseline("accelSelf", "nginx", parallel), mibps),
          describeStats(pairedRatio("accelSelf", "nginx", parallel), x),
          "X-Accel-Redirect's own ceiling",
        ]);
      }
      printTable(["lane", "nginx+portal", "nginx", "ratio", "verdict"], accelCells);

      log("");
      if (workers) {
        log(
          `3. svc serve --workers ${WORKERS} (PostgreSQL) beside nginx with ${WORKERS} workers, ${ROUNDS} pairs (A B, B A, ...), ratio pair by pair`,
        );
        const workerCells: string[][] = [];
        for (const parallel of [1, PARALLEL]) {
          for (const [target, label] of [
            ["staticN", "static /downloads/"],
            ["laneN", "API-key lane"],
          ] as const) {
            // One download is one process's work whatever N is: part 1 judges it.
            downloadRow(
              workerCells,
              { target, label, parallel },
              pairedBaseline(target, "nginxN", parallel),
              pairedRatio(target, "nginxN", parallel),
              {
                judged: parallel === PARALLEL,
                elsewhere: "one connection, one process: judged in part 1",
                goal: `--workers ${label} x${parallel} download`,
              },
            );
          }
        }
        for (const parallel of [1, PARALLEL]) {
          workerCells.push([
            `(node:http x${WORKERS}, pread loop) x${parallel}`,
            describeStats(rate("bareN", parallel), mibps),
            describeStats(pairedBaseline("bareN", "nginxN", parallel), mibps),
            describeStats(pairedRatio("bareN", "nginxN", parallel), x),
            `Node's own ceiling in ${WORKERS} processes`,
          ]);
        }
        printTable(["lane", `workers ${WORKERS}`, `nginx ${WORKERS}w`, "ratio", "verdict"], workerCells);
      } else {
        log(
          "3. svc serve --workers: not measured (needs DATABASE_URL: source .ci/postgres.sh, then npm run bench:api)",
        );
        judge(false, "--workers rows not measured (no DATABASE_URL)");
      }
    }

    const p99 = (results: LoadResult[]) => summarize(results.map((r) => r.p99ms));
    const rps = (results: LoadResult[]) => summarize(results.map((r) => r.requestsPerSecond));
    const latencyMet = (results: LoadResult[]) =>
      p99(results).median <= GOALS.p99Ms && rps(results).median >= GOALS.requestsPerSecond;
    const lanes = rangePairs.map((p) => p.lane);
    const describe = (results: LoadResult[]) => {
      const cpu = results.map((r) => r.portalCpuUsPerRequest).filter((c): c is number => c !== undefined);
      return (
        `p50 ${describeStats(summarize(results.map((r) => r.p50ms)), (n) => n.toFixed(2))} ms  ` +
        `p99 ${describeStats(p99(results), (n) => n.toFixed(2))} ms  ` +
        `${describeStats(rps(results), (n) => n.toFixed(0))} req/s` +
        (cpu.length > 0 ? `  ${describeStats(summarize(cpu), (n) => n.toFixed(0))} µs CPU/request` : "")
      );
    };
    const pairRatios = (pairs: Array<{ nginx: LoadResult; portal: LoadResult }>) =>
      summarize(pairs.map((p) => p.portal.requestsPerSecond / p.nginx.requestsPerSecond));
    const bareRatios = (pairs: Array<{ nginx: LoadResult; bare: LoadResult }>) =>
      summarize(pairs.map((p) => p.bare.requestsPerSecond / p.nginx.requestsPerSecond));
    log("");
    log(
      `API-key request (Range 4 KiB), ${CLIENTS} concurrent keep-alive clients, ${DURATION_MS / 1000} s each, ${LOAD_PAIRS} pair(s) nginx then portal`,
    );
    log(`  1. one process          ${describe(lanes)}`);
    log(`     nginx 1 worker       ${describe(rangePairs.map((p) => p.nginx))}`);
    log(`     bare node:http       ${describe(rangePairs.map((p) => p.bare))}`);
    log(
      `     lane / nginx, pair by pair: p99 ${describeStats(summarize(rangePairs.map((p) => p.lane.p99ms / p.nginx.p99ms)), x)}, req/s ${describeStats(summarize(rangePairs.map((p) => p.lane.requestsPerSecond / p.nginx.requestsPerSecond)), x)}`,
    );
    const oneMet = latencyMet(lanes);
    log(
      `     ${verdict(oneMet, `p99 <= ${GOALS.p99Ms} ms and >= ${GOALS.requestsPerSecond} req/s, medians`, "API-key request, one process")}`,
    );
    let workersLatencyMet = false;
    if (workerRangePairs.length > 0) {
      const portals = workerRangePairs.map((p) => p.portal);
      log(`  3. --workers ${WORKERS}          ${describe(portals)}`);
      log(`     nginx ${WORKERS} workers      ${describe(workerRangePairs.map((p) => p.nginx))}`);
      log(`     bare node:http x${WORKERS}     ${describe(workerRangePairs.map((p) => p.bare))}`);
      log(
        `     portal / nginx req/s, pair by pair ${describeStats(pairRatios(workerRangePairs), x)}; bare node:http x${WORKERS} / nginx ${describeStats(bareRatios(workerRangePairs), x)}; margin to ${GOALS.p99Ms} ms: ${(GOALS.p99Ms - p99(portals).median).toFixed(2)} ms (median), ${(GOALS.p99Ms - p99(portals).max).toFixed(2)} ms (worst pair)`,
      );
      workersLatencyMet = latencyMet(portals);
      log(
        `     ${verdict(workersLatencyMet, `p99 <= ${GOALS.p99Ms} ms and >= ${GOALS.requestsPerSecond} req/s, medians`, `API-key request, --workers ${WORKERS}`)}`,
      );
    } else if (!ONLY_REQUESTS) {
      log(`  3. --workers: not measured (needs DATABASE_URL)`);
    }

    log("");
    log(
      `${(jsonBytes / 1024).toFixed(1)} KB JSON document (/${jsonPath}, no Range, identity), ${CLIENTS} concurrent keep-alive clients, ${DURATION_MS / 1000} s each, ${LOAD_PAIRS} pair(s) nginx then portal`,
    );
    log(`  1. one process          ${describe(jsonPairs.map((p) => p.portal))}`);
    log(`     nginx 1 worker       ${describe(jsonPairs.map((p) => p.nginx))}`);
    log(
      `     portal / nginx req/s, pair by pair ${describeStats(pairRatios(jsonPairs), x)} (one thread: the goal is on --workers)`,
    );
    let workersJsonMet = false;
    if (workerJsonPairs.length > 0) {
      const r = pairRatios(workerJsonPairs);
      log(`  3. --workers ${WORKERS}          ${describe(workerJsonPairs.map((p) => p.portal))}`);
      log(`     nginx ${WORKERS} workers      ${describe(workerJsonPairs.map((p) => p.nginx))}`);
      log(`     bare node:http x${WORKERS}     ${describe(workerJsonPairs.map((p) => p.bare))}`);
      log(
        `     portal / nginx req/s, pair by pair ${describeStats(r, x)}; bare node:http x${WORKERS} / nginx ${describeStats(bareRatios(workerJsonPairs), x)} (Node's own ceiling)`,
      );
      workersJsonMet = r.median >= GOALS.jsonRatio;
      log(
        `     ${verdict(workersJsonMet, `>= ${GOALS.jsonRatio}x nginx's req/s, median of pairs`, `50 KB JSON document, --workers ${WORKERS}`)}`,
      );
    } else if (!ONLY_REQUESTS) {
      log(`  3. --workers: not measured (needs DATABASE_URL)`);
    }
    loadAverages.push(loadavg()[0]!);
    log("");
    log(
      `${uptime()}; 1-minute load average over the loads: ${loadAverages.map((n) => n.toFixed(2)).join(", ")}`,
    );
    const result = {
      database: store.kind,
      workers: workers ? WORKERS : null,
      artifactMiB: SIZE / MIB,
      loadAverages: loadAverages.map((n) => Number(n.toFixed(2))),
      downloads: Object.fromEntries(
        rows.map((r) => [
          r.what,
          {
            portalMiBps: Math.round(r.value.median),
            nginxMiBps: Math.round(r.baseline.median),
            ratio: Number(r.ratio.median.toFixed(2)),
            ratioMin: Number(r.ratio.min.toFixed(2)),
            ratioMax: Number(r.ratio.max.toFixed(2)),
            goal: r.met === null ? null : r.met ? "met" : "missed",
          },
        ]),
      ),
      apiKeyRequest: { clients: CLIENTS, pairs: rangePairs, workerPairs: workerRangePairs },
      jsonDocument: { bytes: jsonBytes, clients: CLIENTS, pairs: jsonPairs, workerPairs: workerJsonPairs },
      met:
        rows.every((r) => r.met !== false) &&
        oneMet &&
        workersLatencyMet &&
        workersJsonMet &&
        workers !== null &&
        !ONLY_REQUESTS,
    };
    log(JSON.stringify(result));
    log(verdictSummary());
    return result.met ? 0 : 1;
  } finally {
    for (const stop of stops.reverse()) await stop();
    rmSync(root, { recursive: true, force: true });
  }
}

process.exitCode = await main();
