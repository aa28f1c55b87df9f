import { createHash, randomBytes } from "node:crypto";
import { createWriteStream, lstatSync, mkdirSync, renameSync, rmdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import type { Readable } from "node:stream";
import { SvcError } from "../errors.ts";

/** The contract's private staging template, relative to the private storage root (the data dir). */
export function stagingPath(submissionId: string, fileName: string): string {
  return `uploads/staging/${submissionId}/${fileName}`;
}

export interface StagedPackage {
  /** Relative to the storage root: uploads/staging/{submissionId}/{fileName}. */
  path: string;
  sha256: string;
  sizeBytes: number;
  /**
   * Moves the complete bytes to their staging path. Deferred so that the caller can still refuse
   * the request (a stray part after the package) without touching an earlier revision.
   */
  commit: () => void;
  /** Drops the bytes; the folder goes too when no earlier revision lives in it. */
  abort: () => void;
}

/**
 * Streams a package into private staging, hashing as it goes and stopping at maxBytes + 1: an
 * oversized package is refused while streaming and nothing is left behind. The file appears under
 * its final name only once complete (written to a temporary name, then renamed).
 */
export async function stagePackage(
  source: Readable,
  options: {
    root: string;
    submissionId: string;
    fileName: string;
    maxBytes: number;
    isTruncated?: () => boolean;
  },
): Promise<StagedPackage> {
  if (source.destroyed) throw new SvcError("invalid_request", "the package part ended before it was read");
  const rel = stagingPath(options.submissionId, options.fileName);
  const finalPath = join(options.root, rel);
  const dir = dirname(finalPath);
  mkdirSync(dir, { recursive: true });
  const temp = join(dir, `.partial-${randomBytes(6).toString("hex")}`);
  const hash = createHash("sha256");
  let size = 0;
  const out = createWriteStream(temp, { flags: "wx", mode: 0o600 });
  try {
    await new Promise<void>((resolve, reject) => {
      source.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxBytes) {
          source.destroy();
          reject(
            new SvcError("payload_too_large", `the package is larger than ${options.maxBytes} bytes`, {
              details: { maxPackageBytes: options.maxBytes },
            }),
          );
          return;
        }
        hash.update(chunk);
        if (!out.write(chunk)) {
          source.pause();
          out.once("drain", () => source.resume());
        }
      });
      source.on("error", reject);
      // A part cut off by the request failing elsewhere closes without "end": never wait on it.
      let ended = false;
      source.on("end", () => {
        ended = true;
      });
      source.on("close", () => {
        if (!ended) reject(new SvcError("invalid_request", "the package part ended before it was complete"));
      });
      source.on("end", () => {
        // busboy marks a part it cut at its fileSize limit as truncated without raising an error.
        if (options.isTruncated?.()) {
          reject(
            new SvcError("payload_too_large", `the package is larger than ${options.maxBytes} bytes`, {
              details: { maxPackageBytes: options.maxBytes },
            }),
          );
          return;
        }
        out.end(() => resolve());
      });
      out.on("error", reject);
    });
  } catch (error) {
    out.destroy();
    abort();
    throw error;
  }
  return {
    path: rel,
    sha256: hash.digest("hex"),
    sizeBytes: size,
    commit: () => renameSync(temp, finalPath),
    abort,
  };

  function abort(): void {
    rmSync(temp, { force: true });
    // A first upload leaves no folder behind; a resubmission keeps the revision it replaces.
    try {
      rmdirSync(dir);
    } catch {
      // not empty: an earlier revision lives here
    }
  }
}

/**
 * A submission's staged package as a file that exists, or null. The row's path is trusted only
 * within the submission's own staging folder: anything that resolves elsewhere (or is a link or a
 * folder) is not served.
 */
export function stagedFile(
  root: string,
  submissionId: string,
  relativePath: string,
): { path: string; sizeBytes: number } | null {
  const folder = resolve(root, "uploads", "staging", submissionId);
  const path = resolve(root, relativePath);
  if (dirname(path) !== folder) return null;
  try {
    const stat = lstatSync(path);
    return stat.isFile() ? { path, sizeBytes: stat.size } : null;
  } catch {
    return null;
  }
}

/** Removes a submission's staging folder (on rejection, cancel or after publication). */
export function removeStaged(root: string, submissionId: string): void {
  rmSync(join(root, "uploads", "staging", submissionId), { recursive: true, force: true });
}
