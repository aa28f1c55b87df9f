import type { IncomingMessage, ServerResponse } from "node:http";
import type { MirrorResponder } from "./support.ts";

/** What the attacker's server saw of one answer: bytes it handed to the socket, and when the client hung up. */
export interface ResponseWatch {
  bytesSent: number;
  /** Milliseconds from the request to the connection's close; null while it is open. */
  closedAfterMs: number | null;
}

function watched(serve: (req: IncomingMessage, res: ServerResponse, watch: ResponseWatch) => void): {
  watch: ResponseWatch;
  responder: MirrorResponder;
} {
  const watch: ResponseWatch = { bytesSent: 0, closedAfterMs: null };
  const responder: MirrorResponder = (req, res) => {
    const started = Date.now();
    res.on("close", () => {
      watch.closedAfterMs = Date.now() - started;
    });
    serve(req, res, watch);
  };
  return { watch, responder };
}

/**
 * TUF's endless-data attack: a 200 whose body never ends, written as fast as the client reads (it
 * waits for `drain`, so `bytesSent` is what the client consumed plus the socket buffers). It gives
 * up after `giveUpAfterBytes` so that a client without a cap fails the test instead of the machine.
 */
export function endlessBody(giveUpAfterBytes = 64 * 1024 * 1024) {
  return watched((_req, res, watch) => {
    res.writeHead(200, { "content-type": "application/json" });
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const pump = () => {
      while (!res.destroyed && watch.bytesSent < giveUpAfterBytes) {
        watch.bytesSent += chunk.length;
        if (!res.write(chunk)) {
          res.once("drain", pump);
          return;
        }
      }
      if (!res.destroyed) res.end();
    };
    pump();
  });
}

/**
 * TUF's slow-retrieval attack: headers at once, then `bytesPerTick` bytes every `intervalMs`,
 * never finishing before `giveUpAfterMs` (the bound that ends the test for a client with no timeout).
 */
export function tricklingBody(options: { intervalMs: number; bytesPerTick?: number; giveUpAfterMs: number }) {
  return watched((_req, res, watch) => {
    res.writeHead(200, { "content-type": "application/json" });
    const tick = Buffer.alloc(options.bytesPerTick ?? 1, 0x20);
    const started = Date.now();
    const write = () => {
      if (res.destroyed) return;
      if (Date.now() - started >= options.giveUpAfterMs) {
        clearInterval(timer);
        res.end();
        return;
      }
      watch.bytesSent += tick.length;
      res.write(tick);
    };
    const timer = setInterval(write, options.intervalMs);
    res.on("close", () => clearInterval(timer));
    write();
  });
}

/** Accepts the connection and never answers, not even a status line; hangs up after `giveUpAfterMs`. */
export function silentAnswer(giveUpAfterMs: number) {
  return watched((_req, res) => {
    const timer = setTimeout(() => res.destroy(), giveUpAfterMs);
    res.on("close", () => clearTimeout(timer));
  });
}
