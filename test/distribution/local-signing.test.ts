import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Metadata } from "@tufjs/models";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { hideRelease } from "../../src/catalog/publisher.ts";
import { checkSignedCatalog } from "../../src/distribution/signature-check.ts";
import { buildRoot, signerFor } from "../../src/distribution/tuf-keys.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { writeRoot } from "../../src/distribution/tuf-root.ts";
import { signatureStatus } from "../../src/distribution/tuf-status.ts";
import { ManagerClient } from "../../src/distribution/manager-client.ts";
import { catalogProject, modRelease, publisherOptions } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";
import { startCatalogPortal } from "../support/catalog-portal.ts";
import { form, startSubmissionsPortal, upload, waitForState } from "../support/submissions-portal.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { operatorKeys } from "./support.ts";
import { modRecordsPath } from "../support/records.ts";

/**
 * The local publication paths sign by themselves when online keys are configured: no manual
 * `svc keys sign` between a publication and a manager's verified install.
 */
const skip = shouldSkip(clamscanPath, "clamscan");
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});
let dbDir = "";
let db = "";
beforeAll(() => {
  dbDir = mkdtempSync(join(tmpdir(), "svc-signing-db-"));
  if (!skip) db = makeSignatureDatabase(dbDir);
});
afterAll(() => rmSync(dbDir, { recursive: true, force: true }));

function outsideDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

