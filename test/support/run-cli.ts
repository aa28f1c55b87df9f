import { Writable } from "node:stream";
import type { CliIo } from "../../src/cli/io.ts";
import { main } from "../../src/cli/main.ts";

class Capture extends Writable {
  text = "";
  override _write(chunk: Buffer, _enc: string, done: () => void) {
    this.text += chunk.toString();
    done();
  }
}

/** Runs the svc CLI in-process with captured output. */
export async function runCli(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const stdout = new Capture();
  const stderr = new Capture();
  const io: CliIo = { stdout, stderr, cwd, env };
  const code = await main(args, io);
  return { code, stdout: stdout.text, stderr: stderr.text };
}
