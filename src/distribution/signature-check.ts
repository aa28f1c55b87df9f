import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isDistributionError } from "./errors.ts";
import { ManagerClient } from "./manager-client.ts";
import { mirrorLimits, openBounded } from "./mirror-transfer.ts";
import { TUF_DIR } from "./tuf-layout.ts";

/** What the public smoke reports about the signed catalog (post-publish-smoke `signature`). */
export type SignatureCheck =
  | { state: "unsigned"; detail: string }
  | { state: "verified"; documents: number }
  | { state: "failed"; code: string; detail: string };

/**
 * Verifies a deployed portal the way a manager does, through the same client: TUF refresh, then the
 * catalog and each mod's detail and versions documents against their signed length and sha256.
 * The root is taken from the site itself (trust on first use): this proves the deployment is
 * consistently signed and fresh (not stale after a publication, not expired), which is what an
 * operator's smoke is for; a manager pins its root instead. No root on the site: `unsigned`.
 *
 * Unlike a manager, which reads only the per-mod documents of the mods it needs, this check proves the
 * whole deployment: api/v1/catalog.json (the contract document mirrors copy) against its signed
 * length and sha256, and through the mods it lists, every mod's documents.
 */
export async function checkSignedCatalog(
  baseUrl: string,
  fetchImpl: typeof fetch = fetch,
): Promise<SignatureCheck> {
  const mirrorUrl = baseUrl.replace(/\/+$/, "");
  let rootText: string;
  try {
    const limits = mirrorLimits();
    const response = await openBounded(fetchImpl, `${mirrorUrl}/${TUF_DIR}/root.json`, {}, limits);
    if (!response.ok) {
      await response.cancel();
      if (response.status === 404) return { state: "unsigned", detail: `no ${TUF_DIR}/root.json` };
      return { state: "failed", code: "download_failed", detail: `root.json: HTTP ${response.status}` };
    }
    rootText = (await response.readAll(limits.rootMaxBytes)).toString("utf8");
  } catch (error) {
    const code = isDistributionError(error) ? error.code : "download_failed";
    return { state: "failed", code, detail: (error as Error).message };
  }
  const cacheDir = mkdtempSync(join(tmpdir(), "svc-signature-"));
  try {
    const trustedRootFile = join(cacheDir, "pinned-root.json");
    writeFileSync(trustedRootFile, rootText);
    const client = new ManagerClient({ mirrorUrl, cacheDir, trustedRootFile, fetch: fetchImpl });
    await client.refresh();
    const catalog = JSON.parse((await client.fetchDocument("api/v1/catalog.json")).toString("utf8")) as {
      mods: Array<{ id: string }>;
    };
    let documents = 1;
    for (const mod of catalog.mods) {
      await client.fetchDocument(`api/v1/mods/${mod.id}/index.json`);
      await client.fetchDocument(`api/v1/mods/${mod.id}/versions.json`);
      documents += 2;
    }
    return { state: "verified", documents };
  } catch (error) {
    if (isDistributionError(error)) return { state: "failed", code: error.code, detail: error.message };
    return { state: "failed", code: "catalog_tampered", detail: (error as Error).message };
  } finally {
    rmSync(cacheDir, { recursive: true, force: true });
  }
}
