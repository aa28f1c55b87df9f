import { createHash } from "node:crypto";
import { createReadStream, type Stats, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { EXTENSIONLESS_ROUTES } from "../contracts/urls.ts";
import { SvcError } from "../errors.ts";

const CONTENT_TYPES: Record<string, string> = {
  ".json": "application/json; charset=utf-8",
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
  ".zip": "application/zip",
  ".webmanifest": "application/manifest+json",
};
const COMPRESSIBLE = new Set([".json", ".html", ".css", ".js", ".svg", ".txt", ".md", ".webmanifest"]);
/** Files up to this size are kept in memory with their hash and gzip form. */
const MEMORY_LIMIT = 4 * 1024 * 1024;
/** 1 MiB reads: the 64 KiB default reached only 60% of nginx's throughput on these machines. */
export const STREAM_CHUNK = 1024 * 1024;

interface CachedFile {
  key: string;
  body?: Buffer;
  gzip?: Buffer;
  etag: string;
}

function extension(path: string): string {
  const dot = path.lastIndexOf(".");
  return dot > path.lastIndexOf("/") ? path.slice(dot).toLowerCase() : "";
}

/**
 * Decodes a request path once and maps it under the site root. Refused (null): anything that is
 * not a plain relative path, dot-segments and hidden names (so the transaction folder and dotfiles
 * are never served), backslashes, NUL and invalid escapes.
 */
export function resolveSitePath(pathname: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return null;
  }
  if (!decoded.startsWith("/") || decoded.includes("\0") || decoded.includes("\\")) return null;
  for (const route of EXTENSIONLESS_ROUTES) {
    const m = route.pattern.exec(decoded);
    if (m) return route.target(m).slice(1);
  }
  const segments = decoded.split("/").slice(1);
  if (segments.some((s, i) => (s === "" && i !== segments.length - 1) || s.startsWith("."))) return null;
  const rel = segments.join("/");
  return rel === "" || rel.endsWith("/") ? `${rel}index.html` : rel;
}

export class StaticSite {
  readonly root: string;
  private readonly cache = new Map<string, CachedFile>();

  constructor(root: string) {
    this.root = root;
  }

  private stat(rel: string): Stats | null {
    try {
      const stats = statSync(join(this.root, rel));
      return stats.isFile() ? stats : null;
    } catch {
      return null;
    }
  }

  private async load(rel: string, stats: Stats): Promise<CachedFile> {
    const key = `${stats.size}:${stats.mtimeMs}:${stats.ino}`;
    const hit = this.cache.get(rel);
    if (hit && hit.key === key) return hit;
    const hash = createHash("sha256");
    const chunks: Buffer[] = [];
    const keep = stats.size <= MEMORY_LIMIT;
    for await (const chunk of createReadStream(join(this.root, rel), { highWaterMark: STREAM_CHUNK })) {
      hash.update(chunk as Buffer);
      if (keep) chunks.push(chunk as Buffer);
    }
    const entry: CachedFile = { key, etag: `"${hash.digest("hex")}"` };
    if (keep) {
      entry.body = Buffer.concat(chunks);
      if (COMPRESSIBLE.has(extension(rel)) && entry.body.length > 512) entry.gzip = gzipSync(entry.body);
    }
    this.cache.set(rel, entry);
    return entry;
  }

  /** Serves GET/HEAD for a site path; throws not_found when there is no such file. */
  async serve(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    const rel = resolveSitePath(pathname);
    let stats = rel ? this.stat(rel) : null;
    if (rel && !stats && !extension(rel)) {
      // /mods/x -> /mods/x/ for directory pages.
      const dirIndex = `${rel}/index.html`;
      if (this.stat(dirIndex)) {
        res.writeHead(308, { location: `${pathname}/` });
        res.end();
        return;
      }
    }
    if (!rel || !stats) throw new SvcError("not_found", `no resource at ${pathname}`);
    const file = await this.load(rel, stats);
    // The file may have changed while it was hashed; re-stat and serve what was hashed only if unchanged.
    stats = this.stat(rel) ?? stats;
    const ext = extension(rel);
    const immutable = rel.startsWith("downloads/");
    const acceptsGzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    const useGzip = Boolean(file.gzip && acceptsGzip);
    const etag = useGzip ? `${file.etag.slice(0, -1)}-gzip"` : file.etag;
    const headers: Record<string, string | number> = {
      "content-type": CONTENT_TYPES[ext] ?? "application/octet-stream",
      etag,
      "cache-control": immutable
        ? "public, max-age=31536000, immutable"
        : "public, max-age=0, must-revalidate",
      "x-content-type-options": "nosniff",
      "accept-ranges": useGzip || file.gzip ? "none" : "bytes",
    };
    if (file.gzip) headers.vary = "Accept-Encoding";
    if (ext === ".json") headers["access-control-allow-origin"] = "*";
    const inm = req.headers["if-none-match"];
    if (inm?.split(",").some((tag) => tag.trim() === etag || tag.trim() === `W/${etag}`)) {
      res.writeHead(304, {
        etag,
        "cache-control": headers["cache-control"] as string,
        ...(file.gzip ? { vary: "Accept-Encoding" } : {}),
      });
      res.end();
      return;
    }
    if (useGzip) {
      headers["content-encoding"] = "gzip";
      headers["content-length"] = file.gzip!.length;
      res.writeHead(200, headers);
      res.end(req.method === "HEAD" ? undefined : file.gzip);
      return;
    }
    const range = file.gzip ? null : parseRange(req.headers.range, stats.size);
    if (range === "unsatisfiable") {
      res.writeHead(416, { "content-range": `bytes */${stats.size}`, "content-type": "application/json" });
      res.end(
        JSON.stringify({ code: "range_not_satisfiable", message: `range outside 0-${stats.size - 1}` }),
      );
      return;
    }
    if (range) {
      headers["content-range"] = `bytes ${range.start}-${range.end}/${stats.size}`;
      headers["content-length"] = range.end - range.start + 1;
      res.writeHead(206, headers);
    } else {
      headers["content-length"] = stats.size;
      res.writeHead(200, headers);
    }
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    if (file.body && file.body.length === stats.size) {
      res.end(range ? file.body.subarray(range.start, range.end + 1) : file.body);
      return;
    }
    await streamFile(res, join(this.root, rel), range ?? undefined);
  }
}

export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | "unsatisfiable" | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === "" && m[2] === "")) return null; // Malformed or multi-range: serve the whole file.
  let start: number;
  let end: number;
  if (m[1] === "") {
    const suffix = Number(m[2]);
    if (suffix === 0) return "unsatisfiable";
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === "" ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return "unsatisfiable";
  return { start, end };
}

export function streamFile(
  res: ServerResponse,
  path: string,
  range?: { start: number; end: number },
): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = createReadStream(path, { highWaterMark: STREAM_CHUNK, ...(range ?? {}) });
    stream.on("error", (error) => {
      res.destroy(error);
      reject(error);
    });
    res.on("close", () => {
      stream.destroy();
      resolve();
    });
    stream.pipe(res);
  });
}
