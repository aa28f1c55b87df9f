import { readdirSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { join, relative } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ENDPOINTS } from "../../src/contracts/endpoints.ts";
import { EXTENSIONLESS_ROUTES } from "../../src/contracts/urls.ts";
import { HANDLERS } from "../../src/http/handlers/index.ts";
import { listen } from "../../src/http/server.ts";
import { createVercelHandler, resetVercelContext } from "../../src/http/vercel.ts";
import { REPO_ROOT } from "../lib/project.ts";
import { client, type Harness, startHarness } from "./harness.ts";

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
