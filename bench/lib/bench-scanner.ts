import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { clamdPath, clamscanPath, makeSignatureDatabase, startClamd } from "../../test/validation/clamav.ts";

export interface BenchScanner {
  describe: string;
  /** What `svc import` / `svc validate` take to scan with it. */
  cliArgs: string[];
  /** What the portal's settings take (parseSettings) to scan with it. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Real ClamAV with the test signature database (as bench:validate and the tests use): a clamd the
 * bench starts on a temp socket, a deployed portal's shape; without clamd, clamscan (it loads the
 * database on every scan, so it is slower). Null when neither is installed.
 */
export async function startBenchScanner(): Promise<BenchScanner | null> {
  if (clamdPath) {
    const clamd = await startClamd();
    return {
      describe: "clamd (started by the bench, test signature database)",
      cliArgs: ["--clamd", clamd.socket],
      env: { SVC_CLAMD: clamd.socket },
      stop: () => clamd.stop(),
    };
  }
  if (clamscanPath) {
    const dir = mkdtempSync(join(tmpdir(), "svc-bench-clamdb-"));
    const db = makeSignatureDatabase(dir);
    return {
      describe: "clamscan (test signature database; no clamd installed)",
      cliArgs: ["--clamscan-db", db],
      env: { SVC_CLAMSCAN: clamscanPath, SVC_CLAMAV_DATABASE: db },
      stop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  return null;
}
