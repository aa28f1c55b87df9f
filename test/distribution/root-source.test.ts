/**
 * The TUF root metadata is a source file, not a build output: `svc keys init` and `rotate` write it
 * to records/tuf/ (committed with the records) as well as site/tuf/, and `svc build` copies it into
 * site/tuf/, so a site built from a clean clone (site/ is never committed) still carries every root a
 * client walks through; `svc check` reports a site/tuf root that differs from the records' copy.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { catalogProject } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";

const cleanups: Array<() => unknown> = [];
afterEach(() => {
  for (const fn of cleanups.splice(0).reverse()) fn();
});

function project() {
  const p = catalogProject();
  cleanups.push(() => p.cleanup());
  const outside = mkdtempSync(join(tmpdir(), "svc-keys-"));
  cleanups.push(() => rmSync(outside, { recursive: true, force: true }));
  return { ...p, keysDir: join(outside, "keys") };
}

describe("the TUF root lives in records/tuf and svc build copies it into site/tuf", () => {
  it("init and rotate write records/tuf; a site built without site/tuf gets every root back; check sees a changed copy", async () => {
    const p = project();
    const init = await runCli(["keys", "init", "--keys", p.keysDir], p.root);
    expect(init.code, init.stderr).toBe(0);
    expect(init.stdout).toContain("wrote records/tuf/1.root.json");
    const root1 = readFileSync(join(p.recordsDir, "tuf/1.root.json"), "utf8");
    expect(readFileSync(join(p.siteDir, "tuf/1.root.json"), "utf8")).toBe(root1);

    const rotate = await runCli(["keys", "rotate", "timestamp", "--keys", p.keysDir], p.root);
    expect(rotate.code, rotate.stderr).toBe(0);
    expect(readdirSync(join(p.recordsDir, "tuf")).sort()).toEqual([
      "1.root.json",
      "2.root.json",
      "root.json",
    ]);
    const root2 = readFileSync(join(p.recordsDir, "tuf/2.root.json"), "utf8");
    expect(readFileSync(join(p.recordsDir, "tuf/root.json"), "utf8")).toBe(root2);

    // A clean clone: no site/ at all. The build brings the roots back from records/tuf.
    rmSync(p.siteDir, { recursive: true, force: true });
    const build = await runCli(["build"], p.root);
    expect(build.code, build.stderr).toBe(0);
    for (const name of ["1.root.json", "2.root.json", "root.json"])
      expect(readFileSync(join(p.siteDir, "tuf", name), "utf8"), name).toBe(
        readFileSync(join(p.recordsDir, "tuf", name), "utf8"),
      );
    expect((await runCli(["check"], p.root)).code).toBe(0);

    // A root edited in the site (or a stale deployment) is drift from the records.
    writeFileSync(join(p.siteDir, "tuf/2.root.json"), root1);
    const check = await runCli(["check"], p.root);
    expect(check.code).toBe(1);
    expect(check.stderr).toContain("drift: site/tuf/2.root.json");
    // --if-drifted builds over the site on disk, which rewrites exactly that.
    const repaired = await runCli(["build", "--if-drifted"], p.root);
    expect(repaired.code, repaired.stderr).toBe(0);
    expect(repaired.stdout).toMatch(/svc build over the restored site: \d+ files, 1 written, 0 removed/);
    expect(readFileSync(join(p.siteDir, "tuf/2.root.json"), "utf8")).toBe(root2);
    const kept = await runCli(["build", "--if-drifted"], p.root);
    expect(kept.stdout).toMatch(/0 written, 0 removed, \d+ unchanged \(it matched the records\)/);
    // --site-exact: the cache entry was saved from exactly these inputs, so nothing is examined.
    writeFileSync(join(p.siteDir, "tuf/2.root.json"), root1);
    const exact = await runCli(["build", "--if-drifted", "--site-exact"], p.root);
    expect(exact.stdout).toContain("kept without a check");
    expect(readFileSync(join(p.siteDir, "tuf/2.root.json"), "utf8")).toBe(root1);
  });

  it("rotate finds the root of a portal from before the move (site/tuf only) and writes the next one to records/tuf", async () => {
    const p = project();
    expect((await runCli(["keys", "init", "--keys", p.keysDir], p.root)).code).toBe(0);
    rmSync(join(p.recordsDir, "tuf"), { recursive: true, force: true });
    const rotate = await runCli(["keys", "rotate", "targets", "--keys", p.keysDir], p.root);
    expect(rotate.code, rotate.stderr).toBe(0);
    expect(existsSync(join(p.recordsDir, "tuf/2.root.json"))).toBe(true);
    expect(existsSync(join(p.siteDir, "tuf/2.root.json"))).toBe(true);
  });
});
