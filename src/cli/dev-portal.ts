import { mkdirSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { SUMMARISED_BUCKET_PREFIX } from "../accounts/rate-limit.ts";
import { withPublishLock } from "../catalog/atomic-files.ts";
import { clearOwedSigning, owingSignature } from "../catalog/owed-signing.ts";
import { loadSiteInputs, type ProjectPaths, renderSite, writeSite } from "../catalog/site.ts";
import { listeningBaseUrl, type PortalConfig } from "../config/portal-config.ts";
import { assertCanSign, type SiteSigning, signAfterCommit } from "../distribution/tuf-repository.ts";
import { SvcError } from "../errors.ts";
import { describeHolder, tryLock } from "../lib/lock-file.ts";
import type { Store } from "../store/store.ts";

/** How a development portal's user clears rate limits; named in every rate_limit_exceeded it answers. */
export const RESET_LIMITS_HINT =
  "development portal: rate-limit windows survive restarts; restart it with `npm start -- --reset-limits` (svc serve --dev --reset-limits) to clear them";

/** A port the host can listen on now: port 0 asks the system, once, so the base URL can be known before the build. */
export async function resolvePort(host: string, port: number): Promise<number> {
  if (port !== 0) return port;
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      const free = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(free));
    });
  });
}

/**
 * What a development portal serves: with a loopback baseUrl, the documents link to the origin it
 * listens on, so every link works on any port (the committed site is rebuilt for that origin, and
 * for the configured one again when the portal stops).
 */
export function devPortalConfig(config: PortalConfig, host: string, port: number): PortalConfig {
  const baseUrl = listeningBaseUrl(config.baseUrl, { host, port });
  return baseUrl === config.baseUrl ? config : { ...config, baseUrl };
}

/** The base URL line of the start-up banner. */
export function describeBaseUrl(served: PortalConfig, configured: PortalConfig, origin: string): string {
  if (served.baseUrl !== configured.baseUrl)
    return `  base URL    ${served.baseUrl}  (dev: follows the listening port; portal.config.json says ${configured.baseUrl}, restored when the portal stops)`;
  if (served.baseUrl !== origin)
    return `  base URL    ${served.baseUrl}  (portal.config.json; documents link there, not to ${origin})`;
  return `  base URL    ${served.baseUrl}`;
}

/** --reset-limits: clears every rate-limit window before the portal answers anything. */
export async function resetLimits(store: Store | undefined): Promise<string> {
  if (!store) return "  limits      no database";
  // Refusal counters share the table but are audit data on their way to the log: they stay.
  const cleared = (
    await store.query("DELETE FROM rate_limit_buckets WHERE left(bucket, $1) <> $2", [
      SUMMARISED_BUCKET_PREFIX.length,
      SUMMARISED_BUCKET_PREFIX,
    ])
  ).rowCount;
  return `  limits      cleared ${cleared} rate-limit window(s) (--reset-limits)`;
}

/**
 * When a development portal served another base than portal.config.json's, the site goes back to
 * what `svc build` writes once it stops, so the working tree passes `svc check` again. Signed like
 * any publication (a signed site left described for another port is a tampered one); when the keys
 * went away while the portal ran, the site stays as it was served, consistently signed for that
 * port, and `warn` says why: a stopping portal never fails half-way.
 */
export async function restoreConfiguredSite(
  paths: ProjectPaths,
  configured: PortalConfig,
  signing: SiteSigning | null = null,
  warn: (line: string) => void = () => {},
): Promise<number> {
  return withPublishLock(paths, () => {
    const files = renderSite(loadSiteInputs(configured, paths.recordsDir), paths.siteDir);
    try {
      assertCanSign(paths.siteDir, signing);
    } catch (error) {
      warn(
        `site/ stays built for the port it was served on (not ${configured.baseUrl}): ${(error as Error).message}`,
      );
      return 0;
    }
    const written = writeSite(paths.siteDir, files, owingSignature(paths, signing));
    signAfterCommit(paths.siteDir, signing, written);
    if (signing) clearOwedSigning(paths);
    return written.written.length;
  });
}

/** The lock a running portal holds on its checkout (records/ and site/), beside the publish lock. */
export const PORTAL_LOCK = join(".svc-tmp", "portal.lock");

/**
 * One portal per checkout. A portal rebuilds site/ for the origin it serves and writes records/; the
 * PGlite data folder lock keeps a second portal away only when both use that folder, so two portals
 * on one DATABASE_URL (or two data folders) would overwrite each other's site/. Returns the release.
 */
export function lockPortalCheckout(paths: ProjectPaths): () => void {
  const path = join(paths.root, PORTAL_LOCK);
  mkdirSync(join(path, ".."), { recursive: true });
  const lock = tryLock(path, "svc serve");
  if (!lock.ok)
    throw new SvcError(
      "site_locked",
      `${paths.root} is served by ${describeHolder(lock.holder)}: one portal per checkout, since each rebuilds its site/ (stop that one, or run this one from another checkout)`,
      { details: { root: paths.root, holder: lock.holder } },
    );
  return lock.release;
}
