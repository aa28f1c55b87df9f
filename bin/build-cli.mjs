// Bundles the svc CLI (src/cli/main.ts and the core it loads) into dist/svc.js, so `svc` starts
// without compiling TypeScript at run time. Run by `npm ci`/`npm install` (prepare) and `npm test`;
// bin/svc.js uses the bundle only while no file under src/ is newer than it.
import { cpSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

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
    plugins: [...options.plugins, validatorsBeside(outdir), semverInside],
    outdir,
    splitting: true,
    entryNames: "svc",
    chunkNames: "svc-[hash]",
  };
}

/** Removes an earlier build's entry and chunks, so no stale chunk outlives the build that made it. */
export function cleanCliBuild(outdir = join(ROOT, "dist")) {
  let entries = [];
  try {
    entries = readdirSync(outdir);
  } catch {
    return;
  }
  for (const name of entries)
    if (/^svc(-[A-Z0-9]+)?\.js$/.test(name) || name === "validators")
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
