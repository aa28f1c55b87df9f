import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, renameSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createServer, request, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AppContext } from "../../src/http/context.ts";
import { SECURITY_HEADERS } from "../../src/http/respond.ts";
import { createPortalServer, createRequestListener, listen } from "../../src/http/server.ts";
import { StaticSite } from "../../src/http/static-site.ts";

/**
 * StaticSite.answerFromMemory: the shortcut the local server takes for a document held in memory
 * must answer exactly as serve() does, and must never answer from memory once the file changed.
 * The site's answerFromMemory is wrapped to record whether each request took the shortcut.
 */

let root: string;
let server: Server;
let port: number;
let shortcut: boolean[] = [];

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  fromMemory: boolean | undefined;
}

function get(path: string, headers: Record<string, string> = {}, method = "GET"): Promise<Answer> {
  shortcut = [];
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        const { date: _date, connection: _connection, ...rest } = res.headers;
        resolve({
          status: res.statusCode!,
          headers: rest,
          body: Buffer.concat(chunks),
          fromMemory: shortcut[0],
        });
      });
    });
    req.on("error", reject);
    req.end();
  });
}

const sha = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const versionsText = JSON.stringify({
  versions: Array.from({ length: 200 }, (_, i) => ({ version: `1.${i}.0` })),
});

function write(rel: string, data: string | Buffer): void {
  mkdirSync(join(root, rel, ".."), { recursive: true });
  writeFileSync(join(root, rel), data);
}

function expectSecurityHeaders(answer: Answer): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(answer.headers[name]).toBe(value);
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "svc-memory-answers-"));
  const site = new StaticSite(root);
  const answer = site.answerFromMemory.bind(site);
  site.answerFromMemory = (req, res, pathname) => {
    const answered = answer(req, res, pathname);
    shortcut.push(answered);
    return answered;
  };
  const app = { siteDir: root, log: () => {} } as unknown as AppContext;
  server = createServer(createRequestListener(app, site));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  port = typeof address === "object" && address ? address.port : 0;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  rmSync(root, { recursive: true, force: true });
});

beforeEach(() => {
  write("api/v1/mods/m/versions.json", versionsText);
  write("notes.txt", "short notes\n");
  write("pixel.png", Buffer.alloc(2000, 3));
});

describe("answers from memory", () => {
  it.each<[string, Record<string, string>, string]>([
    ["/api/v1/mods/m/versions.json", {}, "GET"],
    ["/api/v1/mods/m/versions.json", { "accept-encoding": "gzip, br" }, "GET"],
    ["/api/v1/mods/m/versions.json", {}, "HEAD"],
    ["/api/v1/mods/m/versions.json", { "accept-encoding": "gzip" }, "HEAD"],
    ["/api/v1/mods/m/versions", { "accept-encoding": "gzip" }, "GET"],
    ["/notes.txt", { "accept-encoding": "gzip" }, "GET"],
    ["/pixel.png", {}, "GET"],
  ])("%s %j %s: the same status, headers and bytes as serve()", async (path, headers, method) => {
    // A fresh file, so that the first answer is serve()'s.
    const rel = path.endsWith("versions") ? "api/v1/mods/m/versions.json" : path.slice(1);
    write(`${rel}.new`, path.endsWith(".png") ? Buffer.alloc(2000, 4) : `${versionsText} `);
    renameSync(join(root, `${rel}.new`), join(root, rel));
    const first = await get(path, headers, method);
    const second = await get(path, headers, method);
    expect(first.fromMemory).toBe(false);
    expect(second.fromMemory).toBe(true);
    expect(first.status).toBe(200);
    expect(second).toEqual({ ...first, fromMemory: true });
    expectSecurityHeaders(second);
    if (method === "HEAD") expect(second.body.length).toBe(0);
    if (path.startsWith("/api/")) {
      expect(second.headers["access-control-allow-origin"]).toBe("*");
      expect(second.headers.vary).toBe("Accept-Encoding");
      if (headers["accept-encoding"]) {
        expect(second.headers["content-encoding"]).toBe("gzip");
        if (method === "GET") expect(gunzipSync(second.body).toString()).toBe(`${versionsText} `);
      } else if (method === "GET") expect(second.body.toString()).toBe(`${versionsText} `);
    }
  });

  it.each([
    [{}, (text: string) => `"${sha(text)}"`],
    [{}, (text: string) => `W/"${sha(text)}"`],
    [{ "accept-encoding": "gzip" }, (text: string) => `"x", "${sha(text)}-gzip"`],
  ])("answers If-None-Match %j with serve()'s 304", async (headers, tag) => {
    const text = `${versionsText}\n`;
    write("api/v1/mods/m/versions.json", text);
    const first = await get("/api/v1/mods/m/versions.json", { ...headers, "if-none-match": tag(text) });
    const second = await get("/api/v1/mods/m/versions.json", { ...headers, "if-none-match": tag(text) });
    expect([first.fromMemory, second.fromMemory]).toEqual([false, true]);
    expect(first.status).toBe(304);
    expect(second).toEqual({ ...first, fromMemory: true });
    expectSecurityHeaders(second);
    // A tag of another version gets the document.
    const other = await get("/api/v1/mods/m/versions.json", { ...headers, "if-none-match": `"${sha("x")}"` });
    expect([other.status, other.fromMemory]).toEqual([200, true]);
  });

  it("leaves a Range on a file without a gzip form to serve(), and ignores it on one with a gzip form, as serve() does", async () => {
    await get("/pixel.png");
    const range = await get("/pixel.png", { range: "bytes=10-19" });
    expect([range.status, range.fromMemory, range.body.length]).toEqual([206, false, 10]);
    expect(range.headers["content-range"]).toBe("bytes 10-19/2000");
    expectSecurityHeaders(range);
    await get("/api/v1/mods/m/versions.json");
    const whole = await get("/api/v1/mods/m/versions.json", { range: "bytes=10-19" });
    expect([whole.status, whole.fromMemory, whole.body.toString()]).toEqual([200, true, versionsText]);
  });
});

