/**
 * site/ is a build output (on GitHub it is deployed to Pages, never committed): `svc build` makes it
 * from portal.config.json and records/, and a workflow that starts from a previous deployment (the
 * Actions cache) proves it still matches the records before it publishes onto it.
 */
import type { PortalConfig } from "../config/portal-config.ts";
import { assertCanSign, type SiteSigning, signAfterCommit } from "../distribution/tuf-repository.ts";
import { type CommitResult, type RecoveryResult, withPublishLock } from "./atomic-files.ts";
import { clearOwedSigning, owingSignature, settleOwedSigning } from "./owed-signing.ts";
import { checkSite } from "./site-check.ts";
import { loadSiteInputs, type ProjectPaths, renderSite, writeSite } from "./site.ts";

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
      const files = renderSite(loadSiteInputs(config, paths.recordsDir), paths.siteDir);
      const result = writeSite(paths.siteDir, files, owingSignature(paths, signing));
      // A build is also the repair path: re-hash the whole site rather than trust the commit's list.
      signAfterCommit(paths.siteDir, signing, result, { full: true });
      if (signing) clearOwedSigning(paths);
      return { ...result, files: files.size, owed };
    },
    options.onRecovered ? { onRecovered: options.onRecovered } : {},
  );
}

export interface SiteMaterialization {
  /** False when the site on disk (a restored deployment) already matched the records. */
  rebuilt: boolean;
  /** What the drift check found in the site on disk (empty when it matched, or when there was none). */
  problems: string[];
  build: SiteBuild | null;
}

/**
 * Brings site/ in line with the records: a site on disk (restored from the previous deployment) is
 * kept when svc check finds nothing; otherwise, and when there is none, `svc build` makes it (over
 * what is there, so unchanged documents keep their bytes and the signed metadata stays).
 */
export async function materializeSite(
  paths: ProjectPaths,
  config: PortalConfig,
  options: { signing?: SiteSigning | null; log?: (line: string) => void } = {},
): Promise<SiteMaterialization> {
  const log = options.log ?? (() => {});
  const { problems, files } = await checkSite(paths, config);
  if (problems.length === 0) {
    log(`site/ matches records/ (${files} files): kept`);
    return { rebuilt: false, problems, build: null };
  }
  const shown = problems.slice(0, 5).map((p) => `  ${p}`);
  log(
    `site/ does not match records/ (${problems.length} problem(s)); building it:\n${shown.join("\n")}${problems.length > shown.length ? `\n  ... and ${problems.length - shown.length} more` : ""}`,
  );
  const build = await buildSite(paths, config, { signing: options.signing ?? null });
  log(
    `svc build: ${build.files} files, ${build.written.length} written, ${build.deleted.length} removed, ${build.unchanged} unchanged`,
  );
  return { rebuilt: true, problems, build };
}
