// Bundles the svc CLI (src/cli/main.ts and the core it loads) into dist/svc.js, so `svc` starts
// without compiling TypeScript at run time. Run by `npm ci`/`npm install` (prepare) and `npm test`;
// bin/svc.js uses the bundle only while no file under src/ is newer than it.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

export async function cliBuildOptions(outfile = join(ROOT, "dist", "svc.js")) {
  const { bundleOptions } = await import("../actions/build.mjs");
  // Node 20 is the oldest runtime the CLI supports (package.json engines).
  return bundleOptions({
    entry: join(ROOT, "src", "cli", "main.ts"),
    outfile,
    toRoot: "../",
    target: "node20",
    external: true,
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // prepare also runs on installs without devDependencies: there is no esbuild, and bin/svc.js
  // runs the sources through tsx (a dependency) instead.
  const esbuild = await import("esbuild").catch(() => null);
  if (esbuild) {
    await esbuild.build(await cliBuildOptions());
    console.log("built dist/svc.js");
  } else if (!process.argv.includes("--if-available")) {
    throw new Error("esbuild is not installed: npm ci (with devDependencies) first");
  }
}
