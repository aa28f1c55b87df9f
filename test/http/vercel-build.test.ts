import { type ChildProcess, execFileSync, fork, spawn } from "node:child_process";
import { createHash, createHmac, generateKeyPairSync, randomBytes } from "node:crypto";
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
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server as HttpServer,
  type ServerResponse,
} from "node:http";
import { createRequire } from "node:module";
import { createServer as createTcpServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, extname, join, relative } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runSmoke } from "../../src/catalog/smoke.ts";
import { writeRelease } from "../support/records.ts";
import { ENDPOINTS, type EndpointDefinition } from "../../src/contracts/endpoints.ts";
import { EXTENSIONLESS_ROUTES } from "../../src/contracts/urls.ts";
import { MISS_RECHECK_MS } from "../../src/http/pages-versions.ts";
import { COLD_IMPORT_BUDGET_MS, describeColdImport, measureColdImport } from "../support/cold-import.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { releaseRecord } from "../support/temp-project.ts";

/**
 * `vercel build` on a copy of the repository, offline, then the built output runs on plain Node:
 * the router function (every /api/v1 endpoint) in two instances of @vercel/node's own launcher (the
 * dev-server `vercel dev` uses: it imports the .func handler and applies the Node helpers when
 * .vc-config.json asks for them, as the platform does), the webhook function in a third, the
 * GitHub App's other functions in one plain Node host. An edge in front of them routes each
 * request by the build's config.json and serves its static output, so a dynamic route reaches its
 * function with the original path plus the query Vercel appends, and `svc smoke` runs against it.
 * A loopback server stands in for GitHub Pages, serving the same site the build made.
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
  headers?: Record<string, string>;
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

type EdgeTarget =
  | { kind: "static"; file: string }
  | { kind: "function"; name: string; query: string }
  | { kind: "status"; status: number };

/**
 * Vercel's routing as the build output describes it: the routes before the filesystem phase only
 * add headers here; then the filesystem (a function answers its own path, and `x/index` answers
 * `x`; a static file its path), then the rewrites up to the next phase; a `check` rewrite lands
 * only on something that exists, and `status` without `dest` ends in that status.
 */
function routeOnEdge(
  routes: BuildRoute[],
  functionNames: Set<string>,
  staticRoot: string | null,
  pathname: string,
): EdgeTarget {
  const onFilesystem = (path: string): EdgeTarget | null => {
    const name = [path.slice(1), `${path.slice(1)}/index`].find((candidate) => functionNames.has(candidate));
    if (name) return { kind: "function", name, query: "" };
    if (!staticRoot) return null;
    const file = join(staticRoot, decodeURIComponent(path));
    for (const candidate of [file, join(file, "index.html")]) {
      if (candidate.startsWith(staticRoot) && existsSync(candidate) && lstatSync(candidate).isFile())
        return { kind: "static", file: candidate };
    }
    return null;
  };
  let afterFilesystem = false;
  for (const route of routes) {
    if (route.handle === "filesystem") {
      const hit = onFilesystem(pathname);
      if (hit) return hit;
      afterFilesystem = true;
      continue;
    }
    if (route.handle) break;
    if (!afterFilesystem) continue;
    const match = route.src ? new RegExp(route.src).exec(pathname) : null;
    if (!match) continue;
    if (!route.dest) return { kind: "status", status: route.status ?? 404 };
    const [destPath = "", destQuery = ""] = route.dest
      .replace(/\$(\d+)/g, (_m, index: string) => match[Number(index)] ?? "")
      .split("?");
    const hit = onFilesystem(destPath);
    if (hit) return hit.kind === "function" ? { ...hit, query: destQuery } : hit;
    if (!route.check) pathname = destPath;
  }
  return { kind: "status", status: 404 };
}

/** The headers the routes before the filesystem phase add to every answer (vercel.json "headers"). */
function edgeHeaders(routes: BuildRoute[], pathname: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const route of routes) {
    if (route.handle) break;
    if (route.headers && route.src && new RegExp(route.src).test(pathname))
      Object.assign(headers, route.headers);
  }
  return headers;
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

function listenHttp(server: HttpServer, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
}

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

/** Vercel's Hobby plan deploys at most this many functions per deployment (docs/api.md). */
const HOBBY_MAX_FUNCTIONS = 12;

