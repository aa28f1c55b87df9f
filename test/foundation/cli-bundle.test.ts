import { execFileSync } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
// @ts-expect-error: plain .mjs scripts without types
import { cliBuildOptions } from "../../bin/build-cli.mjs";
// @ts-expect-error: plain .mjs scripts without types
import { bundleIsFresh } from "../../bin/cli-entry.mjs";

const ROOT = new URL("../../", import.meta.url).pathname;

/**
 * A small project with the real entry and build scripts (bin/svc.js, bin/cli-entry.mjs,
 * bin/build-cli.mjs, actions/build.mjs) over a src/ tree whose main says which code runs: the
 * bundle (its banner defines __svcSourceUrl) or the sources through tsx, and a greeting imported
 * from another file. Every file and folder is stamped a minute ago, well before any build.
 */
function miniProject(): string {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "svc-cli-entry-")));
  for (const dir of ["bin", "actions", "src/cli", "src/lib", "src/contracts/validators", "dist"])
    mkdirSync(join(root, dir), { recursive: true });
  for (const f of ["bin/svc.js", "bin/cli-entry.mjs", "bin/build-cli.mjs", "actions/build.mjs"])
    cpSync(join(ROOT, f), join(root, f));
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"));
  writeFileSync(join(root, "package.json"), '{ "type": "module" }\n');
  writeFileSync(
    join(root, "src", "cli", "main.ts"),
    [
      'import { greeting } from "../lib/greeting.ts";',
      "declare const __svcSourceUrl: unknown;",
      "export async function main(): Promise<number> {",
      '  console.log((typeof __svcSourceUrl === "function" ? "bundle " : "source ") + greeting);',
      "  return 0;",
      "}",
      "",
    ].join("\n"),
  );
  writeFileSync(join(root, "src", "lib", "greeting.ts"), 'export const greeting = "hello";\n');
  writeFileSync(join(root, "src", "contracts", "validators", "one.cjs"), "module.exports = {};\n");
  age(root, ["src/cli/main.ts", "src/lib/greeting.ts", "src/contracts/validators/one.cjs", "package.json"]);
  return root;
}

