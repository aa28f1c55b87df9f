import { readdirSync } from "node:fs";
import type { Server } from "node:http";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPortalServer, listen, type ServerLimits } from "../../src/http/server.ts";
import { join } from "node:path";
import { defaultRandomBytes } from "../../src/accounts/secrets.ts";
import { LocalSubmissionBackend } from "../../src/submissions/local-backend.ts";
import { modRelease } from "../support/catalog-project.ts";
import { form } from "../support/submissions-portal.ts";
import { buildZip } from "../validation/zip-builder.ts";
import { client, type Harness, signUpAndSignIn, startHarness } from "../support/http-harness.ts";

/**
 * SECURITY.md "oversized or slow bodies": slow headers and slow bodies are refused with
 * 408 request_timeout instead of holding a connection for minutes, while steady and large uploads
 * still arrive. Real sockets on loopback against the real server, with the limits scaled down
 * (the same rules, in milliseconds instead of seconds).
 */
const TIGHT: ServerLimits = {
  headersTimeoutMs: 500,
  requestTimeoutMs: 60_000,
  bodyIdleTimeoutMs: 400,
  bodyGraceMs: 300,
  bodyMinBytesPerSecond: 1000,
  checkIntervalMs: 50,
};

/** Long enough for every refusal above (a few checks past its limit), short of the old 30 s / 300 s. */
const ANSWER_WITHIN_MS = 4000;

interface RawAnswer {
  status: number;
  json: any;
  closed: boolean;
  elapsedMs: number;
}

/**
 * Opens a raw connection, writes `head`, then calls `feed` every `everyMs` until the server has
 * answered and closed (or ANSWER_WITHIN_MS passed: then the answer is status 0).
 */
function rawExchange(
  port: number,
  head: string,
  feed: (socket: Socket, tick: number) => void,
  everyMs: number,
): Promise<RawAnswer> {
  return new Promise((resolve) => {
    const started = performance.now();
    const socket = connect(port, "127.0.0.1");
    let text = "";
    let tick = 0;
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearInterval(timer);
      clearTimeout(giveUp);
      socket.destroy();
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);
      const bodyText = text.slice(text.indexOf("\r\n\r\n") + 4);
      let json: unknown = null;
      try {
        json = JSON.parse(bodyText);
      } catch {}
      resolve({ status, json, closed, elapsedMs: performance.now() - started });
    };
    const timer = setInterval(() => {
      if (!socket.destroyed && socket.writable) feed(socket, tick++);
    }, everyMs);
    const giveUp = setTimeout(() => finish(false), ANSWER_WITHIN_MS);
    socket.on("data", (chunk) => {
      text += chunk.toString("utf8");
      // A complete answer on a connection kept alive ends the exchange too.
      const end = text.indexOf("\r\n\r\n");
      const length = /\r\ncontent-length: (\d+)/i.exec(text.slice(0, end))?.[1];
      const closing = /\r\nconnection: close/i.test(text.slice(0, end));
      if (end >= 0 && length !== undefined && Buffer.byteLength(text) >= end + 4 + Number(length)) {
        if (!closing) finish(false);
      }
    });
    socket.on("error", () => {});
    socket.on("close", () => finish(true));
    socket.write(head);
  });
}

