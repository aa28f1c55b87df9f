import { createHash } from "node:crypto";
import { closeSync, createReadStream, openSync, read, readSync, type Stats, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { EXTENSIONLESS_ROUTES } from "../contracts/urls.ts";
import { SvcError } from "../errors.ts";
import { artifactSegments, type PublishedArtifacts, publishedArtifactsFor } from "./published-artifacts.ts";
import { SECURITY_HEADERS } from "./respond.ts";

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
/**
 * Ranges up to this size are read with one synchronous pread and sent in one write: from the page
 * cache that costs microseconds, where a read stream costs three thread-pool round trips (open,
 * read, close) and dominated the latency of small Range requests under load.
 */
const SMALL_READ_BYTES = 64 * 1024;
/** Free read buffers kept for reuse (fresh 1 MiB buffers cost a page fault per 4 KiB on first touch). */
const BUFFER_POOL_MAX = 16;
/** A synchronous 1 MiB read from the page cache takes well under a millisecond; slower went to the disk. */
const SLOW_SYNC_READ_NS = 2_000_000n;
/** Synchronous chunks a download may write in one turn of the event loop before it lets others run. */
const SYNC_CHUNKS_PER_TURN = 4;

interface CachedFile {
  key: string;
  body?: Buffer;
  gzip?: Buffer;
  etag: string;
  /** Set when the whole file is in memory: what answerFromMemory writes. */
  answers?: MemoryAnswers;
}

/**
 * The answers of one file held in memory, built once when it is loaded: flat header lists for
 * writeHead (name, value, name, value...), security headers first, then the headers serve() would
 * send, in its order. A flat list with no header set before it is Node's cheapest writeHead: no
 * per-request header object, no setHeader calls.
 */
interface MemoryAnswers {
  /** The stat the entry was loaded under: a request is answered from memory only while it is unchanged. */
  size: number;
  mtimeMs: number;
  ino: number;
  identity200: string[];
  identity304: string[];
  /** Present when the file has a gzip form. */
  gzip: { etag: string; ok200: string[]; notModified304: string[] } | null;
}

/** Pathnames longer than this are resolved every time and never held in memory. */
const ROUTE_CACHE_PATHNAME_CHARS = 512;
const ROUTE_CACHE_ENTRIES = 1024;
const GZIP_TOKEN = /\bgzip\b/;

function cacheControlFor(rel: string): string {
  return rel.startsWith("downloads/")
    ? "public, max-age=31536000, immutable"
    : "public, max-age=0, must-revalidate";
}

/** The header lists of serve()'s answers for a file wholly in memory (see MemoryAnswers). */
function memoryAnswers(
  rel: string,
  stats: Stats,
  file: CachedFile,
  body: Buffer,
  responseHeaders: readonly string[],
): MemoryAnswers {
  const ext = extension(rel);
  const cacheControl = cacheControlFor(rel);
  const vary = file.gzip ? ["vary", "Accept-Encoding"] : [];
  const ok200 = (etag: string, encoded: Buffer | null): string[] => [
    ...responseHeaders,
    "content-type",
    CONTENT_TYPES[ext] ?? "application/octet-stream",
    "etag",
    etag,
    "cache-control",
    cacheControl,
    "accept-ranges",
    file.gzip ? "none" : "bytes",
    ...vary,
    ...(ext === ".json" ? ["access-control-allow-origin", "*"] : []),
    ...(encoded ? ["content-encoding", "gzip", "content-length", String(encoded.length)] : []),
    ...(encoded ? [] : ["content-length", String(body.length)]),
  ];
  const notModified304 = (etag: string): string[] => [
    ...responseHeaders,
    "etag",
    etag,
    "cache-control",
    cacheControl,
    ...vary,
  ];
  const gzipEtag = `${file.etag.slice(0, -1)}-gzip"`;
  return {
    size: stats.size,
    mtimeMs: stats.mtimeMs,
    ino: stats.ino,
    identity200: ok200(file.etag, null),
    identity304: notModified304(file.etag),
    gzip: file.gzip
      ? { etag: gzipEtag, ok200: ok200(gzipEtag, file.gzip), notModified304: notModified304(gzipEtag) }
      : null,
  };
}

/** statSync without an exception for a missing file (exceptions cost microseconds); null also for a non-file. */
function statFile(path: string): Stats | null {
  const stats = statSync(path, { throwIfNoEntry: false });
  return stats?.isFile() ? stats : null;
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
  /**
   * Request pathnames resolved to a site file (relative and absolute path), or null when
   * resolveSitePath refuses them or they are artifacts (never answered from memory). A pure
   * function of the pathname and the root, so nothing here can go stale; full, it starts over.
   */
  private readonly routes = new Map<string, { rel: string; path: string } | null>();
  private readonly artifacts: PublishedArtifacts;
  /** SECURITY_HEADERS and the extra headers, as name, value, name, value... */
  private readonly responseHeaders: readonly string[];

  /**
   * extraHeaders go with every answer from memory beside SECURITY_HEADERS (svc serve --workers:
   * x-svc-worker); setResponseHeaders sets the same on any other response. Passed here rather than
   * set before the site answers: a header set with setHeader turns Node's writeHead of a prepared
   * list into one removeHeader and one appendHeader per header.
   */
  constructor(
    root: string,
    artifacts: PublishedArtifacts = publishedArtifactsFor(root),
    extraHeaders: Readonly<Record<string, string>> = {},
  ) {
    this.root = root;
    this.artifacts = artifacts;
    this.responseHeaders = Object.entries({ ...SECURITY_HEADERS, ...extraHeaders }).flat();
  }

  /** Sets SECURITY_HEADERS and the extra headers with setHeader: for every answer not from memory. */
  setResponseHeaders(res: ServerResponse): void {
    const headers = this.responseHeaders;
    for (let i = 0; i < headers.length; i += 2) res.setHeader(headers[i]!, headers[i + 1]!);
  }

  private stat(rel: string): Stats | null {
    try {
      const stats = statSync(join(this.root, rel));
      return stats.isFile() ? stats : null;
    } catch {
      return null;
    }
  }

  private route(pathname: string): { rel: string; path: string } | null {
    let route = this.routes.get(pathname);
    if (route !== undefined) return route;
    const rel = resolveSitePath(pathname);
    route = rel === null || rel.startsWith("downloads/mods/") ? null : { rel, path: join(this.root, rel) };
    if (pathname.length <= ROUTE_CACHE_PATHNAME_CHARS) {
      if (this.routes.size >= ROUTE_CACHE_ENTRIES) this.routes.clear();
      this.routes.set(pathname, route);
    }
    return route;
  }

  /**
   * Answers GET/HEAD of a site file whose whole body is in memory, when the answer is a 200 of the
   * whole body (identity or gzip) or a 304, with exactly what serve() would send; false, having
   * written nothing, for anything else (not loaded yet, changed, a Range on a file without a gzip
   * form, an artifact, no such file), which serve() then answers. Freshness is serve()'s: one stat
   * per request, and the memory is used only while size, mtime and inode are those it was loaded
   * under, so a document replaced by rename is never answered from memory. Synchronous: no
   * promise, no await, no per-request header object.
   */
  answerFromMemory(req: IncomingMessage, res: ServerResponse, pathname: string): boolean {
    const route = this.route(pathname);
    if (route === null) return false;
    const file = this.cache.get(route.rel);
    const answers = file?.answers;
    if (answers === undefined) return false;
    let stats: Stats | null;
    try {
      stats = statFile(route.path);
    } catch {
      return false; // EACCES and the like: serve() decides.
    }
    if (
      stats === null ||
      stats.size !== answers.size ||
      stats.mtimeMs !== answers.mtimeMs ||
      stats.ino !== answers.ino
    ) {
      return false;
    }
    const headers = req.headers;
    const acceptEncoding = headers["accept-encoding"];
    const gzip =
      answers.gzip !== null && acceptEncoding !== undefined && GZIP_TOKEN.test(acceptEncoding)
        ? answers.gzip
        : null;
    const ifNoneMatch = headers["if-none-match"];
    if (ifNoneMatch !== undefined && etagMatches(ifNoneMatch, gzip ? gzip.etag : file!.etag)) {
      res.writeHead(304, gzip ? gzip.notModified304 : answers.identity304);
      res.end();
      return true;
    }
    // serve() honours Range only for a file without a gzip form.
    if (answers.gzip === null && headers.range !== undefined) return false;
    res.writeHead(200, gzip ? gzip.ok200 : answers.identity200);
    res.end(req.method === "HEAD" ? undefined : gzip ? file!.gzip : file!.body);
    return true;
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
      // Bytes read while the file changed under the stat are served by serve() only (it re-stats).
      if (entry.body.length === stats.size)
        entry.answers = memoryAnswers(rel, stats, entry, entry.body, this.responseHeaders);
    }
    this.cache.set(rel, entry);
    return entry;
  }

  /** Serves GET/HEAD for a site path; throws not_found when there is no such file. */
  async serve(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    const rel = resolveSitePath(pathname);
    if (rel?.startsWith("downloads/mods/")) {
      await this.serveArtifact(req, res, rel, pathname);
      return;
    }
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
    const known = this.cache.get(rel);
    const file = await this.load(rel, stats);
    // The file may have changed while it was hashed: then re-stat and serve what was hashed only if
    // unchanged. A cached answer was not read now (its key is this very stat), so one stat per
    // request is enough.
    if (file !== known) stats = this.stat(rel) ?? stats;
    const ext = extension(rel);
    const acceptsGzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    const useGzip = Boolean(file.gzip && acceptsGzip);
    const etag = useGzip ? `${file.etag.slice(0, -1)}-gzip"` : file.etag;
    const headers: Record<string, string | number> = {
      "content-type": CONTENT_TYPES[ext] ?? "application/octet-stream",
      etag,
      "cache-control": cacheControlFor(rel),
      "x-content-type-options": "nosniff",
      "accept-ranges": useGzip || file.gzip ? "none" : "bytes",
    };
    if (file.gzip) headers.vary = "Accept-Encoding";
    if (ext === ".json") headers["access-control-allow-origin"] = "*";
    if (etagMatches(req.headers["if-none-match"], etag)) {
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
      res.setHeader("content-range", `bytes */${stats.size}`);
      throw new SvcError("range_not_satisfiable", `range outside 0-${stats.size - 1}`);
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
    await streamFile(res, join(this.root, rel), range ?? { start: 0, end: stats.size - 1 });
  }

  /**
   * A mod artifact is public only while its version is download-enabled in the mod's versions
   * document (published or superseded): a hidden version answers 404 like one never published,
   * with no-store so that unhide is seen at once. The ETag is the catalog's sha256, as on the
   * API-key lane, so the file is never hashed on the request path.
   */
  private async serveArtifact(
    req: IncomingMessage,
    res: ServerResponse,
    rel: string,
    pathname: string,
  ): Promise<void> {
    const key = artifactSegments(rel);
    const record = key ? this.artifacts.lookup(key.modId, key.version, key.fileName) : null;
    const path = join(this.root, rel);
    const file = key && record ? this.artifacts.descriptor(key.modId, path) : null;
    if (!record || !file) throw new SvcError("not_found", `no published artifact at ${pathname}`);
    if (file.size !== record.packageSizeBytes) {
      throw new Error(
        `artifact ${rel} is ${file.size} bytes on disk but ${record.packageSizeBytes} in the catalog`,
      );
    }
    await sendFile(req, res, {
      path,
      fd: file.fd,
      size: file.size,
      etag: `"${record.sha256}"`,
      headers: {
        "content-type": CONTENT_TYPES[extension(rel)] ?? "application/octet-stream",
        "cache-control": "public, max-age=31536000, immutable",
        "x-content-type-options": "nosniff",
        "x-svc-sha256": record.sha256,
      },
    });
  }
}

function etagMatches(header: string | undefined, etag: string): boolean {
  return Boolean(header?.split(",").some((tag) => tag.trim() === etag || tag.trim() === `W/${etag}`));
}

export interface FileToSend {
  path: string;
  /** An open descriptor of path for small synchronous reads (saves an open and a close). */
  fd?: number;
  size: number;
  /** Strong validator, quoted. */
  etag: string;
  /** Content-Type, Cache-Control and the like; length, range and validator headers are added here. */
  headers: Record<string, string | number>;
}

/** Conditional GET, If-Range, a single byte range, HEAD, then the bytes: the download answer of both lanes. */
export async function sendFile(req: IncomingMessage, res: ServerResponse, file: FileToSend): Promise<void> {
  const { etag, size } = file;
  if (etagMatches(req.headers["if-none-match"], etag)) {
    const kept: Record<string, string | number> = { etag };
    for (const name of ["cache-control", "x-content-type-options", "x-svc-sha256"]) {
      if (file.headers[name] !== undefined) kept[name] = file.headers[name]!;
    }
    res.writeHead(304, kept);
    res.end();
    return;
  }
  const ifRange = req.headers["if-range"];
  const range = ifRange && ifRange !== etag ? null : parseRange(req.headers.range, size);
  if (range === "unsatisfiable") {
    res.setHeader("content-range", `bytes */${size}`);
    throw new SvcError("range_not_satisfiable", `range outside 0-${size - 1}`);
  }
  // Object.assign, not a spread: the spread with these names took about 10 µs per request here.
  const headers: Record<string, string | number> = Object.assign({}, file.headers);
  headers.etag = etag;
  headers["accept-ranges"] = "bytes";
  if (range) {
    headers["content-range"] = `bytes ${range.start}-${range.end}/${size}`;
    headers["content-length"] = range.end - range.start + 1;
    res.writeHead(206, headers);
  } else {
    headers["content-length"] = size;
    res.writeHead(200, headers);
  }
  if (req.method === "HEAD") {
    res.end();
    return;
  }
  await streamFile(res, file.path, range ?? { start: 0, end: size - 1 }, file.fd);
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

const bufferPool: Buffer[] = [];

/**
 * Small range bodies are carved out of slabs of this size; larger ones than SLAB_SLICE_MAX get
 * their own buffer (their read costs more than the allocation). A slice still queued on a socket
 * keeps its whole slab alive: this bounds that to 32 times a 4 KiB body, and the kernel takes a
 * small body at once unless the client has stopped reading megabytes ago.
 */
const SMALL_READ_SLAB = 128 * 1024;
const SLAB_SLICE_MAX = 16 * 1024;
let smallReadSlab = Buffer.allocUnsafeSlow(0);
let smallReadOffset = 0;

/**
 * A buffer for one small range body. Buffer.allocUnsafe pools only below 4 KiB, and a fresh
 * ArrayBuffer per 4 KiB range cost about 2.5 µs here, so bodies are cut from a shared slab in the
 * manner of Node's own pool: a slice is never handed out twice (the socket may still hold it), and
 * a used-up slab is left to the garbage collector once its last slice has been written.
 */
function smallReadBuffer(size: number): Buffer {
  if (size > SLAB_SLICE_MAX) return Buffer.allocUnsafeSlow(size);
  if (smallReadOffset + size > smallReadSlab.length) {
    smallReadSlab = Buffer.allocUnsafeSlow(SMALL_READ_SLAB);
    smallReadOffset = 0;
  }
  const buffer = smallReadSlab.subarray(smallReadOffset, smallReadOffset + size);
  // 8-byte alignment, as Node's pool keeps.
  smallReadOffset = (smallReadOffset + size + 7) & ~7;
  return buffer;
}

function takeBuffer(): Buffer {
  return bufferPool.pop() ?? Buffer.allocUnsafeSlow(STREAM_CHUNK);
}

function returnBuffer(buffer: Buffer): void {
  if (bufferPool.length < BUFFER_POOL_MAX) bufferPool.push(buffer);
}

interface Chunk {
  buffer: Buffer;
  bytes: number;
}

function readChunk(fd: number, position: number, length: number): Promise<Chunk> {
  return new Promise((resolve, reject) => {
    const buffer = takeBuffer();
    read(fd, buffer, 0, Math.min(length, STREAM_CHUNK), position, (error, bytes) => {
      if (error) {
        returnBuffer(buffer);
        reject(error);
      } else resolve({ buffer, bytes });
    });
  });
}

function readChunkSync(fd: number, position: number, length: number): Chunk {
  const buffer = takeBuffer();
  try {
    return { buffer, bytes: readSync(fd, buffer, 0, Math.min(length, STREAM_CHUNK), position) };
  } catch (error) {
    returnBuffer(buffer);
    throw error;
  }
}

/** Resolves when the response wants more bytes (drain) or is gone (close); true while it is still open. */
function writable(res: ServerResponse): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve(!res.destroyed);
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

/**
 * Sends bytes start..end (inclusive) of a file as the response body and ends it. Large ranges go
 * in 1 MiB reads into pooled buffers; a buffer returns to the pool only from its write's callback,
 * when the socket no longer needs it. Reads start synchronous: from the page cache that took about
 * a sixth less CPU per download than the thread pool here, and CPU is what a download competes for. A
 * read slow enough to have gone to the disk switches the rest of that file to the thread pool,
 * with the next read in flight while a chunk is written, so a cold file never stalls the event
 * loop for more than one read; a run of synchronous reads yields to other requests every few
 * MiB. A client that goes away stops the reads; a read error destroys the response (its length was
 * promised) and rejects.
 */
export async function streamFile(
  res: ServerResponse,
  path: string,
  range: { start: number; end: number },
  openDescriptor?: number,
): Promise<void> {
  const total = range.end - range.start + 1;
  if (total <= 0) {
    res.end();
    return;
  }
  if (total <= SMALL_READ_BYTES) {
    const buffer = smallReadBuffer(total);
    let fd: number | null = openDescriptor ?? null;
    try {
      fd ??= openSync(path, "r");
      let got = 0;
      while (got < total) {
        const n = readSync(fd, buffer, got, total - got, range.start + got);
        if (n === 0) throw new Error(`${path} ended ${total - got} bytes early`);
        got += n;
      }
    } catch (error) {
      res.destroy(error as Error);
      throw error;
    } finally {
      if (fd !== null && fd !== openDescriptor) closeSync(fd);
    }
    res.end(buffer);
    return;
  }
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (error) {
    res.destroy(error as Error);
    throw error;
  }
  const end = range.end + 1;
  let position = range.start;
  let synchronous = true;
  let sinceYield = 0;
  let next: Promise<Chunk> | null = null;
  try {
    while (position < end) {
      let chunk: Chunk;
      if (next) {
        chunk = await next;
        next = null;
      } else if (synchronous) {
        const started = process.hrtime.bigint();
        chunk = readChunkSync(fd, position, end - position);
        if (process.hrtime.bigint() - started > SLOW_SYNC_READ_NS) synchronous = false;
      } else chunk = await readChunk(fd, position, end - position);
      const { buffer, bytes } = chunk;
      if (bytes === 0) throw new Error(`${path} ended ${end - position} bytes early`);
      position += bytes;
      if (res.destroyed) {
        returnBuffer(buffer);
        return;
      }
      if (!synchronous && position < end) next = readChunk(fd, position, end - position);
      const more = res.write(bytes === buffer.length ? buffer : buffer.subarray(0, bytes), () =>
        returnBuffer(buffer),
      );
      if (position >= end) break;
      if (!more) {
        sinceYield = 0;
        if (!(await writable(res))) return;
      } else if (synchronous && ++sinceYield >= SYNC_CHUNKS_PER_TURN) {
        sinceYield = 0;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    res.end();
  } catch (error) {
    res.destroy(error as Error);
    throw error;
  } finally {
    // A read still in flight must finish before its descriptor is closed (and its number reused).
    if (next) await next.then(({ buffer }) => returnBuffer(buffer)).catch(() => {});
    closeSync(fd);
  }
}
