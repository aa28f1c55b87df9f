import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { REPO_ROOT } from "./repo-root.ts";

/** The preload that SIGKILLs a child at a chosen file operation (see its header for the variables). */
export const FAULT_PRELOAD = join(REPO_ROOT, "test/support/fault-injection.mjs");
const SVC = join(REPO_ROOT, "bin/svc.js");

export interface Fault {
  /** Folders whose file operations count (the published tree and its .svc-tmp). */
  scope: string[];
  killAt?: number;
  killAfter?: string;
  killBefore?: string;
  stopAfter?: string;
  log?: string;
  now?: string;
}

export function faultEnv(fault: Fault): Record<string, string> {
  return {
    SVC_FAULT_SCOPE: fault.scope.join(":"),
    ...(fault.killAt ? { SVC_FAULT_KILL_AT: String(fault.killAt) } : {}),
    ...(fault.killAfter ? { SVC_FAULT_KILL_AFTER: fault.killAfter } : {}),
    ...(fault.killBefore ? { SVC_FAULT_KILL_BEFORE: fault.killBefore } : {}),
    ...(fault.stopAfter ? { SVC_FAULT_STOP_AFTER: fault.stopAfter } : {}),
    ...(fault.log ? { SVC_FAULT_LOG: fault.log } : {}),
    ...(fault.now ? { SVC_FAULT_NOW: fault.now } : {}),
  };
}

/** The published tree of a project root: records/ and site/ (transaction folders excluded). */
export function publishedFolders(root: string): string[] {
  return [join(root, "records"), join(root, "site"), join(root, ".svc-tmp")];
}

export interface CliRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function collect(child: ChildProcess): { out: () => string; err: () => string } {
  let out = "";
  let err = "";
  child.stdout?.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    err += d.toString();
  });
  return { out: () => out, err: () => err };
}

export interface SpawnOptions {
  cwd: string;
  env?: Record<string, string>;
  fault?: Fault;
}

/** `svc <args>` as its own process, with the fault preload when given. */
export function spawnSvc(args: string[], options: SpawnOptions): ChildProcess {
  // The portal under test is the embedded one (its data-folder lock is part of what is tested): CI's
  // DATABASE_URL, meant for the store tests, must not switch these processes to PostgreSQL.
  const { DATABASE_URL: _postgres, ...inherited } = process.env;
  return spawn(process.execPath, [...(options.fault ? ["--import", FAULT_PRELOAD] : []), SVC, ...args], {
    cwd: options.cwd,
    env: { ...inherited, ...options.env, ...(options.fault ? faultEnv(options.fault) : {}) },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

export function runSvc(args: string[], options: SpawnOptions): Promise<CliRun> {
  const child = spawnSvc(args, options);
  const output = collect(child);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) =>
      resolve({ code, signal, stdout: output.out(), stderr: output.err() }),
    );
  });
}

export interface ServeRun {
  child: ChildProcess;
  origin: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves when the process has exited (killed or stopped). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, as a service manager stops it; resolves with its exit. */
  stop: () => Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `svc serve --port 0` as its own process; resolves once it prints its banner (it is serving). */
export async function startServe(
  root: string,
  options: { env?: Record<string, string>; fault?: Fault; timeoutMs?: number } = {},
): Promise<ServeRun> {
  const child = spawnSvc(["serve", "--port", "0", "--root", root], { cwd: root, ...options });
  const output = collect(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  let done = false;
  void exited.then(() => {
    done = true;
  });
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let origin = "";
  while (!origin) {
    origin = /svc portal on (http:\/\/\S+)/.exec(output.out())?.[1] ?? "";
    if (origin) break;
    if (done || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`svc serve did not start:\n${output.out()}\n${output.err()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    child,
    origin,
    stdout: output.out,
    stderr: output.err,
    exited,
    stop: () => {
      if (!done) child.kill("SIGTERM");
      return exited;
    },
  };
}

/** sha256 of every file under records/ and site/ of root (relative paths), transaction folders excluded. */
export function treeHashes(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const name of readdirSync(dir).sort()) {
      if (name === ".svc-tmp") continue;
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
      else out[relative(root, full)] = createHash("sha256").update(readFileSync(full)).digest("hex");
    }
  };
  walk(join(root, "records"));
  walk(join(root, "site"));
  return out;
}

export function copyTree(from: string, to: string): void {
  cpSync(from, to, { recursive: true });
}

/** Runs tasks with at most `width` at a time (children run in parallel; the machine has two cores). */
export async function pool<T>(
  items: readonly T[],
  width: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next++]!;
        try {
          await task(item);
        } catch (error) {
          errors.push(error);
        }
      }
    }),
  );
  if (errors.length > 0) throw errors[0];
}