describe.skipIf(skip)("signing on the local publication paths", () => {
  it("svc import, svc build and hide sign the site: svc install verifies without a manual svc keys sign", async () => {
    const project = catalogProject();
    cleanups.push(() => project.cleanup());
    const portal = await startCatalogPortal(project);
    cleanups.push(() => portal.close());
    const outside = outsideDir("svc-keys-");
    const keysDir = join(outside, "keys");
    expect((await runCli(["keys", "init", "--keys", keysDir], project.root)).code).toBe(0);
    const env = { SVC_TUF_ONLINE_KEYS: join(keysDir, "online.keys.json") };
    const { packageBytes, sidecar } = modRelease({ version: "1.0.0" });
    writeFileSync(join(project.root, "pkg.zip"), packageBytes);
    writeFileSync(join(project.root, "release.json"), JSON.stringify(sidecar));

    const imported = await runCli(
      ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamscan-db", db],
      project.root,
      env,
    );
    expect(imported.code, imported.stderr).toBe(0);
    expect(signatureStatus(project.siteDir)).toMatchObject({ signed: true, rootVersion: 1 });

    const game = join(outside, "game");
    const pinned = join(outside, "root.json");
    writeFileSync(pinned, readFileSync(join(project.siteDir, "tuf", "1.root.json")));
    const flags = ["--mirror", portal.origin, "--trusted-root", pinned];
    const install = await runCli(["install", "better-hud@^1.0.0", "--dir", game, ...flags], outside);
    expect(install.code, install.stderr).toBe(0);
    expect(install.stdout).toContain("better-hud@1.0.0");
    expect(existsSync(join(game, "better-hud", "Content", "Paks", "BetterHud.pak"))).toBe(true);

    // svc build after a config change re-renders the documents and re-signs them.
    const configPath = join(project.root, "portal.config.json");
    const config = JSON.parse(readFileSync(configPath, "utf8"));
    writeFileSync(
      configPath,
      JSON.stringify({ ...config, portal: { ...config.portal, name: "Renamed Portal" } }, null, 2),
    );
    const build = await runCli(["build"], project.root, env);
    expect(build.code, build.stderr).toBe(0);
    expect(build.stdout).not.toContain(" 0 written");
    expect(await checkSignedCatalog(portal.origin)).toMatchObject({ state: "verified" });

    // Hide through the publisher with the same signing the adapters configure: the manager sees it gone.
    const keys = JSON.parse(readFileSync(env.SVC_TUF_ONLINE_KEYS, "utf8"));
    await hideRelease({ ...publisherOptions(project), signing: { keys } }, "better-hud", "1.0.0");
    const client = new ManagerClient({
      mirrorUrl: portal.origin,
      cacheDir: join(outside, "client-cache"),
      trustedRootFile: pinned,
    });
    await client.refresh();
    expect(await client.modListing("better-hud")).toBeNull();
  });

  it("refuses a publication whose configured keys the root does not name, publishing nothing", async () => {
    const project = catalogProject();
    cleanups.push(() => project.cleanup());
    const outside = outsideDir("svc-keys-");
    expect((await runCli(["keys", "init", "--keys", join(outside, "keys")], project.root)).code).toBe(0);
    const stranger = join(outside, "stranger.json");
    writeFileSync(stranger, JSON.stringify(operatorKeys().online));
    const { packageBytes, sidecar } = modRelease({ version: "1.0.0" });
    writeFileSync(join(project.root, "pkg.zip"), packageBytes);
    writeFileSync(join(project.root, "release.json"), JSON.stringify(sidecar));
    const imported = await runCli(
      ["import", "--package", "pkg.zip", "--metadata", "release.json", "--clamscan-db", db],
      project.root,
      { SVC_TUF_ONLINE_KEYS: stranger },
    );
    expect(imported.code).toBe(1);
    expect(imported.stderr).toContain("tuf_key_mismatch");
    expect(existsSync(join(project.root, modRecordsPath("better-hud")))).toBe(false);
    expect(existsSync(join(project.siteDir, "tuf", "timestamp.json"))).toBe(false);
  });

  it("the API publish route signs what it committed: the manager verifies the new catalog and installs through the API-key lane", async () => {
    const keys = operatorKeys();
    const p = await startSubmissionsPortal({ SVC_LIVE_UPLOADS: "1" }, { signing: { keys: keys.online } });
    cleanups.push(() => p.stop());
    const siteDir = join(p.h.root, "site");
    const root = new Metadata(buildRoot(1, { root: keys.root, ...keys.online.keys }, new Date()));
    root.sign(signerFor(keys.root));
    writeRoot(siteDir, root);
    signSite(siteDir, keys.online);
    expect(await checkSignedCatalog(p.h.origin)).toMatchObject({ state: "verified" });

    const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version: "1.0.0" });
    const created = await upload(p, p.modder, form(sidecar, packageBytes));
    expect(created.status).toBe(201);
    const id = created.json.submissionId as string;
    expect((await waitForState(p, p.modder, id, ["pending_review", "validation_failed"])).state).toBe(
      "pending_review",
    );
    const decided = await p.call("POST", `/api/v1/moderation/releases/${id}/decision`, {
      body: { decision: "approve", notes: "ok" },
      cookie: p.moderator.cookie,
      csrf: p.moderator.csrf,
    });
    expect(decided.json.state).toBe("approved");
    const published = await p.call("POST", "/api/v1/catalog/publish", {
      cookie: p.admin.cookie,
      csrf: p.admin.csrf,
    });
    expect(published.json).toMatchObject({ published: 1, failed: 0 });

    const check = await checkSignedCatalog(p.h.origin);
    expect(check).toMatchObject({ state: "verified" });
    const key = await p.call("POST", "/api/v1/auth/api-keys", {
      body: { name: "manager" },
      cookie: p.modder.cookie,
      csrf: p.modder.csrf,
    });
    const work = outsideDir("svc-manager-");
    writeFileSync(join(work, "root.json"), readFileSync(join(siteDir, "tuf", "1.root.json")));
    const client = new ManagerClient({
      mirrorUrl: p.h.origin,
      cacheDir: join(work, "cache"),
      trustedRootFile: join(work, "root.json"),
      apiKey: key.json.secret,
    });
    const installed = await client.install(join(work, "game"), [{ modId: "quick-travel", range: "^1.0.0" }]);
    expect(installed).toEqual([expect.objectContaining({ modId: "quick-travel", version: "1.0.0" })]);
  });
});
