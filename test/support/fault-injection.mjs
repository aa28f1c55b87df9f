/**
 * Fault injection for crash tests, loaded with `node --import` into a child process (never into the
 * test process). It wraps the mutating synchronous file operations of node:fs and SIGKILLs the
 * process at a chosen one, so the disk holds exactly what a crash at that instant leaves.
 *
 * Environment (read here only; the product never sees it):
 *   SVC_FAULT_SCOPE       absolute folders, ":"-separated; only operations on paths below them count
 *   SVC_FAULT_KILL_AT     N: SIGKILL just before the Nth counted operation (1-based)
 *   SVC_FAULT_KILL_AFTER  "kind:text,kind:text": SIGKILL just after the operation matching the last
 *                         pattern, once the patterns before it matched in order (kind "*" = any)
 *   SVC_FAULT_KILL_BEFORE same, just before the matching operation
 *   SVC_FAULT_STOP_AFTER  same patterns: SIGSTOP instead (the process holds its locks, frozen,
 *                         until the test sends SIGCONT)
 *   SVC_FAULT_LOG         append "N kind path" per counted operation to this file
 *   SVC_FAULT_FSYNC       "1": count fsync as an operation too
 *   SVC_FAULT_NOW         a fixed clock (ISO time) for Date, so two runs write identical bytes
 *   SVC_FAULT_ARM_FILE    operations count (and the patterns match) only once this file exists:
 *                         the test creates it when a long-running process (svc serve) has started,
 *                         so kill points number the operations of one request, not of the start-up
 *
 * fsync is not a kill point by default: SIGKILL keeps the page cache, so a kill just before an
 * fsync leaves the same bytes as a kill just after the operation before it. (fsync ordering is for
 * power loss, which a process test cannot produce.)
 */
import { appendFileSync as realAppend, existsSync as realExists } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { resolve, sep } from "node:path";

const require = createRequire(import.meta.url);
const fs = require("node:fs");
const env = process.env;

if (env.SVC_FAULT_NOW) {
  const RealDate = Date;
  const fixed = RealDate.parse(env.SVC_FAULT_NOW);
  class FixedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(fixed);
      else super(...args);
    }
    static now() {
      return fixed;
    }
  }
  globalThis.Date = FixedDate;
}

const scopes = (env.SVC_FAULT_SCOPE ?? "")
  .split(":")
  .filter(Boolean)
  .map((dir) => resolve(dir));
const killAt = Number(env.SVC_FAULT_KILL_AT ?? 0);
const parsePatterns = (text) =>
  (text ?? "")
    .split(",")
    .filter(Boolean)
    .map((p) => {
      const [kind, ...rest] = p.split(":");
      return { kind, text: rest.join(":") };
    });
const afterPatterns = parsePatterns(env.SVC_FAULT_KILL_AFTER);
const beforePatterns = parsePatterns(env.SVC_FAULT_KILL_BEFORE);
const stopPatterns = parsePatterns(env.SVC_FAULT_STOP_AFTER);
let afterMatched = 0;
let beforeMatched = 0;
let stopMatched = 0;
const countFsync = env.SVC_FAULT_FSYNC === "1";
const armFile = env.SVC_FAULT_ARM_FILE;
let armed = !armFile;

const inScope = (path) =>
  typeof path === "string" && scopes.some((dir) => path === dir || path.startsWith(dir + sep));
const matches = (pattern, kind, path) =>
  (pattern.kind === "*" || pattern.kind === kind) && path.includes(pattern.text);

const fdPaths = new Map();
let depth = 0;
let count = 0;

function kill() {
  process.kill(process.pid, "SIGKILL");
}

/** Runs one file operation, counting it (and maybe dying around it) when it is in scope. */
function around(kind, path, run) {
  if (!armed && inScope(path)) armed = realExists(armFile);
  if (depth > 0 || !armed || !inScope(path)) {
    depth++;
    try {
      return run();
    } finally {
      depth--;
    }
  }
  count++;
  if (env.SVC_FAULT_LOG) realAppend(env.SVC_FAULT_LOG, `${count} ${kind} ${path}\n`);
  if (count === killAt) kill();
  if (beforeMatched < beforePatterns.length && matches(beforePatterns[beforeMatched], kind, path)) {
    beforeMatched++;
    if (beforeMatched === beforePatterns.length) kill();
  }
  depth++;
  let result;
  try {
    result = run();
  } finally {
    depth--;
  }
  if (afterMatched < afterPatterns.length && matches(afterPatterns[afterMatched], kind, path)) {
    afterMatched++;
    if (afterMatched === afterPatterns.length) kill();
  }
  if (stopMatched < stopPatterns.length && matches(stopPatterns[stopMatched], kind, path)) {
    stopMatched++;
    if (stopMatched === stopPatterns.length) process.kill(process.pid, "SIGSTOP");
  }
  return result;
}

const asPath = (p) => (typeof p === "string" ? resolve(p) : p instanceof URL ? resolve(p.pathname) : null);
const creates = (flags) =>
  typeof flags === "number"
    ? (flags &
        (fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_WRONLY | fs.constants.O_RDWR)) !==
      0
    : /[wa+]/.test(flags ?? "r");

function wrap(name, kind, pathOf) {
  const original = fs[name];
  fs[name] = function (...args) {
    return around(kind, pathOf(args), () => original.apply(this, args));
  };
}

wrap("renameSync", "rename", (a) => `${asPath(a[0])} -> ${asPath(a[1])}`);
wrap("linkSync", "link", (a) => `${asPath(a[0])} -> ${asPath(a[1])}`);
wrap("unlinkSync", "unlink", (a) => asPath(a[0]));
wrap("writeFileSync", "write", (a) => (typeof a[0] === "number" ? fdPaths.get(a[0]) : asPath(a[0])));
wrap("appendFileSync", "write", (a) => (typeof a[0] === "number" ? fdPaths.get(a[0]) : asPath(a[0])));
wrap("mkdirSync", "mkdir", (a) => asPath(a[0]));
wrap("rmSync", "rm", (a) => asPath(a[0]));
wrap("rmdirSync", "rmdir", (a) => asPath(a[0]));
wrap("copyFileSync", "copy", (a) => `${asPath(a[0])} -> ${asPath(a[1])}`);
wrap("writeSync", "write", (a) => fdPaths.get(a[0]));
wrap("ftruncateSync", "write", (a) => fdPaths.get(a[0]));

const originalOpen = fs.openSync;
fs.openSync = function (path, flags, mode) {
  const full = asPath(path);
  const open = () => originalOpen.call(this, path, flags, mode);
  const fd = creates(flags) ? around("open", full, open) : open();
  if (full) fdPaths.set(fd, full);
  return fd;
};
const originalClose = fs.closeSync;
fs.closeSync = function (fd) {
  fdPaths.delete(fd);
  return originalClose.call(this, fd);
};
const originalFsync = fs.fsyncSync;
fs.fsyncSync = function (fd) {
  const run = () => originalFsync.call(this, fd);
  return countFsync ? around("fsync", fdPaths.get(fd), run) : run();
};

// ESM named imports of node:fs are live bindings of these properties once synced.
syncBuiltinESMExports();
