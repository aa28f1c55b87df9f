import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { recoverTransactions, withTreeLock } from "../../src/catalog/atomic-files.ts";
import { hideRelease, publishRelease, unhideRelease } from "../../src/catalog/publisher.ts";
import { commitRecordUpdates } from "../../src/catalog/rebuild.ts";
import { loadSiteInputs, renderSite } from "../../src/catalog/site.ts";
import { checkContractRules } from "../../src/catalog/contract-rules.ts";
import { SvcError } from "../../src/errors.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
  stubValidator,
} from "../support/catalog-project.ts";
import { freezeDisk, withFrozenDisk } from "../support/freeze-fs.ts";
import { changesPagePath, modRecordsPath, readRelease } from "../support/records.ts";

let project: CatalogProject;
afterEach(() => project?.cleanup());

const json = <T>(text: string) => JSON.parse(text) as T;

function publish(p: CatalogProject, fixture: Parameters<typeof modRelease>[0] = {}, overrides = {}) {
  const { packageBytes, sidecar } = modRelease(fixture);
  return publishRelease(publisherOptions(p, overrides), {
    packageBytes,
    sidecar,
    source: { kind: "import" },
  });
}

async function expectCode(promise: Promise<unknown>, code: string) {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SvcError);
  expect((error as SvcError).code).toBe(code);
  return error as SvcError;
}

/** The mod's records file (records/mods/{shard}/better-hud.json). */
const MOD_FILE = modRecordsPath("better-hud");

/** The changes feed: records/changes and its published copy list every change, so they grow with each. */
const CHANGES_FEED = /^(records\/changes|site\/api\/v1\/changes)\//;

/** svc check, in-process: the committed site equals what svc build writes and the rules hold. */
function expectNoDrift(p: CatalogProject) {
  const expected = renderSite(loadSiteInputs(p.config, p.recordsDir), p.siteDir);
  for (const [path, text] of expected) expect(p.read(`site/${path}`), path).toBe(text);
  expect(checkContractRules(expected)).toEqual([]);
}

