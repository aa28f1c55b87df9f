// Bundles each Vercel function (api/_entries/**/*.ts) into dist/functions/, the files api/**/*.js
// re-export. vercel.json's buildCommand runs it after `svc build`, before @vercel/node traces the
// functions (docs/api.md, "Small cold starts"). dist/ is not committed: every deployment builds it.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const ENTRIES = join(ROOT, "api", "_entries");
export const FUNCTIONS_OUT = join(ROOT, "dist", "functions");

/** api/_entries/github/webhooks.ts -> "github-webhooks": one flat folder, so every file's way back to the root is the same. */
export function functionEntries(dir = ENTRIES) {
  const entries = {};
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith(".ts"))
        entries[relative(dir, path).slice(0, -3).split(sep).join("-")] = path;
    }
  };
  walk(dir);
  return entries;
}

/**
 * Left to node_modules, loaded at first use: PGlite (never used with DATABASE_URL, and excluded
 * from every function by vercel.json), pg's optional native binding, Probot, whose logger (pino)
 * starts worker threads from files it finds beside its own modules (imported on a bot's first piece
 * of work, never on a cold import), and Ajv's compiler, which src/contracts/contract-ajv.ts
 * require()s only to compile a schema at run time (the validators are precompiled); bundled, its
 * 200 KB were parsed on every cold start. The precompiled validators require Ajv's runtime helpers
 * from node_modules too.
 */
const EXTERNAL = ["@electric-sql/pglite", "pg-native", "probot", "ajv", "ajv/*", "ajv-formats"];

/**
 * The functions use only waitUntil of @vercel/functions, whose entry (one CommonJS file of every
 * helper: cache, OIDC, database pools, ~32 KB) would be evaluated on each cold start; its own
 * wait-until module is the same function.
 */
const waitUntilOnly = {
  name: "vercel-wait-until-only",
  setup(build) {
    build.onResolve({ filter: /^@vercel\/functions$/ }, (args) => {
      const imported = /import\s*{([^}]*)}\s*from\s*"@vercel\/functions"/.exec(
        readFileSync(args.importer, "utf8"),
      );
      const names = imported?.[1]
        .split(",")
        .map((name) => name.trim())
        .filter(Boolean);
      if (names?.join() !== "waitUntil")
        return { errors: [{ text: `${args.importer} imports more than waitUntil from @vercel/functions` }] };
      return {
        path: join(dirname(createRequire(args.importer).resolve("@vercel/functions")), "wait-until.js"),
      };
    });
  },
};

/**
 * The precompiled schema validators stay files beside the bundle (dist/functions/<name>/validators/),
 * each required when its schema is first used, as in the CLI bundle (bin/build-cli.mjs); the file
 * tracer follows each literal require (see traceableRequires).
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
        if (result.errors.length === 0)
          cpSync(join(ROOT, "src", "contracts", "validators"), join(outdir, "validators"), {
            recursive: true,
          });
      });
    },
  };
}

/**
 * One build per function, into dist/functions/<name>/ (index.js and its chunks): a build of all
 * four shared the code two functions have in common through chunks, each one more module the
 * cold import had to resolve and load. Dependencies go into the bundle too (a package left in
 * node_modules is a module load per file on the cold path), split so that what only some routes
 * need (each handler module, the GitHub-backed submissions, the pg driver, jszip, TUF, the ClamAV
 * client) sits in a chunk of its own, imported at first use; the entry holds what every request runs.
 */
export async function functionBuildOptions(name, entry, outdir = join(FUNCTIONS_OUT, name)) {
  const { bundleOptions } = await import("../actions/build.mjs");
  const { outfile: _single, ...options } = bundleOptions({
    entry,
    outfile: "",
    // The entry and its chunks sit together, three folders below the repository root.
    toRoot: "../../../",
    target: "node20",
  });
  return {
    ...options,
    // The file tracer (@vercel/nft) follows require() calls only through a require it recognizes:
    // `const require = module.createRequire(...)`, with that spelling.
    banner: {
      js: options.banner.js.replace(
        /^import { createRequire as __svcCreateRequire } from "node:module";\n(.*\n)const require = __svcCreateRequire\(/,
        'import * as module from "node:module";\n$1const require = module.createRequire(',
      ),
    },
    plugins: [...options.plugins, validatorsBeside(outdir), waitUntilOnly],
    external: EXTERNAL,
    outdir,
    splitting: true,
    entryNames: "index",
    chunkNames: "[name]-[hash]",
    // Node's ESM loader reads and parses each file on a cold start: whitespace is time spent there.
    minifyWhitespace: true,
    minifySyntax: true,
    metafile: true,
    write: false,
  };
}

/**
 * esbuild calls an external require() through its `__require` shim, which the file tracer does not
 * follow: a literal `__require("x")` becomes `require("x")` again (the banner's require, the one
 * the shim calls), so the validators beside the bundle and Ajv's modules in node_modules are traced
 * into the function.
 */
export function traceableRequires(text) {
  return text.replace(/\b__require\((?=["'])/g, "require(");
}

/**
 * The banner's helpers, dropped from a chunk that uses none of them: createRequire builds a module
 * record per call, and a cold import loads a dozen chunks.
 */
export function pruneBanner(text) {
  const lines = text.split("\n");
  const [moduleImport, urlImport, requireLine, sourceUrl, sourcePath] = lines;
  if (!moduleImport?.startsWith("import * as module") || !sourcePath?.startsWith("const __svcSourcePath"))
    throw new Error("the bundle does not start with the banner functionBuildOptions sets");
  const body = lines.slice(5).join("\n");
  const uses = (name) => new RegExp(`\\b${name}\\b`).test(body);
  const needsPath = uses("__svcSourcePath");
  const needsUrl = needsPath || uses("__svcSourceUrl");
  const needsRequire = uses("require");
  return [
    ...(needsRequire ? [moduleImport] : []),
    ...(needsPath ? [urlImport] : []),
    ...(needsRequire ? [requireLine] : []),
    ...(needsUrl ? [sourceUrl] : []),
    ...(needsPath ? [sourcePath] : []),
    body,
  ].join("\n");
}

/** Builds one function into outdir; returns the files written and esbuild's metafile. */
export async function buildFunction(name, entry, outdir = join(FUNCTIONS_OUT, name)) {
  const { build } = await import("esbuild");
  const result = await build(await functionBuildOptions(name, entry, outdir));
  for (const file of result.outputFiles) {
    mkdirSync(dirname(file.path), { recursive: true });
    writeFileSync(file.path, pruneBanner(traceableRequires(file.text)));
  }
  return { files: result.outputFiles.map((file) => file.path), metafile: result.metafile };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  if (existsSync(FUNCTIONS_OUT)) rmSync(FUNCTIONS_OUT, { recursive: true, force: true });
  for (const [name, entry] of Object.entries(functionEntries())) {
    const { files } = await buildFunction(name, entry);
    console.log(`built dist/functions/${name}/index.js and ${files.length - 1} chunks`);
  }
}
