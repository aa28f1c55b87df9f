import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AntivirusScanner, parseClamResult, type ScanItem, type ScanResult } from "./scanner.ts";

/**
 * The clamscan fallback. Exit codes: 0 no virus, 1 virus found, 2 error; anything else (or a
 * signal) is an error. clamscan loads its signature database on every run, so batches of entries
 * are written to a private temp folder under generated names (never archive names) and scanned in
 * one run.
 */
export interface ClamscanOptions {
  /** Signature database file or folder (clamscan -d); default: clamscan's own. */
  database?: string;
  timeoutMs?: number;
  /** Size limits passed to clamscan; they must cover the package cap so nothing is skipped. */
  maxBytes?: number;
  /** Files clamscan unpacks from one archive; above the policy's maxEntries (25,000) by default. */
  maxFiles?: number;
  /** Where batch temp folders go; default os.tmpdir(). */
  tempDir?: string;
}

interface RunOutcome {
  code: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  spawnError?: Error;
}

function runClamscan(
  binary: string,
  args: string[],
  stdin: Iterable<Uint8Array> | null,
  timeoutMs: number,
): Promise<RunOutcome> {
  return new Promise((resolve) => {
    const child = spawn(binary, args, { stdio: [stdin ? "pipe" : "ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let timedOut = false;
    let spawnError: Error | undefined;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.stdout?.on("data", (d: Buffer) => out.push(d));
    child.stderr?.on("data", (d: Buffer) => err.push(d));
    child.on("error", (e) => {
      spawnError = e;
    });
    if (stdin && child.stdin) {
      const input = child.stdin;
      input.on("error", () => {
        // clamscan may exit before reading everything (e.g. on a bad database); its exit code tells.
      });
      void (async () => {
        for (const chunk of stdin) {
          if (input.destroyed) return;
          if (!input.write(chunk)) await new Promise((ok) => input.once("drain", ok).once("close", ok));
        }
        input.end();
      })();
    }
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({
        code,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: Buffer.concat(err).toString("utf8"),
        timedOut,
        ...(spawnError ? { spawnError } : {}),
      });
    });
  });
}

export function createClamscanScanner(binary = "clamscan", options: ClamscanOptions = {}): AntivirusScanner {
  const timeoutMs = options.timeoutMs ?? 300_000;
  const limit = options.maxBytes ?? 110 * 1024 * 1024;
  const baseArgs = [
    "--no-summary",
    "--stdout",
    "--infected",
    // Size limits must alert, not skip: anything beyond them is reported as Heuristics.Limits.Exceeded.
    "--alert-exceeds-max=yes",
    `--max-filesize=${limit}`,
    `--max-scansize=${limit * 4}`,
    // clamscan's default of 10,000 would stop inside a package the policy allows (and alert on it).
    `--max-files=${options.maxFiles ?? 30_000}`,
    ...(options.database ? ["-d", options.database] : []),
  ];

  const failure = (outcome: RunOutcome): ScanResult | null => {
    if (outcome.spawnError) {
      return {
        status: "error",
        errorKind: "unreachable",
        message: `cannot run ${binary}: ${outcome.spawnError.message}`,
      };
    }
    if (outcome.timedOut)
      return {
        status: "error",
        errorKind: "timeout",
        message: `${binary} did not finish within ${timeoutMs} ms`,
      };
    if (outcome.code !== 0 && outcome.code !== 1) {
      const why = outcome.stderr.trim().split("\n").slice(-3).join(" | ") || `exit code ${outcome.code}`;
      return { status: "error", errorKind: "scanner", message: `${binary} failed: ${why}` };
    }
    return null;
  };

  return {
    description: `clamscan ${binary}${options.database ? ` -d ${options.database}` : ""}`,
    // This adapter passes --alert-exceeds-max=yes on every run; clamscan reads no config file for it.
    alertsOnLimits: async () => true,
    scan(name, bytes) {
      return this.scanStream!(name, [bytes]);
    },
    async scanStream(_name, chunks) {
      const outcome = await runClamscan(binary, [...baseArgs, "-"], chunks, timeoutMs);
      const failed = failure(outcome);
      if (failed) return failed;
      if (outcome.code === 0) return { status: "clean" };
      const line = outcome.stdout.split("\n").find((l) => l.startsWith("stdin:"));
      const parsed = line ? parseClamResult(line.slice("stdin:".length)) : null;
      return parsed?.status === "infected" ? parsed : { status: "infected", signature: "unknown" };
    },
    async scanBatch(items: ScanItem[]) {
      if (items.length === 0) return [];
      const dir = await mkdtemp(join(options.tempDir ?? tmpdir(), "svc-scan-"));
      try {
        const files = items.map((_, i) => join(dir, `entry-${String(i).padStart(6, "0")}.bin`));
        await Promise.all(items.map((item, i) => writeFile(files[i]!, item.bytes, { mode: 0o600 })));
        const outcome = await runClamscan(binary, [...baseArgs, "--", ...files], null, timeoutMs);
        const failed = failure(outcome);
        if (failed) return items.map(() => failed);
        const verdicts = new Map<string, ScanResult>();
        for (const line of outcome.stdout.split("\n")) {
          const at = line.indexOf(": ");
          if (at > 0) verdicts.set(line.slice(0, at), parseClamResult(line.slice(at + 2)));
        }
        return files.map((file): ScanResult => {
          const verdict = verdicts.get(file);
          if (verdict) return verdict;
          // --infected prints only hits; a clean exit with no line for this file is a clean file.
          return outcome.code === 0 || verdicts.size > 0
            ? { status: "clean" }
            : { status: "error", errorKind: "scanner", message: "no verdict" };
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
