// Bundles every actions/<name>/main.ts into actions/<name>/dist/index.js (npm run build:actions).
// The bundles are committed; test/github/actions-dist.test.ts proves they match a fresh build.
import { existsSync, readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join, posix, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ACTIONS = dirname(fileURLToPath(import.meta.url));

export function actionNames() {
  return readdirSync(ACTIONS)
    .filter((name) => existsSync(join(ACTIONS, name, "main.ts")))
    .sort();
}

const REPO = join(ACTIONS, "..");

/**
 * The core finds files relative to its own modules (schemas/ from src/contracts/schemas.ts, page
 * assets from src/pages/render-pages.ts). In a bundle import.meta is that of
 * actions/<name>/dist/index.js, so each repository module's import.meta.url, .dirname and .filename
 * are rewritten to that module's own path, resolved from the bundle at run time (a bundle is always
 * run from its place in the repository). Dependencies under node_modules are left alone.
 */
const sourceLocations = {
  name: "svc-source-locations",
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, async (args) => {
      if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
      const rel = relative(REPO, args.path).split(sep).join("/");
      const dir = posix.dirname(rel);
      const text = await readFile(args.path, "utf8");
      return {
        loader: "ts",
        contents: text
          .replaceAll("import.meta.url", `__svcSourceUrl(${JSON.stringify(rel)})`)
          .replaceAll("import.meta.dirname", `__svcSourcePath(${JSON.stringify(dir)})`)
          .replaceAll("import.meta.filename", `__svcSourcePath(${JSON.stringify(rel)})`),
      };
    });
  },
};

/**
 * esbuild options for one bundle of repository code. `toRoot` is the way from the bundle's folder
 * back to the repository root, so each source module's import.meta still points at its own file.
 */
export function bundleOptions({ entry, outfile, toRoot, target = "node24", external = false }) {
  return {
    entryPoints: [entry],
    outfile,
    bundle: true,
    platform: "node",
    target,
    format: "esm",
    legalComments: "none",
    logLevel: "warning",
    plugins: [sourceLocations],
    // The CLI keeps its dependencies in node_modules (PGlite loads its WASM beside its own module).
    ...(external ? { packages: "external" } : {}),
    banner: {
      js: [
        'import { createRequire as __svcCreateRequire } from "node:module";',
        'import { fileURLToPath as __svcFileURLToPath } from "node:url";',
        "const require = __svcCreateRequire(import.meta.url);",
        `const __svcSourceUrl = (path) => new URL(${JSON.stringify(toRoot)} + path, import.meta.url).href;`,
        "const __svcSourcePath = (path) => __svcFileURLToPath(__svcSourceUrl(path));",
      ].join("\n"),
    },
  };
}

/** esbuild options for one action; outfile may be redirected (the check-dist test builds to a temp dir). */
export function buildOptions(name, outfile = join(ACTIONS, name, "dist/index.js")) {
  return bundleOptions({ entry: join(ACTIONS, name, "main.ts"), outfile, toRoot: "../../../" });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const name of actionNames()) {
    await build(buildOptions(name));
    console.log(`built actions/${name}/dist/index.js`);
  }
}
