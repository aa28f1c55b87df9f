import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { isDistributionError } from "../../src/distribution/errors.ts";
import { mirrorLimits, openBounded } from "../../src/distribution/mirror-transfer.ts";

const servers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of servers.splice(0)) await close();
});

/** A loopback server whose first `resets` requests lose their connection before any answer. */
async function resettingServer(resets: number) {
  let seen = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen++;
    if (seen <= resets) {
      req.socket.resetAndDestroy();
      return;
    }
    res.writeHead(200, { "content-length": 2 }).end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  servers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${port}/doc.json`, requests: () => seen };
}

describe("openBounded on a connection the server resets before answering", () => {
  it("sends the GET once more and reads the answer", async () => {
    const server = await resettingServer(1);
    const response = await openBounded(fetch, server.url, {}, mirrorLimits());
    expect((await response.readAll(16)).toString()).toBe("ok");
    expect(server.requests()).toBe(2);
  });

  it("gives up after the second reset: download_failed, naming what failed underneath", async () => {
    const server = await resettingServer(2);
    const error = await openBounded(fetch, server.url, {}, mirrorLimits()).catch((e: unknown) => e);
    expect(isDistributionError(error) && error.code).toBe("download_failed");
    expect((error as Error).message).toMatch(/fetch failed \((ECONNRESET|UND_ERR_SOCKET)/);
    expect(server.requests()).toBe(2);
  });
});
