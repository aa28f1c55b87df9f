/**
 * Child process of bench/api/run.ts: N keep-alive HTTP/1.1 clients, each sending one request at a
 * time for a fixed duration, timing every answer. A raw socket client in the manner of wrk, so the
 * load generator costs far less CPU than the server it measures (Node's http client would not).
 * It understands exactly what the bench asks for: answers with a Content-Length body.
 *
 * The warm-up starts once every client has had its first answer: connections reach a
 * `svc serve --workers N` worker through its primary one at a time (node:cluster's round-robin
 * hand-off), which on a busy machine took longer than the warm-up itself, so the measured seconds
 * began with clients still waiting for their connection. The time until every client was answered
 * once is reported as `readyMs`; the measurement is the steady state of 50 open connections, as
 * for nginx.
 *
 *   node --import tsx bench/api/load.ts '{"port":8080,"path":"/x","headers":{},"clients":50,...}'
 */
import { connect, type Socket } from "node:net";

interface LoadOptions {
  host: string;
  port: number;
  path: string;
  headers: Record<string, string>;
  clients: number;
  warmupMs: number;
  durationMs: number;
  expectStatus: number;
}

const options = JSON.parse(process.argv[2] ?? "{}") as LoadOptions;
const request = Buffer.from(
  `GET ${options.path} HTTP/1.1\r\nhost: ${options.host}:${options.port}\r\n${Object.entries(options.headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("")}\r\n`,
  "latin1",
);
const HEADER_END = Buffer.from("\r\n\r\n");

const latenciesMs: number[] = [];
let measuring = false;
let stopping = false;
/** Every answer, warm-up included: the bench divides the server's CPU time by it. */
let answered = 0;
let unexpected = 0;
let firstUnexpected = "";
let waiting = options.clients;
let allAnswered: () => void = () => {};
const ready = new Promise<void>((resolve) => {
  allAnswered = resolve;
});

function client(): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket: Socket = connect(options.port, options.host);
    socket.setNoDelay(true);
    let pending: Buffer = Buffer.alloc(0);
    let sentAt = 0n;
    let bodyLeft = -1;
    let first = true;
    const send = () => {
      if (stopping) {
        socket.end();
        return;
      }
      sentAt = process.hrtime.bigint();
      socket.write(request);
    };
    socket.on("connect", send);
    socket.on("data", (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (true) {
        if (bodyLeft < 0) {
          const end = pending.indexOf(HEADER_END);
          if (end < 0) return;
          const head = pending.subarray(0, end).toString("latin1");
          const status = Number(head.slice(9, 12));
          const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
          if (status !== options.expectStatus && unexpected++ === 0) firstUnexpected = head.split("\r\n")[0]!;
          bodyLeft = length ? Number(length[1]) : 0;
          pending = pending.subarray(end + HEADER_END.length);
        }
        if (pending.length < bodyLeft) {
          bodyLeft -= pending.length;
          pending = Buffer.alloc(0);
          return;
        }
        pending = pending.subarray(bodyLeft);
        bodyLeft = -1;
        answered += 1;
        if (first) {
          first = false;
          if (--waiting === 0) allAnswered();
        }
        if (measuring) latenciesMs.push(Number(process.hrtime.bigint() - sentAt) / 1e6);
        send();
      }
    });
    socket.on("close", () => resolve());
    socket.on("error", reject);
  });
}

const startedAt = process.hrtime.bigint();
const clients = Array.from({ length: options.clients }, client);
const READY_TIMEOUT_MS = 60_000;
await Promise.race([
  ready,
  new Promise((_, reject) =>
    setTimeout(
      () =>
        reject(new Error(`${waiting} of ${options.clients} clients had no answer in ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    ).unref(),
  ),
]);
const readyMs = Number(process.hrtime.bigint() - startedAt) / 1e6;
await new Promise((resolve) => setTimeout(resolve, options.warmupMs));
measuring = true;
const started = process.hrtime.bigint();
await new Promise((resolve) => setTimeout(resolve, options.durationMs));
measuring = false;
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
stopping = true;
await Promise.all(clients);

const sorted = latenciesMs.sort((a, b) => a - b);
const at = (p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? 0;
process.stdout.write(
  `${JSON.stringify({
    requests: sorted.length,
    seconds,
    requestsPerSecond: sorted.length / seconds,
    p50ms: at(0.5),
    p99ms: at(0.99),
    maxMs: sorted.at(-1) ?? 0,
    answered,
    readyMs,
    unexpected,
    firstUnexpected,
  })}\n`,
);
