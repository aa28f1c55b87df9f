import { createHash } from "node:crypto";
import { renameSync } from "node:fs";
import type { Server } from "node:http";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSiteInputs, renderSite, writeSite } from "../../src/catalog/site.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { type SchemaName, schemaRegistry } from "../../src/contracts/schemas.ts";
import type { AppContext } from "../../src/http/context.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import { releaseRecord, tempProject } from "../support/temp-project.ts";

let project: ReturnType<typeof tempProject>;
let server: Server;
let origin: string;
const artifact = Buffer.alloc(300_000, 7);

beforeAll(async () => {
  project = tempProject();
  // The record carries the artifact's real hash: downloads are answered with the catalog's sha256 as ETag.
  project.addRecord(
    releaseRecord({
      packageSizeBytes: artifact.length,
      sha256: createHash("sha256").update(artifact).digest("hex"),
    }),
  );
  writeSite(
    project.site(""),
    renderSite(loadSiteInputs(project.config, `${project.root}/records`), project.site("")),
  );
  project.write("site/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip", artifact as unknown as string);
  project.write("site/.secret", "do not serve");
  const app = {
    config: project.config,
    settings: parseSettings({}, { dataDir: `${project.root}/.data` }),
    siteDir: project.site(""),
    startedAt: new Date(),
    now: () => new Date(),
    log: () => {},
  } as AppContext;
  server = createPortalServer(app);
  const bound = await listen(server, 0, "127.0.0.1");
  origin = `http://127.0.0.1:${bound.port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  project.cleanup();
});

/** Every static route of the contract, with the schema its document must pass. */
const ROUTES: Array<[string, SchemaName]> = [
  ["/api/v1/catalog.json", "catalog"],
  ["/api/v1/catalog", "catalog"],
  ["/api/v1/readiness.json", "readiness"],
  ["/api/v1/runtime/latest.json", "runtime"],
  ["/api/v1/framework/latest.json", "framework"],
  ["/api/v1/game-builds/latest.json", "game-builds"],
  ["/api/v1/mods", "mods-index"],
  ["/api/v1/mods/index.json", "mods-index"],
  ["/api/v1/mods/better-hud", "mod-detail"],
  ["/api/v1/mods/better-hud/index.json", "mod-detail"],
  ["/api/v1/mods/better-hud/versions", "mod-versions"],
  ["/api/v1/mods/better-hud/versions.json", "mod-versions"],
  ["/api/v1/manager/latest.json", "manager"],
  ["/api/v1/publishing/workflow", "workflow"],
  ["/api/v1/publishing/workflow.json", "workflow"],
  ["/api/v1/publishing/backend-contract", "backend-contract"],
  ["/api/v1/publishing/backend-contract.json", "backend-contract"],
  ["/api/v1/publishing/game-publishing-validation.v1.json", "game-publishing-validation"],
];
const SCHEMA_ROUTES = [
  "/api/v1/publishing/backend-contract.schema.json",
  "/api/v1/publishing/game-publishing-validation.schema.json",
  "/api/v1/publishing/upload-submission.schema.json",
  "/api/v1/publishing/mod-release-submission.schema.json",
];

describe("local portal over loopback HTTP", () => {
  it.each(ROUTES)("serves %s as JSON that passes the %s schema", async (path, schema) => {
    const response = await fetch(origin + path);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    const result = schemaRegistry(project.config.baseUrl).validate(schema, await response.json());
    expect(result.ok ? [] : result.issues).toEqual([]);
  });

  it.each(SCHEMA_ROUTES)("serves the published schema %s with its public $id", async (path) => {
    const response = await fetch(origin + path);
    expect(response.status).toBe(200);
    const schema = (await response.json()) as { $id: string };
    expect(schema.$id).toBe(project.config.baseUrl + path);
  });

  it("answers a matching If-None-Match with 304 and no body", async () => {
    const first = await fetch(`${origin}/api/v1/catalog`);
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^"[0-9a-f]{64}(-gzip)?"$/);
    const second = await fetch(`${origin}/api/v1/catalog`, { headers: { "if-none-match": etag } });
    expect(second.status).toBe(304);
    expect(await second.text()).toBe("");
    const stale = await fetch(`${origin}/api/v1/catalog`, { headers: { "if-none-match": '"abc"' } });
    expect(stale.status).toBe(200);
  });

  it("gzips when asked, with its own ETag, and serves identity otherwise", async () => {
    const { request } = await import("node:http");
    const raw = await new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      request(
        `${origin}/api/v1/publishing/workflow.json`,
        { headers: { "accept-encoding": "gzip" } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
        },
      )
        .on("error", reject)
        .end();
    });
    expect(raw.headers["content-encoding"]).toBe("gzip");
    expect(raw.headers.vary).toBe("Accept-Encoding");
    expect(String(raw.headers.etag)).toMatch(/-gzip"$/);
    const identity = await fetch(`${origin}/api/v1/publishing/workflow.json`, {
      headers: { "accept-encoding": "identity" },
    });
    expect(gunzipSync(raw.body).toString()).toBe(await identity.text());
  });

  it("answers unknown paths with the JSON error body and 404", async () => {
    const response = await fetch(`${origin}/api/v1/nothing-here`);
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await response.json()).toEqual({
      code: "not_found",
      message: "no resource at /api/v1/nothing-here",
    });
  });

  it("answers a wrong method with 405, Allow and the error body", async () => {
    const put = await fetch(`${origin}/api/v1/catalog.json`, { method: "PUT", body: "{}" });
    expect(put.status).toBe(405);
    expect(put.headers.get("allow")).toBe("GET, HEAD");
    expect(((await put.json()) as { code: string }).code).toBe("method_not_allowed");
    const patch = await fetch(`${origin}/api/v1/auth/session`, { method: "PATCH" });
    expect(patch.status).toBe(405);
    expect(patch.headers.get("allow")).toBe("GET, DELETE");
  });

  it("never serves hidden files or paths outside the site", async () => {
    for (const path of [
      "/.secret",
      "/%2e%2e/portal.config.json",
      "/api/v1/..%2f..%2fportal.config.json",
      "/.svc-tmp/x",
      "/a%00b",
      "/%E0%A4%A",
    ]) {
      const response = await fetch(origin + path);
      expect([400, 404], path).toContain(response.status);
      expect(((await response.json()) as { code: string }).code, path).toMatch(/not_found|invalid_request/);
    }
  });

  it("streams a download with Content-Length, its sha256 as ETag and byte ranges", async () => {
    const path = `${origin}/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip`;
    const full = await fetch(path);
    expect(full.headers.get("content-type")).toBe("application/zip");
    expect(full.headers.get("content-length")).toBe(String(artifact.length));
    expect(full.headers.get("cache-control")).toContain("immutable");
    expect(full.headers.get("etag")).toBe(`"${createHash("sha256").update(artifact).digest("hex")}"`);
    expect(Buffer.from(await full.arrayBuffer()).equals(artifact)).toBe(true);
    const part = await fetch(path, { headers: { range: "bytes=100-199" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe(`bytes 100-199/${artifact.length}`);
    expect((await part.arrayBuffer()).byteLength).toBe(100);
    const beyond = await fetch(path, { headers: { range: `bytes=${artifact.length}-` } });
    expect(beyond.status).toBe(416);
  });

  it("serves a document replaced on disk from the next request on, with its new ETag", async () => {
    const path = `${origin}/api/v1/mods/better-hud/notes.txt`;
    const identity = { headers: { "accept-encoding": "identity" } };
    project.write("site/api/v1/mods/better-hud/notes.txt", "first version of the document\n");
    const first = await fetch(path, identity);
    expect(await first.text()).toBe("first version of the document\n");
    // Answered from memory now: the same bytes and ETag.
    const again = await fetch(path, identity);
    expect(again.headers.get("etag")).toBe(first.headers.get("etag"));
    expect(await again.text()).toBe("first version of the document\n");
    // Replaced as a publication replaces files (a new file renamed over the old one).
    project.write("site/api/v1/mods/better-hud/notes.txt.new", "second, longer version of the document\n");
    renameSync(
      project.site("api/v1/mods/better-hud/notes.txt.new"),
      project.site("api/v1/mods/better-hud/notes.txt"),
    );
    const second = await fetch(path, identity);
    expect(second.headers.get("etag")).not.toBe(first.headers.get("etag"));
    expect(second.headers.get("content-length")).toBe("39");
    expect(await second.text()).toBe("second, longer version of the document\n");
  });

  it("serves health with the live-upload flag", async () => {
    const response = await fetch(`${origin}/api/v1/backend/health`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: "ok", liveUploads: false });
  });
});
