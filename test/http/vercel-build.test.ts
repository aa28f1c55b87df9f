import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process";
import { createHmac, generateKeyPairSync, randomBytes } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { createServer as createTcpServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENDPOINTS, type EndpointDefinition } from "../../src/contracts/endpoints.ts";
import { REPO_ROOT } from "../support/repo-root.ts";

/**
 * `vercel build` on a copy of the repository, offline, then the built functions run on plain Node:
 * the ones a sign-in, the health check and a webhook delivery cross by @vercel/node's own launcher
 * (the dev-server `vercel dev` uses: it imports the .func handler and applies the Node helpers when
 * .vc-config.json asks for them, as the platform does), the other v1 functions in one plain Node
 * host (each imported from its own folder with its own traced node_modules). Requests are routed
 * by the build's config.json, so a dynamic route reaches its function with the original path plus
 * the query Vercel appends.
 */

const require = createRequire(import.meta.url);

/**
 * The Vercel CLI (and the @vercel/node it builds with and launches functions by) lives in
 * deploy/vercel with its own lock file, out of the root install: ~350 packages a newcomer's
 * `npm ci` does not need. .ci/run installs it; in CI its absence fails this suite, elsewhere it
 * skips, naming the command. Only that folder counts: a `vercel` left in an older root
 * node_modules is not picked up.
 */
const DEPLOY_DIR = join(REPO_ROOT, "deploy", "vercel");
const SETUP_DEPLOY = "npm run setup:deploy (npm ci --prefix deploy/vercel)";
const VERCEL_CLI_PATH = join(DEPLOY_DIR, "node_modules", "vercel", "dist", "vc.js");
const VERCEL_CLI = existsSync(VERCEL_CLI_PATH) ? VERCEL_CLI_PATH : null;
if (!VERCEL_CLI && process.env.CI === "true") {
  throw new Error(`the Vercel CLI is required in CI but ${VERCEL_CLI_PATH} is missing: ${SETUP_DEPLOY}`);
}
if (!VERCEL_CLI) console.warn(`vercel build test skipped: the Vercel CLI is not installed; ${SETUP_DEPLOY}`);
/** @vercel/node's dev server, as the CLI resolves it (its own pinned version). */
const DEV_SERVER = VERCEL_CLI
  ? join(dirname(createRequire(VERCEL_CLI).resolve("@vercel/node/package.json")), "dist", "dev-server.mjs")
  : "";
const EXAMPLES = require("@octokit/webhooks-examples/api.github.com/index.json") as Array<{
  name: string;
  examples: Array<Record<string, unknown>>;
}>;

/**
 * Vercel allows 250 MB per function; ours are a few MB of code and dependencies. PGlite alone is
 * 16 MB, so a bound of 12 MB fails as soon as an embedded engine (or a similar mistake) comes back.
 */
const MAX_FUNCTION_BYTES = 12 * 1024 * 1024;

// In CI PostgreSQL is mandatory (.ci/postgres.sh); without it every function must fail closed.
const DATABASE_URL = process.env.DATABASE_URL?.trim() || null;
if (!DATABASE_URL && process.env.CI === "true") {
  throw new Error("DATABASE_URL is required for the Vercel build test in CI (source .ci/postgres.sh)");
}

interface VcConfig {
  handler: string;
  runtime: string;
  launcherType?: string;
  shouldAddHelpers?: boolean;
  maxDuration?: number;
  filePathMap?: Record<string, string>;
}

interface BuildRoute {
  src?: string;
  dest?: string;
  status?: number;
  check?: boolean;
  handle?: string;
}

interface BuiltFunction {
  /** api/v1/accounts/[accountId]/roles */
  name: string;
  dir: string;
  config: VcConfig;
}

function walkFunctions(root: string, dir = root): BuiltFunction[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (entry.endsWith(".func")) {
      const config = JSON.parse(readFileSync(join(path, ".vc-config.json"), "utf8")) as VcConfig;
      return [{ name: relative(root, path).replace(/\.func$/, ""), dir: path, config }];
    }
    return lstatSync(path).isDirectory() ? walkFunctions(root, path) : [];
  });
}

