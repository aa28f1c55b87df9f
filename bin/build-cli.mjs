// Bundles the svc CLI (src/cli/main.ts and the core it loads) into dist/svc.js, so `svc` starts
// without compiling TypeScript at run time. Run by `npm ci`/`npm install` (prepare) and `npm test`;
// bin/svc.js uses the bundle only while nothing it was built from changed (dist/svc.inputs.json,
// written here at the end of every build; bin/cli-entry.mjs checks it).
import { cpSync, existsSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { BUILD_INPUTS } from "./cli-entry.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

const VALIDATORS = join(ROOT, "src", "contracts", "validators");

/**
 * The precompiled schema validators (src/contracts/validators/*.cjs, about 1 MB) stay files of their
 * own beside the bundle, in dist/validators/, required when a schema is first used. Bundled, they
 * sat in one chunk that every command using any schema parsed whole: 22-33 ms of start-up.
 */
function validatorsBeside(outdir) {
  const loader = join(ROOT, "src", "contracts", "validators.generated.js");
  return {
    name: "validators-beside",
    setup(build) {
      build.onResolve({ filter: /^\.\/validators\/[a-z0-9-]+\.cjs$/ }, (args) =>
        args.importer === loader ? { path: args.path, external: true } : undefined,
      );
      build.onEnd((result) => {
        if (result.errors.length === 0) cpSync(VALIDATORS, join(outdir, "validators"), { recursive: true });
      });
    },
  };
}

/**
 * semver, though a package, goes into the bundle: its functions are a dozen small CommonJS files,
 * each a module load of its own at start-up (resolve, read, compile) when left outside.
 */
const semverInside = {
  name: "semver-inside",
  setup(build) {
    build.onResolve({ filter: /^semver\// }, (args) => ({
      path: createRequire(args.importer).resolve(args.path),
    }));
  },
};

/** Files that steer the build without being read as modules: a change to one makes the bundle stale. */
const STEERING = ["package.json", "tsconfig.json", "bin/build-cli.mjs", "actions/build.mjs"];

/**
 * A file's mtime comes from the kernel's coarse clock, which may lag the clock Date.now() reads by
 * a tick (1-10 ms); anything stamped later than this before the build began may have changed while
 * esbuild read it.
 */
const SETTLE_MS = 100;

/**
 * Every folder under src/ (src/ included), each with its mtime: a file added, removed or renamed in
 * one changes that folder's mtime, so a new file that would shadow an import is seen without a walk.
 */
function sourceFolders(root) {
  const folders = [];
  const walk = (rel) => {
    folders.push(rel);
    for (const entry of readdirSync(join(root, rel), { withFileTypes: true }))
      if (entry.isDirectory()) walk(`${rel}/${entry.name}`);
  };
  walk("src");
  return folders;
}

/**
 * Writes dist/svc.inputs.json (BUILD_INPUTS, in outdir): what the bundle was built from, for
 * bin/cli-entry.mjs's freshness check. Files: every input in esbuild's metafile (paths relative to
 * its working directory, the current one; semver's files among them), the validators copied beside
 * the bundle and the STEERING files, each [path from root, size, mtimeMs]; folders: sourceFolders,
 * each [path, mtimeMs]. Whatever was stamped after `startedMs - SETTLE_MS` may have changed while the
 * build read it: it is recorded with mtime -1, which no file has, so the bundle counts as stale
 * until the next build (a stamp from before that and a later change cannot be equal, so equality
 * with the recorded mtime means unchanged).
 */
export function writeBuildInputs(outdir, metafile, startedMs, root = ROOT) {
  const settled = startedMs - SETTLE_MS;
  const paths = new Set(STEERING.filter((path) => existsSync(join(root, path))));
  for (const input of Object.keys(metafile.inputs)) paths.add(relative(root, resolve(input)));
  for (const name of readdirSync(join(root, "src", "contracts", "validators")))
    paths.add(`src/contracts/validators/${name}`);
  const files = [...paths].sort().map((path) => {
    const stat = statSync(join(root, path));
    return [path, stat.size, stat.mtimeMs < settled ? stat.mtimeMs : -1];
  });
  const dirs = sourceFolders(root).map((path) => {
    const { mtimeMs } = statSync(join(root, path));
    return [path, mtimeMs < settled ? mtimeMs : -1];
  });
  writeFileSync(join(outdir, BUILD_INPUTS), `${JSON.stringify({ files, dirs })}\n`);
}

/** Records what each successful build read (writeBuildInputs), timed from the build's start. */
function recordInputs(outdir) {
  let startedMs = 0;
  return {
    name: "record-inputs",
    setup(build) {
      build.onStart(() => {
        startedMs = Date.now();
      });
      build.onEnd((result) => {
        if (result.errors.length === 0 && result.metafile)
          writeBuildInputs(outdir, result.metafile, startedMs);
      });
    },
  };
}

/**
 * One entry (dist/svc.js) and a chunk per command beside it: each command's module is imported only
 * when it runs (src/cli/main.ts), and with its own chunk so are the packages it needs. A single file
 * would hoist every package import (Octokit, PGlite, pg, tuf-js, ...) to start-up: `svc import`
 * started in 0.47 s of CPU that way and starts in 0.27 s split; `svc --help` in 0.11 s.
 */
export async function cliBuildOptions(outdir = join(ROOT, "dist")) {
  const { bundleOptions } = await import("../actions/build.mjs");
  // Node 20 is the oldest runtime the CLI supports (package.json engines).
  const { outfile: _single, ...options } = bundleOptions({
    entry: join(ROOT, "src", "cli", "main.ts"),
    outfile: join(outdir, "svc.js"),
    // Chunks sit beside the entry, one folder below the repository root, like it.
    toRoot: "../",
    target: "node20",
    external: true,
  });
  return {
    ...options,
    plugins: [...options.plugins, validatorsBeside(outdir), semverInside, recordInputs(outdir)],
    metafile: true,
    outdir,
    splitting: true,
    entryNames: "svc",
    chunkNames: "svc-[hash]",
  };
}

/**
 * Removes an earlier build's entry, chunks and record of inputs, so no stale chunk outlives the build
 * that made it, and a build that fails leaves no record (bin/svc.js then runs the sources).
 */
export function cleanCliBuild(outdir = join(ROOT, "dist")) {
  let entries = [];
  try {
    entries = readdirSync(outdir);
  } catch {
    return;
  }
  for (const name of entries)
    if (/^svc(-[A-Z0-9]+)?\.js$/.test(name) || name === "validators" || name === BUILD_INPUTS)
      rmSync(join(outdir, name), { recursive: true, force: true });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // prepare also runs on installs without devDependencies: there is no esbuild, and bin/svc.js
  // runs the sources through tsx (a dependency) instead.
  const esbuild = await import("esbuild").catch(() => null);
  if (esbuild) {
    cleanCliBuild();
    await esbuild.build(await cliBuildOptions());
    console.log("built dist/svc.js");
  } else if (!process.argv.includes("--if-available")) {
    throw new Error("esbuild is not installed: npm ci (with devDependencies) first");
  }
}
