/**
 * Child process of bench/api/run.ts: the least a Node server in N processes can do for part 3's
 * requests, the ceiling of `svc serve --workers N` on this machine. node:cluster shares one port
 * between N workers (round-robin, as svc serve does); each worker answers with no routing,
 * authentication or validation at all:
 *
 * - a `.json` path: the document from memory (read once at start);
 * - a Range request: one pread of the range from a descriptor opened at start;
 * - anything else: the artifact, synchronous 1 MiB preads into one buffer written straight to the
 *   response, the next read once the socket took the last (bench/api/run.ts's "pread loop").
 *
 *   node --import tsx bench/api/bare-cluster.ts '{"workers":2,"artifact":"/path","json":"/path"}'
 *
 * Prints `listening <port>` once every worker listens; SIGTERM stops it.
 */
import cluster from "node:cluster";
import { fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { createServer } from "node:http";

const MIB = 1024 * 1024;
const options = JSON.parse(process.argv[2] ?? "{}") as { workers: number; artifact: string; json: string };

if (cluster.isPrimary) {
  const server = createServer();
  // Port 0 in a cluster would give each worker its own port: the primary picks one first.
  const port = await new Promise<number>((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const picked = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolve(picked));
    }),
  );
  let listening = 0;
  for (let i = 0; i < options.workers; i++) {
    const worker = cluster.fork({ BARE_PORT: String(port) });
    worker.on("listening", () => {
      if (++listening === options.workers) process.stdout.write(`listening ${port}\n`);
    });
  }
  process.once("SIGTERM", () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.kill("SIGTERM");
    process.exit(0);
  });
} else {
  const fd = openSync(options.artifact, "r");
  const size = fstatSync(fd).size;
  const json = readFileSync(options.json);
  const server = createServer(async (req, res) => {
    if (req.url?.endsWith(".json")) {
      res.writeHead(200, {
        "content-type": "application/json; charset=utf-8",
        "content-length": json.length,
      });
      res.end(json);
      return;
    }
    const range = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? "");
    if (range) {
      const start = Number(range[1]);
      const end = Math.min(Number(range[2]), size - 1);
      const body = Buffer.allocUnsafe(end - start + 1);
      readSync(fd, body, 0, body.length, start);
      res.writeHead(206, {
        "content-type": "application/zip",
        "content-length": body.length,
        "content-range": `bytes ${start}-${end}/${size}`,
      });
      res.end(body);
      return;
    }
    res.writeHead(200, { "content-type": "application/zip", "content-length": size });
    const buffer = Buffer.allocUnsafeSlow(MIB);
    for (let position = 0; position < size && !res.destroyed; ) {
      const bytes = readSync(fd, buffer, 0, Math.min(MIB, size - position), position);
      position += bytes;
      await new Promise<void>((resolve) => {
        res.once("close", resolve);
        res.write(bytes === MIB ? buffer : buffer.subarray(0, bytes), () => {
          res.off("close", resolve);
          resolve();
        });
      });
    }
    res.end();
  });
  server.keepAliveTimeout = 60_000;
  server.listen(Number(process.env.BARE_PORT), "127.0.0.1");
  process.once("SIGTERM", () => process.exit(0));
}
