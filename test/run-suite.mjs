// `npm test` after the CLI bundle and `svc check`: the vitest suite, with the type check and the lint
// beside it. The suite leaves part of this 2-core machine idle (tests waiting on servers, Chromium and
// child processes; it keeps the cores about 85% busy), and `tsc --noEmit` (~25 s of CPU) and
// `biome check` (~3 s) run at a lower priority fill those gaps instead of adding their wall time
// before the first test. All three must pass; each check's output is printed whole after the suite,
// so it is not interleaved with test output.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const packageDir = (name) => dirname(require.resolve(`${name}/package.json`));
const vitest = join(packageDir("vitest"), "vitest.mjs");
const nice = ["/usr/bin/nice", "/bin/nice"].find((path) => existsSync(path));

const CHECKS = [
  { label: "typecheck (tsc --noEmit)", args: [require.resolve("typescript/bin/tsc"), "--noEmit"] },
  { label: "lint (biome check .)", args: [join(packageDir("@biomejs/biome"), "bin", "biome"), "check", "."] },
];

function run(command, args, options) {
  return new Promise((resolve) => {
    const child = spawn(command, args, options);
    let output = "";
    child.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", (error) => resolve({ code: 1, output: `${output}${error.message}\n` }));
    child.on("close", (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), output }));
  });
}

const started = Date.now();
const checks = CHECKS.map(({ label, args }) => {
  const command = [process.execPath, ...args];
  return run(nice ?? command[0], nice ? ["-n", "10", ...command] : command.slice(1), {
    stdio: ["ignore", "pipe", "pipe"],
  }).then((result) => ({ ...result, label, seconds: (Date.now() - started) / 1000 }));
});
const suite = await run(process.execPath, [vitest, "run", ...process.argv.slice(2)], { stdio: "inherit" });
let failed = suite.code;
for (const check of await Promise.all(checks)) {
  process.stdout.write(
    check.code === 0
      ? `${check.label}, beside the suite: passed in ${check.seconds.toFixed(0)} s\n`
      : `${check.label}, beside the suite: FAILED\n${check.output}`,
  );
  if (check.code !== 0 && failed === 0) failed = check.code;
}
process.exitCode = failed;
