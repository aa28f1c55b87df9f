import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ModVersionsDocument, VersionRecord } from "../../src/contracts/catalog.ts";
import { parsePortalConfig } from "../../src/contracts/portal-config.ts";
import { FRESH_MS, MISS_RECHECK_MS, PagesVersions } from "../../src/http/pages-versions.ts";
import { listen } from "../../src/http/server.ts";
import { createVercelHandler, resetVercelContext } from "../../src/http/vercel.ts";
import { repoConfig } from "../support/temp-project.ts";
import { client, type Call, type Harness, startHarness } from "../support/http-harness.ts";

/**
 * The API-key lane as the Vercel router serves it: no site folder, each mod's versions.json read
 * from a GitHub Pages site (a loopback server here, with ETags and 304s as Pages sends them) and
 * kept FRESH_MS; a version Pages starts serving is downloadable without a redeploy, a withdrawn one
 * stops, and Pages failing is a 502 pages_unavailable, never an old document past its window.
 */

interface PagesFile {
  body: string;
  etag: string;
  lastModified: string;
}

/** What the fake Pages site does with the next requests. */
type PagesMode = "serve" | "error" | "html" | "hang" | "huge";

class FakePages {
  readonly files = new Map<string, PagesFile>();
  readonly requests: Array<{ path: string; ifNoneMatch: string | null; ifModifiedSince: string | null }> = [];
  mode: PagesMode = "serve";
  private server!: Server;
  origin = "";
  private revision = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => this.answer(req, res));
    this.origin = `http://127.0.0.1:${(await listen(this.server, 0, "127.0.0.1")).port}`;
  }

  put(path: string, document: unknown): void {
    const body = JSON.stringify(document);
    this.revision++;
    this.files.set(path, {
      body,
      etag: `"${createHash("sha1").update(body).digest("hex")}"`,
      lastModified: new Date(Date.UTC(2026, 10, 1, 0, this.revision)).toUTCString(),
    });
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    const path = req.url ?? "/";
    const ifNoneMatch = (req.headers["if-none-match"] as string | undefined) ?? null;
    this.requests.push({
      path,
      ifNoneMatch,
      ifModifiedSince: (req.headers["if-modified-since"] as string | undefined) ?? null,
    });
    if (this.mode === "hang") return;
    if (this.mode === "error") {
      res.writeHead(503, { "content-type": "text/html" }).end("<h1>Service unavailable</h1>");
      return;
    }
    if (this.mode === "html") {
      res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><p>Site not found</p>");
      return;
    }
    if (this.mode === "huge") {
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      let sent = 0;
      const pump = () => {
        while (sent < 20 && res.write(chunk)) sent++;
        if (sent >= 20) res.end();
        else res.once("drain", pump);
      };
      res.on("error", () => {});
      pump();
      return;
    }
    const file = this.files.get(path);
    if (!file) {
      res.writeHead(404, { "content-type": "text/html" }).end("<h1>404</h1>");
      return;
    }
    const validators = {
      etag: file.etag,
      "last-modified": file.lastModified,
      "cache-control": "max-age=600",
    };
    if (ifNoneMatch === file.etag) {
      res.writeHead(304, validators).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json; charset=utf-8", ...validators }).end(file.body);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const VERSIONS = "/api/v1/mods/better-hud/versions.json";
const lane = (version: string, modId = "better-hud") =>
  `/api/v1/downloads/mods/${modId}/${version}/${modId}-${version}.zip`;

let h: Harness;
let pages: FakePages;
let published: ModVersionsDocument;
let apiKey: string;
let now = 0;
let call: Call;
let closeRouter: () => Promise<void>;

function versionsWith(records: VersionRecord[]): ModVersionsDocument {
  return { ...published, versions: records };
}

function record(version: string, overrides: Partial<VersionRecord> = {}): VersionRecord {
  const base = published.versions[0]!;
  const fileName = `better-hud-${version}.zip`;
  return {
    ...base,
    version,
    fileName,
    packageUrl: `https://github.com/ada/better-hud/releases/download/v${version}/${fileName}`,
    sha256: createHash("sha256").update(version).digest("hex"),
    ...overrides,
  };
}

const get = (path: string) => call("GET", path, { headers: { authorization: `Bearer ${apiKey}` } });

beforeAll(async () => {
  h = await startHarness();
  pages = new FakePages();
  await pages.start();
  // The portal's own generated document: what Pages serves for this mod after the same build.
  published = JSON.parse(
    readFileSync(join(h.root, "site", "api", "v1", "mods", "better-hud", "versions.json"), "utf8"),
  ) as ModVersionsDocument;
  const { accountId } = await h.app.accounts!.createAccount({
    email: "manager@example.com",
    displayName: "Manager",
    role: "player",
  });
  apiKey = (await h.app.accounts!.createApiKey(accountId, "fast lane")).apiKey;
  // The Vercel router over the harness's database, as api/_entries/router.ts builds it from the environment.
  const router = createVercelHandler({}, async () => h.app);
  const server = createServer((req, res) => void router(req, res));
  const origin = `http://127.0.0.1:${(await listen(server, 0, "127.0.0.1")).port}`;
  call = client(origin);
  closeRouter = () => new Promise((resolve) => server.close(() => resolve()));
});

afterAll(async () => {
  resetVercelContext();
  await closeRouter?.();
  await pages?.close();
  await h?.close();
});

beforeEach(() => {
  now = 1_000_000;
  pages.mode = "serve";
  pages.requests.length = 0;
  pages.put(VERSIONS, published);
  h.app.pagesVersions = new PagesVersions({ pagesUrl: pages.origin, clock: () => now, timeoutMs: 500 });
});

afterEach(() => {
  delete h.app.pagesVersions;
});

describe("the API-key lane on Vercel reads versions.json from Pages", () => {
  it("redirects a listed version to its bytes: a portal-hosted package on Pages, any other to its packageUrl", async () => {
    const hosted = published.versions.find((v) => v.version === "1.0.0")!;
    const r = await get(lane("1.0.0"));
    expect(r.status, r.text).toBe(302);
    expect(r.headers.get("location")).toBe(
      `${pages.origin}/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip`,
    );
    expect(r.headers.get("etag")).toBe(`"${hosted.sha256}"`);
    expect(r.headers.get("x-svc-sha256")).toBe(hosted.sha256);

    pages.put(VERSIONS, versionsWith([...published.versions, record("1.5.0")]));
    now += FRESH_MS;
    const far = await get(lane("1.5.0"));
    expect(far.status, far.text).toBe(302);
    expect(far.headers.get("location")).toBe(record("1.5.0").packageUrl);
    expect(pages.requests.map((q) => q.path)).toEqual([VERSIONS, VERSIONS]);
  });

  it("answers 404 for an unknown version, a hidden one and a mod Pages does not have", async () => {
    expect((await get(lane("9.9.9"))).json.code).toBe("not_found");
    // 0.9.0 is hidden: absent from the published document although its bytes exist.
    expect((await get(lane("0.9.0"))).status).toBe(404);
    const unknown = await get(lane("1.0.0", "no-such-mod"));
    expect(unknown.status, unknown.text).toBe(404);
    expect(unknown.json.code).toBe("not_found");
  });

  it("serves a version Pages starts listing within the miss window, with no redeploy", async () => {
    expect((await get(lane("1.0.0"))).status).toBe(302);
    pages.put(VERSIONS, versionsWith([...published.versions, record("2.0.0")]));
    // Kept document, too young to ask again: the new version is not known yet.
    now += MISS_RECHECK_MS - 1;
    expect((await get(lane("2.0.0"))).status).toBe(404);
    expect(pages.requests).toHaveLength(1);
    now += 1;
    const r = await get(lane("2.0.0"));
    expect(r.status, r.text).toBe(302);
    expect(r.headers.get("x-svc-sha256")).toBe(record("2.0.0").sha256);
    // The re-read was conditional, on the validators of the first answer.
    expect(pages.requests).toHaveLength(2);
    expect(pages.requests[1]!.ifNoneMatch).toMatch(/^"[0-9a-f]{40}"$/);
    expect(pages.requests[1]!.ifModifiedSince).toBeTruthy();
  });

  it("asks Pages once per window, revalidates with a 304 after it, and stops serving a withdrawn version", async () => {
    for (let i = 0; i < 5; i++) expect((await get(lane("1.0.0"))).status).toBe(302);
    expect(pages.requests).toHaveLength(1);
    now += FRESH_MS;
    expect((await get(lane("1.0.0"))).status).toBe(302);
    expect(pages.requests).toHaveLength(2);
    expect(pages.requests[1]!.ifNoneMatch).toBe(pages.files.get(VERSIONS)!.etag);
    // Hidden on Pages (the publisher drops it from versions.json): refused once the window ends.
    pages.put(VERSIONS, versionsWith(published.versions.filter((v) => v.version !== "1.0.0")));
    now += FRESH_MS - 1;
    expect((await get(lane("1.0.0"))).status).toBe(302);
    now += 1;
    expect((await get(lane("1.0.0"))).status).toBe(404);
  });

  it("reads Pages once for a burst of requests", async () => {
    const answers = await Promise.all(Array.from({ length: 10 }, () => get(lane("1.0.0"))));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 302));
    expect(pages.requests).toHaveLength(1);
  });

  it.each([
    ["answers 5xx", "error" as const, /HTTP 503/],
    ["serves an HTML page", "html" as const, /not JSON/],
    ["does not answer", "hang" as const, /no answer within 500 ms/],
    ["sends a document larger than the cap", "huge" as const, /larger than/],
  ])(
    "answers 502 pages_unavailable when Pages %s, and not from an expired document",
    async (_what, mode, message) => {
      // A short deadline only where the deadline is the point: 20 MiB may take longer on a busy machine.
      h.app.pagesVersions = new PagesVersions({
        pagesUrl: pages.origin,
        clock: () => now,
        timeoutMs: mode === "hang" ? 500 : 10_000,
      });
      expect((await get(lane("1.0.0"))).status).toBe(302);
      pages.mode = mode;
      // Within the window nothing is asked: the kept document answers.
      now += FRESH_MS - 1;
      expect((await get(lane("1.0.0"))).status).toBe(302);
      now += 1;
      const r = await get(lane("1.0.0"));
      expect(r.status, r.text).toBe(502);
      expect(r.json.code).toBe("pages_unavailable");
      expect(r.json.message).toMatch(message);
      expect(r.json.details.url).toBe(`${pages.origin}${VERSIONS}`);
      pages.mode = "serve";
      expect((await get(lane("1.0.0"))).status).toBe(302);
    },
  );

  it("answers 502 when the Pages site is down, and keeps the kept answer for a miss inside the window", async () => {
    expect((await get(lane("1.0.0"))).status).toBe(302);
    const gone = new PagesVersions({ pagesUrl: "http://127.0.0.1:9", clock: () => now, timeoutMs: 500 });
    h.app.pagesVersions = gone;
    const down = await get(lane("1.0.0"));
    expect(down.status, down.text).toBe(502);
    expect(down.json.code).toBe("pages_unavailable");
    // A miss past MISS_RECHECK_MS asks again; Pages failing then leaves the fresh document's 404.
    h.app.pagesVersions = new PagesVersions({ pagesUrl: pages.origin, clock: () => now, timeoutMs: 500 });
    expect((await get(lane("1.0.0"))).status).toBe(302);
    pages.mode = "error";
    now += MISS_RECHECK_MS;
    expect((await get(lane("3.0.0"))).status).toBe(404);
    expect(pages.requests).toHaveLength(3);
  });

  it("fails closed naming deployment.pagesUrl when the function has no Pages site to read", async () => {
    h.app.pagesVersions = new PagesVersions({ pagesUrl: null });
    const r = await get(lane("1.0.0"));
    expect(r.status, r.text).toBe(500);
    expect(r.json.code).toBe("config_invalid");
    expect(r.json.message).toMatch(/deployment\.pagesUrl/);
  });

  it("still refuses a missing or revoked API key before Pages is asked", async () => {
    const r = await call("GET", lane("1.0.0"));
    expect(r.status).toBe(401);
    expect(pages.requests).toHaveLength(0);
  });
});

describe("deployment.pagesUrl in portal.config.json", () => {
  const withPages = (pagesUrl: unknown) => {
    const config = repoConfig() as unknown as { deployment: Record<string, unknown> };
    config.deployment.pagesUrl = pagesUrl;
    return config;
  };

  it("takes null, an https URL, or http on loopback, and refuses plain http elsewhere, naming the field", () => {
    for (const ok of [null, "https://octo-org.github.io/mod-portal", "http://127.0.0.1:4000"]) {
      expect(parsePortalConfig(withPages(ok)).deployment.pagesUrl, String(ok)).toBe(ok);
    }
    for (const bad of ["http://octo-org.github.io/mod-portal", "https://octo-org.github.io/mod-portal/"]) {
      expect(() => parsePortalConfig(withPages(bad)), bad).toThrow(/deployment\.pagesUrl/);
    }
  });
});