describe("publisher", () => {
  it("imports a release: record, artifact measured from the stored file, every catalog file", async () => {
    project = catalogProject();
    const { packageBytes, sidecar } = modRelease();
    const result = await publishRelease(publisherOptions(project), {
      packageBytes,
      sidecar,
      source: { kind: "import" },
    });
    const artifactPath = "site/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip";
    expect(readFileSync(join(project.root, artifactPath)).equals(packageBytes)).toBe(true);
    expect(result.artifact).toEqual({
      url: `${project.config.baseUrl}/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip`,
      sha256: sidecar.package.sha256,
      sizeBytes: packageBytes.length,
    });
    expect(result.written).toEqual(
      expect.arrayContaining([
        MOD_FILE,
        "site/api/v1/catalog.json",
        "site/api/v1/mods/index.json",
        "site/api/v1/mods/better-hud/index.json",
        "site/api/v1/mods/better-hud/versions.json",
        artifactPath,
      ]),
    );
    const record = readRelease(project.root, "better-hud", "1.0.0");
    expect(record).toMatchObject({
      status: "published",
      sha256: sidecar.package.sha256,
      source: { kind: "import" },
    });
    const catalog = json<{ mods: Array<{ id: string; versions: Array<Record<string, unknown>> }> }>(
      project.read("site/api/v1/catalog.json"),
    );
    expect(catalog.mods[0]!.versions[0]).toMatchObject({
      version: "1.0.0",
      packageUrl: result.artifact!.url,
      sha256: sidecar.package.sha256,
      packageSizeBytes: packageBytes.length,
      artifactStatus: "published",
      downloadEnabled: true,
      status: "published",
    });
    // The catalog lists the newest version without its release notes; versions.json has them.
    expect(catalog.mods[0]!.versions[0]).not.toHaveProperty("releaseNotes");
    const versions = json<{ versions: Array<Record<string, unknown>> }>(
      project.read("site/api/v1/mods/better-hud/versions.json"),
    );
    expect(versions.versions[0]).toMatchObject({ version: "1.0.0", releaseNotes: "Release 1.0.0." });
    expectNoDrift(project);
    expect(project.exists(".svc-tmp/staging")).toBe(false);
  });

  it("answers the same release again as already published, refuses other bytes or metadata (version_exists) and a taken artifact URL (artifact_exists), changing no byte", async () => {
    project = catalogProject();
    const first = await publish(project);
    expect(first.alreadyPublished).toBeUndefined();
    const before = project.snapshot();
    const validate = stubValidator();
    const again = await publish(project, {}, { validate });
    expect(again).toMatchObject({ alreadyPublished: true, written: [], deleted: [], changed: [] });
    expect(again.record).toEqual(first.record);
    expect(again.artifact).toEqual(first.artifact);
    expect(validate.calls).toBe(0);
    const error = await expectCode(
      publish(project, { extraFiles: { "Content/readme.txt": "other bytes" } }),
      "version_exists",
    );
    expect(error.message).toMatch(/better-hud@1\.0\.0 already exists/);
    await expectCode(publish(project, { name: "Better HUD renamed" }), "version_exists");
    await hideRelease(publisherOptions(project), "better-hud", "1.0.0");
    await expectCode(publish(project), "version_exists");
    await unhideRelease(publisherOptions(project), "better-hud", "1.0.0");
    // Only the record and the changes feed (which lists the hide and the unhide) differ.
    for (const [path, hash] of before) {
      if (path !== MOD_FILE && !CHANGES_FEED.test(path))
        expect(project.snapshot().get(path), path).toBe(hash);
    }
    expect(
      json<{ entries: Array<{ kind: string }> }>(project.read(changesPagePath(0))).entries.map((e) => e.kind),
    ).toEqual(["publish", "hide", "unhide"]);

    // A stray artifact at a version's URL (no record): never replaced.
    const { packageBytes, sidecar } = modRelease({ version: "2.0.0" });
    const options = publisherOptions(project);
    const taken = await options.store.promote(
      { modId: "better-hud", version: "2.0.0", fileName: sidecar.package.fileName },
      Buffer.from("other bytes"),
    );
    const { commitFiles } = await import("../../src/catalog/atomic-files.ts");
    commitFiles(project.root, { write: new Map(), create: taken.files });
    const withStray = project.snapshot();
    const refused = await expectCode(
      publishRelease(options, { packageBytes, sidecar, source: { kind: "import" } }),
      "artifact_exists",
    );
    expect(refused.message).toMatch(/never replaced/);
    expect(project.snapshot()).toEqual(withStray);
  });

  it("an existing artifact is a file with the recorded bytes: an empty version folder blocks nothing, other bytes are reported", async () => {
    project = catalogProject();
    // What an interrupted link of an older svc left: the version's folder, nothing in it.
    mkdirSync(join(project.siteDir, "downloads/mods/better-hud/1.0.0/nested"), { recursive: true });
    const options = publisherOptions(project);
    const key = { modId: "better-hud", version: "1.0.0", fileName: "better-hud-1.0.0.zip" };
    expect(await options.store.exists(key)).toBe(false);
    const published = await publish(project);
    const recorded = { sha256: published.record.sha256, sizeBytes: published.record.packageSizeBytes };
    expect(await options.store.exists(key, recorded)).toBe(true);
    expect(await options.store.exists(key, { ...recorded, sha256: "0".repeat(64) })).toBe(false);
    // The same release again: answered only while the stored file is still its bytes.
    const artifact = join(project.siteDir, "downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip");
    const bytes = readFileSync(artifact);
    rmSync(artifact);
    writeFileSync(artifact, Buffer.concat([bytes.subarray(0, -1), Buffer.from([bytes.at(-1)! ^ 1])]));
    const error = await expectCode(publish(project), "internal_error");
    expect(error.message).toMatch(/missing or not the recorded bytes/);
  });

  it("supersedes the previous newest version, which stays listed and downloadable", async () => {
    project = catalogProject();
    await publish(project, { version: "1.0.0" });
    const result = await publish(project, { version: "1.1.0" });
    expect(result.changed.map((r) => [r.version, r.status])).toEqual([["1.0.0", "superseded"]]);
    const versions = json<{
      latestVersion: string;
      versions: Array<{ version: string; status: string; downloadEnabled: boolean }>;
    }>(project.read("site/api/v1/mods/better-hud/versions.json"));
    expect(versions.latestVersion).toBe("1.1.0");
    expect(versions.versions.map((v) => [v.version, v.status, v.downloadEnabled])).toEqual([
      ["1.1.0", "published", true],
      ["1.0.0", "superseded", true],
    ]);
    // A backport is listed as superseded at once; the newest stays published.
    const backport = await publish(project, { version: "1.0.1" });
    expect(backport.record.status).toBe("superseded");
    expect(backport.changed).toEqual([]);
    expectNoDrift(project);
  });

  it("touches only the published mod's files and the indexes", async () => {
    project = catalogProject();
    await publish(project, { modId: "other-mod", name: "Other" });
    const otherDetail = project.read("site/api/v1/mods/other-mod/index.json");
    const result = await publish(project, { modId: "better-hud" });
    expect(result.written.filter((p) => p.includes("other-mod"))).toEqual([]);
    expect(project.read("site/api/v1/mods/other-mod/index.json")).toBe(otherDetail);
    expectNoDrift(project);
  });

  it("hides and unhides: statusBeforeHidden is kept, unhide restores, superseded when a newer version is visible", async () => {
    project = catalogProject();
    await publish(project, { version: "1.0.0" });
    const published = project.snapshot();
    const hidden = await hideRelease(publisherOptions(project), "better-hud", "1.0.0");
    expect(hidden.record).toMatchObject({ status: "hidden", statusBeforeHidden: "published" });
    // The only version hidden: the mod leaves the catalog and its files go.
    expect(json<{ mods: unknown[] }>(project.read("site/api/v1/catalog.json")).mods).toEqual([]);
    expect(project.exists("site/api/v1/mods/better-hud/index.json")).toBe(false);
    expect(project.exists("site/mods/better-hud/index.html")).toBe(false);
    expect(project.exists("site/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip")).toBe(true);
    expectNoDrift(project);
    await expectCode(hideRelease(publisherOptions(project), "better-hud", "1.0.0"), "illegal_transition");
    await expectCode(publish(project, { version: "1.0.0" }), "version_exists");

    const restored = await unhideRelease(publisherOptions(project), "better-hud", "1.0.0");
    expect(restored.record.status).toBe("published");
    expect(restored.record.statusBeforeHidden).toBeUndefined();
    // Byte for byte the published state again, except the record's updatedAt and the changes feed.
    const after = project.snapshot();
    for (const [path, hash] of published) {
      if (path !== MOD_FILE && !CHANGES_FEED.test(path)) expect(after.get(path), path).toBe(hash);
    }
    expect(readRelease(project.root, "better-hud", "1.0.0")?.status).toBe("published");

    // Hidden while a newer version is published: unhide gives superseded.
    await hideRelease(publisherOptions(project), "better-hud", "1.0.0");
    await publish(project, { version: "2.0.0" });
    const back = await unhideRelease(publisherOptions(project), "better-hud", "1.0.0");
    expect(back.record.status).toBe("superseded");
    // Hiding the newest and unhiding it makes it published again and the older one superseded.
    await hideRelease(publisherOptions(project), "better-hud", "2.0.0");
    const again = await unhideRelease(publisherOptions(project), "better-hud", "2.0.0");
    expect(again.record.status).toBe("published");
    expectNoDrift(project);
    await expectCode(unhideRelease(publisherOptions(project), "better-hud", "9.9.9"), "not_found");
  });

  it("leaves every file byte-identical when validation fails", async () => {
    project = catalogProject();
    await publish(project);
    const before = project.snapshot();
    const validate = stubValidator(false);
    const error = await expectCode(publish(project, { version: "1.1.0" }, { validate }), "invalid_payload");
    expect(error.message).toMatch(/validation failed.*antivirus_scan \(malware_found\)/);
    expect(validate.calls).toBe(1);
    expect(project.snapshot()).toEqual(before);
  });

  it("refuses a package whose bytes differ from the sidecar's sha256", async () => {
    project = catalogProject();
    const before = project.snapshot();
    const { packageBytes, sidecar } = modRelease();
    const altered = Buffer.from(packageBytes);
    altered[altered.length - 30] = (altered[altered.length - 30] ?? 0) ^ 1;
    const error = await expectCode(
      publishRelease(publisherOptions(project), {
        packageBytes: altered,
        sidecar,
        source: { kind: "import" },
      }),
      "invalid_payload",
    );
    expect(error.message).toMatch(/does not match its sidecar/);
    expect(project.snapshot()).toEqual(before);
  });

  it("refuses a publication that would break a contract rule (missing dependency), writing nothing", async () => {
    project = catalogProject();
    await publish(project);
    const before = project.snapshot();
    const error = await expectCode(
      publish(project, {
        modId: "needs-dep",
        dependencies: [{ modId: "not-there", versionRange: "^1.0.0" }],
      }),
      "invalid_payload",
    );
    expect(error.message).toMatch(/rule_3_installable.*dependency not-there/);
    expect(project.snapshot()).toEqual(before);
  });

  it("rolls back an injected failure mid-commit, byte for byte", async () => {
    project = catalogProject();
    await publish(project);
    const before = project.snapshot();
    const commit = {
      beforeApply: (index: number) => {
        if (index === 3) throw new Error("disk full (injected)");
      },
    };
    await expect(publish(project, { version: "1.1.0" }, { commit })).rejects.toThrow(/injected/);
    expect(project.snapshot()).toEqual(before);
    // The next publication goes through normally.
    await publish(project, { version: "1.1.0" });
    expectNoDrift(project);
  });

  it("a crash before the commit point is rolled back, one after it completed, and nothing is deleted later", async () => {
    /** A fresh project with 1.0.0, then 1.1.0 published with the disk frozen from operation crashAt. */
    const attempt = async (crashAt: number) => {
      project?.cleanup();
      project = catalogProject();
      await publish(project);
      const disk = freezeDisk(crashAt);
      await publish(project, { version: "1.1.0" }).catch(() => undefined);
      return { ...disk.stop(), log: disk.log };
    };
    const whole = await attempt(Number.POSITIVE_INFINITY);
    const published = project.snapshot();
    const commitPoint =
      whole.log.findIndex((op) => op.name === "renameSync" && op.path.includes("/txn-")) + 1;
    expect(commitPoint).toBeGreaterThan(0);
    const artifact = "site/downloads/mods/better-hud/1.1.0/better-hud-1.1.0.zip";
    for (const [crashAt, expected] of [
      [commitPoint, "old"],
      [commitPoint + 1, "new"],
      [commitPoint + 4, "new"],
    ] as const) {
      expect((await attempt(crashAt)).frozen).toBe(true);
      // The next publication of another mod recovers first: rolled back, or completed and kept.
      await publish(project, { modId: "other-mod", name: "Other" });
      const after = project.snapshot();
      const what = `after a crash at operation ${crashAt} (commit point ${commitPoint})`;
      if (expected === "new") {
        for (const path of [MOD_FILE, artifact])
          expect(after.get(path), `${path} ${what}`).toBe(published.get(path));
      } else {
        expect(readRelease(project.root, "better-hud", "1.1.0"), `1.1.0's record ${what}`).toBeNull();
        expect(after.has(artifact), `${artifact} ${what}`).toBe(false);
      }
      expectNoDrift(project);
    }
  });

  it("svc sync and smoke --record (commitRecordUpdates) finish a crashed publication before they write", async () => {
    project = catalogProject();
    await publish(project);
    // A dry run on a twin project finds the commit point (the rename of the txn- folder).
    const twin = catalogProject();
    await publishRelease(publisherOptions(twin), { ...modRelease(), source: { kind: "import" } });
    const dry = freezeDisk(Number.POSITIVE_INFINITY);
    await publishRelease(publisherOptions(twin), {
      ...modRelease({ version: "1.1.0" }),
      source: { kind: "import" },
    });
    dry.stop();
    twin.cleanup();
    const commitPoint = dry.log.findIndex((op) => op.name === "renameSync" && op.path.includes("/txn-")) + 1;
    expect(commitPoint).toBeGreaterThan(0);
    // Frozen just after the commit point: committed, nothing renamed into place yet.
    const disk = freezeDisk(commitPoint + 1);
    await publish(project, { version: "1.1.0" }).catch(() => undefined);
    expect(disk.stop().frozen).toBe(true);
    expect(readRelease(project.root, "better-hud", "1.1.0")).toBeNull();
    await commitRecordUpdates(
      {
        root: project.root,
        recordsDir: project.recordsDir,
        siteDir: project.siteDir,
        config: project.config,
      },
      [
        {
          path: "manager.json",
          text: `${JSON.stringify({ version: null }, null, 2)}\n`,
          apply: (inputs) => ({ ...inputs, manager: { version: null } }),
        },
      ],
    );
    expect(readRelease(project.root, "better-hud", "1.1.0")).not.toBeNull();
    expect(project.exists("site/downloads/mods/better-hud/1.1.0/better-hud-1.1.0.zip")).toBe(true);
    expectNoDrift(project);
  });

  it("finishes a crashed site build before publishing, so that journal can never undo the publication", async () => {
    project = catalogProject();
    await publish(project);
    const { commitFiles } = await import("../../src/catalog/atomic-files.ts");
    const build = () =>
      commitFiles(project.siteDir, {
        write: new Map([
          ["api/v1/mods/index.json", project.read("site/api/v1/mods/index.json").replace("\n", " \n")],
        ]),
      });
    const scratch = catalogProject();
    const dry = freezeDisk(Number.POSITIVE_INFINITY);
    commitFiles(scratch.siteDir, { write: new Map([["api/v1/mods/index.json", "x"]]) });
    const commitPoint = dry.log.findIndex((op) => op.name === "renameSync" && op.path.includes("/txn-")) + 1;
    dry.stop();
    scratch.cleanup();
    // The build dies right after its commit point: its journal under site/ says "committed".
    expect(withFrozenDisk(commitPoint + 1, build).frozen).toBe(true);
    expect(project.exists("site/.svc-tmp")).toBe(true);
    await publish(project, { version: "1.1.0" });
    expect(recoverTransactions(project.siteDir)).toEqual({ rolledBack: 0, completed: 0 });
    expectNoDrift(project);
  });

  it("serializes two publishers: both commit, neither loses the other's release", async () => {
    project = catalogProject();
    const [a, b] = await Promise.all([
      publish(project, { modId: "alpha-mod", name: "Alpha" }),
      publish(project, { modId: "beta-mod", name: "Beta" }),
    ]);
    expect(a.record.modId).toBe("alpha-mod");
    expect(b.record.modId).toBe("beta-mod");
    const catalog = json<{ mods: Array<{ id: string }> }>(project.read("site/api/v1/catalog.json"));
    expect(catalog.mods.map((m) => m.id)).toEqual(["alpha-mod", "beta-mod"]);
    // The same release twice at once: one publishes, the other finds it published; other bytes
    // for the same version at once: exactly one wins.
    const same = await Promise.all([
      publish(project, { modId: "gamma-mod", name: "Gamma" }),
      publish(project, { modId: "gamma-mod", name: "Gamma" }),
    ]);
    expect(same.map((r) => r.alreadyPublished === true).sort()).toEqual([false, true]);
    const results = await Promise.allSettled([
      publish(project, { modId: "delta-mod", name: "Delta" }),
      publish(project, { modId: "delta-mod", name: "Delta", extraFiles: { "Content/x.txt": "x" } }),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const rejected = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect((rejected.reason as SvcError).code).toBe("version_exists");
    expectNoDrift(project);
  });

  it("takes over the lock of a publisher that died", async () => {
    project = catalogProject();
    const { mkdirSync, writeFileSync } = await import("node:fs");
    mkdirSync(join(project.root, ".svc-tmp"), { recursive: true });
    // No process can have pid 2^22 + 1: Linux pids never exceed 2^22.
    writeFileSync(join(project.root, ".svc-tmp/publish.lock"), "4194305 dead 2026-11-01T00:00:00.000Z\n");
    await publish(project, {}, { lockTimeoutMs: 1000 });
    expect(project.exists(".svc-tmp/publish.lock")).toBe(false);
  });

  it("waits for a held lock and reports a conflict when it times out", async () => {
    project = catalogProject();
    let release!: () => void;
    const held = withTreeLock(project.root, () => new Promise<void>((r) => (release = r)));
    await new Promise((r) => setTimeout(r, 20));
    const error = await expectCode(publish(project, {}, { lockTimeoutMs: 100 }), "conflict");
    expect(error.message).toMatch(/publish\.lock/);
    release();
    await held;
    await publish(project);
  });
});
