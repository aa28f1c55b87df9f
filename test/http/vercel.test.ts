import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ENDPOINTS } from "../../src/contracts/endpoints.ts";
import { EXTENSIONLESS_ROUTES } from "../../src/contracts/urls.ts";
import { HANDLERS } from "../../src/http/handlers/index.ts";
import { listen } from "../../src/http/server.ts";
import type { AppContext } from "../../src/http/context.ts";
import { appContextFromEnv, createVercelHandler, resetVercelContext } from "../../src/http/vercel.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { repositorySite } from "../support/repository-site.ts";
import { ADAPTERS, client, type Harness, startHarness } from "../support/http-harness.ts";

const API_DIR = join(REPO_ROOT, "api");

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** Vercel's Hobby plan deploys at most this many functions per deployment (docs/api.md). */
const HOBBY_MAX_FUNCTIONS = 12;

interface VercelJson {
  outputDirectory: string;
  ignoreCommand: string;
  git: { deploymentEnabled: Record<string, boolean> };
  rewrites: Array<{ source: string; destination: string }>;
  functions: Record<string, { includeFiles: string; excludeFiles: string; maxDuration: number }>;
}

const vercel = JSON.parse(readFileSync(join(REPO_ROOT, "vercel.json"), "utf8")) as VercelJson;

/**
 * Every function file under api/, as Vercel's file-system routing names it (api/router.js ->
 * api/router); a path with a segment that starts with `_` is no function (api/_entries/).
 */
const functionFiles = walk(API_DIR)
  .map((file) => relative(REPO_ROOT, file))
  .filter((file) => /\.(js|mjs|ts)$/.test(file) && !file.includes("/_"))
  .sort();
const functionNames = new Set(functionFiles.map((file) => file.replace(/\.(js|mjs|ts)$/, "")));

