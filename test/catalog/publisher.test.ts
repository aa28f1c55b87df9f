import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SimulatedCrash, recoverTransactions, withTreeLock } from "../../src/catalog/atomic-files.ts";
import { hideRelease, publishRelease, unhideRelease } from "../../src/catalog/publisher.ts";
import type { ReleaseRecord } from "../../src/catalog/records.ts";
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
        "records/mods/better-hud/1.0.0.json",
        "site/api/v1/catalog.json",
        "site/api/v1/mods/index.json",
        "site/api/v1/mods/better-hud/index.json",
        "site/api/v1/mods/better-hud/versions.json",
        artifactPath,
      ]),
    );
    const record = json<ReleaseRecord>(project.read("records/mods/better-hud/1.0.0.json"));
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
      releaseNotes: "Release 1.0.0.",
    });
    expectNoDrift(project);
    expect(project.exists(".svc-tmp/staging")).toBe(false);
  });

  it("refuses a re-import (version_exists) and a taken artifact URL (artifact_exists), changing no byte", async () => {
    project = catalogProject();
    await publish(project);
    const before = project.snapshot();
    const error = await expectCode(publish(project), "version_exists");
    expect(error.message).toMatch(/better-hud@1\.0\.0 already exists/);
    expect(project.snapshot()).toEqual(before);

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
    // Byte for byte the published state again, except the record's updatedAt.
    const after = project.snapshot();
    for (const [path, hash] of published) {
      if (path !== "records/mods/better-hud/1.0.0.json") expect(after.get(path), path).toBe(hash);
    }
    expect(json<ReleaseRecord>(project.read("records/mods/better-hud/1.0.0.json")).status).toBe("published");

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

  it("recovers a crash mid-publish: the transaction is rolled back to the previous bytes", async () => {
    project = catalogProject();
    await publish(project);
    const before = project.snapshot();
    const commit = {
      beforeApply: (index: number) => {
        if (index === 4) throw new SimulatedCrash("power cut (injected)");
      },
    };
    await expect(publish(project, { version: "1.1.0" }, { commit })).rejects.toBeInstanceOf(SimulatedCrash);
    // Half-applied on disk now; recovery (run by every publisher before it starts) restores it.
    expect(project.snapshot()).not.toEqual(before);
    expect(recoverTransactions(project.root).rolledBack).toBe(1);
    expect(project.snapshot()).toEqual(before);
    // And the crashed version can be published afterwards.
    await publish(project, { version: "1.1.0" });
    expectNoDrift(project);
  });

  it("rolls back a crashed site build before publishing, so that journal can never undo the publication", async () => {
    project = catalogProject();
    await publish(project);
    const { commitFiles } = await import("../../src/catalog/atomic-files.ts");
    const crash = () => {
      throw new SimulatedCrash("build killed (injected)");
    };
    expect(() =>
      commitFiles(
        project.siteDir,
        {
          write: new Map([
            ["api/v1/catalog.json", "half-written build\n"],
            ["api/v1/mods/index.json", "half-written build\n"],
          ]),
        },
        { beforeApply: (i) => (i === 1 ? crash() : undefined) },
      ),
    ).toThrow(SimulatedCrash);
    await publish(project, { version: "1.1.0" });
    expect(recoverTransactions(project.siteDir).rolledBack).toBe(0);
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
    // The same version twice at once: exactly one wins.
    const results = await Promise.allSettled([
      publish(project, { modId: "gamma-mod", name: "Gamma" }),
      publish(project, { modId: "gamma-mod", name: "Gamma" }),
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
