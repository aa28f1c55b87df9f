import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hideRelease, publishRelease, unhideRelease } from "../../src/catalog/publisher.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { createAppContext } from "../../src/http/app.ts";
import type { AppContext } from "../../src/http/context.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import type { Store } from "../../src/store/index.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { openTestStore } from "../support/http-harness.ts";

/**
 * Hidden means withdrawn from every public path: the static /downloads/ address and the API-key
 * lane answer 404 for a hidden version while its bytes stay where they were, and unhide brings
 * back the same bytes at the same URL. Real publisher, real site, real server on loopback.
 */
let project: CatalogProject;
let store: Store;
let server: Server;
let origin: string;
let apiKey: string;
const bytes = new Map<string, Buffer>();

const artifactPath = (version: string) => `/downloads/mods/better-hud/${version}/better-hud-${version}.zip`;
const lanePath = (version: string) => `/api/v1${artifactPath(version)}`;

async function publish(version: string) {
  const { packageBytes, sidecar } = modRelease({ version });
  bytes.set(version, Buffer.from(packageBytes));
  await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });
}

async function fetchBoth(version: string, init: RequestInit = {}) {
  const auth = { authorization: `Bearer ${apiKey}` };
  const headers = (init.headers ?? {}) as Record<string, string>;
  return {
    site: await fetch(origin + artifactPath(version), init),
    lane: await fetch(origin + lanePath(version), { ...init, headers: { ...headers, ...auth } }),
  };
}

beforeAll(async () => {
  project = catalogProject();
  store = await openTestStore("pglite");
  const app: AppContext = await createAppContext({
    config: project.config,
    settings: parseSettings({ SVC_DEV_EMAIL: "auto-verify" }, { dataDir: join(project.root, ".data") }),
    siteDir: project.siteDir,
    log: () => {},
    store,
  });
  server = createPortalServer(app);
  origin = `http://127.0.0.1:${(await listen(server, 0, "127.0.0.1")).port}`;
  // Published documents link to this server, so the lane serves the bytes itself instead of redirecting.
  project.setBaseUrl(origin);
  app.config = project.config;
  const { accountId } = await app.accounts!.createAccount({
    email: "reader@example.com",
    displayName: "Reader",
    role: "player",
  });
  apiKey = (await app.accounts!.createApiKey(accountId, "downloads")).apiKey;
  await publish("1.0.0");
  await publish("1.1.0");
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await store?.close();
  project?.cleanup();
});

describe("a hidden release on the local portal", () => {
  it("is served on both lanes while published, with the catalog sha256 as ETag", async () => {
    const { site, lane } = await fetchBoth("1.0.0");
    const sha = createHash("sha256").update(bytes.get("1.0.0")!).digest("hex");
    for (const response of [site, lane]) {
      expect(response.status).toBe(200);
      expect(response.headers.get("etag")).toBe(`"${sha}"`);
      expect(Buffer.from(await response.arrayBuffer()).equals(bytes.get("1.0.0")!)).toBe(true);
    }
  });

  it("answers 404 not_found (no-store) on /downloads/ and the API-key lane once hidden, for GET, HEAD and ranges", async () => {
    await hideRelease(publisherOptions(project), "better-hud", "1.0.0");
    const onDisk = join(project.siteDir, artifactPath("1.0.0"));
    expect(readFileSync(onDisk).equals(bytes.get("1.0.0")!)).toBe(true);
    for (const init of [{}, { method: "HEAD" }, { headers: { range: "bytes=0-99" } }] as RequestInit[]) {
      const { site, lane } = await fetchBoth("1.0.0", init);
      for (const [name, response] of [
        ["site", site],
        ["lane", lane],
      ] as const) {
        expect(response.status, `${name} ${init.method ?? "GET"}`).toBe(404);
        // A cache must not keep the refusal past an unhide.
        expect(response.headers.get("cache-control"), name).toBe("no-store");
        if (init.method !== "HEAD") {
          expect(((await response.json()) as { code: string }).code, name).toBe("not_found");
        }
      }
    }
    // The other version of the mod is untouched.
    const other = await fetchBoth("1.1.0");
    expect([other.site.status, other.lane.status]).toEqual([200, 200]);
    await other.site.arrayBuffer();
    await other.lane.arrayBuffer();
  });

  it("is withdrawn also when it was the mod's only visible version (its documents are gone)", async () => {
    await hideRelease(publisherOptions(project), "better-hud", "1.1.0");
    expect(existsSync(join(project.siteDir, "api/v1/mods/better-hud/versions.json"))).toBe(false);
    const { site, lane } = await fetchBoth("1.1.0");
    expect([site.status, lane.status]).toEqual([404, 404]);
    await unhideRelease(publisherOptions(project), "better-hud", "1.1.0");
  });

  it("comes back with the same bytes at the same URL after unhide", async () => {
    await unhideRelease(publisherOptions(project), "better-hud", "1.0.0");
    const sha = createHash("sha256").update(bytes.get("1.0.0")!).digest("hex");
    const { site, lane } = await fetchBoth("1.0.0");
    for (const response of [site, lane]) {
      expect(response.status).toBe(200);
      expect(response.headers.get("etag")).toBe(`"${sha}"`);
      expect(Buffer.from(await response.arrayBuffer()).equals(bytes.get("1.0.0")!)).toBe(true);
    }
  });

  it("never serves a file under downloads/mods/ that no versions document lists", async () => {
    for (const path of [
      "/downloads/mods/better-hud/1.0.0/other.zip",
      "/downloads/mods/better-hud/1.0.0",
      "/downloads/mods/better-hud/9.9.9/better-hud-9.9.9.zip",
      "/downloads/mods/Better-Hud/1.0.0/better-hud-1.0.0.zip",
    ]) {
      const response = await fetch(origin + path);
      expect([404, 308], path).toContain(response.status);
      if (response.status === 404) {
        expect(((await response.json()) as { code: string }).code, path).toBe("not_found");
      }
    }
  });
});
