/**
 * site/ is a build output (on GitHub it is deployed to Pages, never committed): `svc build` makes it
 * from portal.config.json and records/, and a workflow that starts from a previous deployment (the
 * Actions cache) builds over it before it publishes onto it, unless the cache entry was saved from
 * exactly the checkout's inputs.
 */
import type { PortalConfig } from "../config/portal-config.ts";
import { assertCanSign, type SiteSigning, signAfterCommit } from "../distribution/tuf-repository.ts";
import { type CommitResult, type RecoveryResult, stagingDir, withPublishLock } from "./atomic-files.ts";
import { clearOwedSigning, owingSignature, settleOwedSigning } from "./owed-signing.ts";
import { checkSite } from "./site-check.ts";
import type { ProjectPaths } from "./site.ts";
import { streamSiteInputs } from "./site-inputs.ts";
import { renderAndWriteSite } from "./site-write.ts";

export interface SiteBuild extends CommitResult {
  /** How many files the build produces (all of them compared with the disk). */
  files: number;
  /** What an interrupted publication's signing came to (svc build settles it first). */
  owed: ReturnType<typeof settleOwedSigning>;
}

/**
 * What `svc build` does: under the publish lock, after recovery, render every file from the records
 * and write them as one transaction (a document whose content is unchanged keeps its bytes), then
 * re-sign the whole site when online keys are given.
 */
export async function buildSite(
  paths: ProjectPaths,
  config: PortalConfig,
  options: { signing?: SiteSigning | null; onRecovered?: (result: RecoveryResult) => void } = {},
): Promise<SiteBuild> {
  const signing = options.signing ?? null;
  return withPublishLock(
    paths,
    () => {
      assertCanSign(paths.siteDir, signing);
      const owed = settleOwedSigning(paths, signing);
      // Staging under the publish lock, which clears it before and after; the records streamed, so
      // the render reads each mod's as it reaches it and lets them go once its files are made.
      const {
        files,
        staged: _,
        ...result
      } = renderAndWriteSite(streamSiteInputs(config, paths.recordsDir), paths.siteDir, {
        commit: owingSignature(paths, signing),
        staging: stagingDir(paths.root),
      });
      // A build is also the repair path: re-hash the whole site rather than trust the commit's list.
      signAfterCommit(paths.siteDir, signing, result, { full: true });
      if (signing) clearOwedSigning(paths);
      return { ...result, files, owed };
    },
    options.onRecovered ? { onRecovered: options.onRecovered } : {},
  );
}

export interface SiteMaterialization {
  /** True when site/ had to change: no site on disk, or a file the build wrote or removed. */
  rebuilt: boolean;
  /** Whether svc build ran (false: an exact restore kept unexamined, or a checked one that matched). */
  built: boolean;
  build: SiteBuild | null;
}

/**
 * Brings site/ in line with the records. `exact` says the workflow restored a site saved (by a
 * default-branch run, under a key hashing everything the build reads) from exactly the checkout's
 * inputs: it is kept as it is, with no check. Otherwise `svc build` runs over what is there (or
 * nothing): unchanged documents keep their bytes and the signed metadata stays. A build over a
 * restored site costs no more than the drift check alone (at 10,000 mods x 5: 9.2 s of CPU against
 * 10.8 s, docs/github.md), and leaves the same site a check followed by a build would. With online keys
 * (a build re-signs everything) the check runs first and a matching site is kept.
 */
export async function materializeSite(
  paths: ProjectPaths,
  config: PortalConfig,
  options: { exact?: boolean; signing?: SiteSigning | null; log?: (line: string) => void } = {},
): Promise<SiteMaterialization> {
  const log = options.log ?? (() => {});
  if (options.exact === true) {
    log("site/ was restored from a cache entry saved from exactly these inputs: kept without a check");
    return { rebuilt: false, built: false, build: null };
  }
  const signing = options.signing ?? null;
  if (signing) {
    // With online keys a build re-signs the whole site: check first, so a matching one keeps its
    // signed metadata as it is (svc build --if-drifted with SVC_TUF_ONLINE_KEYS).
    const { problems, files } = await checkSite(paths, config);
    if (problems.length === 0) {
      log(`site/ matches records/ (${files} files): kept`);
      return { rebuilt: false, built: false, build: null };
    }
    const shown = problems.slice(0, 5).map((p) => `  ${p}`);
    log(
      `site/ does not match records/ (${problems.length} problem(s)); building it:\n${shown.join("\n")}${problems.length > shown.length ? `\n  ... and ${problems.length - shown.length} more` : ""}`,
    );
  }
  const build = await buildSite(paths, config, { signing });
  const rebuilt = build.written.length > 0 || build.deleted.length > 0;
  log(
    `svc build over the restored site: ${build.files} files, ${build.written.length} written, ${build.deleted.length} removed, ${build.unchanged} unchanged${rebuilt ? "" : " (it matched the records)"}`,
  );
  return { rebuilt, built: true, build };
}

/**
 * materializeSite as the publish and sync steps call it: first before their change, then again
 * after the commit path rebased onto or reset to a new head. `exact` vouches for the restored site
 * against the checkout's inputs only, so it holds for the first call alone; every later one builds.
 */
export function siteMaterializer(
  paths: ProjectPaths,
  config: PortalConfig,
  options: { exact: boolean; log?: (line: string) => void },
): () => Promise<SiteMaterialization> {
  let exact = options.exact;
  return async () => {
    const result = await materializeSite(paths, config, {
      exact,
      ...(options.log ? { log: options.log } : {}),
    });
    exact = false;
    return result;
  };
}
