import { Metadata } from "@tufjs/models";
import { afterEach, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { runSmoke } from "../../src/catalog/smoke.ts";
import { schemaRegistry } from "../../src/contracts/schemas.ts";
import { checkSignedCatalog } from "../../src/distribution/signature-check.ts";
import { buildRoot, signerFor } from "../../src/distribution/tuf-keys.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { writeRoot } from "../../src/distribution/tuf-root.ts";
import { catalogProject, modRelease, publisherOptions } from "../support/catalog-project.ts";
import { startCatalogPortal } from "../support/catalog-portal.ts";
import { operatorKeys, signedPortal } from "./support.ts";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

describe("the public smoke checks the signed catalog", () => {
  it("reports unsigned (and passes) without a root, verified once signed, against the local portal", async () => {
    const project = catalogProject();
    cleanups.push(() => project.cleanup());
    const portal = await startCatalogPortal(project);
    cleanups.push(() => portal.close());
    const { packageBytes, sidecar } = modRelease({ version: "1.0.0" });
    await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });
    const unsigned = await runSmoke({ baseUrl: portal.origin });
    expect(unsigned.signature).toMatchObject({ state: "unsigned" });
    expect(unsigned.passed).toBe(true);

    const keys = operatorKeys();
    const root = new Metadata(buildRoot(1, { root: keys.root, ...keys.online.keys }, new Date()));
    root.sign(signerFor(keys.root));
    writeRoot(project.siteDir, root);
    signSite(project.siteDir, keys.online);
    const signed = await runSmoke({ baseUrl: portal.origin });
    expect(signed.signature).toEqual({ state: "verified", documents: 3 });
    expect(signed.passed).toBe(true);
    expect(schemaRegistry(portal.origin).validate("post-publish-smoke", signed).ok).toBe(true);
  });

  it("fails with a stable code when a publication was not re-signed, or the timestamp expired", async () => {
    const portal = await signedPortal();
    cleanups.push(() => portal.close());
    await portal.publish({ version: "1.0.0" });
    expect(await checkSignedCatalog(portal.mirror.origin)).toMatchObject({ state: "verified" });
    const { packageBytes, sidecar } = modRelease({ version: "1.1.0" });
    await publishRelease(publisherOptions(portal.project), {
      packageBytes,
      sidecar,
      source: { kind: "import" },
    });
    expect(await checkSignedCatalog(portal.mirror.origin)).toMatchObject({
      state: "failed",
      code: "catalog_tampered",
    });
    signSite(portal.siteDir, portal.keys.online, () => new Date(Date.now() - 2 * 86_400_000));
    expect(await checkSignedCatalog(portal.mirror.origin)).toMatchObject({
      state: "failed",
      code: "metadata_expired",
    });
  });
});
