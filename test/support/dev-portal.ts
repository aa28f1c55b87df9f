import type { ChildProcess } from "node:child_process";
import { spawnSvc } from "./crash.ts";

export interface DevPortal {
  child: ChildProcess;
  origin: string;
  output: () => string;
  /** Resolves with the exit code once the process has ended. */
  exited: Promise<number | null>;
}

/** `svc serve --dev --no-example` on a free port (as `npm start` runs it); resolves once it serves. */
export async function startDevPortal(root: string, env: Record<string, string> = {}): Promise<DevPortal> {
  const child = spawnSvc(["serve", "--dev", "--no-example", "--port", "0", "--root", root], {
    cwd: root,
    env,
  });
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const deadline = Date.now() + 60_000;
  for (;;) {
    const origin = /svc portal on (http:\/\/\S+)/.exec(out)?.[1];
    if (origin) return { child, origin, output: () => out, exited };
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`svc serve --dev did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** SIGTERM, as Ctrl-C stops npm start; resolves with the exit code. */
export async function stopDevPortal(portal: DevPortal): Promise<number | null> {
  if (portal.child.exitCode === null && portal.child.signalCode === null) portal.child.kill("SIGTERM");
  return portal.exited;
}
