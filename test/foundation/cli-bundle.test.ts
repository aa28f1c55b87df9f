import { execFileSync } from "node:child_process";
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
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

/** A copy of the entry scripts beside a one-file src/ tree whose main says where it came from. */
function miniProject(): string {
  const root = mkdtempSync(join(tmpdir(), "svc-cli-entry-"));
  mkdirSync(join(root, "bin"));
  mkdirSync(join(root, "src", "cli"), { recursive: true });
  mkdirSync(join(root, "dist"));
  for (const f of ["svc.js", "cli-entry.mjs"]) cpSync(join(ROOT, "bin", f), join(root, "bin", f));
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"));
  writeFileSync(join(root, "package.json"), '{ "type": "module" }\n');
  writeFileSync(
    join(root, "src", "cli", "main.ts"),
    'export async function main(): Promise<number> { console.log("source"); return 0; }\n',
  );
  writeFileSync(
    join(root, "dist", "svc.js"),
    'export async function main() { console.log("bundle"); return 0; }\n',
  );
  return root;
}

const run = (root: string) =>
  execFileSync(process.execPath, [join(root, "bin", "svc.js")], { encoding: "utf8" }).trim();

describe("the bundled CLI (dist/svc.js)", () => {
  it("bin/svc.js runs the bundle while it is fresh and the sources once any of them is newer", () => {
    const root = miniProject();
    const past = new Date(Date.now() - 60_000);
    utimesSync(join(root, "src", "cli", "main.ts"), past, past);
    expect(bundleIsFresh(root)).toBe(true);
    expect(run(root)).toBe("bundle");
    const future = new Date(Date.now() + 60_000);
    utimesSync(join(root, "src", "cli", "main.ts"), future, future);
    expect(bundleIsFresh(root)).toBe(false);
    expect(run(root)).toBe("source");
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
