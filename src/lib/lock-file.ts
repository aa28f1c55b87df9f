import { randomBytes } from "node:crypto";
import {
  linkSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { hostname } from "node:os";

/**
 * Exclusive lock files, shared by the publish lock (one writer of the published tree) and the data
 * folder lock (one process per PGlite folder). Node has no flock/fcntl without a native addon, so a
 * lock is a file created atomically (written under a private name, then link(2)ed to the lock path:
 * link fails with EEXIST, and the lock never exists half-written). It names its holder: pid, host,
 * start time and what it is for.
 *
 * A holder is dead when it ran on this host and its pid is gone, or the pid now belongs to another
 * process (pid reuse, e.g. a container restarted as pid 1), or the pid is this process's own but this
 * process does not hold the lock (a previous life). Pid reuse is told exactly: the lock records the
 * holder's start time in clock ticks since boot and the boot id, both from /proc, and a process with
 * that pid and another start tick (or on another boot) is not the holder. Wall-clock time is never
 * compared with /proc's boot-relative time: they drift apart by seconds on a VM whose clock was
 * stepped, which once made a stopped but live holder look dead. A holder on another host is always
 * taken to be alive: we cannot see its processes.
 */
export interface LockHolder {
  pid: number;
  host: string;
  startedAt: string;
  purpose: string;
  token: string;
  /** The holder's start time in clock ticks since boot (/proc/PID/stat field 22), where known. */
  startTicks?: number;
  /** /proc/sys/kernel/random/boot_id when the lock was taken, where known. */
  bootId?: string;
}

export type LockAttempt = { ok: true; release: () => void } | { ok: false; holder: LockHolder | null };

/** Tokens of the locks this process holds: a lock with our pid and another token is stale. */
const held = new Set<string>();

export function describeHolder(holder: LockHolder | null): string {
  if (!holder) return "an unknown holder";
  return `pid ${holder.pid} on ${holder.host}${holder.purpose ? ` (${holder.purpose})` : ""} since ${holder.startedAt}`;
}

function parseHolder(text: string): LockHolder | null {
  try {
    const value = JSON.parse(text) as Partial<LockHolder>;
    if (typeof value.pid === "number" && typeof value.token === "string") {
      return {
        pid: value.pid,
        host: String(value.host ?? ""),
        startedAt: String(value.startedAt ?? ""),
        purpose: String(value.purpose ?? ""),
        token: value.token,
        ...(typeof value.startTicks === "number" ? { startTicks: value.startTicks } : {}),
        ...(typeof value.bootId === "string" ? { bootId: value.bootId } : {}),
      };
    }
  } catch {
    // The format before this one: "pid token iso-time".
    const [pid, token, startedAt] = text.trim().split(" ");
    if (pid && /^\d+$/.test(pid))
      return {
        pid: Number(pid),
        host: hostname(),
        startedAt: startedAt ?? "",
        purpose: "",
        token: token ?? "",
      };
  }
  return null;
}

/** A process's start time in clock ticks since boot (/proc/PID/stat field 22); null without /proc. */
function processStartTicks(pid: number | "self"): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields count from after the parenthesised command name (which may contain spaces).
    const ticks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
    return Number.isFinite(ticks) ? ticks : null;
  } catch {
    return null;
  }
}

function bootId(): string | null {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim() || null;
  } catch {
    return null;
  }
}

/** When a process started (ms since the epoch), from /proc; null where there is no /proc. */
function processStartMs(pid: number): number | null {
  try {
    const bootSeconds = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))?.[1]);
    const ticks = processStartTicks(pid);
    // USER_HZ is 100 on every Linux architecture Node runs on.
    return Number.isFinite(bootSeconds) && ticks !== null ? bootSeconds * 1000 + ticks * 10 : null;
  } catch {
    return null;
  }
}

const SELF_START_TICKS = processStartTicks("self");
const BOOT_ID = bootId();

