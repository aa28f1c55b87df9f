import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PackageValidator, publishRelease } from "../../src/catalog/publisher.ts";
import { SvcError } from "../../src/errors.ts";
import type { DistributionError } from "../../src/distribution/errors.ts";
import { readManifest, verifyInstall } from "../../src/distribution/install-manifest.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { catalogProject, modRelease, publisherOptions, stubValidator } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { signedPortal, treeHashes } from "./support.ts";
import { readRelease, writeRelease } from "../support/records.ts";

const PAK = "Content/Paks/BetterHud.pak";
const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");

let portal: Awaited<ReturnType<typeof signedPortal>>;
let dbDir = "";
beforeAll(() => {
  dbDir = mkdtempSync(join(tmpdir(), "svc-file-hashes-db-"));
});
afterAll(async () => {
  await portal?.close();
  rmSync(dbDir, { recursive: true, force: true });
});

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))(
  "per-file hashes: svc import publishes them, svc install / verify / repair use them",
  () => {
    it("import records the validator's hashes; install checks them; verify and repair go by the signed list", async () => {
      portal = await signedPortal();
      const root = portal.project.root;
      const { packageBytes, sidecar, manifest } = modRelease({
        version: "1.0.0",
        extraFiles: { "Config/Nested/deep.ini": "deep=1\n" },
      });
      writeFileSync(join(root, "pkg.zip"), packageBytes);
      writeFileSync(join(root, "release.json"), JSON.stringify(sidecar));
      const db = makeSignatureDatabase(dbDir);
      // The site is signed, so the import signs too (a signed site refuses to publish without the keys).
      const imported = await runCli(
        ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamscan-db", db],
        root,
        { SVC_TUF_ONLINE_KEYS: JSON.stringify(portal.keys.online) },
      );
      expect(imported.stderr).toBe("");
      expect(imported.code).toBe(0);

      const record = readRelease(portal.project.root, "better-hud", "1.0.0")!;
      const manifestText = `${JSON.stringify(manifest, null, 2)}\n`;
      const pakText = "pak better-hud 1.0.0\n".repeat(50);
      expect(record.files).toEqual([
        { path: "svc-mod.json", sizeBytes: manifestText.length, sha256: sha256(manifestText) },
        { path: PAK, sizeBytes: pakText.length, sha256: sha256(pakText) },
        { path: "Config/Nested/deep.ini", sizeBytes: 7, sha256: sha256("deep=1\n") },
      ]);
      const site = (path: string) => JSON.parse(readFileSync(join(portal.siteDir, path), "utf8"));
      expect(site("api/v1/mods/better-hud/versions.json").versions[0].files).toEqual(record.files);
      expect(site("api/v1/mods/better-hud/index.json").versions[0].files).toEqual(record.files);
      expect(site("api/v1/catalog.json").mods[0].versions[0]).not.toHaveProperty("files");

      const dir = portal.installDir();
      await portal.client().install(dir, [{ modId: "better-hud", range: "*" }]);
      expect(readManifest(dir)!.mods["better-hud"]!.files).toEqual(
        record.files!.map((f) => ({ path: f.path, size: f.sizeBytes, sha256: f.sha256 })),
      );

      // Same size, other bytes; and the local manifest rewritten to match them (a tool "fixing" it).
      const pak = join(dir, "better-hud", PAK);
      const original = readFileSync(pak);
      const tampered = Buffer.from(original);
      tampered[0] = tampered[0]! ^ 0x01;
      writeFileSync(pak, tampered);
      const local = readManifest(dir)!;
      local.mods["better-hud"]!.files.find((f) => f.path === PAK)!.sha256 = sha256(tampered);
      writeFileSync(join(dir, "svc-install.json"), JSON.stringify(local));
      expect(verifyInstall(dir).ok).toBe(true);

      const online = [
        "--dir",
        dir,
        "--mirror",
        portal.mirror.origin,
        "--cache",
        join(portal.work, "cli-cache"),
      ];
      const trusted = ["--trusted-root", portal.trustedRoot];
      const verify = await runCli(["verify", ...online, ...trusted], root);
      expect(verify.code).toBe(1);
      expect(verify.stdout).toContain(`install_damaged better-hud/${PAK} (changed)`);
      expect(verify.stdout).toContain("3 file(s) checked, 1 mod(s) damaged");

      const repair = await runCli(["repair", ...online], root);
      expect(repair.stderr).toBe("");
      expect(repair.stdout).toContain("1 file(s) rewritten");
      expect(readFileSync(pak)).toEqual(original);
      expect((await runCli(["verify", ...online], root)).code).toBe(0);
    });

    it("refuses a package whose entries differ from the signed list (file_hash_mismatch), leaving the installation as it was", async () => {
      // The operator's record (and so the signed versions.json) disagrees with the package's bytes.
      const record = readRelease(portal.project.root, "better-hud", "1.0.0")!;
      record.files!.find((f) => f.path === PAK)!.sha256 = sha256("some other pak");
      writeRelease(portal.project.root, record);
      const build = await runCli(["build"], portal.project.root);
      expect(build.stderr).toBe("");
      signSite(portal.siteDir, portal.keys.online);

      const dir = portal.installDir();
      const before = treeHashes(dir);
      let refusal: DistributionError | undefined;
      try {
        await portal.client("fresh").install(dir, [{ modId: "better-hud", range: "*" }]);
      } catch (error) {
        refusal = error as DistributionError;
      }
      expect(refusal?.code).toBe("file_hash_mismatch");
      expect(refusal?.details).toMatchObject({ files: [{ path: PAK, problem: "changed" }] });
      expect(treeHashes(dir)).toEqual(before);
    });
  },
);

describe("the publisher stores only what the validator measured", () => {
  it("refuses a passed report without per-file hashes, writing nothing", async () => {
    const project = catalogProject();
    try {
      const before = project.snapshot();
      const { packageBytes, sidecar } = modRelease();
      const validate: PackageValidator = async (request) => ({
        ...(await stubValidator()(request)),
        files: null,
      });
      const refused = await publishRelease(publisherOptions(project, { validate }), {
        packageBytes,
        sidecar,
        source: { kind: "import" },
      }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(SvcError);
      expect(refused).toMatchObject({ code: "internal_error" });
      expect((refused as Error).message).toMatch(/no per-file hashes/);
      expect(project.snapshot()).toEqual(before);
    } finally {
      project.cleanup();
    }
  });
});