const postHead = (path: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

describe("slow request bodies and headers", () => {
  let h: Harness;
  let server: Server;
  let port: number;

  beforeAll(async () => {
    h = await startHarness({ env: { SVC_LIVE_UPLOADS: "1" } });
    server = createPortalServer(h.app, TIGHT);
    port = (await listen(server, 0, "127.0.0.1")).port;
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await h?.close();
  });

  const accounts = async () =>
    Number((await h.store.query<{ n: string }>("SELECT count(*)::text AS n FROM accounts")).rows[0]!.n);
  const refusals = async (code: string) =>
    (await h.app.accounts!.listAuditEvents({ action: "request.refused", limit: 200 })).events.filter(
      (e) => e.metadata.code === code,
    );

  it("refuses a body trickled below the minimum rate with 408 request_timeout and closes", async () => {
    const before = await accounts();
    const answer = await rawExchange(
      port,
      postHead("/api/v1/accounts", 2000),
      (socket) => socket.write(" "),
      100,
    );
    expect(answer.status, `no answer within ${ANSWER_WITHIN_MS} ms`).toBe(408);
    expect(answer.json).toMatchObject({ code: "request_timeout", details: { bodyMinBytesPerSecond: 1000 } });
    expect(answer.closed).toBe(true);
    expect(await accounts()).toBe(before);
    const [event] = await refusals("request_timeout");
    expect(event).toMatchObject({
      targetType: "endpoint",
      targetId: "create_account",
      metadata: { code: "request_timeout", status: 408, method: "POST", ip: "127.0.0.1" },
    });
  });

  it("refuses a body that stops half way once it has been idle too long", async () => {
    // 900 bytes up front earn 900 ms at the minimum rate: the idle limit (400 ms) is what trips.
    const body = JSON.stringify({ email: "half@example.com", displayName: "Half" }).padEnd(1000, " ");
    const answer = await rawExchange(
      port,
      postHead("/api/v1/accounts", body.length) + body.slice(0, 900),
      () => {},
      100,
    );
    expect(answer.status, `no answer within ${ANSWER_WITHIN_MS} ms`).toBe(408);
    expect(answer.json.code).toBe("request_timeout");
    expect(answer.json.message).toMatch(/stalled/);
    expect(answer.elapsedMs).toBeGreaterThanOrEqual(TIGHT.bodyIdleTimeoutMs);
  });

  it("refuses headers that trickle in with a JSON 408 and records it", async () => {
    const answer = await rawExchange(
      port,
      "POST /api/v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\n",
      (socket, tick) => socket.write(`X-Slow-${tick}: 1\r\n`),
      100,
    );
    expect(answer.status, `no answer within ${ANSWER_WITHIN_MS} ms`).toBe(408);
    expect(answer.json).toEqual({ code: "request_timeout", message: expect.stringMatching(/headers/) });
    expect(answer.closed).toBe(true);
    await expect
      .poll(async () => (await refusals("request_timeout")).some((e) => e.targetId === "unrouted"))
      .toBe(true);
  });

  it("lets a slow but steady body through, however long past the grace and idle limits it takes", async () => {
    const body = Buffer.from(
      JSON.stringify({ email: "steady@example.com", displayName: "Steady" }).padEnd(4000, " "),
    );
    let sent = 0;
    // 200 bytes every 50 ms: 4000 bytes/s for a second, four times the minimum rate.
    const answer = await rawExchange(
      port,
      postHead("/api/v1/accounts", body.length),
      (socket) => {
        if (sent >= body.length) return;
        socket.write(body.subarray(sent, sent + 200));
        sent += 200;
      },
      50,
    );
    expect(answer.status).toBe(202);
    expect(answer.elapsedMs).toBeGreaterThan(TIGHT.bodyGraceMs + TIGHT.bodyIdleTimeoutMs);
    expect(await accounts()).toBeGreaterThan(0);
  });

  it("removes a stalled upload's partial package file as soon as it answers 408", async () => {
    h.app.submissions = new LocalSubmissionBackend({
      store: h.store,
      config: h.app.config,
      now: h.app.now,
      random: defaultRandomBytes,
      storageRoot: join(h.root, ".data"),
      publisher: null,
      kickWorker: () => {},
      acceptsPackageBytes: true,
      log: h.app.log,
    });
    const modder = await signUpAndSignIn(
      client(`http://127.0.0.1:${port}`),
      "stall@example.com",
      "Stall",
      "modder",
    );
    const zip = buildZip([
      { name: "svc-mod.json", data: "{}" },
      { name: "Content/filler.bin", data: Buffer.alloc(200_000, 7), method: 0 },
    ]);
    const { sidecar } = modRelease({ modId: "stalled-mod" });
    const request = new Request("http://127.0.0.1/", {
      method: "POST",
      body: form({ ...sidecar, package: { ...sidecar.package, sizeBytes: zip.length } }, zip),
    });
    const body = Buffer.from(await request.arrayBuffer());
    const head =
      `POST /api/v1/uploads HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${modder.cookie}\r\n` +
      `X-Svc-Csrf: ${modder.csrf}\r\nContent-Type: ${request.headers.get("content-type")}\r\n` +
      `Content-Length: ${body.length}\r\n\r\n`;
    // Most of the package arrives, then nothing: the body stalls past the idle limit.
    const answer = await rawExchange(
      port,
      head,
      (socket, tick) => {
        if (tick === 0) socket.write(body.subarray(0, Math.floor(body.length * 0.7)));
      },
      50,
    );
    expect(answer.status, `no answer within ${ANSWER_WITHIN_MS} ms`).toBe(408);
    const partials = () =>
      (readdirSync(join(h.root, ".data"), { recursive: true }) as string[]).filter((p) =>
        /(^|\/)\.partial-/.test(p),
      );
    // Gone within a second or two, not at the next restart.
    await expect.poll(partials, { timeout: 3000 }).toEqual([]);
  });

  it("accepts a package at the 100 MiB cap on loopback under the default limits", async () => {
    // The upload route without a validation worker: only the transfer is under test here.
    h.app.submissions = new LocalSubmissionBackend({
      store: h.store,
      config: h.app.config,
      now: h.app.now,
      random: defaultRandomBytes,
      storageRoot: join(h.root, ".data"),
      publisher: null,
      kickWorker: () => {},
      acceptsPackageBytes: true,
      log: h.app.log,
    });
    // The harness's own server: createPortalServer with DEFAULT_SERVER_LIMITS.
    const origin = h.origin;
    const modder = await signUpAndSignIn(client(origin), "big@example.com", "Big", "modder");
    const cap = h.app.config.limits.maxPackageBytes;
    const zip = buildZip([
      { name: "svc-mod.json", data: "{}" },
      { name: "Content/filler.bin", data: Buffer.alloc(cap - 4096, 7), method: 0 },
    ]);
    expect(zip.length).toBeLessThanOrEqual(cap);
    const { sidecar } = modRelease({ modId: "big-mod" });
    const response = await fetch(`${origin}/api/v1/uploads`, {
      method: "POST",
      body: form({ ...sidecar, package: { ...sidecar.package, sizeBytes: zip.length } }, zip),
      headers: { cookie: modder.cookie, "x-svc-csrf": modder.csrf },
    });
    const json = (await response.json()) as { code?: string };
    expect(response.status, JSON.stringify(json)).toBe(201);
    const staged = await h.store.query<{ n: string }>("SELECT count(*)::text AS n FROM submissions");
    expect(staged.rows[0]!.n).toBe("1");
  }, 120_000);
});
