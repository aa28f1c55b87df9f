// Bundles every actions/<name>/main.ts into actions/<name>/dist/index.js (npm run build:actions).
// The bundles are committed; test/github/actions-dist.test.ts proves they match a fresh build.
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const ACTIONS = dirname(fileURLToPath(import.meta.url));

export function actionNames() {
  return readdirSync(ACTIONS)
    .filter((name) => existsSync(join(ACTIONS, name, "main.ts")))
    .sort();
}

/** esbuild options for one action; outfile may be redirected (the check-dist test builds to a temp dir). */
export function buildOptions(name, outfile = join(ACTIONS, name, "dist/index.js")) {
  return {
    entryPoints: [join(ACTIONS, name, "main.ts")],
    outfile,
    bundle: true,
    platform: "node",
    target: "node24",
    format: "esm",
    legalComments: "none",
    logLevel: "warning",
    // The core finds schemas/ relative to its own module (src/contracts/schemas.ts); in the bundle
    // import.meta.url is that of actions/<name>/dist/index.js, so it is pointed back at src/contracts.
    define: { "import.meta.url": "__svcModuleUrl" },
    banner: {
      js: [
        'import { createRequire as __svcCreateRequire } from "node:module";',
        "const require = __svcCreateRequire(import.meta.url);",
        'const __svcModuleUrl = new URL("../../../src/contracts/module.js", import.meta.url).href;',
      ].join("\n"),
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const name of actionNames()) {
    await build(buildOptions(name));
    console.log(`built actions/${name}/dist/index.js`);
  }
}