function treeBytes(path: string): number {
  const stat = lstatSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + treeBytes(join(path, entry)), 0);
}

function hasPath(root: string, match: (rel: string) => boolean, dir = root): boolean {
  return readdirSync(dir).some((entry) => {
    const path = join(dir, entry);
    if (match(relative(root, path))) return true;
    return lstatSync(path).isDirectory() && hasPath(root, match, path);
  });
}

/**
 * Vercel's routing as the build output describes it: the filesystem phase (a function answers its
 * own path, and `x/index` answers `x`), then the rewrites up to the error phase; a `check` rewrite
 * lands only on something that exists, and `status` without `dest` ends in that status.
 */
function routeToFunction(
  routes: BuildRoute[],
  names: Set<string>,
  pathname: string,
): { name: string; query: string } | null {
  const onFilesystem = (path: string) =>
    [path.slice(1), `${path.slice(1)}/index`].find((candidate) => names.has(candidate)) ?? null;
  for (const route of routes) {
    if (route.handle === "filesystem") {
      const name = onFilesystem(pathname);
      if (name) return { name, query: "" };
      continue;
    }
    if (route.handle) break;
    const match = route.src ? new RegExp(route.src).exec(pathname) : null;
    if (!match) continue;
    if (!route.dest) return null;
    const [destPath = "", destQuery = ""] = route.dest
      .replace(/\$(\d+)/g, (_m, index: string) => match[Number(index)] ?? "")
      .split("?");
    const name = onFilesystem(destPath);
    if (name) return { name, query: destQuery };
    if (!route.check) pathname = destPath;
  }
  return null;
}

const SAMPLE_PARAMS: Record<string, string> = {
  accountId: "acc_0000000000000000",
  apiKeyId: "key_0000000000000000",
  submissionId: "sub_0000000000000000",
  modId: "better-hud",
  version: "1.2.0",
  fileName: "better-hud-1.2.0.zip",
};

function samplePath(endpoint: EndpointDefinition): string {
  return endpoint.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = SAMPLE_PARAMS[name];
    if (!value) throw new Error(`no sample value for {${name}} in ${endpoint.path}`);
    return value;
  });
}

/** An environment like Vercel gives a build or an instance: what is set here, nothing of this run. */
function cleanEnv(home: string, vars: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    // The CLI keeps its config and npm its logs under HOME: inside what the test removes.
    HOME: home,
    TZ: "UTC",
    VERCEL: "1",
    VERCEL_ENV: "preview",
    ...vars,
  };
}

interface Instance {
  origin: string;
  stderr: () => string;
  child: ChildProcess;
}

