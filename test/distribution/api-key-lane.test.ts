import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Metadata } from "@tufjs/models";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { parseSettings } from "../../src/config/settings.ts";
import type { DistributionError } from "../../src/distribution/errors.ts";
import { verifyInstall } from "../../src/distribution/install-manifest.ts";
import { ManagerClient } from "../../src/distribution/manager-client.ts";
import { buildRoot, signerFor } from "../../src/distribution/tuf-keys.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { writeRoot } from "../../src/distribution/tuf-root.ts";
import { createAppContext } from "../../src/http/app.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import type { Store } from "../../src/store/index.ts";
import { openTestStore } from "../support/http-harness.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { operatorKeys } from "./support.ts";

/**
 * The manager through the API-key fast lane of the real local portal (accounts in PGlite): the
 * bytes come from /api/v1/downloads/..., the verification is the same signed targets.
 */
let project: CatalogProject;
let store: Store;
let server: Server;
let origin: string;
let apiKey: string;
let work: string;
let packageBytes: Buffer;

beforeAll(async () => {
  project = catalogProject();
  work = mkdtempSync(join(tmpdir(), "svc-lane-"));
  store = await openTestStore("pglite");
  const app = await createAppContext({
    config: project.config,
    settings: parseSettings({ SVC_DEV_EMAIL: "auto-verify" }, { dataDir: join(project.root, ".data") }),
    siteDir: project.siteDir,
    log: () => {},
    store,
  });
  server = createPortalServer(app);
  origin = `http://127.0.0.1:${(await listen(server, 0, "127.0.0.1")).port}`;
  project.setBaseUrl(origin);
  app.config = project.config;
  const { accountId } = await app.accounts!.createAccount({
    email: "manager@example.com",
    displayName: "Manager",
    role: "player",
  });
  apiKey = (await app.accounts!.createApiKey(accountId, "manager")).apiKey;
  const keys = operatorKeys();
  const root = new Metadata(buildRoot(1, { root: keys.root, ...keys.online.keys }, new Date()));
  root.sign(signerFor(keys.root));
  writeRoot(project.siteDir, root);
  const release = modRelease({ version: "1.0.0" });
  packageBytes = release.packageBytes;
  await publishRelease(publisherOptions(project), {
    packageBytes: release.packageBytes,
    sidecar: release.sidecar,
    source: { kind: "import" },
  });
  signSite(project.siteDir, keys.online);
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  await store?.close();
  project?.cleanup();
  rmSync(work, { recursive: true, force: true });
});

function client(name: string, key: string) {
  return new ManagerClient({
    mirrorUrl: origin,
    cacheDir: join(work, name, "cache"),
    trustedRootFile: join(project.siteDir, "tuf", "1.root.json"),
    apiKey: key,
  });
}

describe("manager client through the API-key lane", () => {
  it("installs with a valid key, resuming a partial download, and verifies", async () => {
    const lane = client("good", apiKey);
    const version = (await lane.modListing("better-hud"))![0]!;
    const partial = join(work, "good", "cache", "packages", `${version.sha256}.part`);
    mkdirSync(join(partial, ".."), { recursive: true });
    writeFileSync(partial, packageBytes.subarray(0, 64));
    const dir = join(work, "good", "game");
    await lane.install(dir, [{ modId: "better-hud", range: "^1.0.0" }]);
    expect(verifyInstall(dir).ok).toBe(true);
    expect(readFileSync(join(work, "good", "cache", "packages", version.sha256))).toEqual(packageBytes);
  });

  it("a revoked or wrong key is a download failure that installs nothing", async () => {
    const dir = join(work, "bad", "game");
    let error: DistributionError | undefined;
    try {
      await client("bad", `${apiKey.slice(0, -4)}AAAA`).install(dir, [{ modId: "better-hud", range: "*" }]);
    } catch (e) {
      error = e as DistributionError;
    }
    expect(error?.code).toBe("download_failed");
    expect(error?.message).toContain("HTTP 401");
    expect(existsSync(dir)).toBe(false);
  });
});
