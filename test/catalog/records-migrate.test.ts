// The records layout (issue 24, item 10): a portal still in the layout before sharding
// (records/mods/{modId}/{version}.json, records/owners/{modId}.json, records/changes/{page}.json,
// records/publication/{modId}/{version}.json) is refused with records_layout_outdated naming the
// command, and `svc records migrate` rewrites it into the sharded layout in one journaled commit:
// exactly the files the publisher writes, once (a second run has nothing to do).
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { emptyLedgerEntry, writeLedgerEntry } from "../../src/catalog/publication-ledger.ts";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { hasRelease, loadOwnership } from "../../src/catalog/records.ts";
import type { ModOwnership } from "../../src/contracts/ownership.ts";
import { RECORD_PATHS, recordShard } from "../../src/contracts/records.ts";
import { schemaRegistry } from "../../src/contracts/schemas.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
  snapshotTree,
} from "../support/catalog-project.ts";
import { readAllReleases } from "../support/records.ts";
import { runCli } from "../support/run-cli.ts";

let project: CatalogProject;
afterEach(() => project?.cleanup());

const author = { github: "author" } as const;
const AT = "2026-11-20T10:00:00.000Z";

function publish(modId: string, version: string) {
  const { packageBytes, sidecar } = modRelease({ modId, name: `Mod ${modId}`, version });
  return publishRelease(publisherOptions(project), {
    packageBytes,
    sidecar,
    source: { kind: "upload", submissionId: `sub_${modId}_${version.replaceAll(".", "_")}` },
    submitter: { identity: [author], claimAs: author },
  });
}

/** A portal with two mods (one of them "ab", a mod id that looks like a shard), owners, feed, ledger. */
async function shardedPortal() {
  project = catalogProject();
  await publish("better-hud", "1.0.0");
  await publish("better-hud", "1.1.0");
  await publish("ab", "1.0.0");
  writeLedgerEntry(project.recordsDir, {
    ...emptyLedgerEntry("quick-travel", "2.0.0"),
    refusal: {
      code: "not_approved",
      message: "no moderator approved it",
      retryable: false,
      pullRequest: 7,
      submitter: "author",
      sidecarBlob: "a".repeat(40),
      state: null,
      firstRefusedAt: AT,
      refusedAt: AT,
      attempts: 1,
      retryAt: AT,
    },
  });
}

const write = (path: string, text: string | Buffer) => {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
};

/** Rewrites records/ as a portal before sharding held it (what the old publisher wrote, byte for byte). */
function toLayoutBeforeSharding(recordsDir: string) {
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  const releases = readAllReleases(join(recordsDir, ".."));
  const owners = readdirSync(join(recordsDir, "owners")).flatMap(
    (name) =>
      (JSON.parse(readFileSync(join(recordsDir, "owners", name), "utf8")) as { owners: ModOwnership[] })
        .owners,
  );
  const pages = readdirSync(join(recordsDir, "changes", "0"));
  const pageBytes = pages.map(
    (name) => [name, readFileSync(join(recordsDir, "changes", "0", name))] as const,
  );
  const ledger = readFileSync(join(recordsDir, RECORD_PATHS.ledger("quick-travel", "2.0.0")));
  for (const dir of ["mods", "owners", "changes", "publication"])
    rmSync(join(recordsDir, dir), { recursive: true });
  for (const r of releases) write(join(recordsDir, "mods", r.modId, `${r.version}.json`), json(r));
  for (const o of owners) write(join(recordsDir, "owners", `${o.modId}.json`), json(o));
  for (const [name, bytes] of pageBytes) write(join(recordsDir, "changes", name), bytes);
  write(join(recordsDir, "publication", "quick-travel", "2.0.0.json"), ledger);
}

describe("svc records migrate", () => {
  it("the old layout is refused with records_layout_outdated naming the command; migrate rewrites it into exactly the sharded files, once", async () => {
    await shardedPortal();
    const sharded = snapshotTree(project.recordsDir);
    expect([...sharded.keys()]).toEqual(
      expect.arrayContaining([
        `mods/${recordShard("better-hud")}/better-hud.json`,
        `mods/${recordShard("ab")}/ab.json`,
        `owners/${recordShard("ab")}.json`,
        "changes/0/0.json",
        `publication/${recordShard("quick-travel")}/quick-travel/2.0.0.json`,
      ]),
    );
    toLayoutBeforeSharding(project.recordsDir);
    expect(snapshotTree(project.recordsDir).has("mods/better-hud/1.1.0.json")).toBe(true);

    const build = await runCli(["build"], project.root);
    expect(build.code).toBe(1);
    expect(build.stderr).toMatch(/svc build: records_layout_outdated: .* run `svc records migrate`/);
    const before = project.snapshot();
    await expect(publish("better-hud", "1.2.0")).rejects.toMatchObject({ code: "records_layout_outdated" });
    await expect(publish("ab", "1.1.0")).rejects.toMatchObject({ code: "records_layout_outdated" });
    expect(project.snapshot()).toEqual(before);
    expect(() => hasRelease(project.recordsDir, "better-hud", "1.0.0")).toThrow(/svc records migrate/);
    const registry = schemaRegistry(project.config.baseUrl);
    expect(() => loadOwnership(project.recordsDir, "better-hud", registry)).toThrow(/svc records migrate/);

    const migrated = await runCli(["records", "migrate"], project.root);
    expect(migrated.code, migrated.stderr).toBe(0);
    expect(migrated.stdout).toContain(
      "3 release record(s) of 2 mod(s), 2 ownership record(s), 1 changes page(s), 1 ledger entr(ies) moved",
    );
    expect(snapshotTree(project.recordsDir)).toEqual(sharded);

    const again = await runCli(["records", "migrate"], project.root);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain("nothing to do");
    expect(snapshotTree(project.recordsDir)).toEqual(sharded);

    // The site never changed: svc check passes, and publications go on in the new layout.
    expect((await runCli(["check"], project.root)).code).toBe(0);
    await publish("better-hud", "1.2.0");
    expect(hasRelease(project.recordsDir, "better-hud", "1.2.0")).toBe(true);
  });

  it("checks every old record first: a broken one stops the migration and nothing is written", async () => {
    await shardedPortal();
    toLayoutBeforeSharding(project.recordsDir);
    const broken = join(project.recordsDir, "mods", "better-hud", "1.0.0.json");
    writeFileSync(
      broken,
      readFileSync(broken, "utf8").replace('"modId": "better-hud"', '"modId": "other-mod"'),
    );
    const before = project.snapshot();
    const migrated = await runCli(["records", "migrate"], project.root);
    expect(migrated.code).toBe(1);
    expect(migrated.stderr).toContain(
      `invalid_payload: ${broken} holds other-mod@1.0.0; its path must match`,
    );
    expect(project.snapshot()).toEqual(before);
  });

  it("has a --help, and a missing or unknown subcommand is a usage error", async () => {
    project = catalogProject();
    const help = await runCli(["records", "--help"], project.root);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("usage: svc records migrate");
    expect((await runCli(["records"], project.root)).code).toBe(2);
    expect((await runCli(["records", "shard"], project.root)).code).toBe(2);
    expect((await runCli(["--help"], project.root)).stdout).toMatch(/records +`records migrate`/);
  });
});
