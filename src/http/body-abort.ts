import type { IncomingMessage } from "node:http";

/**
 * A request's body can be refused by the server's watchdog (408 request_timeout) while a handler is
 * still reading it. The handler's own read would then wait for bytes that never come, holding what
 * it staged (a 30 MiB partial package) until the connection is torn down or the process restarts;
 * the watchdog aborts this signal instead, and a body reader that stages anything listens to it.
 */
const controllers = new WeakMap<IncomingMessage, AbortController>();

/** The signal a body reader listens to (created on first use). */
export function bodyAbortSignal(req: IncomingMessage): AbortSignal {
  let controller = controllers.get(req);
  if (!controller) {
    controller = new AbortController();
    controllers.set(req, controller);
  }
  return controller.signal;
}

/** Called by the watchdog when it refuses the body. */
export function abortBody(req: IncomingMessage, reason: Error): void {
  controllers.get(req)?.abort(reason);
}
