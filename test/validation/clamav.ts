import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClamdScanner } from "../../src/validation/antivirus/clamd.ts";

/**
 * Real ClamAV for tests: a signature database made at test time (one body signature for the EICAR
 * test string), a clamd with its own config and socket in a temp folder, run in the foreground.
 * The EICAR string is assembled at runtime so the repository never contains it.
 */
export function eicar(): Buffer {
  const head = ["X5O!P%@AP", "[4\\PZX54(P^)7CC)7}$"].join("");
  const middle = ["EICAR", "STANDARD", "ANTIVIRUS", "TEST", "FILE!"].join("-");
  const tail = "*H+H$".split("").reverse().join("");
  return Buffer.from(head + middle + tail, "latin1");
}

export const SIGNATURE_NAME = "Svc-Test-Eicar";

function locate(binary: string, fallbacks: string[]): string | null {
  for (const candidate of fallbacks) if (existsSync(candidate)) return candidate;
  try {
    return execFileSync("sh", ["-c", `command -v ${binary}`], { encoding: "utf8" }).trim() || null;
  } catch {
    return null;
  }
}

export const clamscanPath = locate("clamscan", ["/usr/bin/clamscan"]);
export const clamdPath = locate("clamd", ["/usr/sbin/clamd", "/usr/bin/clamd"]);

/**
 * In CI a missing scanner is a failure, never a skip: true when the suite may skip (binary absent,
 * not CI); throws when CI lacks the binary.
 */
export function shouldSkip(
  binary: string | null,
  what: string,
  env: NodeJS.ProcessEnv = process.env,
): boolean {
  if (binary) return false;
  if (env.CI === "true") throw new Error(`${what} is required in CI but was not found`);
  return true;
}

export function makeSignatureDatabase(dir: string): string {
  const db = join(dir, "db");
  mkdirSync(db, { recursive: true });
  writeFileSync(join(db, "svc-test.ndb"), `${SIGNATURE_NAME}:0:*:${eicar().toString("hex")}\n`);
  return db;
}

export interface RunningClamd {
  socket: string;
  tcpPort: number | null;
  dir: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function startClamd(
  options: {
    tcpPort?: number;
    streamMaxLength?: string;
    /** false: a daemon that skips what exceeds its limits silently (clamd's own default). */
    alertExceedsMax?: boolean;
    maxFiles?: number;
    /** Extra clamd.conf lines (the benchmark turns the clean-file cache off with DisableCache yes). */
    extraConfig?: string[];
  } = {},
): Promise<RunningClamd> {
  if (!clamdPath) throw new Error("clamd not installed");
  const dir = mkdtempSync(join(tmpdir(), "svc-clamd-"));
  const db = makeSignatureDatabase(dir);
  mkdirSync(join(dir, "tmp"));
  const socket = join(dir, "clamd.sock");
  const config = join(dir, "clamd.conf");
  writeFileSync(
    config,
    [
      "Foreground yes",
      `LocalSocket ${socket}`,
      ...(options.tcpPort ? [`TCPSocket ${options.tcpPort}`, "TCPAddr 127.0.0.1"] : []),
      `DatabaseDirectory ${db}`,
      `TemporaryDirectory ${join(dir, "tmp")}`,
      `LogFile ${join(dir, "clamd.log")}`,
      `PidFile ${join(dir, "clamd.pid")}`,
      // Size limits cover the 100 MiB package cap, and what exceeds them alerts instead of passing.
      `StreamMaxLength ${options.streamMaxLength ?? "110M"}`,
      "MaxFileSize 110M",
      "MaxScanSize 400M",
      `MaxFiles ${options.maxFiles ?? 30000}`,
      `AlertExceedsMax ${options.alertExceedsMax === false ? "no" : "yes"}`,
      "MaxThreads 4",
      "SelfCheck 0",
      ...(options.extraConfig ?? []),
      "",
    ].join("\n"),
  );
  const child = spawn(clamdPath, ["--config-file", config], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const deadline = Date.now() + 30_000;
  // The socket file appears at bind(), before clamd listens: wait for a PONG, not for the file.
  const probe = createClamdScanner({ kind: "unix", path: socket }, { timeoutMs: 2000 });
  while (!(existsSync(socket) && (await probe.ping()))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      const log = existsSync(join(dir, "clamd.log")) ? readFileSync(join(dir, "clamd.log"), "utf8") : "";
      child.kill("SIGKILL");
      throw new Error(`clamd did not start: ${stderr}\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    socket,
    tcpPort: options.tcpPort ?? null,
    dir,
    process: child,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGTERM");
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) child.kill("SIGKILL");
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
