import * as net from "node:net";
import { isLimitsVerdict, limitsProbe } from "./limits-probe.ts";
import { type AntivirusScanner, parseClamResult, type ScanResult } from "./scanner.ts";

/**
 * clamd over a unix or TCP socket with the INSTREAM command: the bytes go to the daemon in
 * length-prefixed chunks, nothing is written to disk, and the daemon answers one line.
 *
 * clamd settings that matter (see docs/validation.md):
 * - StreamMaxLength must be at least maxPackageBytes, or a large package is answered with
 *   "INSTREAM size limit exceeded. ERROR" (which we treat as a failure, never a pass).
 * - MaxFileSize, MaxScanSize, MaxRecursion, MaxFiles must cover the package, and
 *   AlertExceedsMax yes makes the daemon report "Heuristics.Limits.Exceeded.*" instead of silently
 *   skipping what lies beyond a limit. alertsOnLimits() checks that setting with a probe at every
 *   validation; only when it holds does the package scan stand for its entries.
 * - ScanArchive yes (default) so the whole-package scan also looks inside the ZIP.
 */
export type ClamdTarget = { kind: "unix"; path: string } | { kind: "tcp"; host: string; port: number };

export interface ClamdOptions {
  /** Whole-request deadline, connect included. */
  timeoutMs?: number;
  chunkBytes?: number;
}

/** `HOST:PORT`, `tcp://HOST:PORT`, `unix:/path` or a plain socket path. */
export function parseClamdTarget(spec: string): ClamdTarget {
  const tcp = /^(?:tcp:\/\/)?(\[[^\]]+\]|[^:/]+):(\d{1,5})$/.exec(spec);
  if (tcp) {
    const port = Number(tcp[2]);
    if (port < 1 || port > 65535) throw new Error(`invalid clamd port in ${JSON.stringify(spec)}`);
    return { kind: "tcp", host: tcp[1]!.replace(/^\[|\]$/g, ""), port };
  }
  const path = spec.startsWith("unix:") ? spec.slice(5) : spec;
  if (path === "") throw new Error("empty clamd socket path");
  return { kind: "unix", path };
}

function describe(target: ClamdTarget): string {
  return target.kind === "unix" ? `clamd unix:${target.path}` : `clamd tcp://${target.host}:${target.port}`;
}

/** Send one null-terminated command, optionally followed by a payload, and read the reply. */
function exchange(
  target: ClamdTarget,
  command: string,
  payload: Iterable<Uint8Array> | null,
  options: Required<ClamdOptions>,
): Promise<ScanResult & { reply?: string }> {
  return new Promise((resolve) => {
    let settled = false;
    let connected = false;
    const chunks: Buffer[] = [];
    const socket =
      target.kind === "unix"
        ? net.createConnection(target.path)
        : net.createConnection(target.port, target.host);
    const finish = (result: ScanResult & { reply?: string }) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(
      () =>
        finish({
          status: "error",
          errorKind: "timeout",
          message: `${describe(target)} did not answer within ${options.timeoutMs} ms`,
        }),
      options.timeoutMs,
    );
    const replyText = () => Buffer.concat(chunks).toString("utf8");
    socket.on("data", (d: Buffer) => {
      chunks.push(d);
      if (d.includes(0)) finish({ ...parseClamReply(replyText()), reply: replyText() });
    });
    socket.on("end", () => {
      const text = replyText();
      finish(
        text.trim() === ""
          ? {
              status: "error",
              errorKind: "scanner",
              message: `${describe(target)} closed the connection without an answer`,
            }
          : { ...parseClamReply(text), reply: text },
      );
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      // clamd may answer a size-limit error and close while we are still writing.
      const text = replyText();
      if (text.trim() !== "") return finish({ ...parseClamReply(text), reply: text });
      // Node destroys the socket on a failed write, so an answer clamd sent just before closing can
      // be lost with it. clamd closes an INSTREAM mid-stream only past StreamMaxLength (or when it
      // dies): say so, and fail closed either way.
      const midStream = connected && (error.code === "EPIPE" || error.code === "ECONNRESET");
      finish({
        status: "error",
        errorKind: connected ? "scanner" : "unreachable",
        message: midStream
          ? `${describe(target)} closed the connection while the package was streamed (${error.code}): the stream most likely exceeded clamd's StreamMaxLength (size limit); raise it or lower the package cap`
          : `${describe(target)}: ${error.code ?? ""} ${error.message}`.trim(),
      });
    });
    socket.on("connect", async () => {
      connected = true;
      const write = (b: Uint8Array) =>
        new Promise<void>((ok) => {
          if (socket.write(b)) ok();
          else socket.once("drain", ok);
        });
      try {
        await write(Buffer.from(`z${command}\0`, "latin1"));
        if (payload) {
          for (const piece of payload) {
            for (let at = 0; at < piece.length && !settled; at += options.chunkBytes) {
              const chunk = piece.subarray(at, Math.min(at + options.chunkBytes, piece.length));
              const header = Buffer.alloc(4);
              header.writeUInt32BE(chunk.length, 0);
              await write(header);
              await write(chunk);
            }
            if (settled) break;
          }
          if (!settled) await write(Buffer.alloc(4));
        }
      } catch {
        // reported through the socket's error event
      }
    });
  });
}

function parseClamReply(text: string): ScanResult {
  const line = text.split("\0")[0]!.trim();
  // INSTREAM answers "stream: OK", "stream: <sig> FOUND" or "<why> ERROR".
  return parseClamResult(line.replace(/^stream:\s*/, ""));
}

export function createClamdScanner(
  target: ClamdTarget,
  options: ClamdOptions = {},
): AntivirusScanner & {
  ping(): Promise<boolean>;
  version(): Promise<string | null>;
} {
  const resolved: Required<ClamdOptions> = {
    timeoutMs: options.timeoutMs ?? 120_000,
    chunkBytes: options.chunkBytes ?? 1 << 20,
  };
  return {
    description: describe(target),
    scan: (_name, bytes) =>
      exchange(target, "INSTREAM", [bytes], resolved).then(({ reply: _reply, ...result }) => result),
    scanStream: (_name, chunks) =>
      exchange(target, "INSTREAM", chunks, resolved).then(({ reply: _reply, ...result }) => result),
    // Asked at every validation, not remembered: the daemon may be reconfigured and restarted.
    alertsOnLimits: async () =>
      isLimitsVerdict(
        await exchange(target, "INSTREAM", [limitsProbe()], {
          ...resolved,
          timeoutMs: Math.min(resolved.timeoutMs, 10_000),
        }),
      ),
    async ping() {
      const r = await exchange(target, "PING", null, {
        ...resolved,
        timeoutMs: Math.min(resolved.timeoutMs, 5000),
      });
      return (r.reply ?? "").replace(/\0/g, "").trim() === "PONG";
    },
    async version() {
      const r = await exchange(target, "VERSION", null, {
        ...resolved,
        timeoutMs: Math.min(resolved.timeoutMs, 5000),
      });
      return r.reply ? r.reply.replace(/\0/g, "").trim() : null;
    },
  };
}
