import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { checkSignedCatalog } from "../../src/distribution/signature-check.ts";
import { readAllReleases } from "./records.ts";
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
  /** Count operations only once this file exists (see the preload's SVC_FAULT_ARM_FILE). */
  armFile?: string;
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
    ...(fault.armFile ? { SVC_FAULT_ARM_FILE: fault.armFile } : {}),
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

/** How long a crash test waits for one child to exit before it gives up on it (and kills it). */
export const EXIT_TIMEOUT_MS = 120_000;

/**
 * `exited`, waited for at most timeoutMs: past it the child is SIGKILLed and the promise rejects
 * naming `what` (a kill point the process never reached, a stop it ignored), so no crash test waits
 * forever on a process that was never going to exit.
 */
export function exitWithin<T>(
  child: ChildProcess,
  exited: Promise<T>,
  what: string,
  timeoutMs = EXIT_TIMEOUT_MS,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${what}: the process had not exited after ${timeoutMs / 1000} s (killed now)`));
    }, timeoutMs);
  });
  return Promise.race([exited, timeout]).finally(() => clearTimeout(timer));
}

/** `svc <args>` to its exit, at most timeoutMs (see exitWithin). */
export function runSvc(args: string[], options: SpawnOptions & { timeoutMs?: number }): Promise<CliRun> {
  const child = spawnSvc(args, options);
  const output = collect(child);
  const exited = new Promise<CliRun>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) =>
      resolve({ code, signal, stdout: output.out(), stderr: output.err() }),
    );
  });
  return exitWithin(
    child,
    exited,
    `svc ${args.join(" ")}${options.fault ? ` (fault ${JSON.stringify(faultEnv(options.fault))})` : ""}`,
    options.timeoutMs,
  );
}

export interface ServeRun {
  child: ChildProcess;
  origin: string;
  stdout: () => string;
  stderr: () => string;
  /** Resolves when the process has exited (killed or stopped). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * Its exit, waited for at most timeoutMs (see exitWithin): for a process the fault preload is to
   * kill, a kill point it never reaches fails the test with a message instead of hanging it.
   */
  exitedWithin: (timeoutMs?: number) => Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, as a service manager stops it; resolves with its exit (at most EXIT_TIMEOUT_MS). */
  stop: () => Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `svc serve --port 0` as its own process; resolves once it prints its banner (it is serving). */
export async function startServe(
  root: string,
  options: { env?: Record<string, string>; fault?: Fault; timeoutMs?: number; args?: string[] } = {},
): Promise<ServeRun> {
  const child = spawnSvc(["serve", "--port", "0", "--root", root, ...(options.args ?? [])], {
    cwd: root,
    ...options,
  });
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
    exitedWithin: (timeoutMs) =>
      exitWithin(
        child,
        exited,
        `svc serve on ${origin}${options.fault ? ` (fault ${JSON.stringify(faultEnv(options.fault))})` : ""}\n${output.err()}`,
        timeoutMs,
      ),
    stop: () => {
      if (!done) child.kill("SIGTERM");
      return exitWithin(child, exited, `svc serve on ${origin}, stopped with SIGTERM`);
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

/**
 * treeHashes without the signed metadata (its timestamps follow each signing's clock) and the
 * contract documents no publication touches (rendered from the checkout's schemas and endpoint
 * table, which other work in the same checkout may change between two processes of one run).
 */
export function contentHashes(root: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(treeHashes(root)).filter(([path]) => !UNTOUCHED.some((prefix) => path.startsWith(prefix))),
  );
}
const UNTOUCHED = ["site/tuf/", "site/api/v1/schemas/", "site/api/v1/publishing/"];

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

interface RecordLike {
  modId: string;
  version: string;
  fileName: string;
  sha256: string;
  packageSizeBytes: number;
  status: "published" | "superseded" | "hidden";
}

const readJson = <T>(path: string): T => JSON.parse(readFileSync(path, "utf8")) as T;

/** Every release record under root/records/mods (any status). */
export function readRecords(root: string): RecordLike[] {
  return readAllReleases(root);
}

/** Folders with nothing in them under site/downloads: what an undone artifact link must not leave. */
export function emptyFolders(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    const names = readdirSync(dir);
    if (names.length === 0) out.push(relative(root, dir));
    for (const name of names) {
      const full = join(dir, name);
      if (statSync(full).isDirectory()) walk(full);
    }
  };
  const downloads = join(root, "site", "downloads");
  if (existsSync(downloads)) walk(downloads);
  return out.sort();
}

/** The site read as a mirror over HTTP would serve it, from the files themselves (no server). */
export function siteFetch(siteDir: string, baseUrl: string): typeof fetch {
  const base = baseUrl.replace(/\/+$/, "");
  return (async (input: string | URL | Request) => {
    const url = input instanceof Request ? input.url : String(input);
    const path = url.startsWith(`${base}/`)
      ? decodeURIComponent(url.slice(base.length + 1).split("?")[0]!)
      : "";
    const full = join(siteDir, path);
    if (!path || path.split("/").includes("..") || !existsSync(full) || statSync(full).isDirectory())
      return new Response("not found", { status: 404 });
    return new Response(readFileSync(full), { status: 200 });
  }) as typeof fetch;
}

/**
 * An independent look at a published tree (it reads the files, not through the code under test):
 * every record's artifact is a file with its sha256 and size; the catalog, the mods index and each
 * mod's detail and versions documents list exactly the visible versions, the newest as latest; no
 * empty folder under site/downloads; and, on a signed site, a manager's verification passes.
 * Returns one line per problem.
 */
export async function treeProblems(root: string): Promise<string[]> {
  const problems: string[] = [];
  const site = join(root, "site");
  const records = readRecords(root);
  for (const r of records) {
    const artifact = join(site, "downloads", "mods", r.modId, r.version, r.fileName);
    if (!existsSync(artifact) || !statSync(artifact).isFile()) {
      problems.push(`${r.modId}@${r.version}: artifact missing`);
      continue;
    }
    const bytes = readFileSync(artifact);
    if (bytes.length !== r.packageSizeBytes || createHash("sha256").update(bytes).digest("hex") !== r.sha256)
      problems.push(`${r.modId}@${r.version}: artifact is not its recorded bytes`);
  }
  const visible = new Map<string, string[]>();
  for (const r of records.filter((r) => r.status !== "hidden"))
    visible.set(r.modId, [...(visible.get(r.modId) ?? []), r.version]);
  const byNewest = (versions: string[]) =>
    [...versions].sort((a, b) => b.localeCompare(a, "en", { numeric: true }));
  const api = join(site, "api", "v1");
  const catalog = readJson<{
    mods: Array<{ id: string; latestVersion: string; versions: Array<{ version: string }> }>;
  }>(join(api, "catalog.json"));
  const index = readJson<{ mods: Array<{ id: string; latestVersion: string }> }>(
    join(api, "mods", "index.json"),
  );
  const mods = [...visible.keys()].sort();
  const listed = (entries: Array<{ id: string }>) => entries.map((m) => m.id).sort();
  if (JSON.stringify(listed(catalog.mods)) !== JSON.stringify(mods))
    problems.push(`catalog lists ${listed(catalog.mods)}, the records make ${mods} visible`);
  if (JSON.stringify(listed(index.mods)) !== JSON.stringify(mods))
    problems.push(`mods/index.json lists ${listed(index.mods)}, the records make ${mods} visible`);
  for (const [modId, versions] of visible) {
    const expected = byNewest(versions);
    const entry = catalog.mods.find((m) => m.id === modId);
    if (entry && (entry.latestVersion !== expected[0] || entry.versions[0]?.version !== expected[0]))
      problems.push(`catalog: ${modId} latest ${entry.latestVersion}, the records say ${expected[0]}`);
    for (const name of ["index.json", "versions.json"]) {
      const file = join(api, "mods", modId, name);
      if (!existsSync(file)) {
        problems.push(`${modId}/${name} missing`);
        continue;
      }
      const doc = readJson<{ latestVersion: string; versions: Array<{ version: string }> }>(file);
      const got = byNewest(doc.versions.map((v) => v.version));
      if (JSON.stringify(got) !== JSON.stringify(expected) || doc.latestVersion !== expected[0])
        problems.push(
          `${modId}/${name} lists ${got} (latest ${doc.latestVersion}), the records say ${expected}`,
        );
    }
  }
  for (const modId of new Set(records.map((r) => r.modId))) {
    if (!visible.has(modId) && existsSync(join(api, "mods", modId, "versions.json")))
      problems.push(`${modId} has no visible version but still has documents`);
  }
  for (const folder of emptyFolders(root)) problems.push(`empty folder ${folder}`);
  if (existsSync(join(site, "tuf", "root.json"))) {
    const { baseUrl } = readJson<{ baseUrl: string }>(join(root, "portal.config.json"));
    const signature = await checkSignedCatalog(baseUrl, siteFetch(site, baseUrl));
    if (signature.state !== "verified") problems.push(`signed metadata: ${JSON.stringify(signature)}`);
  }
  return problems;
}

/**
 * The operations of an SVC_FAULT_LOG that belong to the operation under test: without the release
 * of the checkout lock `svc serve` holds (.svc-tmp/portal.lock, unlinked when the portal stops, which
 * a reference run logs after the request it armed the preload for). A kill point there is never
 * reached while the request runs. The lock's operations come only after the request's (it is taken
 * at start-up, before the preload is armed), so the numbers of the lines kept are unchanged; one
 * before another operation would renumber them, and throws.
 */
export function readOperations(log: string): string[] {
  const lines = readFileSync(log, "utf8").trim().split("\n").filter(Boolean);
  const isLock = (op: string) => op.includes("/.svc-tmp/portal.lock");
  const kept = lines.filter((op) => !isLock(op));
  if (lines.slice(0, kept.length).some(isLock))
    throw new Error(`${log}: a portal.lock operation comes before the operation under test ends`);
  return kept;
}

/** The phase of a publication an operation (a line of SVC_FAULT_LOG) belongs to. */
function phaseOf(op: string): string {
  if (/\/txn-\S+ -> .*\/commit-/.test(op)) return "commit point";
  if (op.includes("/commit-")) return "roll-forward";
  if (op.includes("/site/tuf/")) return "signing";
  if (op.includes("signing-owed")) return "signing note";
  if (op.includes("/txn-") || op.includes("/downloads/")) return "prepare";
  if (op.includes("publish.lock")) return "lock";
  if (op.includes("portal.lock")) return "portal lock";
  return "other";
}

/**
 * Kill points that stand for a whole operation log (1-based): the first and last operation of each
 * phase (lock, prepare, signing note, commit point, roll-forward, signing, release), and the one
 * just after the commit point. Operations inside a phase repeat one kind of step on other files.
 * `from`: only points at or after it. SVC_CRASH_POINTS=all takes every operation instead.
 */
export function phasePoints(operations: readonly string[], from = 1): number[] {
  if (process.env.SVC_CRASH_POINTS === "all") return operations.map((_, i) => i + 1).filter((n) => n >= from);
  const points = new Set<number>();
  operations.forEach((op, i) => {
    const phase = phaseOf(op);
    // The lock of the checkout a portal holds is released at its stop, not by the operation under test.
    if (phase === "portal lock") return;
    if (i === 0 || phaseOf(operations[i - 1]!) !== phase) points.add(i + 1);
    if (i === operations.length - 1 || phaseOf(operations[i + 1]!) !== phase) points.add(i + 1);
    if (phase === "commit point") points.add(i + 2);
  });
  return [...points].filter((n) => n >= from && n <= operations.length).sort((a, b) => a - b);
}
