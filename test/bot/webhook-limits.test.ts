/**
 * The webhook endpoint spends nothing on a delivery that cannot be GitHub's: a signature header that
 * is not an HMAC-SHA256, or a declared body over GitHub's 25 MB cap, is refused from the headers
 * alone, before a byte of the body is read (a raw socket sends the headers and waits).
 */
import { createServer, type RequestListener, type Server } from "node:http";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { WEBHOOK_SECRET } from "../support/bot-harness.ts";
import { PORTAL } from "../support/webhook-payloads.ts";

/** Sends only the request head and returns the status line the server answers with (or "" after 3 s). */
function headOnly(port: number, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    const done = () => {
      socket.destroy();
      resolve(text.split("\r\n")[0] ?? "");
    };
    const timer = setTimeout(done, 3000);
    socket.on("data", (chunk) => {
      text += chunk.toString();
      if (text.includes("\r\n\r\n")) {
        clearTimeout(timer);
        done();
      }
    });
    socket.on("error", () => {});
    const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}`);
    socket.write(`POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines.join("\r\n")}\r\n\r\n`);
  });
}

describe("the webhook endpoint refuses from the headers alone", () => {
  let server: Server;
  let port: number;
  beforeAll(async () => {
    vi.stubEnv("WEBHOOK_SECRET", WEBHOOK_SECRET);
    vi.stubEnv("SVC_PORTAL_REPOSITORY", PORTAL);
    const portal = (await import("../../api/_entries/github/webhooks.ts")).default as RequestListener;
    server = createServer(portal);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => {
    server?.close();
    vi.unstubAllEnvs();
  });

  const base = {
    "content-type": "application/json",
    "x-github-event": "pull_request",
    "x-github-delivery": "0a1b2c3d-0000-4000-8000-000000000002",
  };

  it("answers 400 signature_invalid to a signature that is not sha256=<hex> without reading the body", async () => {
    const status = await headOnly(port, {
      ...base,
      "x-hub-signature-256": "sha256=not-a-digest",
      "content-length": String(20 * 1024 * 1024),
    });
    expect(status).toBe("HTTP/1.1 400 Bad Request");
  });

  it("answers 413 to a declared body over 25 MB without reading it", async () => {
    const status = await headOnly(port, {
      ...base,
      "x-hub-signature-256": `sha256=${"a".repeat(64)}`,
      "content-length": String(25 * 1024 * 1024 + 1),
    });
    expect(status).toBe("HTTP/1.1 413 Payload Too Large");
  });
});