/** Stamps the files and every folder under src/ a minute ago. */
function age(root: string, files: string[] = []) {
  const past = new Date(Date.now() - 60_000);
  for (const f of files) utimesSync(join(root, f), past, past);
  const folders = (dir: string): string[] => [
    dir,
    ...readdirSync(join(root, dir), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .flatMap((e) => folders(`${dir}/${e.name}`)),
  ];
  for (const dir of folders("src")) utimesSync(join(root, dir), past, past);
}

const buildMini = (root: string) =>
  execFileSync(process.execPath, [join(root, "bin", "build-cli.mjs")], { cwd: root, encoding: "utf8" });
const run = (root: string) =>
  execFileSync(process.execPath, [join(root, "bin", "svc.js")], { encoding: "utf8" }).trim();

describe("the bundled CLI (dist/svc.js)", () => {
  it("bin/svc.js runs the bundle while nothing it was built from changed, else the sources", () => {
    const root = miniProject();
    try {
      // No record of inputs (a bundle from before it existed): never trusted.
      writeFileSync(
        join(root, "dist", "svc.js"),
        'export async function main() { console.log("old"); return 0; }\n',
      );
      expect(bundleIsFresh(root)).toBe(false);
      expect(run(root)).toBe("source hello");

      buildMini(root);
      const recorded = JSON.parse(readFileSync(join(root, "dist", "svc.inputs.json"), "utf8"));
      expect(recorded.files.map((f: [string]) => f[0])).toEqual(
        expect.arrayContaining([
          "actions/build.mjs",
          "bin/build-cli.mjs",
          "package.json",
          "src/cli/main.ts",
          "src/contracts/validators/one.cjs",
          "src/lib/greeting.ts",
        ]),
      );
      expect(recorded.dirs.map((d: [string]) => d[0]).sort()).toEqual([
        "src",
        "src/cli",
        "src/contracts",
        "src/contracts/validators",
        "src/lib",
      ]);
      // An untouched tree: fresh, run after run.
      expect(bundleIsFresh(root)).toBe(true);
      expect(run(root)).toBe("bundle hello");
      expect(run(root)).toBe("bundle hello");

      // An edited source file: its size and mtime differ from the record; the edit runs at once.
      writeFileSync(join(root, "src", "lib", "greeting.ts"), 'export const greeting = "edited";\n');
      expect(bundleIsFresh(root)).toBe(false);
      expect(run(root)).toBe("source edited");
      age(root, ["src/lib/greeting.ts"]);
      buildMini(root);
      expect(bundleIsFresh(root)).toBe(true);
      expect(run(root)).toBe("bundle edited");

      // A file added anywhere under src/, even one nothing imports yet (it could shadow an import).
      writeFileSync(join(root, "src", "lib", "added.ts"), "export const added = 1;\n");
      expect(bundleIsFresh(root)).toBe(false);
      age(root, ["src/lib/added.ts"]);
      buildMini(root);
      expect(bundleIsFresh(root)).toBe(true);

      // A file removed: one nothing imports (its folder changes), and one the bundle was built from.
      rmSync(join(root, "src", "lib", "added.ts"));
      expect(bundleIsFresh(root)).toBe(false);
      age(root);
      buildMini(root);
      expect(bundleIsFresh(root)).toBe(true);
      const greeting = readFileSync(join(root, "src", "lib", "greeting.ts"));
      rmSync(join(root, "src", "lib", "greeting.ts"));
      expect(bundleIsFresh(root)).toBe(false);
      writeFileSync(join(root, "src", "lib", "greeting.ts"), greeting);
      expect(bundleIsFresh(root)).toBe(false);
      age(root, ["src/lib/greeting.ts"]);
      buildMini(root);
      expect(bundleIsFresh(root)).toBe(true);
      // A validator, copied beside the bundle at the build, edited.
      writeFileSync(join(root, "src", "contracts", "validators", "one.cjs"), "module.exports = { v: 2 };\n");
      expect(bundleIsFresh(root)).toBe(false);
      age(root, ["src/contracts/validators/one.cjs"]);
      buildMini(root);
      expect(bundleIsFresh(root)).toBe(true);

      // A file that steers the build without being a module.
      const now = new Date();
      utimesSync(join(root, "package.json"), now, now);
      expect(bundleIsFresh(root)).toBe(false);
      age(root, ["package.json"]);
      buildMini(root);
      expect(bundleIsFresh(root)).toBe(true);

      // A file stamped after the build began (changed while esbuild read it): stale until the next build.
      const future = new Date(Date.now() + 60_000);
      utimesSync(join(root, "src", "cli", "main.ts"), future, future);
      buildMini(root);
      expect(bundleIsFresh(root)).toBe(false);
      expect(run(root)).toBe("source edited");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("the build is the CLI: a fresh bundle runs `svc --help` with every command", async () => {
    // Built one folder below the repository root, like dist/, so import.meta paths resolve the same.
    const outdir = mkdtempSync(join(ROOT, ".svc-cli-dist-"));
    let help: string;
    try {
      await build(await cliBuildOptions(outdir));
      const files = readdirSync(outdir).filter((f) => f.endsWith(".js"));
      // The entry and one chunk per lazily loaded command: start-up loads none of their packages.
      expect(files).toContain("svc.js");
      expect(files.filter((f) => /^svc-[A-Z0-9]+\.js$/.test(f)).length).toBeGreaterThan(5);
      const entry = readFileSync(join(outdir, "svc.js"), "utf8");
      expect(entry).not.toMatch(/from "(@octokit|@electric-sql|pg"|tuf-js|jszip)/);
      for (const f of files) expect(readFileSync(join(outdir, f), "utf8")).not.toContain('from "../src/');
      // semver's small files are bundled, not loaded one by one from node_modules.
      for (const f of files)
        expect(readFileSync(join(outdir, f), "utf8")).not.toMatch(/from "semver|require\("semver/);
      help = execFileSync(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          `const { main } = await import(${JSON.stringify(join(outdir, "svc.js"))}); process.exitCode = await main(["--help"]);`,
        ],
        { encoding: "utf8", cwd: ROOT },
      );
      const importHelp = execFileSync(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          `const { main } = await import(${JSON.stringify(join(outdir, "svc.js"))}); process.exitCode = await main(["import", "--help"]);`,
        ],
        { encoding: "utf8", cwd: ROOT },
      );
      expect(importHelp).toMatch(/usage: svc import/);
      // The schema validators stay files of their own beside the bundle, loaded on first use: no
      // chunk carries them, and a command that validates documents finds them there.
      expect(readdirSync(join(outdir, "validators")).sort()).toEqual(
        readdirSync(join(ROOT, "src", "contracts", "validators")).sort(),
      );
      for (const f of files)
        expect(readFileSync(join(outdir, f), "utf8")).not.toContain("src/contracts/validators/");
      const checked = execFileSync(
        process.execPath,
        [
          "--input-type=module",
          "-e",
          `const { main } = await import(${JSON.stringify(join(outdir, "svc.js"))}); process.exitCode = await main(["check"]);`,
        ],
        { encoding: "utf8", cwd: ROOT },
      );
      expect(checked).toMatch(/contract rules 1-6 hold/);
    } finally {
      rmSync(outdir, { recursive: true, force: true });
    }
    expect(help).toMatch(/usage: svc <command>/);
    for (const command of ["serve", "build", "check", "validate", "import", "pack", "new", "smoke"])
      expect(help).toContain(command);
  });
});