export function holderAlive(holder: LockHolder): boolean {
  if (holder.host && holder.host !== hostname()) return true;
  if (holder.pid === process.pid) return held.has(holder.token);
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (holder.startTicks !== undefined && holder.bootId !== undefined) {
    const ticks = processStartTicks(holder.pid);
    // Without /proc we cannot tell: the pid is alive, so the holder is taken to be.
    if (ticks === null || BOOT_ID === null) return true;
    return holder.bootId === BOOT_ID && ticks === holder.startTicks;
  }
  // A lock written before start ticks were recorded: compare wall-clock times, generously.
  const started = processStartMs(holder.pid);
  const taken = Date.parse(holder.startedAt);
  // /proc's boot time has one-second resolution: allow two seconds before calling the pid reused.
  return started === null || !Number.isFinite(taken) || started <= taken + 2000;
}

/** A lock file that is empty or unreadable for this long was left by a crash between create and write. */
const UNREADABLE_STALE_MS = 10_000;

/**
 * One attempt to take the lock at path: ok with a release function, or the live holder. A lock of a
 * dead holder is taken over (moved aside first, so two processes cannot both remove it).
 */
export function tryLock(path: string, purpose: string): LockAttempt {
  const holder: LockHolder = {
    pid: process.pid,
    host: hostname(),
    startedAt: new Date().toISOString(),
    purpose,
    token: randomBytes(12).toString("hex"),
    ...(SELF_START_TICKS !== null && BOOT_ID !== null
      ? { startTicks: SELF_START_TICKS, bootId: BOOT_ID }
      : {}),
  };
  const text = `${JSON.stringify(holder)}\n`;
  for (let attempt = 0; attempt < 5; attempt++) {
    const temp = `${path}.${holder.token}`;
    writeFileSync(temp, text, { flag: "wx" });
    try {
      linkSync(temp, path);
      held.add(holder.token);
      return { ok: true, release: () => release(path, holder.token) };
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // ENOENT: a clean-up removed our private file between write and link (see removeLeftovers).
      if (code === "ENOENT") continue;
      if (code !== "EEXIST") throw error;
    } finally {
      rmSync(temp, { force: true });
    }
    let current: string;
    try {
      current = readFileSync(path, "utf8");
    } catch {
      continue; // released meanwhile
    }
    const other = parseHolder(current);
    if (other ? holderAlive(other) : !unreadableForLong(path)) return { ok: false, holder: other };
    takeOver(path, current);
  }
  return { ok: false, holder: null };
}

function unreadableForLong(path: string): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs > UNREADABLE_STALE_MS;
  } catch {
    return true;
  }
}

/** Removes a dead holder's lock only if the file moved aside is still that lock; puts back anything else. */
function takeOver(path: string, staleText: string): void {
  const aside = `${path}.stale-${randomBytes(6).toString("hex")}`;
  try {
    renameSync(path, aside);
  } catch {
    return; // someone else moved it first
  }
  let moved = "";
  try {
    moved = readFileSync(aside, "utf8");
  } catch {}
  if (moved !== staleText) {
    // A live lock taken between our read and our rename: restore it (unless yet another one appeared).
    try {
      linkSync(aside, path);
    } catch {}
  }
  unlinkSync(aside);
}

function release(path: string, token: string): void {
  held.delete(token);
  try {
    if (parseHolder(readFileSync(path, "utf8"))?.token === token) unlinkSync(path);
  } catch {
    // Already gone.
  }
}

/**
 * Removes the private files a crash left beside the lock at path (a holder's file written but not
 * yet linked, a dead lock moved aside but not yet removed). A live process keeps either for
 * microseconds, so only files older than a minute go. Call it while holding the lock.
 */
export function removeLeftovers(path: string): void {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(prefix)) continue;
    try {
      if (Date.now() - statSync(join(dir, name)).mtimeMs > 60_000) rmSync(join(dir, name), { force: true });
    } catch {
      // gone meanwhile
    }
  }
}

/** Waits (polling) until the lock is free or timeoutMs passed; resolves to the release function. */
export async function waitForLock(
  path: string,
  purpose: string,
  options: { timeoutMs: number; pollMs?: number },
): Promise<{ ok: true; release: () => void } | { ok: false; holder: LockHolder | null }> {
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const attempt = tryLock(path, purpose);
    if (attempt.ok || Date.now() > deadline) return attempt;
    await new Promise((resolve) => setTimeout(resolve, options.pollMs ?? 25));
  }
}
