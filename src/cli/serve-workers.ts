/**
 * The cluster half of `svc serve --workers N`: the primary forks the serving workers, replaces one
 * that dies and stops them all; each worker serves the portal on the shared port and nothing else.
 */
import cluster, { type Worker } from "node:cluster";
import { join } from "node:path";
import { parseSettings } from "../config/settings.ts";
import { createPortalServer, listen } from "../http/server.ts";
import { createStore } from "../store/index.ts";
import { devPortalConfig } from "./dev-portal.ts";
import { type CliIo, EXIT_OK } from "./io.ts";
import { portalSigning } from "./online-keys.ts";
import { openProject } from "./project.ts";
import { portalApp, serveEnv } from "./serve-app.ts";

/** Set in the environment of a forked serving worker (node:cluster); never by a person. */
const WORKER_ENV = "SVC_SERVE_WORKER_PORT";

/** Is this process a serving worker the primary forked (and not a person's `svc serve`)? */
export function isServeWorker(io: CliIo): boolean {
  return cluster.isWorker && Boolean(io.env[WORKER_ENV]);
}

interface ServeFlags {
  host?: string | undefined;
  dev?: boolean | undefined;
}

interface WorkerMessage {
  svc?: "kick" | "listen-failed";
  code?: string;
  message?: string;
}

/**
 * Forks the serving workers (node:cluster shares the listening socket between them). A worker that dies while the portal
 * runs is replaced; an upload's kick from any worker wakes the primary's validation worker.
 */
export async function forkWorkers(
  count: number,
  port: number,
  host: string,
  kick: () => void,
): Promise<{ bound: { port: number; host: string }; pool: Worker[] }> {
  const pool: Worker[] = [];
  const forkOne = (onPort: number): Promise<{ worker: Worker; port: number }> =>
    new Promise((resolve, reject) => {
      const worker = cluster.fork({ [WORKER_ENV]: String(onPort) });
      let failure: WorkerMessage | null = null;
      worker.on("message", (message: WorkerMessage) => {
        if (message?.svc === "kick") kick();
        if (message?.svc === "listen-failed") failure = message;
      });
      const early = (code: number | null) =>
        reject(
          Object.assign(
            new Error(failure?.message ?? `a serving worker exited before it listened (exit code ${code})`),
            { code: failure?.code },
          ),
        );
      worker.once("exit", early);
      worker.once("listening", (address) => {
        worker.off("exit", early);
        resolve({ worker, port: address.port });
      });
    });
  try {
    // Every worker asks for the same port as given (0 included): the primary keeps one listening
    // handle per address and port asked for, so port 0 binds one random port that all of them share.
    const forked = await Promise.all(Array.from({ length: count }, () => forkOne(port)));
    pool.push(...forked.map((f) => f.worker));
    for (const worker of pool) replaceOnDeath(worker, pool, port, kick);
    const first = forked[0]!;
    return { bound: { port: first.port, host }, pool };
  } catch (error) {
    await stopWorkers(pool);
    throw error;
  }
}

/** A worker that exits while the portal serves (not on a stop) is replaced by a fresh one. */
function replaceOnDeath(worker: Worker, pool: Worker[], port: number, kick: () => void): void {
  worker.once("exit", () => {
    const at = pool.indexOf(worker);
    if (at < 0 || worker.exitedAfterDisconnect) return;
    const next = cluster.fork({ [WORKER_ENV]: String(port) });
    next.on("message", (message: WorkerMessage) => {
      if (message?.svc === "kick") kick();
    });
    pool[at] = next;
    replaceOnDeath(next, pool, port, kick);
  });
}

/** Each worker finishes its requests, closes its database pool and exits (killed after 10 s). */
export async function stopWorkers(pool: Worker[]): Promise<void> {
  const workers = pool.splice(0);
  await Promise.all(
    workers.map(
      (worker) =>
        new Promise<void>((resolve) => {
          if (worker.isDead()) return resolve();
          // A worker that has not exited 10 s after its disconnect is killed: the portal stops.
          const kill = setTimeout(() => worker.kill("SIGKILL"), 10_000);
          worker.once("exit", () => {
            clearTimeout(kill);
            resolve();
          });
          worker.disconnect();
        }),
    ),
  );
}

/**
 * One serving worker of `svc serve --workers N`: its own database pool, app context and HTTP server
 * on the shared port. It takes no lock, recovers nothing and builds nothing (the primary did, before
 * forking) and runs no background job; each answer names its process (x-svc-worker).
 */
export async function serveWorker(
  values: Parameters<typeof openProject>[0] & ServeFlags,
  io: CliIo,
): Promise<number> {
  const port = Number(io.env[WORKER_ENV]);
  const host = values.host ?? "127.0.0.1";
  const env = serveEnv(values.dev, io.env);
  const { paths, config: configured } = openProject(values, io);
  const config = values.dev ? devPortalConfig(configured, host, port) : configured;
  const settings = parseSettings(env, { dataDir: join(paths.root, ".data") });
  const store = await createStore(settings);
  const { app } = await portalApp({
    dev: values.dev,
    io,
    config,
    settings,
    paths,
    store,
    signing: portalSigning({ env, cwd: io.cwd }, settings.dataDir),
    serveOnly: { kickWorker: () => process.send?.({ svc: "kick" }) },
  });
  // Given to the server, not set in a request listener of its own: a header set before the static
  // site answers from memory makes Node rebuild its prepared header list on every request.
  const server = createPortalServer(app, {}, { "x-svc-worker": String(process.pid) });
  try {
    await listen(server, port, host);
  } catch (error) {
    const code = (error as { code?: string }).code;
    process.send?.({
      svc: "listen-failed",
      code,
      message: code === "EADDRINUSE" ? `${host}:${port} is in use` : (error as Error).message,
    });
    await store.close();
    throw error;
  }
  await new Promise<void>((resolve) => {
    const stop = () => server.close(() => resolve());
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
    process.once("disconnect", stop);
  });
  await app.accounts?.flushPendingWrites();
  await store.close();
  if (process.connected) process.disconnect();
  return EXIT_OK;
}
