/**
 * ClamAV signatures for the publish job, kept between runs in an Actions cache. ClamAV's CDN answers
 * 429 to cloud addresses that download too often, and freshclam then keeps a cool-down (in its
 * freshclam.dat, inside the database folder) during which it exits 0 without updating anything. So:
 *
 * - one scheduled job refreshes the cached folder (refreshSignatures): freshclam once, at most every
 *   `refreshHours`, against the CDN or a mirror the operator names; the folder is saved to the cache
 *   only when freshclam confirmed it current, and a stamp in it records when;
 * - the publish job only restores the newest cached folder and reads the stamp (signatureStatus):
 *   signatures confirmed within `maxAgeHours` are used as they are, whatever the CDN says now;
 *   older ones, or none, make the scanner unavailable, so antivirus_scan cannot pass and the
 *   publication is refused retryably (a receipt on the pull request), never a failed job.
 */
import { spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { writeFileAtomic } from "../lib/atomic-write.ts";

/** The stamp's file name inside the signature folder (cached with it). */
export const SIGNATURE_STAMP = "svc-signatures.json";

/** Database files clamscan loads (freshclam.dat and the stamp are not signatures). */
const DATABASE_FILE =
  /\.(cvd|cld|cud|ndb|hdb|hsb|mdb|msb|ldb|ndu|ldu|idb|cdb|ftm|yar|yara|pdb|gdb|wdb|ign2?|fp|sfp|info|cfg|cat|crb|imp|hdu|hsu|mdu|msu)$/;

export interface SignatureStatus {
  usable: boolean;
  /** When freshclam last confirmed the folder current; null when it never did. */
  confirmedAt: string | null;
  ageHours: number | null;
  /** Why the signatures cannot be used (null when usable). */
  reason: string | null;
}

function readStamp(dir: string): { confirmedAt: string; source: string } | null {
  try {
    const value = JSON.parse(readFileSync(join(dir, SIGNATURE_STAMP), "utf8")) as Record<string, unknown>;
    if (typeof value.confirmedAt !== "string" || Number.isNaN(Date.parse(value.confirmedAt))) return null;
    return { confirmedAt: value.confirmedAt, source: String(value.source ?? "") };
  } catch {
    return null;
  }
}

function hasDatabase(dir: string): boolean {
  try {
    return readdirSync(dir).some((name) => DATABASE_FILE.test(name));
  } catch {
    return false;
  }
}

/** Whether the folder holds signatures confirmed current within maxAgeHours. */
export function signatureStatus(dir: string, maxAgeHours: number, now: Date = new Date()): SignatureStatus {
  const unusable = (reason: string, confirmedAt: string | null = null, ageHours: number | null = null) => ({
    usable: false,
    confirmedAt,
    ageHours,
    reason,
  });
  if (!hasDatabase(dir))
    return unusable(
      `no ClamAV signatures in ${dir}: the cache holds none yet (the scheduled refresh saves them once freshclam succeeds)`,
    );
  const stamp = readStamp(dir);
  if (!stamp)
    return unusable(`the signatures in ${dir} carry no ${SIGNATURE_STAMP}: nobody knows how old they are`);
  const ageHours = Math.max(0, (now.getTime() - Date.parse(stamp.confirmedAt)) / 3_600_000);
  if (ageHours > maxAgeHours)
    return unusable(
      `the cached ClamAV signatures were last confirmed current ${ageHours.toFixed(1)} h ago (${stamp.confirmedAt}), over the ${maxAgeHours} h the publish job accepts; the scheduled refresh has been failing (a CDN rate limit or cool-down: see its log)`,
      stamp.confirmedAt,
      ageHours,
    );
  return { usable: true, confirmedAt: stamp.confirmedAt, ageHours, reason: null };
}

export interface RunResult {
  code: number | null;
  output: string;
}

export type CommandRunner = (command: string, args: string[], timeoutMs: number) => Promise<RunResult>;

export const runCommand: CommandRunner = (command, args, timeoutMs) =>
  new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.on("data", (d) => (output += d));
    child.stderr.on("data", (d) => (output += d));
    child.on("error", (error) => {
      output += `\n${error.message}`;
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });

export interface RefreshOptions {
  /** The cached signature folder (restored before, saved after when refreshed). */
  dir: string;
  /** freshclam's path. */
  freshclam?: string;
  /** A mirror the operator runs (cvdupdate or a proxy), used instead of the CDN: freshclam's PrivateMirror. */
  mirror?: string;
  /** No freshclam when the stamp is younger than this: ClamAV asks for at most one check an hour. */
  refreshHours: number;
  now?: () => Date;
  run?: CommandRunner;
  timeoutMs?: number;
}

export interface RefreshResult {
  /** freshclam confirmed the folder current now (save it to the cache). */
  refreshed: boolean;
  /** freshclam was not run: the stamp is recent enough. */
  skipped: boolean;
  status: SignatureStatus;
  message: string;
}

/** freshclam exits 0 during its own cool-down without updating anything: its log says so. */
const COOL_DOWN = /cool-down|received error code 429|received error code 403/i;

/**
 * One freshclam run over the folder, with a configuration of our own: the folder as its database
 * directory (so freshclam.dat and its cool-down travel with the cache), one attempt (the schedule is
 * the retry), and the operator's mirror when named. A failure is a result, never an exception: the
 * cached folder stays as it was.
 */
export async function refreshSignatures(options: RefreshOptions): Promise<RefreshResult> {
  const now = options.now ?? (() => new Date());
  mkdirSync(options.dir, { recursive: true });
  const before = signatureStatus(options.dir, options.refreshHours, now());
  if (before.usable)
    return {
      refreshed: false,
      skipped: true,
      status: before,
      message: `signatures confirmed ${before.ageHours?.toFixed(1)} h ago, under the ${options.refreshHours} h between checks: freshclam not run`,
    };
  const confDir = mkdtempSync(join(tmpdir(), "svc-freshclam-"));
  const conf = join(confDir, "freshclam.conf");
  writeFileSync(
    conf,
    [
      `DatabaseDirectory ${options.dir}`,
      // Run as whoever runs the step: as root freshclam would switch to the clamav user, which
      // cannot write the runner's folder.
      `DatabaseOwner ${userInfo().username}`,
      options.mirror ? `PrivateMirror ${options.mirror}` : "DatabaseMirror database.clamav.net",
      "MaxAttempts 1",
      "NotifyClamd no",
      "Foreground yes",
      "",
    ].join("\n"),
  );
  try {
    const result = await (options.run ?? runCommand)(
      options.freshclam ?? "freshclam",
      [`--config-file=${conf}`, "--stdout"],
      options.timeoutMs ?? 300_000,
    );
    const log = result.output.trim().split("\n").slice(-12).join("\n");
    if (result.code !== 0 || COOL_DOWN.test(result.output) || !hasDatabase(options.dir)) {
      return {
        refreshed: false,
        skipped: false,
        status: signatureStatus(options.dir, options.refreshHours, now()),
        message: `freshclam did not confirm the signatures (exit ${result.code}); the cached folder is kept as it was:\n${log}`,
      };
    }
    writeFileAtomic(
      join(options.dir, SIGNATURE_STAMP),
      `${JSON.stringify({ confirmedAt: now().toISOString(), source: options.mirror ?? "database.clamav.net" })}\n`,
    );
    return {
      refreshed: true,
      skipped: false,
      status: signatureStatus(options.dir, options.refreshHours, now()),
      message: `freshclam confirmed the signatures current:\n${log}`,
    };
  } finally {
    rmSync(confDir, { recursive: true, force: true });
  }
}

/** Whether clamscan can be started at all (the job installs it only when a sidecar is pending). */
export async function clamscanMissing(
  binary: string,
  run: CommandRunner = runCommand,
): Promise<string | null> {
  if (binary.includes("/") && !existsSync(binary)) return `${binary} does not exist`;
  const result = await run(binary, ["--version"], 30_000);
  return result.code === 0
    ? null
    : `${binary} cannot be run: ${result.output.trim().split("\n").at(-1) ?? ""}`;
}
