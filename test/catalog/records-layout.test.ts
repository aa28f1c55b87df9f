// The sharded records layout (src/contracts/records.ts, issue 24 item 10): the shard function, and
// the reader's refusals of a mod file or owners shard that does not say what its path says.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  findReleaseRecord,
  hasRelease,
  loadModRecords,
  loadOwnerships,
  loadReleaseRecords,
  modRecordsText,
} from "../../src/catalog/records.ts";
import { claimOwnership } from "../../src/contracts/ownership.ts";
import { RECORD_PATHS, recordShard } from "../../src/contracts/records.ts";
import { schemaRegistry } from "../../src/contracts/schemas.ts";
import { SvcError } from "../../src/errors.ts";
import { modRecordsPath, ownersPath } from "../support/records.ts";
import { releaseRecord, repoConfig, tempProject } from "../support/temp-project.ts";

type Project = ReturnType<typeof tempProject>;
let project: Project | undefined;
afterEach(() => project?.cleanup());

const registry = schemaRegistry(repoConfig().baseUrl);
const records = () => join(project!.root, "records");

function refusal(fn: () => unknown): SvcError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(SvcError);
    return error as SvcError;
  }
  throw new Error("expected a refusal");
}

describe("the records layout", () => {
  it("shards by the first two hex characters of sha256(modId): 256 folders, ~39 mods each at 10,000", () => {
    // sha256("better-hud") starts with these two characters: the shard never depends on the name's shape.
    expect(recordShard("better-hud")).toMatch(/^[0-9a-f]{2}$/);
    expect(RECORD_PATHS.modRecords("better-hud")).toBe(`mods/${recordShard("better-hud")}/better-hud.json`);
    expect(RECORD_PATHS.changesPage(2083)).toBe("changes/2/2083.json");
    expect(RECORD_PATHS.ledger("better-hud", "1.0.0")).toBe(
      `publication/${recordShard("better-hud")}/better-hud/1.0.0.json`,
    );
    // Names that crowd under a prefix (mod-00000 .. mod-09999) still spread evenly.
    const counts = new Map<string, number>();
    for (let m = 0; m < 10_000; m++) {
      const shard = recordShard(`mod-${String(m).padStart(5, "0")}`);
      counts.set(shard, (counts.get(shard) ?? 0) + 1);
    }
    expect(counts.size).toBe(256);
    expect(Math.max(...counts.values())).toBeLessThan(80);
  });

  it("reads a mod's releases semver ascending, and answers hasRelease and findReleaseRecord from its one file", () => {
    project = tempProject();
    project.addRecord(releaseRecord({ version: "1.10.0" }));
    project.addRecord(releaseRecord({ version: "1.9.0", status: "superseded" }));
    project.addRecord(releaseRecord({ version: "1.10.0-beta.1", status: "superseded" }));
    expect(loadModRecords(records(), "better-hud", registry).map((r) => r.version)).toEqual([
      "1.9.0",
      "1.10.0-beta.1",
      "1.10.0",
    ]);
    expect(hasRelease(records(), "better-hud", "1.9.0")).toBe(true);
    expect(hasRelease(records(), "better-hud", "2.0.0")).toBe(false);
    expect(hasRelease(records(), "other-mod", "1.0.0")).toBe(false);
    expect(findReleaseRecord(records(), "better-hud", "1.10.0")?.status).toBe("published");
  });

  it("refuses a mod file whose path, mod id, releases or versions disagree, naming the file", () => {
    project = tempProject();
    const path = join(project.root, modRecordsPath("better-hud"));
    const write = (text: string) => project!.write(modRecordsPath("better-hud"), text);

    write(modRecordsText("better-hud", [releaseRecord(), releaseRecord()]));
    let error = refusal(() => loadReleaseRecords(records(), registry));
    expect(error.code).toBe("invalid_payload");
    expect(error.message).toBe(`${path} holds better-hud@1.0.0 twice; each version is recorded once`);

    write(
      modRecordsText("better-hud", [
        releaseRecord(),
        releaseRecord({ modId: "other-mod", version: "2.0.0" }),
      ]),
    );
    error = refusal(() => loadModRecords(records(), "better-hud", registry));
    expect(error.message).toBe(`${path} holds other-mod@2.0.0; every release in it must be of better-hud`);

    write(modRecordsText("other-mod", [releaseRecord({ modId: "other-mod" })]));
    error = refusal(() => loadReleaseRecords(records(), registry));
    expect(error.message).toBe(
      `${path} holds the records of other-mod; its path must name the mod (better-hud)`,
    );

    write(JSON.stringify({ schema: "svc.mod-records.v1", modId: "better-hud", releases: [] }));
    error = refusal(() => loadReleaseRecords(records(), registry));
    expect(error.message).toContain(`${path} is not a valid mod records file (svc.mod-records.v1)`);

    // A mod file in another mod's shard folder.
    project.write(modRecordsPath("better-hud"), modRecordsText("better-hud", [releaseRecord()]));
    const wrong = recordShard("better-hud") === "00" ? "01" : "00";
    project.write(`records/mods/${wrong}/better-hud.json`, modRecordsText("better-hud", [releaseRecord()]));
    error = refusal(() => loadReleaseRecords(records(), registry));
    expect(error.message).toBe(
      `${join(records(), "mods", wrong, "better-hud.json")} is in shard ${wrong}, but better-hud belongs in records/${RECORD_PATHS.modRecords("better-hud")}`,
    );
  });

  it("refuses an owners shard that names another shard, holds a mod of another shard, or lists a mod twice", () => {
    project = tempProject();
    const at = "2026-11-20T10:00:00.000Z";
    const own = (modId: string) => claimOwnership({ modId, owner: { github: "author" }, at });
    const shard = recordShard("better-hud");
    const write = (value: unknown) => project!.write(ownersPath("better-hud"), JSON.stringify(value));
    write({ schema: "svc.owners-shard.v1", shard, owners: [own("better-hud"), own("better-hud")] });
    expect(refusal(() => loadOwnerships(records(), registry)).message).toContain(
      "owners must be sorted by modId, each mod once (better-hud)",
    );
    const stranger = ["a", "b", "c", "d", "e", "f", "g"]
      .map((c) => `mod-${c}`)
      .find((m) => recordShard(m) !== shard)!;
    write({ schema: "svc.owners-shard.v1", shard, owners: [own(stranger)] });
    expect(refusal(() => loadOwnerships(records(), registry)).message).toContain(
      `holds the ownership of ${stranger}, which belongs in records/${RECORD_PATHS.ownersShard(stranger)}`,
    );
    write({ schema: "svc.owners-shard.v1", shard: shard === "00" ? "01" : "00", owners: [] });
    expect(refusal(() => loadOwnerships(records(), registry)).message).toMatch(/names shard (00|01)$/);
  });
});
