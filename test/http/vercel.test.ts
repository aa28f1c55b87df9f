import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { join, relative } from "node:path";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ENDPOINTS } from "../../src/contracts/endpoints.ts";
import { EXTENSIONLESS_ROUTES } from "../../src/contracts/urls.ts";
import { HANDLERS } from "../../src/http/handlers/index.ts";
import { listen } from "../../src/http/server.ts";
import type { AppContext } from "../../src/http/context.ts";
import { appContextFromEnv, createVercelHandler, resetVercelContext } from "../../src/http/vercel.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import { ADAPTERS, client, type Harness, startHarness } from "../support/http-harness.ts";

const API_DIR = join(REPO_ROOT, "api");

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** api/v1/accounts/[accountId]/roles.ts -> /api/v1/accounts/{accountId}/roles (Vercel file-system routing). */
function routeOf(file: string): string {
  const rel = relative(REPO_ROOT, file)
    .replace(/\.ts$/, "")
    .replace(/\/index$/, "");
  return `/${rel.replace(/\[(\w+)\]/g, "{$1}")}`;
}

const functionFiles = walk(API_DIR)
  .filter((file) => file.startsWith(join(API_DIR, "v1")))
  .map((file) => {
    const text = readFileSync(file, "utf8");
    const m = /createVercelHandler\(\[([^\]]*)\]\)/.exec(text);
    const ids = m ? [...m[1]!.matchAll(/"([a-z_]+)"/g)].map((x) => x[1]!) : [];
    return {
      file: relative(REPO_ROOT, file),
      route: routeOf(file),
      ids,
      lines: text.trim().split("\n").length,
    };
  });

describe("Vercel functions", () => {
  it("has exactly one function file per endpoint, at the endpoint's path, and one handler per implemented endpoint", () => {
    for (const endpoint of ENDPOINTS) {
      const serving = functionFiles.filter((f) => f.ids.includes(endpoint.id));
      expect(
        serving.map((f) => f.file),
        endpoint.id,
      ).toHaveLength(1);
      expect(serving[0]!.route, endpoint.id).toBe(endpoint.path);
      expect(typeof HANDLERS[endpoint.id] === "function", endpoint.id).toBe(
        endpoint.status === "implemented",
      );
    }
    for (const f of functionFiles) {
      expect(f.ids.length, f.file).toBeGreaterThan(0);
      for (const id of f.ids)
        expect(
          ENDPOINTS.some((e) => e.id === id && e.path === f.route),
          `${f.file}: ${id}`,
        ).toBe(true);
      // Every endpoint on this path is served by this file (methods on one path share a function).
      expect(
        ENDPOINTS.filter((e) => e.path === f.route)
          .map((e) => e.id)
          .sort(),
        f.file,
      ).toEqual([...f.ids].sort());
      expect(f.lines, `${f.file} is an adapter, not logic`).toBeLessThanOrEqual(10);
    }
  });

  it("keeps test files and anything but function entries out of api/", () => {
    for (const file of walk(API_DIR)) {
      expect(file, "test files under api/ would be deployed as functions").not.toMatch(
        /\.(test|spec)\.[cm]?[jt]sx?$|__tests__/,
      );
      // api/tsconfig.json narrows the type check vercel build runs on each function; it is no function.
      if (relative(API_DIR, file) === "tsconfig.json") continue;
      expect(file).toMatch(/\.ts$/);
    }
  });

  it("vercel.json serves site/ and rewrites every extensionless static route", () => {
    const vercel = JSON.parse(readFileSync(join(REPO_ROOT, "vercel.json"), "utf8")) as {
      outputDirectory: string;
      rewrites: Array<{ source: string; destination: string }>;
    };
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
      const rewritten = vercel.rewrites
        .map((rule) => {
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
        })
        .filter(Boolean);
      expect(rewritten, path).toEqual([target]);
    }
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
    const s = await serve(createVercelHandler(["backend_health"], {}));
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
              ["create_account", "list_accounts"],
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
        createVercelHandler(["backend_health"], {
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

  it("dispatches through the same handlers and refuses paths the function file does not serve", async () => {
    const s = await serve(createVercelHandler(["create_account", "list_accounts"], {}, async () => h.app));
    try {
      const created = await s.call("POST", "/api/v1/accounts", {
        body: { email: "v@example.com", displayName: "V" },
      });
      expect(created.status).toBe(202);
      expect((await s.call("GET", "/api/v1/accounts")).json.code).toBe("unauthenticated");
      expect((await s.call("GET", "/api/v1/backend/health")).status).toBe(404);
      expect((await s.call("GET", "/api/v1/catalog.json")).status).toBe(404);
    } finally {
      await s.close();
    }
  });
});
