import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { StaticSite } from "../../src/http/static-site.ts";

export interface SentResponse {
  path: string;
  /** Body bytes on the wire (after gzip, when the client accepted it). */
  bytes: number;
  gzip: boolean;
}

export interface CountingServer {
  url: string;
  /** Every response since the last take(), in order. */
  take(): SentResponse[];
  close(): Promise<void>;
}

/**
 * The portal's own static server (StaticSite: gzip for JSON over 512 bytes, as Pages does) on a
 * loopback port, counting the body bytes of every response: what a manager on the other end of a
 * mirror really transfers.
 */
export async function startCountingServer(siteDir: string): Promise<CountingServer> {
  const site = new StaticSite(siteDir);
  let sent: SentResponse[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const pathname = new URL(req.url ?? "/", "http://x").pathname;
    let bytes = 0;
    const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
    const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => ServerResponse;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (chunk && typeof chunk !== "function") bytes += Buffer.byteLength(chunk as Buffer);
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      if (chunk && typeof chunk !== "function") bytes += Buffer.byteLength(chunk as Buffer);
      sent.push({ path: pathname, bytes, gzip: res.getHeader("content-encoding") === "gzip" });
      return end(chunk, ...rest);
    }) as typeof res.end;
    site.serve(req, res, pathname).catch(() => {
      if (!res.headersSent) res.writeHead(404);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    take: () => {
      const taken = sent;
      sent = [];
      return taken;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