/** One function instance: @vercel/node's launcher in a clean Node process, cwd the .func folder. */
function startInstance(fn: BuiltFunction, vars: Record<string, string>): Promise<Instance> {
  return new Promise((resolve, reject) => {
    let stderr = "";
    const child = fork(DEV_SERVER, [], {
      cwd: fn.dir,
      // No tsx, no loader of this test run: the built JavaScript must run on plain Node.
      execArgv: [],
      env: {
        ...cleanEnv(dirname(fn.dir), vars),
        VERCEL_DEV_ENTRYPOINT: fn.config.handler,
        VERCEL_DEV_CONFIG: JSON.stringify({ maxDuration: fn.config.maxDuration }),
        VERCEL_DEV_BUILD_ENV: JSON.stringify(
          fn.config.shouldAddHelpers === false ? { NODEJS_HELPERS: "0" } : {},
        ),
      },
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("message", (address: { port: number }) =>
      resolve({ origin: `http://127.0.0.1:${address.port}`, stderr: () => stderr, child }),
    );
    child.once("exit", (code) =>
      reject(new Error(`${fn.name} exited (${code}) before listening:\n${stderr}`)),
    );
  });
}

/**
 * The functions a sign-up to signed-in crosses, and health: each in its own launcher, because the
 * flow proves Vercel's Node helpers read every JSON body and that functions share only PostgreSQL.
 */
const LAUNCHED = new Set([
  "api/v1/accounts/index",
  "api/v1/accounts/[accountId]/verify-email",
  "api/v1/auth/magic-link/request",
  "api/v1/auth/magic-link/confirm",
  "api/v1/auth/session",
  "api/v1/backend/health",
]);

/**
 * Several functions in one plain Node process, each on its own loopback port. Each handler is
 * imported from its own .func folder (bare imports resolve from its own node_modules, nothing
 * above it), with the launcher's `default` unwrapping; what a function could see of another here
 * is taken away: requests run one at a time with the cwd of the function answering (Vercel runs a
 * function in its folder, where portal.config.json lands), the Host header is the public one (as
 * the launcher and the platform pass it), and waitUntil has a request context as on Vercel. All
 * share one process.env, so they get the same variables. The launcher costs ~1.3 s of CPU per
 * function before it listens (it loads ts-morph to read static config); this costs a function's
 * own imports.
 */
const HOST_SOURCE = `
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const functions = JSON.parse(process.argv[2]);
Object.defineProperty(globalThis, Symbol.for("@vercel/request-context"), {
  configurable: true,
  value: { get: () => ({ waitUntil: (work) => work.catch((error) => console.error(error)) }) },
});
let turn = Promise.resolve();
const served = {};
for (const fn of functions) {
  try {
    process.chdir(fn.dir);
    let handler = await import(pathToFileURL(join(fn.dir, fn.handler)).href);
    for (let i = 0; i < 5 && handler.default; i++) handler = handler.default;
    if (typeof handler !== "function") throw new Error("the default export is not a (req, res) handler");
    const server = createServer((req, res) => {
      turn = turn.then(
        () =>
          new Promise((done) => {
            res.once("close", done);
            process.chdir(fn.dir);
            req.headers.host = req.headers["x-forwarded-host"] ?? req.headers.host;
            Promise.resolve(handler(req, res)).catch((error) => {
              console.error(error);
              res.statusCode = 500;
              res.end(String(error?.stack ?? error));
            });
          }),
      );
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    served[fn.name] = { port: server.address().port };
  } catch (error) {
    served[fn.name] = { error: String(error?.stack ?? error) };
  }
}
process.send(served);
`;

/** One plain Node process serving `fns` (see HOST_SOURCE): once ready, an Instance per function. */
function startHost(
  root: string,
  fns: BuiltFunction[],
  vars: Record<string, string>,
): { child: ChildProcess; ready: Promise<Map<string, Instance>> } {
  const script = join(root, "host.mjs");
  writeFileSync(script, HOST_SOURCE);
  let stderr = "";
  const child = fork(
    script,
    [JSON.stringify(fns.map((f) => ({ name: f.name, dir: f.dir, handler: f.config.handler })))],
    {
      cwd: root,
      // No tsx, no loader of this test run: the built JavaScript must run on plain Node.
      execArgv: [],
      env: cleanEnv(root, vars),
      stdio: ["ignore", "ignore", "pipe", "ipc"],
    },
  );
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const ready = new Promise<Map<string, Instance>>((resolve, reject) => {
    child.once("message", (served: Record<string, { port?: number; error?: string }>) => {
      const failed = Object.entries(served).filter(([, s]) => s.error);
      if (failed.length) {
        child.kill();
        reject(new Error(failed.map(([name, s]) => `${name} does not load:\n${s.error}`).join("\n")));
        return;
      }
      resolve(
        new Map(
          fns.map((f) => [
            f.name,
            { origin: `http://127.0.0.1:${served[f.name]?.port}`, stderr: () => stderr, child },
          ]),
        ),
      );
    });
    child.once("exit", (code) => reject(new Error(`the function host exited (${code}):\n${stderr}`)));
  });
  return { child, ready };
}

const PGBOUNCER = ["/usr/sbin/pgbouncer", "/usr/bin/pgbouncer"].find((path) => existsSync(path)) ?? null;

async function freePort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * PgBouncer in transaction mode in front of the test server: what Neon's `-pooler` host, Supabase's
 * port 6543 and Vercel's pooled POSTGRES_URL are. A server connection serves one transaction and
 * then goes back to the pool, so nothing may rely on session state between transactions.
 */
async function startTransactionPooler(
  databaseUrl: string,
  database: string,
): Promise<{ url: string; stop: () => void }> {
  if (!PGBOUNCER) throw new Error("pgbouncer is not installed (Debian package pgbouncer, see .ci/run)");
  const server = new URL(databaseUrl);
  const user = decodeURIComponent(server.username);
  const dir = mkdtempSync(join(tmpdir(), "svc-pgbouncer-"));
  chmodSync(dir, 0o755);
  const port = await freePort();
  writeFileSync(join(dir, "users.txt"), `"${user}" "${decodeURIComponent(server.password)}"\n`);
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `svc = host=${server.hostname} port=${server.port || 5432} dbname=${database}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "users.txt")}`,
      "pool_mode = transaction",
      "default_pool_size = 5",
      "max_client_conn = 200",
      "",
    ].join("\n"),
  );
  for (const file of ["users.txt", "pgbouncer.ini"]) chmodSync(join(dir, file), 0o644);
  // PgBouncer refuses to run as root; CI runs as root, so drop to the cluster's own user.
  const asRoot = process.getuid?.() === 0;
  const child = spawn(
    asRoot ? "setpriv" : PGBOUNCER,
    asRoot
      ? ["--reuid=postgres", "--regid=postgres", "--clear-groups", PGBOUNCER, join(dir, "pgbouncer.ini")]
      : [join(dir, "pgbouncer.ini")],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    log += chunk.toString();
  });
  const deadline = Date.now() + 15_000;
  while (
    !(await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.end();
        resolve(true);
      });
      socket.on("error", () => resolve(false));
    }))
  ) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`pgbouncer did not start:\n${log}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const url = new URL(databaseUrl);
  url.port = String(port);
  url.pathname = "/svc";
  return {
    url: url.toString(),
    stop: () => {
      child.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface Answer {
  status: number;
  json: Record<string, unknown>;
  text: string;
  headers: Headers;
}

describe.skipIf(!VERCEL_CLI)("vercel build output", () => {
  let scratch: string;
  let functionsRoot: string;
  let functions: BuiltFunction[];
  let routes: BuildRoute[];
  let buildSeconds: number;
  let database: string | null = null;
  let pooler: { url: string; stop: () => void } | null = null;
  let instanceDatabaseUrl: string | null = null;
  const instances: Instance[] = [];
  const hosts: ChildProcess[] = [];

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), "svc-vercel-build-"));
    // What a clean checkout holds (untracked files too, so a local run sees work in progress).
    const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
    })
      .split("\0")
      .filter((file) => file && existsSync(join(REPO_ROOT, file)));
    for (const file of files) {
      mkdirSync(dirname(join(scratch, file)), { recursive: true });
      copyFileSync(join(REPO_ROOT, file), join(scratch, file));
    }
    // The dependencies CI installed: hard links when /tmp shares the checkout's file system.
    try {
      execFileSync("cp", ["-al", join(REPO_ROOT, "node_modules"), join(scratch, "node_modules")]);
    } catch {
      rmSync(join(scratch, "node_modules"), { recursive: true, force: true });
      cpSync(join(REPO_ROOT, "node_modules"), join(scratch, "node_modules"), {
        recursive: true,
        verbatimSymlinks: true,
      });
    }
    // Without a login or a linked project, `vercel build` reads the project's settings from here
    // instead of pulling them. The install step is skipped: node_modules is already in place.
    mkdirSync(join(scratch, ".vercel"));
    writeFileSync(
      join(scratch, ".vercel", "project.json"),
      JSON.stringify({
        projectId: "prj_offline",
        orgId: "team_offline",
        settings: { framework: null, installCommand: "" },
      }),
    );
    const started = Date.now();
    const log = await new Promise<string>((resolve, reject) => {
      const build = spawn(process.execPath, [VERCEL_CLI!, "build", "--yes"], {
        cwd: scratch,
        env: {
          ...cleanEnv(join(scratch, ".vercel", "home"), {}),
          CI: "1",
          VERCEL_TELEMETRY_DISABLED: "1",
          NO_UPDATE_NOTIFIER: "1",
          // @vercel/node runs `npm install` next to each function; offline and with node_modules
          // already there it must change and fetch nothing.
          npm_config_dry_run: "true",
          npm_config_offline: "true",
          npm_config_audit: "false",
          npm_config_fund: "false",
          npm_config_update_notifier: "false",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      build.stdout.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      build.stderr.on("data", (chunk: Buffer) => {
        output += chunk.toString();
      });
      build.on("error", reject);
      build.on("close", (code) =>
        code === 0 ? resolve(output) : reject(new Error(`vercel build failed (${code}):\n${output}`)),
      );
    });
    buildSeconds = (Date.now() - started) / 1000;
    expect(log).toMatch(/Build Completed/);
    // Out of the checkout: a module the tracer missed must not resolve from the copy's node_modules.
    functionsRoot = mkdtempSync(join(tmpdir(), "svc-vercel-functions-"));
    renameSync(join(scratch, ".vercel", "output", "functions"), join(functionsRoot, "functions"));
    routes = (
      JSON.parse(readFileSync(join(scratch, ".vercel", "output", "config.json"), "utf8")) as {
        routes: BuildRoute[];
      }
    ).routes;
    functions = walkFunctions(join(functionsRoot, "functions"));
    // filePathMap names project files a function gets at deployment without a copy in its folder
    // (includeFiles lands here): put them in place as the upload does.
    for (const f of functions) {
      for (const [inFunction, inProject] of Object.entries(f.config.filePathMap ?? {})) {
        mkdirSync(dirname(join(f.dir, inFunction)), { recursive: true });
        copyFileSync(join(scratch, inProject), join(f.dir, inFunction));
      }
    }
    rmSync(scratch, { recursive: true, force: true });
    if (DATABASE_URL) {
      // A database of its own, which the instances migrate as a fresh deployment would, reached
      // through a transaction-mode pooler as docs/api.md tells operators to.
      database = `svc_vercel_${randomBytes(6).toString("hex")}`;
      const admin = new pg.Client({ connectionString: DATABASE_URL });
      await admin.connect();
      await admin.query(`CREATE DATABASE ${database}`);
      await admin.end();
      if (PGBOUNCER || process.env.CI === "true") {
        pooler = await startTransactionPooler(DATABASE_URL, database);
        instanceDatabaseUrl = pooler.url;
      } else {
        console.warn("pgbouncer is not installed: the functions connect to PostgreSQL directly");
        const direct = new URL(DATABASE_URL);
        direct.pathname = `/${database}`;
        instanceDatabaseUrl = direct.toString();
      }
    }
  }, 600_000);

  afterAll(async () => {
    for (const child of [...instances.map((i) => i.child), ...hosts]) child.kill();
    if (functionsRoot) rmSync(functionsRoot, { recursive: true, force: true });
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    pooler?.stop();
    if (DATABASE_URL && database) {
      const admin = new pg.Client({ connectionString: DATABASE_URL });
      await admin.connect();
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    }
  });

  function fn(name: string): BuiltFunction {
    const found = functions.find((f) => f.name === name);
    if (!found) throw new Error(`no built function ${name}`);
    return found;
  }

  const databaseVars = (): Record<string, string> =>
    instanceDatabaseUrl ? { DATABASE_URL: instanceDatabaseUrl } : {};

  async function start(name: string, vars: Record<string, string>): Promise<Instance> {
    const instance = await startInstance(fn(name), vars);
    instances.push(instance);
    return instance;
  }

  async function call(
    instance: Instance,
    method: string,
    path: string,
    options: { body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const route = routeToFunction(routes, new Set(functions.map((f) => f.name)), path);
    const url = `${instance.origin}${path}${route?.query ? `?${route.query}` : ""}`;
    const response = await fetch(url, {
      method,
      headers: {
        // What Vercel's edge sends a function: the public host and the client's address.
        "x-forwarded-host": "svc-portal.vercel.app",
        "x-forwarded-proto": "https",
        "x-real-ip": "203.0.113.7",
        "x-forwarded-for": "203.0.113.7",
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...options.headers,
      },
      ...(options.body === undefined
        ? {}
        : { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) }),
    }).catch((error: Error) => {
      throw new Error(`${method} ${path}: ${error.message}\n${instance.stderr()}`);
    });
    const text = await response.text();
    let json: Record<string, unknown> = {};
    try {
      json = JSON.parse(text) as Record<string, unknown>;
    } catch {}
    return { status: response.status, json, text, headers: response.headers };
  }

  it("builds one Node function per route of the endpoint table, reached through the build's own routes", () => {
    const names = new Set(functions.map((f) => f.name));
    for (const endpoint of ENDPOINTS) {
      const route = routeToFunction(routes, names, samplePath(endpoint));
      // The function built from the route's file under api/ (test/http/vercel.test.ts pins those).
      const source = endpoint.path.slice(1).replace(/\{(\w+)\}/g, "[$1]");
      expect(route?.name, endpoint.id).toBe(
        existsSync(join(REPO_ROOT, `${source}.ts`)) ? source : `${source}/index`,
      );
    }
    const served = new Set(ENDPOINTS.map((e) => routeToFunction(routes, names, samplePath(e))?.name));
    // The rest are the GitHub App's functions (webhooks and their queue), outside the endpoint table.
    expect([...names].filter((name) => !served.has(name) && !name.startsWith("api/github/"))).toEqual([]);
    expect(names).toContain("api/github/webhooks");
    for (const f of functions) {
      expect(f.config.launcherType, f.name).toBe("Nodejs");
      expect(f.config.runtime, f.name).toMatch(/^nodejs\d+\.x$/);
      expect(f.config.handler, f.name).toMatch(/\.js$/);
    }
  });

  it("keeps PGlite out of every function and each function small", () => {
    const sizes = functions.map((f) => ({ name: f.name, bytes: treeBytes(f.dir) }));
    console.log(
      `vercel build: ${buildSeconds.toFixed(1)} s; ${functions.length} functions, largest ${(
        Math.max(...sizes.map((s) => s.bytes)) / 1048576
      ).toFixed(1)} MB`,
    );
    for (const f of functions) {
      expect(
        hasPath(f.dir, (rel) => rel.includes("@electric-sql") || rel.endsWith("pglite.wasm")),
        `${f.name} ships PGlite`,
      ).toBe(false);
    }
    for (const { name, bytes } of sizes) expect(bytes, name).toBeLessThan(MAX_FUNCTION_BYTES);
  });

  it("health fails closed without DATABASE_URL, naming it", async () => {
    const health = await start("api/v1/backend/health", {});
    const r = await call(health, "GET", "/api/v1/backend/health");
    expect(r.status, r.text).toBe(500);
    expect(r.json.code).toBe("config_invalid");
    expect(String(r.json.message)).toMatch(/DATABASE_URL/);
  }, 60_000);

  it("every v1 function loads and answers its route", async () => {
    const vars = { ...databaseVars(), SVC_DEV_EMAIL: "return-token" };
    const v1 = functions.filter((f) => f.name.startsWith("api/v1/"));
    const launched = [...LAUNCHED].map((name) => fn(name));
    // Two processes at a time: the host (every other v1 function) and one launcher after another.
    const host = startHost(
      functionsRoot,
      v1.filter((f) => !LAUNCHED.has(f.name)),
      vars,
    );
    hosts.push(host.child);
    const started = new Map<string, Instance>();
    const [hosted] = await Promise.all([
      host.ready,
      (async () => {
        for (const f of launched) started.set(f.name, await start(f.name, vars));
      })(),
    ]);
    for (const [name, instance] of hosted) started.set(name, instance);
    expect([...started.keys()].sort()).toEqual(v1.map((f) => f.name).sort());
    const names = new Set(functions.map((f) => f.name));
    const instanceFor = (path: string) => {
      const name = routeToFunction(routes, names, path)?.name;
      const instance = name ? started.get(name) : undefined;
      if (!instance) throw new Error(`no instance serves ${path}`);
      return instance;
    };
    for (const endpoint of ENDPOINTS) {
      const path = samplePath(endpoint);
      const instance = instanceFor(path);
      if (!DATABASE_URL) {
        const r = await call(instance, endpoint.method, path);
        expect(r.status, `${endpoint.id}: ${r.text}`).toBe(500);
        expect(String(r.json.message), endpoint.id).toMatch(/DATABASE_URL/);
        continue;
      }
      if (endpoint.id === "create_upload") {
        // The upload gate comes before anything else (SVC_LIVE_UPLOADS is not set here).
        const r = await call(instance, endpoint.method, path);
        expect(r.json.code, r.text).toBe("uploads_disabled");
      } else if (endpoint.authRequired) {
        const r = await call(instance, endpoint.method, path);
        expect(r.status, `${endpoint.id}: ${r.text}`).toBe(401);
        expect(["unauthenticated", "invalid_api_key"], endpoint.id).toContain(r.json.code);
      }
    }
    if (!DATABASE_URL) return;

    const health = await call(instanceFor("/api/v1/backend/health"), "GET", "/api/v1/backend/health");
    expect(health.status, health.text).toBe(200);
    expect(health.json).toMatchObject({ status: "ok", database: "postgres" });

    // Sign-up to signed-in across five functions, each its own instance, sharing only PostgreSQL;
    // every step reads a JSON body through Vercel's Node helpers.
    const email = `vercel-${randomBytes(4).toString("hex")}@example.com`;
    const created = await call(instanceFor("/api/v1/accounts"), "POST", "/api/v1/accounts", {
      body: { email, displayName: "Vercel" },
    });
    expect(created.status, created.text).toBe(202);
    const accountId = String(created.json.accountId);
    const verifyPath = `/api/v1/accounts/${accountId}/verify-email`;
    const badToken = await call(instanceFor(verifyPath), "POST", verifyPath, {
      body: { token: "A".repeat(43) },
    });
    expect(badToken.json.code, badToken.text).toBe("token_invalid");
    const verified = await call(instanceFor(verifyPath), "POST", verifyPath, {
      body: { token: created.json.devToken },
    });
    expect(verified.status, verified.text).toBe(200);
    const link = await call(
      instanceFor("/api/v1/auth/magic-link/request"),
      "POST",
      "/api/v1/auth/magic-link/request",
      {
        body: { email },
      },
    );
    expect(link.status, link.text).toBe(202);
    const confirmed = await call(
      instanceFor("/api/v1/auth/magic-link/confirm"),
      "POST",
      "/api/v1/auth/magic-link/confirm",
      { body: { token: link.json.devToken } },
    );
    expect(confirmed.status, confirmed.text).toBe(200);
    const cookie = confirmed.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const session = await call(instanceFor("/api/v1/auth/session"), "GET", "/api/v1/auth/session", {
      headers: { cookie },
    });
    expect(session.status, session.text).toBe(200);
    expect((session.json.session as { accountId: string }).accountId).toBe(accountId);
  }, 240_000);

  it("the webhook function refuses a delivery with a bad signature", async () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const webhooks = await start("api/github/webhooks", {
      ...databaseVars(),
      APP_ID: "123456",
      PRIVATE_KEY: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
      WEBHOOK_SECRET: "the-real-secret",
      SVC_PORTAL_REPOSITORY: "octo-org/mod-portal",
    });
    const payload = JSON.stringify(EXAMPLES.find((e) => e.name === "ping")?.examples[0]);
    const forged = `sha256=${createHmac("sha256", "not-the-secret").update(payload).digest("hex")}`;
    const r = await call(webhooks, "POST", "/api/github/webhooks", {
      body: payload,
      headers: {
        "x-github-event": "ping",
        "x-github-delivery": "72d3162e-cc78-11e3-81ab-4c9367dc0958",
        "x-hub-signature-256": forged,
      },
    });
    expect([400, 401], r.text).toContain(r.status);
    // Still up: a refused delivery is an answer, not a crash.
    expect(webhooks.child.exitCode).toBeNull();
  }, 60_000);
});
