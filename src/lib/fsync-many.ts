import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";
import { fsyncPath } from "./atomic-write.ts";

/**
 * Below this many paths each is fsynced in turn; from it on, on a worker thread, several at once.
 * One fsync on this project's VM disk costs ~1.5-4 ms, almost all of it waiting for the device, and
 * the filesystem commits concurrent fsyncs together: 1,000 new files took 1.5-1.8 s one by one and
 * 0.18-0.24 s four at a time (the worker's start-up is ~30 ms, so a handful stays sequential).
 */
export const PARALLEL_FSYNC_FROM = 24;

/** How long a synchronous caller waits for the worker before it gives up and fsyncs by itself. */
const WORKER_TIMEOUT_MS = 120_000;

/**
 * CommonJS that worker sources include (a worker evaluated from a string cannot import a module):
 * `fsyncLanes(paths, lanes, onError)` fsyncs every path, `lanes` at a time (libuv's thread pool
 * runs four at once), as fsyncPath does each: a path already gone has nothing to sync and a folder
 * a platform will not fsync is skipped; any other failure goes to `onError(path, error)`, never
 * thrown, so a worker always answers its waiting thread.
 */
export const FSYNC_LANES_SOURCE = `
const FSYNC_SKIPPED = ["EISDIR", "EINVAL", "EPERM", "EBADF"];
async function fsyncLanes(paths, lanes, onError) {
  const { open } = require("node:fs/promises");
  let next = 0;
  async function lane() {
    while (next < paths.length) {
      const path = paths[next++];
      let handle;
      try {
        handle = await open(path, "r");
        await handle.sync();
      } catch (error) {
        const code = error && error.code;
        if (code === "ENOENT" || (handle && FSYNC_SKIPPED.includes(code))) continue;
        onError(path, error);
      } finally {
        if (handle) await handle.close().catch(() => {});
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(lanes, paths.length) }, lane));
}
`;

// CommonJS, evaluated by the worker (no file to ship beside a bundle). Errors are collected, not
// thrown, and always answered, so the waiting thread is always woken.
const WORKER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { paths, flag, port, lanes } = workerData;
const errors = [];
${FSYNC_LANES_SOURCE}
fsyncLanes(paths, lanes, (path, error) =>
  errors.push({ path, code: (error && error.code) || null, message: String((error && error.message) || error) }),
)
  .catch((error) => errors.push({ path: "", code: null, message: String(error) }))
  .finally(() => {
    port.postMessage(errors);
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
  });
`;

/** One path a worker could not fsync, as its worker source reports it. */
export interface FsyncFailure {
  path: string;
  code: string | null;
  message: string;
}

/** Throws for the failures a worker reported (the count, and the first by path and code); none, nothing. */
export function throwFsyncFailures(failures: readonly FsyncFailure[]): void {
  if (failures.length === 0) return;
  const first = failures[0]!;
  const error = new Error(
    `fsync failed for ${failures.length} path(s), first ${first.path}: ${first.message}`,
  ) as NodeJS.ErrnoException;
  if (first.code) error.code = first.code;
  throw error;
}

/**
 * Makes every path's data and entry durable, as fsyncPath does each (a path already gone has nothing
 * to sync; a folder a platform will not fsync is skipped), and returns once all are: synchronously,
 * for callers that run under a lock without awaiting (a commit, a signing run). Many paths are
 * fsynced concurrently on a worker thread while this thread waits; the order among them is not
 * defined, so a caller that needs one durable before another makes two calls.
 */
export function fsyncAll(paths: readonly string[]): void {
  if (paths.length < PARALLEL_FSYNC_FROM) {
    for (const path of paths) fsyncPath(path);
    return;
  }
  const flag = new Int32Array(new SharedArrayBuffer(4));
  const { port1, port2 } = new MessageChannel();
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { paths: [...paths], flag, port: port2, lanes: 8 },
      transferList: [port2],
      // The worker needs nothing of the parent's flags (a --cpu-prof, a loader) or its stdin.
      execArgv: [],
      stdin: false,
    });
  } catch {
    // No worker here (a restricted runtime): the same guarantee, one path at a time.
    for (const path of paths) fsyncPath(path);
    return;
  }
  worker.unref();
  const answered = Atomics.wait(flag, 0, 0, WORKER_TIMEOUT_MS) !== "timed-out" || Atomics.load(flag, 0) === 1;
  const message = answered ? receiveMessageOnPort(port1) : undefined;
  port1.close();
  if (!message) {
    // A worker that never answered (it could not start): nothing is known to be durable.
    void worker.terminate();
    for (const path of paths) fsyncPath(path);
    return;
  }
  throwFsyncFailures(message.message as FsyncFailure[]);
}
