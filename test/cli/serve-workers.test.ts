// `svc serve --workers N`: N serving processes on one port, sharing PostgreSQL and the site; the
// primary holds the locks and runs the start-up work and the background jobs once. PGlite is one
// process's database, so --workers above 1 without DATABASE_URL is refused before anything starts.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { runSvc, startServe } from "../support/crash.ts";
import { tempProject } from "../support/temp-project.ts";

const DATABASE_URL = process.env.DATABASE_URL?.trim() || null;
if (!DATABASE_URL && process.env.CI === "true") {
  throw new Error("DATABASE_URL is required for the svc serve --workers test in CI (source .ci/postgres.sh)");
}

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

/** A fresh database of its own on the PostgreSQL server DATABASE_URL names, and its URL. */
async function freshDatabase(url: string): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `svc_workers_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const own = new URL(url);
  own.pathname = `/${name}`;
  return {
    url: own.toString(),
    drop: async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

/** The pid of the process (among pids) holding the loopback TCP socket with this local port (Linux /proc). */
function pidOfLocalPort(port: number, pids: string[]): string | null {
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    if (!existsSync(table)) continue;
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      if (local && Number.parseInt(local.split(":")[1] ?? "", 16) === port) inodes.add(fields[9] ?? "");
    }
  }
  for (const pid of pids) {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      let target = "";
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode && inodes.has(inode)) return pid;
    }
  }
  return null;
}

/**
 * Which of pids used the database in the next ms while nobody sends a request: PostgreSQL's
 * pg_stat_activity gives every connection's client port and when its state last changed (each
 * statement moves it), and the port names the process. Only background work talks to the database
 * then, and the validation worker polls its queue every second.
 */
async function busyWithoutRequests(databaseUrl: string, pids: string[], ms: number): Promise<Set<string>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const first = new Map<number, string>();
  const busy = new Set<number>();
  try {
    for (let round = 0, end = Date.now() + ms; Date.now() < end; round++) {
      const { rows } = await client.query<{ client_port: number; changed: string }>(
        "SELECT client_port, state_change::text AS changed FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND client_port IS NOT NULL",
      );
      for (const row of rows) {
        const seen = first.get(row.client_port);
        if (seen === undefined) {
          first.set(row.client_port, row.changed);
          if (round > 0) busy.add(row.client_port);
        } else if (seen !== row.changed) busy.add(row.client_port);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    await client.end();
  }
  return new Set([...busy].map((port) => pidOfLocalPort(port, pids) ?? `unknown port ${port}`));
}

describe("svc serve --workers", () => {
  it("refuses more than one worker without DATABASE_URL (workers_need_database), taking no lock", async () => {
    root = tempProject().root;
    const run = await runSvc(["serve", "--port", "0", "--root", root, "--workers", "2"], { cwd: root });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("svc serve: workers_need_database: svc serve --workers 2 needs PostgreSQL");
    expect(run.stderr).not.toContain("internal error");
    expect(existsSync(join(root, ".svc-tmp", "portal.lock"))).toBe(false);
    expect(existsSync(join(root, ".data"))).toBe(false);
    const bad = await runSvc(["serve", "--port", "0", "--root", root, "--workers", "0"], { cwd: root });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--workers must be 1-256 or auto");
  }, 120_000);

  // Listed only where PostgreSQL is given (CI always gives it: the check above throws without it).
  const withPostgres = DATABASE_URL ? [DATABASE_URL] : [];
  for (const url of withPostgres) {
    it("serves from two worker processes on one port; the primary alone holds the lock and the background work", async () => {
      root = tempProject().root;
      const database = await freshDatabase(url);
      try {
        const portal = await startServe(root, {
          args: ["--workers", "2"],
          env: { DATABASE_URL: database.url },
        });
        try {
          const line =
            /workers {5}2 serving processes \(pids (\d+), (\d+)\); locks, recovery, site and background jobs in pid (\d+)/.exec(
              portal.stdout(),
            );
          expect(line, portal.stdout()).not.toBeNull();
          const [, a, b, primary] = line!;
          expect(primary).toBe(String(portal.child.pid));
          expect(new Set([a, b, primary]).size).toBe(3);
          // The banner (and the start-up work it reports) is printed once, by the primary.
          expect(portal.stdout().match(/svc portal on /g)).toHaveLength(1);
          const seen = new Set<string>();
          for (let i = 0; i < 40 && seen.size < 2; i++) {
            const health = await fetch(`${portal.origin}/api/v1/backend/health`);
            expect(health.status).toBe(200);
            expect(((await health.json()) as { database: string }).database).toBe("postgres");
            seen.add(health.headers.get("x-svc-worker") ?? "none");
          }
          expect([...seen].sort()).toEqual([a, b].sort());
          // Between requests only the primary talks to the database: its validation worker polls the
          // queue; the workers run no background job.
          const busy = await busyWithoutRequests(database.url, [primary!, a!, b!], 3500);
          expect([...busy]).toEqual([primary]);
          // Both workers serve the site the primary built once.
          const catalog = await fetch(`${portal.origin}/api/v1/catalog`);
          expect(catalog.status).toBe(200);
          // One portal per checkout still: the primary holds the checkout lock.
          expect(existsSync(join(root, ".svc-tmp", "portal.lock"))).toBe(true);
          const second = await runSvc(["serve", "--port", "0", "--root", root], {
            cwd: root,
            env: { DATABASE_URL: database.url },
          });
          expect(second.code).toBe(1);
          expect(second.stderr).toContain("site_locked");
        } finally {
          expect(await portal.stop()).toEqual({ code: 0, signal: null });
        }
        expect(portal.stderr()).not.toContain("internal error");
      } finally {
        await database.drop();
      }
    }, 120_000);
  }
});
