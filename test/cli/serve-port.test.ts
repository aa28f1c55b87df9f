// `svc serve` on a port another process holds: a clear address_in_use with exit 1, and nothing left
// running: the process ends, and the data folder's lock is released (a second portal starts on it).
import { existsSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runSvc, startServe } from "../support/crash.ts";
import { tempProject } from "../support/temp-project.ts";

let holder: Server | undefined;
let root: string | undefined;
afterEach(() => {
  holder?.close();
  holder = undefined;
  if (root) rmSync(root, { recursive: true, force: true });
});

function holdPort(): Promise<number> {
  return new Promise((resolve) => {
    holder = createServer();
    holder.listen(0, "127.0.0.1", () => {
      const address = holder!.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });
}

describe("svc serve on a port in use", () => {
  it("answers address_in_use, exits 1 and releases the data folder", async () => {
    root = tempProject().root;
    const port = await holdPort();
    const run = await runSvc(["serve", "--port", String(port), "--root", root], { cwd: root });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`svc serve: address_in_use: 127.0.0.1:${port} is in use by another process`);
    expect(run.stderr).not.toContain("internal error");
    // The lock went with the store: another portal on the same data folder starts and serves.
    expect(existsSync(join(root, ".data"))).toBe(true);
    const portal = await startServe(root);
    const health = await fetch(`${portal.origin}/api/v1/backend/health`);
    expect(health.status).toBe(200);
    await portal.stop();
  }, 120_000);
});
