import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { createPgliteStore, migrate } from "../../src/store/index.ts";
import { DATA_DIR_CREATING } from "../../src/store/pglite-store.ts";

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

describe("a PGlite data folder's first start", () => {
  const work = mkdtempSync(join(tmpdir(), "svc-pglite-first-start-"));
  afterAll(() => rmSync(work, { recursive: true, force: true }));
  const templateDir = join(work, "cache");
  const entry = join(process.cwd(), "src/store/index.ts");

  const faults = join(process.cwd(), "test/support/fault-injection.mjs");

  /** A first start in a child process, SIGKILLed just before its Nth file operation in dataDir. */
  function killedFirstStart(dataDir: string, killAt: number): Promise<number | null> {
    const script = `const { createPgliteStore } = await import(${JSON.stringify(entry)});
const store = await createPgliteStore(${JSON.stringify(dataDir)}, { templateDir: ${JSON.stringify(templateDir)} });
await store.close();`;
    return new Promise((resolve) => {
      const child = spawn(
        process.execPath,
        ["--import", faults, "--import", "tsx", "--input-type=module", "-e", script],
        {
          stdio: "ignore",
          env: { ...process.env, SVC_FAULT_SCOPE: dataDir, SVC_FAULT_KILL_AT: String(killAt) },
        },
      );
      child.on("exit", (code) => resolve(code));
    });
  }

  it("is remade after a kill at any file operation of it, never leaving a folder that fails every start", async () => {
    // The template is made first, so the kills land in the copy and the first open.
    await createPgliteStore(join(work, "warm"), { templateDir }).then((s) => s.close());
    let halfMade = 0;
    for (const killAt of [3, 12]) {
      const dataDir = join(work, `killed-${killAt}`);
      mkdirSync(dataDir, { recursive: true });
      const exit = await killedFirstStart(dataDir, killAt);
      if (exit === 0) continue; // the first start had fewer operations than killAt
      if (existsSync(join(dataDir, DATA_DIR_CREATING))) halfMade++;
      const store = await createPgliteStore(dataDir, { templateDir });
      try {
        await migrate(store);
        await store.exec("create table probe (n int)");
        expect((await store.query("select count(*)::int as n from probe")).rows).toEqual([{ n: 0 }]);
      } finally {
        await store.close();
      }
      expect(existsSync(join(dataDir, DATA_DIR_CREATING))).toBe(false);
    }
    expect(halfMade).toBeGreaterThan(0);
  }, 240_000);

  it("remakes a folder whose marker says a first start was interrupted, keeping its lock file", async () => {
    const dataDir = join(work, "half");
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(join(dataDir, DATA_DIR_CREATING), "1\n");
    writeFileSync(join(dataDir, "PG_VERSION"), "17\n"); // a cluster cut off after its first file
    const store = await createPgliteStore(dataDir, { templateDir });
    await migrate(store);
    await store.close();
    expect(readdirSync(dataDir)).toContain("PG_VERSION");
    expect(readdirSync(dataDir)).not.toContain(DATA_DIR_CREATING);
  });
});
