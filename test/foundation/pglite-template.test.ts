import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createPgliteStore, migrate } from "../../src/store/index.ts";

/**
 * New PGlite databases are copies of one fresh cluster per PGlite version (initdb is most of what a
 * new database costs). Each test uses its own template folder, so the user's real cache is untouched.
 */
describe("PGlite databases made from a template cluster", () => {
  const work = mkdtempSync(join(tmpdir(), "svc-pglite-template-"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  async function roundTrip(dataDir: string | null, templateDir: string | null): Promise<unknown[]> {
    const store = await createPgliteStore(dataDir, { templateDir });
    try {
      await migrate(store);
      await store.exec("create table if not exists probe (n int)");
      await store.query("insert into probe values ($1)", [7]);
      return (await store.query<{ n: number }>("select n from probe")).rows;
    } finally {
      await store.close();
    }
  }

  it("makes the template once, then opens new folders from it, each its own database", async () => {
    const templateDir = join(work, "cache-a");
    expect(await roundTrip(join(work, "one"), templateDir)).toEqual([{ n: 7 }]);
    expect(readdirSync(templateDir)).toEqual(["cluster"]);
    expect(existsSync(join(templateDir, "cluster", "svc-template-complete"))).toBe(true);
    // The copy carries no marker and no lock: it is an ordinary data folder.
    expect(existsSync(join(work, "one", "svc-template-complete"))).toBe(false);
    expect(existsSync(join(work, "one", "PG_VERSION"))).toBe(true);
    // A second folder is a separate database (the probe row of the first is not in it).
    expect(await roundTrip(join(work, "two"), templateDir)).toEqual([{ n: 7 }]);
    // Reopening keeps what was written.
    expect(await roundTrip(join(work, "one"), templateDir)).toEqual([{ n: 7 }, { n: 7 }]);
  });

  it("in-memory databases load a dump of the template; a template that does not open falls back to initdb", async () => {
    const templateDir = join(work, "cache-a");
    expect(await roundTrip(null, templateDir)).toEqual([{ n: 7 }]);
    expect(readdirSync(templateDir).sort()).toEqual(["cluster", "cluster.tar"]);
    // A damaged template (marker present, cluster files garbage): the database still opens, and the
    // template is dropped so the next database does not trip on it.
    const broken = join(work, "cache-c");
    mkdirSync(join(broken, "cluster"), { recursive: true });
    writeFileSync(join(broken, "cluster", "svc-template-complete"), "x\n");
    writeFileSync(join(broken, "cluster", "PG_VERSION"), "not a cluster\n");
    expect(await roundTrip(join(work, "three"), broken)).toEqual([{ n: 7 }]);
    expect(existsSync(join(broken, "cluster"))).toBe(false);
  }, 60_000);
});
