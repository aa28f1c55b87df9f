/**
 * bench:api's `svc serve --workers N` (issue 27): the real command a user runs (bin/svc.js, a child
 * process with PostgreSQL) in a checkout of its own under the bench's folder. Once its primary has
 * built the (empty) site and the workers listen, the bench puts into that site the same files the
 * one-process portal serves: the artifact as a hard link (the same inode, so the same page cache
 * as nginx's copy) and the documents as written. The API key the bench made in the same database
 * is checked by the workers like any other (their credential cache misses once, then holds it).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, linkSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

const REPO = join(import.meta.dirname, "..", "..");

export interface WorkersPortal {
  port: number;
  /** The start-up banner's line naming the serving pids and the primary's ("" with one worker). */
  workersLine: string;
  stop(): Promise<void>;
}

export type SiteFile = { rel: string; linkFrom: string } | { rel: string; text: string };

export async function startWorkersPortal(options: {
  root: string;
  workers: number;
  databaseUrl: string;
  files: SiteFile[];
}): Promise<WorkersPortal> {
  const { root } = options;
  mkdirSync(join(root, "records"), { recursive: true });
  copyFileSync(join(REPO, "portal.config.json"), join(root, "portal.config.json"));
  const portal: ChildProcess = spawn(
    process.execPath,
    [join(REPO, "bin/svc.js"), "serve", "--port", "0", "--root", root, "--workers", String(options.workers)],
    {
      cwd: root,
      env: { ...process.env, DATABASE_URL: options.databaseUrl },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const exited = new Promise<void>((resolve) => portal.once("exit", () => resolve()));
  const stop = async () => {
    if (portal.exitCode !== null || portal.signalCode !== null) return;
    portal.kill("SIGTERM");
    const timer = setTimeout(() => portal.kill("SIGKILL"), 15_000);
    await exited;
    clearTimeout(timer);
  };
  let banner = "";
  let stderr = "";
  portal.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  try {
    const origin = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("svc serve --workers did not start in 60 s")), 60_000);
      portal.stdout!.on("data", (d: Buffer) => {
        banner += d.toString();
        const found = /svc portal on (http:\/\/\S+)/.exec(banner)?.[1];
        // One write, but a pipe may split it: wait for the banner's last fixed line.
        if (found && /\n {2}uploads {5}.*\n/.test(banner)) {
          clearTimeout(timer);
          resolve(found);
        }
      });
      portal.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`svc serve --workers exited with ${code}: ${stderr}`));
      });
    });
    const site = join(root, "site");
    for (const file of options.files) {
      const path = join(site, file.rel);
      mkdirSync(dirname(path), { recursive: true });
      if ("linkFrom" in file) linkSync(file.linkFrom, path);
      else writeFileSync(path, file.text, { mode: 0o644 });
    }
    const workersLine = /\n {2}workers {5}(.*)\n/.exec(banner)?.[1]?.trim() ?? "";
    return { port: Number(new URL(origin).port), workersLine, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