/** The source each function bundles (bin/build-functions.mjs): api/_entries/<same path>.ts. */
const entryOf = (file: string) => file.replace(/^api\//, "api/_entries/").replace(/\.js$/, ".ts");

/** The glob subset vercel.json uses (minimatch): `**` any path, `*` any run within one segment. */
function globMatches(glob: string, path: string): boolean {
  const source = glob
    .split("**")
    .map((part) =>
      part
        .split("*")
        .map((text) => text.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
        .join("[^/]*"),
    )
    .join(".*");
  return new RegExp(`^${source}$`).test(path);
}

/** A vercel.json rewrite as a matcher: `:name(re)` parameters and plain groups, as path-to-regexp reads them. */
function rewriteMatch(rule: { source: string; destination: string }, path: string): string | null {
  const names: string[] = [];
  const pattern = new RegExp(
    `^${rule.source.replace(/:(\w+)\(([^)]+)\)/g, (_m, name: string, re: string) => {
      names.push(name);
      return `(${re})`;
    })}$`,
  );
  const m = pattern.exec(path);
  if (!m) return null;
  return names.reduce((dest, name, i) => dest.replace(`:${name}`, m[i + 1]!), rule.destination);
}

/**
 * Vercel's order: the file system first (site/ as the static output, then the functions), then the
 * rewrites in order, each landing only on something that exists (`check`).
 */
function routeOnVercel(path: string, staticFiles: (path: string) => boolean): string | null {
  const exists = (target: string) =>
    functionNames.has(target.slice(1))
      ? `function ${target.slice(1)}`
      : staticFiles(target)
        ? `static ${target}`
        : null;
  const direct = exists(path);
  if (direct) return direct;
  for (const rule of vercel.rewrites) {
    const dest = rewriteMatch(rule, path);
    const landed = dest ? exists(dest) : null;
    if (landed) return landed;
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

const samplePath = (path: string) => path.replace(/\{(\w+)\}/g, (_m, name: string) => SAMPLE_PARAMS[name]!);

describe("Vercel functions", () => {
  it("are the router and the GitHub App's three: within the Hobby plan's 12, each an adapter", () => {
    expect(functionFiles).toEqual([
      "api/github/drain.js",
      "api/github/intake.js",
      "api/github/webhooks.js",
      "api/router.js",
    ]);
    expect(functionFiles.length).toBeLessThanOrEqual(HOBBY_MAX_FUNCTIONS);
    for (const file of functionFiles) {
      // The function file re-exports its bundle; the adapter is the entry the bundle is made from.
      const bundle = `dist/functions/${relative("api", file).replace(/\.js$/, "").replaceAll("/", "-")}/index.js`;
      const text = readFileSync(join(REPO_ROOT, file), "utf8");
      expect(text.replace(/^\/\/.*\n/gm, "").trim(), file).toBe(
        `export { default } from "${relative(dirname(file), bundle)}";`,
      );
      const lines = readFileSync(join(REPO_ROOT, entryOf(file)), "utf8")
        .trim()
        .split("\n").length;
      expect(lines, `${entryOf(file)} is an adapter, not logic`).toBeLessThanOrEqual(10);
    }
    expect(readFileSync(join(REPO_ROOT, "api/_entries/router.ts"), "utf8")).toMatch(
      /export default createVercelHandler\(\);/,
    );
  });

  it("routes every endpoint of the table to the router, and has a handler for each implemented one", async () => {
    // What vercel.json's buildCommand (svc build) writes to its outputDirectory.
    const site = await repositorySite();
    expect(site).toBe(join(REPO_ROOT, vercel.outputDirectory));
    const staticFile = (path: string) => existsSync(join(site, path)) && statSync(join(site, path)).isFile();
    for (const endpoint of ENDPOINTS) {
      expect(routeOnVercel(samplePath(endpoint.path), staticFile), endpoint.id).toBe("function api/router");
      expect(typeof HANDLERS[endpoint.id] === "function", endpoint.id).toBe(
        endpoint.status === "implemented",
      );
    }
    // The static documents stay static: the router's rewrite comes after theirs.
    expect(routeOnVercel("/api/v1/catalog", staticFile)).toBe("static /api/v1/catalog.json");
    expect(routeOnVercel("/api/v1/catalog.json", staticFile)).toBe("static /api/v1/catalog.json");
    expect(vercel.rewrites.at(-1)).toEqual({ source: "/api/v1/(.*)", destination: "/api/router" });
  });

  it("gives each function one configuration, the site's documents to none and the ownership records to the router alone", () => {
    for (const file of functionFiles) {
      expect(
        Object.keys(vercel.functions).filter((glob) => globMatches(glob, file)),
        file,
      ).toHaveLength(1);
    }
    for (const [glob, config] of Object.entries(vercel.functions)) {
      // The lane reads versions.json from Pages; a copy per deployment was 51 MB at 10,000 mods.
      expect(config.includeFiles, glob).not.toMatch(/site\//);
      expect(config.includeFiles.includes("records/owners/"), glob).toBe(glob === "api/router.js");
      expect(config.excludeFiles, glob).toMatch(/node_modules\/@electric-sql/);
    }
  });

  it("builds no preview of the pipeline's svc/ branches", () => {
    const disabled = Object.entries(vercel.git.deploymentEnabled)
      .filter(([, enabled]) => !enabled)
      .map(([glob]) => glob);
    const deploys = (branch: string) => !disabled.some((glob) => globMatches(glob, branch));
    for (const branch of [
      "svc/upload/sub_0123456789abcdef",
      "svc/release/better-hud/1.2.0",
      "svc/release/123456/better-hud/1.2.0",
    ]) {
      expect(deploys(branch), branch).toBe(false);
    }
    for (const branch of ["main", "feature/svc-docs", "svc"]) expect(deploys(branch), branch).toBe(true);
  });

  it("keeps test files and anything but function entries out of api/", () => {
    for (const file of walk(API_DIR)) {
      expect(file, "test files under api/ would be deployed as functions").not.toMatch(
        /\.(test|spec)\.[cm]?[jt]sx?$|__tests__/,
      );
      // A function file (.js, re-exporting its bundle) or the entry a bundle is made from.
      expect(relative(API_DIR, file)).toMatch(/^_entries\/.+\.ts$|^[^_].*\.js$/);
    }
  });

  it("vercel.json serves site/ and rewrites every extensionless static route", () => {
    expect(vercel.outputDirectory).toBe("site");
    const samples: Array<[string, string]> = [
      ["/api/v1/catalog", "/api/v1/catalog.json"],
      ["/api/v1/readiness", "/api/v1/readiness.json"],
      ["/api/v1/mods", "/api/v1/mods/index.json"],
      ["/api/v1/mods/better-hud", "/api/v1/mods/better-hud/index.json"],
      ["/api/v1/mods/better-hud/versions", "/api/v1/mods/better-hud/versions.json"],
      ["/api/v1/publishing/workflow", "/api/v1/publishing/workflow.json"],
      ["/api/v1/publishing/backend-contract", "/api/v1/publishing/backend-contract.json"],
      [
        "/api/v1/publishing/game-publishing-validation.v1",
        "/api/v1/publishing/game-publishing-validation.v1.json",
      ],
      ["/api/v1/runtime/latest", "/api/v1/runtime/latest.json"],
      ["/api/v1/framework/latest", "/api/v1/framework/latest.json"],
      ["/api/v1/game-builds/latest", "/api/v1/game-builds/latest.json"],
      ["/api/v1/manager/latest", "/api/v1/manager/latest.json"],
    ];
    expect(samples).toHaveLength(EXTENSIONLESS_ROUTES.length);
    for (const [path, target] of samples) {
      const local = EXTENSIONLESS_ROUTES.find((r) => r.pattern.test(path));
      expect(local?.target(local.pattern.exec(path)!), path).toBe(target);
      // The first rule that matches is the document's; the router's catch-all follows it.
      const rewritten = vercel.rewrites.map((rule) => rewriteMatch(rule, path)).filter(Boolean);
      expect(rewritten[0], path).toBe(target);
    }
  });
});

describe("vercel.json ignoreCommand", () => {
  /**
   * Vercel runs it before a build of a pushed commit, with VERCEL_GIT_PREVIOUS_SHA the commit of the
   * branch's last successful deployment, in a shallow clone: 0 skips the build, 1 builds, and any
   * other code fails the deployment (after which the previous SHA never moves again).
   */
  let repo: string;
  const git = (...args: string[]) =>
    execFileSync("git", args, {
      cwd: repo,
      encoding: "utf8",
      env: {
        ...process.env,
        GIT_AUTHOR_NAME: "t",
        GIT_AUTHOR_EMAIL: "t@example.com",
        GIT_COMMITTER_NAME: "t",
        GIT_COMMITTER_EMAIL: "t@example.com",
      },
    }).trim();
  const commit = (files: Record<string, string>) => {
    for (const [path, text] of Object.entries(files)) {
      mkdirSync(dirname(join(repo, path)), { recursive: true });
      writeFileSync(join(repo, path), text);
    }
    git("add", "-A");
    git("commit", "-q", "-m", Object.keys(files).join(" "));
    return git("rev-parse", "HEAD");
  };
  const decide = (previous: string | undefined): number =>
    spawnSync("sh", ["-c", vercel.ignoreCommand], {
      cwd: repo,
      env: {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        ...(previous === undefined ? {} : { VERCEL_GIT_PREVIOUS_SHA: previous }),
      },
    }).status ?? -1;

  beforeAll(() => {
    repo = mkdtempSync(join(tmpdir(), "svc-ignore-command-"));
    git("init", "-q");
  });
  afterAll(() => rmSync(repo, { recursive: true, force: true }));

  it("skips a commit that changes nothing the deployment is built from, and builds every other", () => {
    const deployed = commit({ "src/a.ts": "1", "site/index.html": "1", "records/mods/m/1.0.0.json": "1" });
    commit({ "submissions/better-hud/1.2.0.json": "{}", "docs/x.md": "x", ".github/workflows/w.yml": "w" });
    expect(decide(deployed), "a merged submission sidecar and docs").toBe(0);
    commit({ "site/api/v1/catalog.json": "{}", "records/mods/m/1.2.0.json": "{}" });
    expect(decide(deployed), "a catalog commit: the deployment serves site/").toBe(1);
    const catalog = git("rev-parse", "HEAD");
    commit({ "portal.config.json": "{}" });
    expect(decide(catalog), "configuration").toBe(1);
    const config = git("rev-parse", "HEAD");
    commit({ "test/x.test.ts": "t", "src/b.ts": "b" });
    expect(decide(config), "code beside tests").toBe(1);
  });

  it("builds when it cannot tell: no previous deployment, or one the shallow clone does not hold", () => {
    commit({ "docs/y.md": "y" });
    expect(decide(undefined)).toBe(1);
    expect(decide("")).toBe(1);
    expect(decide("0123456789abcdef0123456789abcdef01234567")).toBe(1);
  });
});

describe("Vercel adapter", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => {
    await h?.close();
  });
  afterEach(() => resetVercelContext());

  async function serve(handler: ReturnType<typeof createVercelHandler>) {
    const server = createServer((req, res) => void handler(req, res));
    const { port } = await listen(server, 0, "127.0.0.1");
    return { call: client(`http://127.0.0.1:${port}`), close: () => new Promise((r) => server.close(r)) };
  }

  it("fails closed with a message that names a missing DATABASE_URL", async () => {
    const s = await serve(createVercelHandler({}));
    try {
      const r = await s.call("GET", "/api/v1/backend/health");
      expect(r.status).toBe(500);
      expect(r.json.code).toBe("config_invalid");
      expect(r.json.message).toMatch(/DATABASE_URL/);
    } finally {
      await s.close();
    }
  });

  it.runIf(ADAPTERS.includes("postgres"))(
    "holds at most two PostgreSQL connections per instance, or SVC_PG_POOL_MAX",
    async () => {
      const schema = `t_${randomBytes(6).toString("hex")}`;
      const url = new URL(process.env.DATABASE_URL!);
      const admin = new pg.Client({ connectionString: url.toString() });
      await admin.connect();
      await admin.query(`CREATE SCHEMA ${schema}`);
      const connections = async (name: string) =>
        Number(
          (
            await admin.query<{ n: string }>(
              "SELECT count(*)::text AS n FROM pg_stat_activity WHERE application_name = $1",
              [name],
            )
          ).rows[0]!.n,
        );
      try {
        for (const [poolVar, expected] of [[undefined, 2] as const, ["1", 1] as const]) {
          resetVercelContext();
          const name = `svc_pool_${randomBytes(4).toString("hex")}`;
          url.searchParams.set("application_name", name);
          url.searchParams.set("options", `-c search_path=${schema}`);
          let made: AppContext | null = null;
          const s = await serve(
            createVercelHandler(
              {
                DATABASE_URL: url.toString(),
                SVC_DEV_EMAIL: "auto-verify",
                ...(poolVar ? { SVC_PG_POOL_MAX: poolVar } : {}),
              },
              async (env) => {
                made = await appContextFromEnv(env);
                return made;
              },
            ),
          );
          try {
            // A burst of sign-ups, each a transaction: a pool of 10 (the server's default) opens
            // up to 10 connections here.
            const answers = await Promise.all(
              Array.from({ length: 12 }, (_, i) =>
                s.call("POST", "/api/v1/accounts", {
                  body: { email: `pool-${name}-${i}@example.com`, displayName: "P" },
                  headers: { "x-real-ip": `198.51.100.${i + 1}` },
                }),
              ),
            );
            expect(answers.map((a) => a.status)).toEqual(answers.map(() => 202));
            expect(await connections(name), `SVC_PG_POOL_MAX=${poolVar ?? "(unset)"}`).toBe(expected);
          } finally {
            await s.close();
            await (made as AppContext | null)?.store?.close();
          }
        }
      } finally {
        resetVercelContext();
        await admin.query(`DROP SCHEMA ${schema} CASCADE`);
        await admin.end();
      }
    },
  );

  it("refuses an SVC_PG_POOL_MAX that is not a whole number from 1 to 100, naming it", async () => {
    for (const value of ["0", "101", "two", "1.5"]) {
      resetVercelContext();
      const s = await serve(
        createVercelHandler({
          DATABASE_URL: "postgres://127.0.0.1:1/x",
          SVC_PG_POOL_MAX: value,
        }),
      );
      try {
        const r = await s.call("GET", "/api/v1/backend/health");
        expect(r.json.code, value).toBe("config_invalid");
        expect(r.json.message, value).toMatch(/SVC_PG_POOL_MAX/);
      } finally {
        await s.close();
      }
    }
  });

  it("dispatches every endpoint of the table through the same handlers, and nothing else", async () => {
    const s = await serve(createVercelHandler({}, async () => h.app));
    try {
      for (const endpoint of ENDPOINTS) {
        const r = await s.call(endpoint.method, samplePath(endpoint.path));
        // Whatever the handler answers (401, 400, 200...), it is the endpoint's, not the router's miss.
        expect(String(r.json?.message ?? ""), endpoint.id).not.toMatch(/^no resource at /);
        expect(r.json?.code, endpoint.id).not.toBe("method_not_allowed");
      }
      const created = await s.call("POST", "/api/v1/accounts", {
        body: { email: "v@example.com", displayName: "V" },
      });
      expect(created.status).toBe(202);
      expect((await s.call("GET", "/api/v1/accounts")).json.code).toBe("unauthenticated");
      expect((await s.call("DELETE", "/api/v1/accounts")).json.code).toBe("method_not_allowed");
      // The static documents are the deployment's files, never the function's.
      for (const path of ["/api/v1/catalog.json", "/api/v1/no-such-route", "/api/router"]) {
        const r = await s.call("GET", path);
        expect(r.status, path).toBe(404);
        expect(r.json.code, path).toBe("not_found");
      }
    } finally {
      await s.close();
    }
  });
});
