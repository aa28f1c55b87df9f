/**
 * The Vercel functions' bundles (bin/build-functions.mjs), built here with esbuild alone, so this
 * runs where the Vercel CLI is not installed (test/http/vercel-build.test.ts runs them as built by
 * `vercel build`): what a cold import loads leaves out what only some requests need, and each
 * bundle loads on plain Node and exports a request handler.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { pathToFileURL } from "node:url";
import type { Metafile } from "esbuild";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../support/repo-root.ts";

interface Built {
  name: string;
  entry: string;
  metafile: Metafile;
}

// Three folders below the root, as dist/functions/<name>/ is: the bundles find schemas/ from there.
const OUT = join(REPO_ROOT, ".svc-tmp", `function-bundles-${randomBytes(4).toString("hex")}`);
const built: Built[] = [];

beforeAll(async () => {
  mkdirSync(OUT, { recursive: true });
  // @ts-expect-error: plain .mjs scripts without types
  const { buildFunction, functionEntries } = await import("../../bin/build-functions.mjs");
  for (const [name, source] of Object.entries(functionEntries() as Record<string, string>)) {
    const { metafile } = (await buildFunction(name, source, join(OUT, name))) as { metafile: Metafile };
    built.push({ name, entry: join(OUT, name, "index.js"), metafile });
  }
}, 120_000);

afterAll(() => {
  rmSync(OUT, { recursive: true, force: true });
});

/** The repository files and packages a cold import evaluates: the entry and its static imports. */
function coldPath(fn: Built): { inputs: string[]; packages: string[] } {
  const outputs = fn.metafile.outputs;
  // Every dynamic import is an entry point of its own to esbuild: the function's is index.js.
  const entryKey = Object.keys(outputs).find((key) => key.endsWith(`/${fn.name}/index.js`));
  if (!entryKey) throw new Error(`${fn.name}: no entry in the metafile`);
  const seen = new Set<string>();
  const stack = [entryKey];
  const packages = new Set<string>();
  while (stack.length) {
    const key = stack.pop()!;
    if (seen.has(key)) continue;
    seen.add(key);
    for (const imported of outputs[key]!.imports) {
      if (imported.kind !== "import-statement") continue;
      if (imported.external) packages.add(imported.path);
      else stack.push(imported.path);
    }
  }
  const inputs = [...seen].flatMap((key) => Object.keys(outputs[key]!.inputs));
  return { inputs, packages: [...packages] };
}

/** What only some requests need: loaded at first use, never on a cold import. */
const LAZY = [
  /node_modules\/(pg|pg-pool|pg-protocol)\//,
  /node_modules\/jszip\//,
  /node_modules\/(tuf-js|@tufjs\/models)\//,
  /node_modules\/@octokit\/(rest|auth-app|core)\//,
  /node_modules\/ajv\//,
  /^src\/store\/postgres-store\.ts$/,
  /^src\/validation\//,
  /^src\/distribution\//,
  /^src\/pipeline\//,
  /^src\/http\/handlers\/(?!index\.ts$)/,
];

describe("the Vercel function bundles", () => {
  it("builds the router and the GitHub App's three", () => {
    expect(built.map((fn) => fn.name).sort()).toEqual([
      "github-drain",
      "github-intake",
      "github-webhooks",
      "router",
    ]);
  });

  it("keep the pg driver, jszip, TUF, Octokit, Ajv, validation and the route handlers off the cold path", () => {
    for (const fn of built) {
      const { inputs, packages } = coldPath(fn);
      const repoInputs = inputs
        .map((input) => relative(REPO_ROOT, join(process.cwd(), input)))
        // The GitHub App's handlers (src/bot/handle.ts) import the ZIP reader statically, for the
        // report artifacts; it is a few files of the bot's own cold path (about 23 ms of CPU in all).
        .filter((input) => !(fn.name.startsWith("github-") && input.startsWith("src/validation/zip/")));
      // The cold path is what answers the first request: the dispatch, or the bot's acknowledgement.
      expect(repoInputs, fn.name).toContain(
        fn.name === "router" ? "src/http/handlers/index.ts" : "src/bot/deployment.ts",
      );
      for (const pattern of LAZY) {
        expect(
          repoInputs.filter((input) => pattern.test(input)),
          `${fn.name} loads ${pattern} on a cold import`,
        ).toEqual([]);
      }
      // What stays in node_modules is Node's own modules only, on the cold path.
      expect(
        packages.filter((path) => !path.startsWith("node:")),
        fn.name,
      ).toEqual([]);
    }
  });

  it("each loads on plain Node (no loader of this run) and exports a request handler", () => {
    for (const fn of built) {
      const run = spawnSync(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          "const m = await import(process.argv[1]); process.stdout.write(typeof m.default); process.exit(0);",
          pathToFileURL(fn.entry).href,
        ],
        { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? "/usr/bin:/bin", TZ: "UTC" }, encoding: "utf8" },
      );
      expect(run.stderr, fn.name).toBe("");
      expect(run.stdout, fn.name).toBe("function");
    }
  }, 60_000);
});
