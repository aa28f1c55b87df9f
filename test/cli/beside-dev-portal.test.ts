// Issue 25 item 8: `svc import` beside `npm start` on another port than portal.config.json's publishes
// at the origin the running portal serves (it was refused: "packageUrl must be https"), and two
// portals on one checkout (here two data folders, as with one DATABASE_URL) cannot both rebuild site/.
import { createHash } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type CatalogProject, catalogProject, modRelease } from "../support/catalog-project.ts";
import { runSvc, spawnSvc } from "../support/crash.ts";
import { type DevPortal, startDevPortal, stopDevPortal } from "../support/dev-portal.ts";
import { makeSignatureDatabase } from "../validation/clamav.ts";

let project: CatalogProject | undefined;
const portals: DevPortal[] = [];
/** A development portal on root with its own data folder, stopped after the test. */
async function startDevPortalOn(root: string, dataDir: string): Promise<DevPortal> {
  const portal = await startDevPortal(root, { SVC_DATA_DIR: dataDir });
  portals.push(portal);
  return portal;
}
afterEach(async () => {
  for (const portal of portals.splice(0)) await stopDevPortal(portal);
  project?.cleanup();
  project = undefined;
});

describe("svc import beside a development portal on another port", () => {
  it("publishes at the portal's origin, downloadable at once, and svc check passes once it stops", async () => {
    project = catalogProject();
    const root = project.root;
    const { packageBytes, sidecar } = modRelease();
    writeFileSync(join(root, "pkg.zip"), packageBytes);
    writeFileSync(join(root, "release.json"), JSON.stringify(sidecar));
    const db = makeSignatureDatabase(root);
    const portal = await startDevPortalOn(root, join(root, ".data"));
    expect(portal.origin).not.toBe(project.config.baseUrl);

    const run = await runSvc(
      ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamscan-db", db],
      { cwd: root },
    );
    expect(run.stderr).not.toContain("packageUrl must be https");
    expect(run.code).toBe(0);
    const artifact = `${portal.origin}/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip`;
    expect(run.stdout).toContain(`artifact  ${artifact}`);
    expect(run.stdout).toContain(
      `base URL  ${portal.origin}: the site is built for a development portal there (portal.config.json says ${project.config.baseUrl})`,
    );
    // The running portal lists and serves it.
    const catalog = (await (await fetch(`${portal.origin}/api/v1/catalog`)).json()) as {
      mods: Array<{ id: string; versions: Array<{ packageUrl: string }> }>;
    };
    expect(catalog.mods.find((m) => m.id === "better-hud")?.versions[0]?.packageUrl).toBe(artifact);
    const download = await fetch(artifact);
    expect(download.status).toBe(200);
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(sidecar.package.sha256);

    portal.child.kill("SIGTERM");
    expect(await portal.exited).toBe(0);
    // Back at portal.config.json's base: the release follows (a loopback artifact names this machine).
    const check = await runSvc(["check"], { cwd: root });
    expect(check.stdout + check.stderr).not.toContain("drift");
    expect(check.code).toBe(0);
    expect(project.read("site/api/v1/catalog.json")).toContain(
      `${project.config.baseUrl}/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip`,
    );
  }, 180_000);
});

describe("two portals on one checkout", () => {
  it("the second stops with site_locked naming the first, and starts once the first has stopped", async () => {
    project = catalogProject();
    const root = project.root;
    const first = await startDevPortalOn(root, join(root, ".data-a"));
    const second = spawnSvc(["serve", "--dev", "--no-example", "--port", "0", "--root", root], {
      cwd: root,
      env: { SVC_DATA_DIR: join(root, ".data-b") },
    });
    const secondExit = new Promise<number | null>((resolve) => second.once("exit", (c) => resolve(c)));
    portals.push({ child: second, origin: "", output: () => "", exited: secondExit });
    let err = "";
    second.stderr!.on("data", (d) => (err += d));
    const code = await secondExit;
    expect(code).toBe(1);
    expect(err).toMatch(new RegExp(`site_locked: .* is served by pid ${first.child.pid} on `));
    // The first portal's site is untouched: it still links to its own origin.
    expect(project.read("site/api/v1/publishing/backend-contract.json")).toContain(first.origin);

    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);
    const again = await startDevPortalOn(root, join(root, ".data-b"));
    expect((await fetch(`${again.origin}/api/v1/backend/health`)).status).toBe(200);
    rmSync(join(root, ".data-a"), { recursive: true, force: true });
  }, 180_000);
});
