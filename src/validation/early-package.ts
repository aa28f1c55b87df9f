import { closeSync, fstatSync, openSync } from "node:fs";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import {
  announcedEntries,
  InflateWorker,
  sharedCopy,
  spareCore,
  WORKER_MAX_PACKAGE_BYTES,
  WORKER_MIN_ENTRIES,
} from "./inflate-pool.ts";
import type { AntivirusScanner } from "./antivirus/scanner.ts";
import { READ_WHOLE_BYTES, readAt } from "./package-source.ts";
import { policyShapeProblems } from "./policy-shape.ts";
import { beginPackageScan } from "./scan-queue.ts";
import type { EarlyPackage, ValidationInput } from "./types.ts";
import { bufferSource, type ZipCaps } from "./zip/reader.ts";

/**
 * Starting a package's validation before the rest of the validator is loaded: `svc validate` opens
 * and reads the package and starts the inflate worker as soon as its arguments and the policy are
 * read, so the worker's own start-up and its first chunks overlap the loading of the checks, the
 * schemas and the catalog (issue 27, item 4). This module loads only the reader and the worker's
 * pool, nothing of the checks.
 */

export type InflateWorkerMode = NonNullable<ValidationInput["inflateWorker"]>;

export function zipCapsFromPolicy(policy: ValidationContract): ZipCaps {
  const p = policy.package;
  return {
    maxEntries: p.maxEntries,
    maxNameBytes: p.maxNameBytes,
    maxPathDepth: p.maxPathDepth,
    maxEntryUncompressedBytes: p.maxEntryUncompressedBytes,
    maxTotalUncompressedBytes: p.maxTotalUncompressedBytes,
    maxCompressionRatio: p.maxCompressionRatio,
    compressionRatioMinBytes: p.compressionRatioMinBytes,
  };
}

/**
 * The inflate worker for a package held in memory, or null when it stays on one thread: "auto"
 * starts one for 4,000 entries or more, up to 16 MiB, with a core to spare, and not while an
 * antivirus scanner scans the package: the scanner's scan is then the longest step, this thread's
 * work fits beside it, and a worker would only take the scanner's core (clamd scans one stream on
 * one thread).
 */
export function startInflateWorker(
  bytes: Buffer,
  policy: ValidationContract,
  mode: InflateWorkerMode = "auto",
  scanned = false,
): InflateWorker | null {
  if (mode === "never") return null;
  if (
    mode === "auto" &&
    (scanned ||
      bytes.length > WORKER_MAX_PACKAGE_BYTES ||
      announcedEntries(bytes) < WORKER_MIN_ENTRIES ||
      !spareCore())
  )
    return null;
  try {
    return InflateWorker.start(sharedCopy(bytes), zipCapsFromPolicy(policy));
  } catch {
    // A policy without caps: validation reports it (policy_invalid); nothing is started.
    return null;
  }
}

/**
 * Opens and reads a package path the way openPackage (package-source.ts) does for one it reads
 * whole, begins its antivirus scan (with a scanner) and starts its inflate worker; null when the
 * policy is one the runner refuses or the path is not such a package (missing, not a regular file,
 * larger than the policy's cap or than what is read whole), which openPackage then opens and
 * reports as it always does. Pass it as `package: { path, early }` with the same scanner; whoever
 * opened it closes it, also when validation never ran.
 */
export function openEarly(
  path: string,
  policy: ValidationContract,
  mode: InflateWorkerMode = "auto",
  scanner: AntivirusScanner | null = null,
): EarlyPackage | null {
  // A policy the runner refuses (policy_invalid) reads no package: nothing is begun for it.
  if (policyShapeProblems(policy).length > 0) return null;
  const max = policy.package.maxPackageBytes;
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  let worker: InflateWorker | null = null;
  try {
    const before = fstatSync(fd);
    if (!before.isFile() || before.size > max || before.size > READ_WHOLE_BYTES) {
      closeSync(fd);
      return null;
    }
    const bytes = readAt(fd, before.size, 0, before.size, Buffer.from(new SharedArrayBuffer(before.size)));
    // The scanner is the longest step when there is one: it gets the package before anything else.
    const scan = scanner ? beginPackageScan(scanner, bufferSource(bytes)) : null;
    worker = startInflateWorker(bytes, policy, mode, scanner !== null);
    const started = worker;
    let closed = false;
    return {
      fd,
      before,
      bytes,
      worker,
      scan,
      close() {
        if (closed) return;
        closed = true;
        void started?.close();
        closeSync(fd);
      },
    };
  } catch {
    void worker?.close();
    closeSync(fd);
    return null;
  }
}