describe("freshness: one stat per request decides", () => {
  const path = "/api/v1/mods/m/versions.json";
  const file = () => join(root, "api/v1/mods/m/versions.json");

  it("serves a document replaced by rename with its new bytes and ETag at once", async () => {
    await get(path);
    const old = await get(path);
    expect(old.fromMemory).toBe(true);
    write("api/v1/mods/m/versions.json.new", '{"versions":[]}');
    renameSync(`${file()}.new`, file());
    const renamed = await get(path);
    expect(renamed.fromMemory).toBe(false);
    expect(renamed.body.toString()).toBe('{"versions":[]}');
    expect(renamed.headers.etag).toBe(`"${sha('{"versions":[]}')}"`);
    const again = await get(path);
    expect([again.fromMemory, again.body.toString()]).toEqual([true, '{"versions":[]}']);
  });

  it("serves a document rewritten in place with the same size and a new mtime with its new bytes", async () => {
    await get(path);
    expect((await get(path)).fromMemory).toBe(true);
    const same = versionsText.replace("1.0.0", "9.0.0");
    writeFileSync(file(), same);
    utimesSync(file(), new Date(), new Date(Date.now() + 5000));
    const rewritten = await get(path);
    expect([rewritten.fromMemory, rewritten.body.toString()]).toEqual([false, same]);
    expect(rewritten.headers.etag).toBe(`"${sha(same)}"`);
  });

  it("answers 404 with the security headers once the document is removed, and serves it again when it returns", async () => {
    await get(path);
    expect((await get(path)).fromMemory).toBe(true);
    rmSync(file());
    const gone = await get(path);
    expect([gone.status, gone.fromMemory]).toEqual([404, false]);
    expect(JSON.parse(gone.body.toString()).code).toBe("not_found");
    expectSecurityHeaders(gone);
    write("api/v1/mods/m/versions.json", versionsText);
    expect((await get(path)).body.toString()).toBe(versionsText);
    expect((await get(path)).fromMemory).toBe(true);
  });
});

describe("the cache of resolved site paths", () => {
  it("still resolves every path the same after it has started over, and keeps refusing hidden names", async () => {
    for (let i = 0; i < 1100; i++) {
      const miss = await get(`/nothing-${i}.json`);
      expect(miss.status).toBe(404);
    }
    await get("/api/v1/mods/m/versions");
    const alias = await get("/api/v1/mods/m/versions");
    expect([alias.status, alias.fromMemory, alias.body.toString()]).toEqual([200, true, versionsText]);
    write(".secret", "never served");
    for (let i = 0; i < 2; i++) {
      const hidden = await get("/.secret");
      expect([hidden.status, hidden.fromMemory]).toEqual([404, false]);
      expectSecurityHeaders(hidden);
    }
  });

  it("never takes the shortcut for a guide path or a method other than GET and HEAD", async () => {
    write("docs/x.md", "# a site file under docs/\n");
    await get("/docs/x.md");
    const doc = await get("/docs/x.md");
    expect([doc.status, doc.fromMemory]).toEqual([200, undefined]);
    const post = await get("/api/v1/mods/m/versions.json", {}, "POST");
    expect([post.status, post.fromMemory]).toEqual([405, undefined]);
    expect(post.headers.allow).toBe("GET, HEAD");
    expectSecurityHeaders(post);
  });
});

describe("extra response headers (svc serve --workers names its process)", () => {
  it("go with answers from memory and with every other answer, errors included", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-memory-extra-"));
    writeFileSync(join(dir, "doc.json"), versionsText);
    const app = { siteDir: dir, log: () => {} } as unknown as AppContext;
    const extra = createPortalServer(app, {}, { "x-svc-worker": "4242" });
    const bound = await listen(extra, 0, "127.0.0.1");
    const previous = port;
    port = bound.port;
    try {
      const answers = [
        await get("/doc.json"),
        await get("/doc.json"),
        await get("/doc.json", { "if-none-match": `"${sha(versionsText)}"` }),
        await get("/missing.json"),
        await get("/doc.json", {}, "DELETE"),
        await get("/api/v1/backend/health", {}, "DELETE"),
      ];
      expect(answers.map((a) => a.status)).toEqual([200, 200, 304, 404, 405, 405]);
      for (const answer of answers) {
        expect(answer.headers["x-svc-worker"]).toBe("4242");
        expectSecurityHeaders(answer);
      }
      expect(answers[1]!.body.toString()).toBe(versionsText);
    } finally {
      port = previous;
      await new Promise((resolve) => extra.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
