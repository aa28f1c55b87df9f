import { DistributionError } from "./errors.ts";

/**
 * Limits on every response the manager client reads from a mirror. A mirror is not trusted (TUF's
 * threat model): it may send a body that never ends (the endless-data attack) or send it a byte at
 * a time (the slow-retrieval attack). docs/distribution.md lists the defaults.
 */
export interface MirrorLimits {
  /** Until the response headers arrive: DNS, connect, TLS and the server's first answer. */
  connectTimeoutMs: number;
  /** The no-progress window: a body that brings fewer than `minProgressBytes` in any window this long is stalled. */
  idleTimeoutMs: number;
  minProgressBytes: number;
  /** Caps where the signed metadata gives no length; tuf-js's own defaults, set here so they are ours. */
  rootMaxBytes: number;
  timestampMaxBytes: number;
  snapshotMaxBytes: number;
  targetsMaxBytes: number;
}

/**
 * A window of 30 s that must bring 16 KiB is a floor of ~550 bytes a second: a link slower than
 * that cannot fetch a package anyway, and an attacker's trickle is cut within half a minute. A
 * document or package that ends inside a window is never judged by it.
 */
export const DEFAULT_MIRROR_LIMITS: Readonly<MirrorLimits> = {
  connectTimeoutMs: 15_000,
  idleTimeoutMs: 30_000,
  minProgressBytes: 16_384,
  rootMaxBytes: 512_000,
  timestampMaxBytes: 16_384,
  snapshotMaxBytes: 2_000_000,
  targetsMaxBytes: 5_000_000,
};

export function mirrorLimits(overrides: Partial<MirrorLimits> = {}): MirrorLimits {
  const limits = { ...DEFAULT_MIRROR_LIMITS, ...overrides };
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new RangeError(`mirror limit ${name} must be a positive integer, not ${value}`);
    }
  }
  return limits;
}

/** A response whose headers arrived in time; its body is read only through `chunks` or `readAll`. */
export interface BoundedResponse {
  status: number;
  ok: boolean;
  /**
   * The body, chunk by chunk, never past `cap` bytes counted from `startAt` (bytes the caller
   * already holds, e.g. before a Range), and never slower than the idle window allows.
   */
  chunks(cap: number, startAt?: number): AsyncGenerator<Uint8Array>;
  readAll(cap: number): Promise<Buffer>;
  /** Hangs up: the connection is closed, not drained. */
  cancel(): Promise<void>;
}

const TICK = Symbol("tick");

/** Failures of a reused connection that the server had already closed, before any response. */
const STALE_CONNECTION: ReadonlySet<string> = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);

/** fetch's "fetch failed" with what underneath failed (other side closed, ECONNREFUSED, ...). */
function describeFailure(error: Error): string {
  const cause = error.cause as { code?: string; message?: string } | undefined;
  if (!cause?.message) return error.message;
  return `${error.message} (${cause.code ? `${cause.code}: ` : ""}${cause.message})`;
}

function raceTimer<T>(promise: Promise<T>, ms: number): Promise<T | typeof TICK> {
  let timer: NodeJS.Timeout | undefined;
  const tick = new Promise<typeof TICK>((resolve) => {
    timer = setTimeout(() => resolve(TICK), ms);
  });
  return Promise.race([promise, tick]).finally(() => clearTimeout(timer));
}

/**
 * GETs `url` under the limits: the headers must arrive within the connect timeout (enforced even
 * when an injected fetch ignores the abort signal), then the body is read as a stream that stops at
 * its cap (`response_too_large`) or when a window brings too little (`download_stalled`).
 */
export async function openBounded(
  fetchImpl: typeof fetch,
  url: string,
  headers: Record<string, string>,
  limits: MirrorLimits,
): Promise<BoundedResponse> {
  const controller = new AbortController();
  const deadline = Date.now() + limits.connectTimeoutMs;
  const attempt = () =>
    raceTimer(fetchImpl(url, { headers, signal: controller.signal }), Math.max(1, deadline - Date.now()));
  // A kept-alive connection the server closed just as this request went out (its keep-alive timeout
  // raced the request) fails before any response: a GET is safe to send once more, on a new one.
  const response = await attempt()
    .catch((error: Error) => {
      if (!STALE_CONNECTION.has((error.cause as { code?: string } | undefined)?.code ?? "")) throw error;
      return attempt();
    })
    .catch((error: Error) => {
      throw new DistributionError("download_failed", `${url}: ${describeFailure(error)}`, { url });
    });
  if (response === TICK) {
    controller.abort();
    throw new DistributionError(
      "connect_timeout",
      `${url}: no response within ${limits.connectTimeoutMs} ms (connect timeout)`,
      { url, timeoutMs: limits.connectTimeoutMs },
    );
  }
  const reader = response.body?.getReader() ?? null;
  const cancel = async () => {
    controller.abort();
    await reader?.cancel().catch(() => {});
  };

  async function* chunks(cap: number, startAt = 0): AsyncGenerator<Uint8Array> {
    if (!reader) return;
    let received = startAt;
    let inWindow = 0;
    let windowEnds = Date.now() + limits.idleTimeoutMs;
    let pending: ReturnType<typeof reader.read> | null = null;
    let finished = false;
    try {
      for (;;) {
        pending ??= reader.read();
        const wait = windowEnds - Date.now();
        const next = wait > 0 ? await raceTimer(pending, wait) : TICK;
        if (next === TICK) {
          if (inWindow < limits.minProgressBytes) {
            throw new DistributionError(
              "download_stalled",
              `${url}: ${inWindow} bytes in ${limits.idleTimeoutMs} ms, under the ${limits.minProgressBytes} the idle timeout asks for (after ${received} bytes)`,
              {
                url,
                received,
                idleTimeoutMs: limits.idleTimeoutMs,
                minProgressBytes: limits.minProgressBytes,
              },
            );
          }
          inWindow = 0;
          windowEnds = Date.now() + limits.idleTimeoutMs;
          continue;
        }
        pending = null;
        if (next.done) {
          finished = true;
          return;
        }
        received += next.value.length;
        inWindow += next.value.length;
        if (received > cap) {
          throw new DistributionError(
            "response_too_large",
            `${url}: more than its ${cap}-byte cap (stopped at ${received})`,
            { url, cap, received },
          );
        }
        yield next.value;
      }
    } catch (error) {
      if (error instanceof DistributionError) throw error;
      throw new DistributionError("download_failed", `${url}: ${(error as Error).message}`, {
        url,
        received,
      });
    } finally {
      if (!finished) {
        // The read still in flight settles once the connection is gone; nobody waits for it.
        pending?.catch(() => {});
        await cancel();
      }
    }
  }

  return {
    status: response.status,
    ok: response.ok,
    chunks,
    async readAll(cap) {
      const parts: Uint8Array[] = [];
      for await (const chunk of chunks(cap)) parts.push(chunk);
      return Buffer.concat(parts);
    },
    cancel,
  };
}
