import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import { FSYNC_LANES_SOURCE } from "../lib/fsync-many.ts";

/**
 * A signed bin before its signature: the canonical JSON the signature covers, and the compact JSON
 * of `signed` that the file carries (signedBinText's two halves).
 */
export interface BinParts {
  canonical: string;
  signed: string;
}

/** A signed file as serializeCompact writes it, from its signature and the JSON of `signed`. */
export function signedText(signature: { toJSON(): unknown }, signed: string): string {
  return `{"signatures":[${JSON.stringify(signature.toJSON())}],"signed":${signed}}\n`;
}

/** How long a synchronous caller waits for the writer's last file and fsync before it gives up. */
const WRITER_TIMEOUT_MS = 300_000;

// CommonJS evaluated by the worker (no file to ship beside a bundle). Jobs arrive in order on `port`:
// a file to write (its text whole, or a bin's canonical text to sign and its JSON to wrap in the
// signature), then `finish`, which fsyncs every file written (several at once: libuv runs four) and
// the folder, answers with the failures and wakes the waiting thread. Files with identical bytes (the
// empty bins of a full signing) are hard links to the first. Errors are collected, never thrown, so
// the waiting thread is always answered.
const WRITER_SOURCE = `
const { workerData } = require("node:worker_threads");
const { createPrivateKey, sign, hash } = require("node:crypto");
const { linkSync, rmSync, writeFileSync } = require("node:fs");
const { join } = require("node:path");
const { port, flag, dir, key, lanes } = workerData;
const errors = [];
const fail = (path, error) =>
  errors.push({ path, code: (error && error.code) || null, message: String((error && error.message) || error) });
let privateKey = null;
try {
  if (key) privateKey = createPrivateKey(key.pem);
} catch (error) {
  fail("", error);
}
const bySha256 = new Map();
const toSync = [];
function write(job) {
  const file = join(dir, job.name);
  try {
    let text = job.text;
    if (text === undefined) {
      if (!privateKey) throw new Error("no signing key");
      const sig = sign(null, Buffer.from(job.canonical), privateKey).toString("hex");
      text = '{"signatures":[' + JSON.stringify({ keyid: key.keyid, sig }) + '],"signed":' + job.signed + "}\\n";
    }
    // A leftover of a run that stopped before its timestamp: never served, safe to replace.
    rmSync(file, { force: true });
    const bytes = Buffer.from(text);
    const digest = hash("sha256", bytes, "hex");
    const same = bySha256.get(digest);
    if (same) {
      linkSync(same, file);
      return;
    }
    writeFileSync(file, bytes);
    bySha256.set(digest, file);
    toSync.push(file);
  } catch (error) {
    fail(file, error);
  }
}
${FSYNC_LANES_SOURCE}
port.on("message", (job) => {
  if (!job.finish) return write(job);
  // Nothing fsynced after a failed write: the caller throws, and no timestamp names these files.
  (errors.length ? Promise.resolve() : fsyncLanes([...toSync, dir], lanes, fail))
    .catch((error) => fail("", error))
    .finally(() => {
      port.postMessage(errors);
      port.close();
      Atomics.store(flag, 0, 1);
      Atomics.notify(flag, 0);
    });
});
`;

interface WriteFailure {
  path: string;
  code: string | null;
  message: string;
}

/**
 * A worker thread that writes (and, for a bin, signs) the versioned files of one signing run while
 * this thread goes on building the next, then fsyncs them all: a full signing's 1,024 bins cost
 * ~1.7 s of signing, writing and fsyncing at 50,000 mods, beside ~2.5 s of building their text.
 * Synchronous for its caller: `finish` waits for the last file to be durable. Null when no worker can
 * be started (a restricted runtime): the caller writes on its own thread.
 */
export class FileWriter {
  private readonly port: MessagePort;
  private readonly flag = new Int32Array(new SharedArrayBuffer(4));
  private readonly worker: Worker;

  private constructor(dir: string, key: { pem: string; keyid: string } | null) {
    const { port1, port2 } = new MessageChannel();
    this.worker = new Worker(WRITER_SOURCE, {
      eval: true,
      workerData: { port: port2, flag: this.flag, dir, key, lanes: 8 },
      transferList: [port2],
      // The worker needs nothing of the parent's flags (a --cpu-prof, a loader) or its stdin.
      execArgv: [],
      stdin: false,
    });
    this.worker.unref();
    this.port = port1;
  }

  static start(dir: string, key: { pem: string; keyid: string } | null): FileWriter | null {
    try {
      return new FileWriter(dir, key);
    } catch {
      return null;
    }
  }

  /** A file whose text is whole. */
  write(name: string, text: string): void {
    this.port.postMessage({ name, text });
  }

  /** A bin: the worker signs `canonical` with the key it was started with and wraps `signed` (signedBinText's layout). */
  writeSigned(name: string, canonical: string, signed: string): void {
    this.port.postMessage({ name, canonical, signed });
  }

  /** Stops the worker without waiting (a failed signing run). */
  stop(): void {
    this.port.close();
    void this.worker.terminate();
  }

  /** Waits until every file written and the folder are durable; throws the first failure. */
  finish(): void {
    this.port.postMessage({ finish: true });
    const answered =
      Atomics.wait(this.flag, 0, 0, WRITER_TIMEOUT_MS) !== "timed-out" || Atomics.load(this.flag, 0) === 1;
    const message = answered ? receiveMessageOnPort(this.port) : undefined;
    this.port.close();
    void this.worker.terminate();
    if (!message) throw new Error("the signing run's file writer did not finish");
    const failures = message.message as WriteFailure[];
    if (failures.length > 0) {
      const first = failures[0]!;
      const error = new Error(
        `writing the signed metadata failed for ${failures.length} file(s), first ${first.path}: ${first.message}`,
      ) as NodeJS.ErrnoException;
      if (first.code) error.code = first.code;
      throw error;
    }
  }
}
