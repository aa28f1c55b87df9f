// `npm test` after lint, the CLI bundle and `svc check`: the type check and the vitest suite run side
// by side. The suite leaves about a third of this 2-core machine idle (tests waiting on servers,
// Chromium and child processes), and `tsc --noEmit` needs ~25 s of CPU; run at a lower priority it
// fills those gaps instead of adding its wall time before the first test. Both must pass; the type
// check's output is printed whole after the suite, so it is not interleaved with test output.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const require = createRequire(import.meta.url);
const tsc = require.resolve("typescript/bin/tsc");
const vitest = join(dirname(require.resolve("vitest/package.json")), "vitest.mjs");
const nice = ["/usr/bin/nice", "/bin/nice"].find((path) => existsSync(path));

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
const typecheckArgs = [process.execPath, tsc, "--noEmit"];
const typecheck = run(
  nice ?? typecheckArgs[0],
  nice ? ["-n", "10", ...typecheckArgs] : typecheckArgs.slice(1),
  {
    stdio: ["ignore", "pipe", "pipe"],
  },
).then((result) => ({ ...result, seconds: (Date.now() - started) / 1000 }));
const suite = await run(process.execPath, [vitest, "run", ...process.argv.slice(2)], { stdio: "inherit" });
const types = await typecheck;

process.stdout.write(
  types.code === 0
    ? `typecheck (tsc --noEmit, beside the suite): passed in ${types.seconds.toFixed(0)} s\n`
    : `typecheck (tsc --noEmit, beside the suite): FAILED\n${types.output}`,
);
process.exitCode = suite.code !== 0 ? suite.code : types.code;
