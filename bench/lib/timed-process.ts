import { spawn } from "node:child_process";
import { existsSync } from "node:fs";

/**
 * A command timed from spawn to exit, as a user runs it. Peak RSS and CPU time come from
 * `/usr/bin/time -v` (the kernel's accounting of the finished child); without it they are null.
 * Asynchronous on purpose: a bench may serve the very files the child fetches from its own
 * process (bench:growth's counting server), which a synchronous spawn would starve.
 */
export interface ProcessTiming {
  seconds: number;
  /** user + system CPU seconds of the child, or null without /usr/bin/time. */
  cpuSeconds: number | null;
  maxRssKiB: number | null;
  status: number | null;
  stdout: string;
  stderr: string;
}

const TIME = existsSync("/usr/bin/time") ? "/usr/bin/time" : null;

export function hasTimeCommand(): boolean {
  return TIME !== null;
}

export function timeProcess(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<ProcessTiming> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const child = TIME
      ? spawn(TIME, ["-v", command, ...args], { cwd: options.cwd, env: options.env ?? process.env })
      : spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on("data", (d: Buffer) => out.push(d));
    child.stderr.on("data", (d: Buffer) => err.push(d));
    child.on("error", reject);
    child.on("close", (status) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      let stderr = Buffer.concat(err).toString("utf8");
      let maxRssKiB: number | null = null;
      let cpuSeconds: number | null = null;
      if (TIME) {
        // time -v appends its report to the child's stderr; it is cut off so callers see the child's own.
        const at = stderr.lastIndexOf("\tCommand being timed:");
        const report = at >= 0 ? stderr.slice(at) : "";
        if (at >= 0) stderr = stderr.slice(0, at);
        const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(report);
        const user = /User time \(seconds\): ([\d.]+)/.exec(report);
        const system = /System time \(seconds\): ([\d.]+)/.exec(report);
        maxRssKiB = rss ? Number(rss[1]) : null;
        cpuSeconds = user && system ? Number(user[1]) + Number(system[1]) : null;
        // time -v exits with the child's status, or 128+signal when it was killed.
      }
      resolve({
        seconds,
        cpuSeconds,
        maxRssKiB,
        status,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr,
      });
    });
  });
}
