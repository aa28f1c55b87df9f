/**
 * A loopback stand-in for ClamAV's signature CDN (database.clamav.net) as it answers a cloud address
 * that downloaded too often: 429 with a Retry-After, for every file. freshclam reaches it as a
 * PrivateMirror and reacts as it does to the real CDN (it gives up, and writes a cool-down into the
 * database folder's freshclam.dat). A fake of the network edge, named as one.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface ClamavCdn {
  url: string;
  /** Every path freshclam asked for. */
  requests: string[];
  stop(): Promise<void>;
}

export async function startRateLimitedCdn(retryAfterSeconds = 3600): Promise<ClamavCdn> {
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? "/");
    res.writeHead(429, { "retry-after": String(retryAfterSeconds), "content-type": "text/plain" });
    res.end("Too Many Requests\n");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
