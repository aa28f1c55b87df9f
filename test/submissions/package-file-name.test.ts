// Issue 25 item 9: one convention for the public file name of a package the portal stores,
// {modId}-{version}.zip, from every path; the name the file had on the modder's disk
// ("quick-travel-1.0.0-rev2.zip") never becomes part of the immutable public URL.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { packageFileName, withPackageFileName } from "../../src/contracts/package-file-name.ts";
import { type CatalogProject, catalogProject, modRelease } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";
import {
  form,
  SKIP_CLAMSCAN as skip,
  type SubmissionsPortal,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";
import { makeSignatureDatabase } from "../validation/clamav.ts";

let portal: SubmissionsPortal | undefined;
let project: CatalogProject | undefined;
afterEach(async () => {
  await portal?.stop();
  portal = undefined;
  project?.cleanup();
  project = undefined;
});

describe("withPackageFileName", () => {
  it("names a package the portal stores {modId}-{version}.zip, and leaves a URL-held one alone", () => {
    const { sidecar } = modRelease({ modId: "lantern", version: "1.0.0" });
    const stated = { ...sidecar, package: { ...sidecar.package, fileName: "lantern-1.0.0-rev2.zip" } };
    expect(packageFileName("lantern", "1.0.0")).toBe("lantern-1.0.0.zip");
    expect(withPackageFileName(stated).package.fileName).toBe("lantern-1.0.0.zip");
    const held = {
      ...stated,
      package: {
        ...stated.package,
        url: "https://github.com/a/lantern/releases/download/v1/lantern-1.0.0-rev2.zip",
      },
    };
    expect(withPackageFileName(held)).toBe(held);
  });
});

describe.skipIf(skip)("the public file name of an uploaded or imported package", () => {
  it("create_upload names it {modId}-{version}.zip whatever the metadata stated, through to the download", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version: "1.0.0" });
    const stated = { ...sidecar, package: { ...sidecar.package, fileName: "quick-travel-1.0.0-rev2.zip" } };
    const created = await upload(p, p.modder, form(stated, packageBytes));
    expect(created.status).toBe(201);
    const id = created.json.submissionId as string;
    const pending = await waitForState(p, p.modder, id, ["pending_review", "validation_failed"]);
    expect(pending.state).toBe("pending_review");
    expect(pending.package.fileName).toBe("quick-travel-1.0.0.zip");
    const decided = await p.call("POST", `/api/v1/moderation/releases/${id}/decision`, {
      body: { decision: "approve", notes: "Fine." },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(decided.json.state).toBe("approved");
    await p.call("POST", "/api/v1/catalog/publish", { cookie: p.admin.cookie, csrf: p.admin.csrf });
    const status = await p.call("GET", `/api/v1/uploads/${id}`, { cookie: p.modder.cookie });
    expect(status.json.publication.packageUrl).toBe(
      `${p.h.app.config.baseUrl}/downloads/mods/quick-travel/1.0.0/quick-travel-1.0.0.zip`,
    );
    const catalog = await p.call("GET", "/api/v1/catalog");
    const version = catalog.json.mods.find((m: any) => m.id === "quick-travel").versions[0];
    expect(version.fileName).toBe("quick-travel-1.0.0.zip");
  }, 120_000);

  it("svc import names it {modId}-{version}.zip whatever the sidecar stated", async () => {
    project = catalogProject();
    const dbDir = mkdtempSync(join(tmpdir(), "svc-name-db-"));
    try {
      const { packageBytes, sidecar } = modRelease({ modId: "lantern", version: "1.0.0" });
      writeFileSync(join(project.root, "lantern-1.0.0-rev2.zip"), packageBytes);
      const stated = { ...sidecar, package: { ...sidecar.package, fileName: "lantern-1.0.0-rev2.zip" } };
      writeFileSync(join(project.root, "release.json"), JSON.stringify(stated));
      const run = await runCli(
        [
          "import",
          "--package",
          "lantern-1.0.0-rev2.zip",
          "--metadata",
          "release.json",
          "--clamscan-db",
          makeSignatureDatabase(dbDir),
        ],
        project.root,
      );
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("site/downloads/mods/lantern/1.0.0/lantern-1.0.0.zip");
      expect(project.exists("site/downloads/mods/lantern/1.0.0/lantern-1.0.0-rev2.zip")).toBe(false);
      const catalog = JSON.parse(project.read("site/api/v1/catalog.json"));
      expect(catalog.mods[0].versions[0].fileName).toBe("lantern-1.0.0.zip");
    } finally {
      rmSync(dbDir, { recursive: true, force: true });
    }
  }, 120_000);
});
