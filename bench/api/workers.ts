/**
 * bench:api for `svc serve --workers N` (issue 27): a 50 KB JSON document at 50 keep-alive
 * connections, nginx (one worker, sendfile) then the portal, pair by pair, goal >= 0.5x nginx's
 * requests/s. The portal runs as `svc serve --workers N` (a child process with PostgreSQL), so its
 * CPU time is not measured here. Needs DATABASE_URL and nginx; installs nothing.
 *
 *   DATABASE_URL=postgres://... node --import tsx bench/api/workers.ts [--workers 2] [--runs 3] [--seconds 4]
 */
import { execFileSync, spawn } from "node:child_process";
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { describeStats, summarize, verdict, verdictSummary } from "../lib/harness.ts";

const REPO = join(import.meta.dirname, "..", "..");
const { values } = parseArgs({
  options: { workers: { type: "string" }, runs: { type: "string" }, seconds: { type: "string" } },
});
const WORKERS = values.workers ?? "2";
const RUNS = Number(values.runs ?? 3);
const DURATION_MS = Number(values.seconds ?? 4) * 1000;
const GOAL = 0.5;
const DOC = "/api/v1/mods/bench-json/versions.json";

interface LoadResult {
  requestsPerSecond: number;
  p99ms: number;
  unexpected: number;
}

function load(port: number): LoadResult {
  const options = {
    host: "127.0.0.1",
    port,
    path: DOC,
    headers: {},
    clients: 50,
    warmupMs: 1000,
    durationMs: DURATION_MS,
    expectStatus: 200,
  };
  const out = execFileSync(
    process.execPath,
    ["--import", "tsx", join(import.meta.dirname, "load.ts"), JSON.stringify(options)],
    { cwd: REPO, encoding: "utf8" },
  );
  return JSON.parse(out) as LoadResult;
}

async function main(): Promise<number> {
  const databaseUrl = process.env.DATABASE_URL?.trim();
  const nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"].find((p) => existsSync(p));
  if (!databaseUrl || !nginx) {
    process.stderr.write(
      "bench/api/workers.ts needs DATABASE_URL (PostgreSQL) and nginx (sudo apt-get install nginx)\n",
    );
    return 1;
  }
  const root = mkdtempSync(join(tmpdir(), "svc-bench-workers-"));
  chmodSync(root, 0o755);
  const stops: Array<() => void> = [];
  try {
    copyFileSync(join(REPO, "portal.config.json"), join(root, "portal.config.json"));
    mkdirSync(join(root, "records"));
    const portal = spawn(
      process.execPath,
      [join(REPO, "bin/svc.js"), "serve", "--port", "0", "--root", root, "--workers", WORKERS],
      {
        cwd: root,
        env: { ...process.env, DATABASE_URL: databaseUrl },
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    stops.push(() => portal.kill("SIGTERM"));
    let banner = "";
    const origin = await new Promise<string>((resolve, reject) => {
      portal.stdout!.on("data", (d: Buffer) => {
        banner += d.toString();
        const found = /svc portal on (http:\/\/\S+)/.exec(banner)?.[1];
        if (found) resolve(found);
      });
      portal.once("exit", (code) => reject(new Error(`svc serve exited with ${code}`)));
    });
    // After the site is built: a document of about 50 KB, served by both from the same folder.
    mkdirSync(join(root, "site", "api/v1/mods/bench-json"), { recursive: true });
    writeFileSync(join(root, "site", DOC), JSON.stringify({ pad: "x".repeat(50 * 1024) }), { mode: 0o644 });
    const nginxPort = 20000 + Math.floor(Math.random() * 20000);
    const temp = join(root, "nginx-temp");
    mkdirSync(temp);
    writeFileSync(
      join(root, "nginx.conf"),
      `worker_processes 1; pid ${root}/nginx.pid; error_log ${root}/nginx-error.log;
events { worker_connections 1024; }
http { access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000000;
  client_body_temp_path ${temp}/b; proxy_temp_path ${temp}/p; fastcgi_temp_path ${temp}/f; uwsgi_temp_path ${temp}/u; scgi_temp_path ${temp}/s;
  server { listen 127.0.0.1:${nginxPort}; root ${root}/site; } }
`,
    );
    const web = spawn(nginx, ["-c", join(root, "nginx.conf"), "-p", root, "-g", "daemon off;"], {
      stdio: "inherit",
    });
    stops.push(() => web.kill("SIGQUIT"));
    await new Promise((r) => setTimeout(r, 500));
    const port = Number(new URL(origin).port);
    console.log(
      `svc serve --workers ${WORKERS} (PostgreSQL), load average ${loadavg()
        .map((n) => n.toFixed(2))
        .join(" ")}, node ${process.version}`,
    );
    const pairs: Array<{ nginx: LoadResult; portal: LoadResult }> = [];
    for (let i = 0; i < RUNS; i++) pairs.push({ nginx: load(nginxPort), portal: load(port) });
    if (pairs.some((p) => p.portal.unexpected > 0)) throw new Error("the portal gave unexpected answers");
    const ratio = summarize(pairs.map((p) => p.portal.requestsPerSecond / p.nginx.requestsPerSecond));
    const rps = (which: "nginx" | "portal") =>
      describeStats(summarize(pairs.map((p) => p[which].requestsPerSecond)), (n) => n.toFixed(0));
    const p99 = (which: "nginx" | "portal") =>
      describeStats(summarize(pairs.map((p) => p[which].p99ms)), (n) => n.toFixed(2));
    console.log(`50 KB JSON document, 50 keep-alive clients, ${DURATION_MS / 1000} s each, ${RUNS} pair(s)`);
    console.log(`  portal  ${rps("portal")} req/s  p99 ${p99("portal")} ms`);
    console.log(`  nginx   ${rps("nginx")} req/s  p99 ${p99("nginx")} ms`);
    console.log(`  portal / nginx req/s, pair by pair ${describeStats(ratio, (n) => `${n.toFixed(2)}x`)}`);
    console.log(
      `  ${verdict(ratio.median >= GOAL, `>= ${GOAL}x nginx's req/s, median`, "50 KB JSON document with workers")}`,
    );
    console.log(verdictSummary());
    return ratio.median >= GOAL ? 0 : 1;
  } finally {
    for (const stop of stops.reverse()) stop();
    await new Promise((r) => setTimeout(r, 1000));
    rmSync(root, { recursive: true, force: true });
  }
}

process.exitCode = await main();