/**
 * GitHub Pages for the function: the site the build made (Pages and the deployment serve the same
 * site/ of one commit), plus documents a test publishes there later; `failing` answers 503.
 */
class PagesStandIn {
  readonly extra = new Map<string, string>();
  failing = false;
  root = "";
  readonly server = createHttpServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://pages").pathname;
    if (this.failing) {
      res.writeHead(503, { "content-type": "text/html" }).end("<h1>503</h1>");
      return;
    }
    const body = this.extra.get(path) ?? this.file(path);
    if (body === null) {
      res.writeHead(404, { "content-type": "text/html" }).end("<h1>404</h1>");
      return;
    }
    res.writeHead(200, { "content-type": "application/json", "cache-control": "max-age=600" }).end(body);
  });

  private file(path: string): Buffer | null {
    const file = join(this.root, decodeURIComponent(path));
    return file.startsWith(this.root) && existsSync(file) && lstatSync(file).isFile()
      ? readFileSync(file)
      : null;
  }
}

/** The mod the built portal has published: its package, hosted by the portal under /downloads/. */
const PUBLISHED = (() => {
  const bytes = randomBytes(4096);
  return {
    path: "downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip",
    bytes,
    sha256: createHash("sha256").update(bytes).digest("hex"),
  };
})();

const CONTENT_TYPES: Record<string, string> = {
  ".json": "application/json; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
};

describe.skipIf(!VERCEL_CLI)("vercel build output", () => {
  let scratch: string;
  let functionsRoot: string;
  let staticRoot: string;
  let functions: BuiltFunction[];
  let routes: BuildRoute[];
  let buildSeconds: number;
  let database: string | null = null;
  let pooler: { url: string; stop: () => void } | null = null;
  let instanceDatabaseUrl: string | null = null;
  let edgeOrigin: string;
  let edgePort: number;
  let edge: HttpServer | null = null;
  /** The function instance the edge sends a function's requests to. */
  const edgeInstances = new Map<string, Instance>();
  const pages = new PagesStandIn();
  let pagesOrigin: string;
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
    // The portal as an operator deploys it: {base_url} is the deployment (the edge below), and the
    // lane reads Pages. The build (`svc build`) writes every document for that base URL.
    await listenHttp(pages.server, 0);
    pagesOrigin = `http://127.0.0.1:${(pages.server.address() as { port: number }).port}`;
    edgePort = await freePort();
    edgeOrigin = `http://127.0.0.1:${edgePort}`;
    const config = JSON.parse(readFileSync(join(scratch, "portal.config.json"), "utf8")) as {
      baseUrl: string;
      deployment: Record<string, unknown>;
    };
    config.baseUrl = edgeOrigin;
    config.deployment.pagesUrl = pagesOrigin;
    writeFileSync(join(scratch, "portal.config.json"), JSON.stringify(config, null, 2));
    // One published mod, its package hosted by the portal, so every per-mod route exists too.
    const record = releaseRecord({
      packageUrl: `${edgeOrigin}/${PUBLISHED.path}`,
      sha256: PUBLISHED.sha256,
      packageSizeBytes: PUBLISHED.bytes.length,
    });
    writeRelease(scratch, record);
    mkdirSync(dirname(join(scratch, "site", PUBLISHED.path)), { recursive: true });
    writeFileSync(join(scratch, "site", PUBLISHED.path), PUBLISHED.bytes);
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
    renameSync(join(scratch, ".vercel", "output", "static"), join(functionsRoot, "static"));
    staticRoot = join(functionsRoot, "static");
    pages.root = staticRoot;
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
    edge = createHttpServer((req, res) => {
      void serveOnEdge(req, res).catch((error: Error) => {
        res.writeHead(502).end(`edge: ${error.message}`);
      });
    });
    await listenHttp(edge, edgePort);
  }, 600_000);

  afterAll(async () => {
    for (const child of [...instances.map((i) => i.child), ...hosts]) child.kill();
    for (const server of [edge, pages.server]) {
      server?.closeAllConnections();
      server?.close();
    }
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

  /** Vercel's edge: static files, or the function instance, by the build's routes. */
  async function serveOnEdge(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", edgeOrigin);
    for (const [name, value] of Object.entries(edgeHeaders(routes, url.pathname))) res.setHeader(name, value);
    const target = routeOnEdge(routes, new Set(functions.map((f) => f.name)), staticRoot, url.pathname);
    if (target.kind === "status") {
      res.writeHead(target.status, { "content-type": "text/plain" }).end("The page could not be found");
      return;
    }
    if (target.kind === "static") {
      const type = CONTENT_TYPES[extname(target.file)] ?? "application/octet-stream";
      res.writeHead(200, { "content-type": type }).end(readFileSync(target.file));
      return;
    }
    const instance = edgeInstances.get(target.name);
    if (!instance) throw new Error(`no instance of ${target.name} is running`);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const query = [url.search.slice(1), target.query].filter(Boolean).join("&");
    const answer = await fetch(`${instance.origin}${url.pathname}${query ? `?${query}` : ""}`, {
      method: req.method ?? "GET",
      redirect: "manual",
      headers: {
        ...(Object.fromEntries(
          Object.entries(req.headers).filter(([name]) => !["host", "connection"].includes(name)),
        ) as Record<string, string>),
        "x-forwarded-host": "svc-portal.vercel.app",
        "x-forwarded-proto": "https",
        "x-real-ip": "203.0.113.7",
      },
      ...(chunks.length ? { body: Buffer.concat(chunks) } : {}),
    });
    const headers: Record<string, string> = {};
    answer.headers.forEach((value, name) => {
      if (!["content-encoding", "content-length", "transfer-encoding", "connection"].includes(name))
        headers[name] = value;
    });
    res.writeHead(answer.status, headers).end(Buffer.from(await answer.arrayBuffer()));
  }

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
    const route = routeOnEdge(routes, new Set(functions.map((f) => f.name)), null, path);
    const query = route.kind === "function" ? route.query : "";
    const url = `${instance.origin}${path}${query ? `?${query}` : ""}`;
    const response = await fetch(url, {
      method,
      redirect: "manual",
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

  it("builds the router and the GitHub App's three functions, within the Hobby plan's 12", () => {
    const names = functions.map((f) => f.name).sort();
    expect(names).toEqual(["api/github/drain", "api/github/intake", "api/github/webhooks", "api/router"]);
    expect(functions.length).toBeLessThanOrEqual(HOBBY_MAX_FUNCTIONS);
    for (const f of functions) {
      expect(f.config.launcherType, f.name).toBe("Nodejs");
      expect(f.config.runtime, f.name).toMatch(/^nodejs\d+\.x$/);
      expect(f.config.handler, f.name).toMatch(/\.js$/);
    }
  });

  it("routes every endpoint of the table to the router through the build's own routes, and the static documents to files", () => {
    const names = new Set(functions.map((f) => f.name));
    for (const endpoint of ENDPOINTS) {
      const target = routeOnEdge(routes, names, staticRoot, samplePath(endpoint));
      expect(target, endpoint.id).toEqual({ kind: "function", name: "api/router", query: "" });
    }
    for (const [path, file] of [
      ["/api/v1/catalog", "api/v1/catalog.json"],
      ["/api/v1/catalog.json", "api/v1/catalog.json"],
      ["/api/v1/publishing/backend-contract", "api/v1/publishing/backend-contract.json"],
    ] as const) {
      expect(routeOnEdge(routes, names, staticRoot, path), path).toEqual({
        kind: "static",
        file: join(staticRoot, file),
      });
    }
  });

  it("keeps PGlite and the site's documents out of every function, and each function small", () => {
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
      // The lane reads versions.json from Pages: no document of the site rides in a function.
      expect(
        hasPath(f.dir, (rel) => rel === "site" || rel.startsWith("site/")),
        `${f.name} ships site/`,
      ).toBe(false);
    }
    for (const { name, bytes } of sizes) expect(bytes, name).toBeLessThan(MAX_FUNCTION_BYTES);
  });

  it("ships each function as its bundle (bin/build-functions.mjs), no TypeScript source", () => {
    for (const f of functions) {
      const bundle = join(
        f.dir,
        "dist",
        "functions",
        f.name.replace(/^api\//, "").replaceAll("/", "-"),
        "index.js",
      );
      expect(existsSync(bundle), `${f.name}: ${bundle}`).toBe(true);
      expect(
        hasPath(f.dir, (rel) => rel.endsWith(".ts") && !rel.startsWith("node_modules/")),
        `${f.name} ships TypeScript sources`,
      ).toBe(false);
    }
  });

  it("imports each function cold in at most 100 ms (plain Node, a fresh process, median of 5)", () => {
    // Issue 27, item 6. Each run imports the handler as the launcher does, in the function's own
    // folder, just after an empty module (the floor) in the same conditions. The gate is CPU time
    // (test/support/cold-import.ts says why); wall time and the floor are printed beside it.
    for (const f of functions) {
      const figures = measureColdImport(join(f.dir, f.config.handler), { cwd: f.dir, env: { VERCEL: "1" } });
      console.log(describeColdImport(f.name, figures));
      expect(figures.cpuMs, `${f.name}: CPU time of its cold import`).toBeLessThanOrEqual(
        COLD_IMPORT_BUDGET_MS,
      );
    }
  }, 120_000);

  it("the router fails closed without DATABASE_URL, naming it", async () => {
    const router = await start("api/router", {});
    const r = await call(router, "GET", "/api/v1/backend/health");
    expect(r.status, r.text).toBe(500);
    expect(r.json.code).toBe("config_invalid");
    expect(String(r.json.message)).toMatch(/DATABASE_URL/);
  }, 60_000);

  it("every function loads, and the router answers every route of the table", async () => {
    const vars = { ...databaseVars(), SVC_DEV_EMAIL: "return-token" };
    // Two instances of the router in the launcher, sharing only PostgreSQL; the GitHub App's other
    // functions in one plain host, to prove they load.
    const host = startHost(
      functionsRoot,
      functions.filter((f) => f.name.startsWith("api/github/") && f.name !== "api/github/webhooks"),
      vars,
    );
    hosts.push(host.child);
    const [hosted, first, second] = await Promise.all([
      host.ready,
      start("api/router", vars),
      start("api/router", vars),
    ]);
    expect([...hosted.keys()].sort()).toEqual(["api/github/drain", "api/github/intake"]);
    edgeInstances.set("api/router", first);
    for (const endpoint of ENDPOINTS) {
      const path = samplePath(endpoint);
      if (!DATABASE_URL) {
        const r = await call(first, endpoint.method, path);
        expect(r.status, `${endpoint.id}: ${r.text}`).toBe(500);
        expect(String(r.json.message), endpoint.id).toMatch(/DATABASE_URL/);
        continue;
      }
      const r = await call(first, endpoint.method, path);
      expect(String(r.json.message ?? ""), `${endpoint.id}: ${r.text}`).not.toMatch(/^no resource at /);
      if (endpoint.id === "create_upload") {
        // The upload gate comes before anything else (SVC_LIVE_UPLOADS is not set here).
        expect(r.json.code, r.text).toBe("uploads_disabled");
      } else if (endpoint.authRequired) {
        expect(r.status, `${endpoint.id}: ${r.text}`).toBe(401);
        expect(["unauthenticated", "invalid_api_key"], endpoint.id).toContain(r.json.code);
      }
    }
    if (!DATABASE_URL) return;

    const health = await call(second, "GET", "/api/v1/backend/health");
    expect(health.status, health.text).toBe(200);
    expect(health.json).toMatchObject({ status: "ok", database: "postgres" });

    // Sign-up to signed-in, each step on the other instance than the last; every step reads a JSON
    // body through Vercel's Node helpers.
    const email = `vercel-${randomBytes(4).toString("hex")}@example.com`;
    const created = await call(first, "POST", "/api/v1/accounts", { body: { email, displayName: "Vercel" } });
    expect(created.status, created.text).toBe(202);
    const accountId = String(created.json.accountId);
    const verifyPath = `/api/v1/accounts/${accountId}/verify-email`;
    const badToken = await call(second, "POST", verifyPath, { body: { token: "A".repeat(43) } });
    expect(badToken.json.code, badToken.text).toBe("token_invalid");
    const verified = await call(second, "POST", verifyPath, { body: { token: created.json.devToken } });
    expect(verified.status, verified.text).toBe(200);
    const link = await call(first, "POST", "/api/v1/auth/magic-link/request", { body: { email } });
    expect(link.status, link.text).toBe(202);
    const confirmed = await call(second, "POST", "/api/v1/auth/magic-link/confirm", {
      body: { token: link.json.devToken },
    });
    expect(confirmed.status, confirmed.text).toBe(200);
    const cookie = confirmed.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const session = await call(first, "GET", "/api/v1/auth/session", { headers: { cookie } });
    expect(session.status, session.text).toBe(200);
    const { accountId: signedIn, csrfToken } = session.json.session as {
      accountId: string;
      csrfToken: string;
    };
    expect(signedIn).toBe(accountId);

    // The API-key lane reads each mod's versions.json from Pages, not from the deployment.
    const key = await call(second, "POST", "/api/v1/auth/api-keys", {
      body: { name: "manager" },
      headers: { cookie, "x-svc-csrf": csrfToken },
    });
    expect(key.status, key.text).toBe(201);
    const bearer = { authorization: `Bearer ${String(key.json.secret)}` };
    const lane = (version: string, modId = "better-hud") =>
      `/api/v1/downloads/mods/${modId}/${version}/${modId}-${version}.zip`;
    const served = await call(first, "GET", lane("1.0.0"), { headers: bearer });
    expect(served.status, served.text).toBe(302);
    // The package this portal hosts, at the same path on Pages.
    expect(served.headers.get("location")).toBe(`${pagesOrigin}/${PUBLISHED.path}`);
    expect(served.headers.get("x-svc-sha256")).toBe(PUBLISHED.sha256);
    expect((await call(first, "GET", lane("1.3.0"), { headers: bearer })).status).toBe(404);
    // Published on Pages after the deployment: downloadable once the kept document may be re-read.
    const versionsPath = "/api/v1/mods/better-hud/versions.json";
    const document = JSON.parse(readFileSync(join(staticRoot, versionsPath), "utf8")) as {
      versions: Array<Record<string, unknown>>;
    };
    const newer = {
      ...document.versions[0],
      version: "1.3.0",
      fileName: "better-hud-1.3.0.zip",
      packageUrl: "https://github.com/ada/better-hud/releases/download/v1.3.0/better-hud-1.3.0.zip",
      sha256: "c".repeat(64),
    };
    pages.extra.set(versionsPath, JSON.stringify({ ...document, versions: [newer, ...document.versions] }));
    await new Promise((resolve) => setTimeout(resolve, MISS_RECHECK_MS + 200));
    const fresh = await call(first, "GET", lane("1.3.0"), { headers: bearer });
    expect(fresh.status, fresh.text).toBe(302);
    expect(fresh.headers.get("location")).toBe(newer.packageUrl);
    // Pages down, for a mod this instance never read: a stable code, not a guess.
    pages.failing = true;
    try {
      const down = await call(second, "GET", lane("1.0.0", "other-mod"), { headers: bearer });
      expect(down.status, down.text).toBe(502);
      expect(down.json.code).toBe("pages_unavailable");
    } finally {
      pages.failing = false;
    }
  }, 240_000);

  it("svc smoke at the deployment's base URL fetches every static route and its extensionless alias", async () => {
    const report = await runSmoke({ baseUrl: edgeOrigin });
    const paths = new Set(report.routes.map((r) => r.path));
    for (const route of report.routes)
      expect(route.ok, `${route.path}: ${route.errors?.join("; ")}`).toBe(true);
    for (const route of EXTENSIONLESS_ROUTES) {
      const fetched = [...paths].filter((path) => route.pattern.test(path));
      expect(fetched, route.pattern.source).toHaveLength(1);
    }
    expect(report.passed, JSON.stringify(report.ruleFailures)).toBe(true);
    // The published package too, through the deployment's /downloads/, by size and sha256.
    expect(report.artifacts.map((a) => [a.url, a.ok])).toEqual([[`${edgeOrigin}/${PUBLISHED.path}`, true]]);
    // The alias answers from the deployment, the .json beside it from the same file.
    const alias = await fetch(`${edgeOrigin}/api/v1/catalog`);
    expect(alias.status).toBe(200);
    expect(alias.headers.get("x-frame-options")).toBe("DENY");
  }, 120_000);

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
