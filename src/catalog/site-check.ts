import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PortalConfig } from "../config/portal-config.ts";
import type { SiteSigning } from "../distribution/tuf-repository.ts";
import { checkLocalArtifacts } from "./artifact-check.ts";
import { type RecoveryResult, withPublishLock } from "./atomic-files.ts";
import { checkContractRules } from "./contract-rules.ts";
import { owedSigningProblem, settleOwedSigning } from "./owed-signing.ts";
import { listGeneratedFiles, loadSiteInputs, type ProjectPaths, renderSiteFiles } from "./site.ts";

export interface SiteCheckResult {
  /** One line per problem: drift, a missing or stale file, a failed contract rule, a missing artifact. */
  problems: string[];
  /** How many files `svc build` writes (all of them compared). */
  files: number;
  /** How many portal-hosted artifacts were checked. */
  artifacts: number;
}

/**
 * What `svc check` proves, as a library: every file under site/api/v1 is what `svc build` would
 * write, contract rules 1-6 hold, and every artifact a record places under the site is there at its
 * recorded size (and sha256 with `hashes`). Runs under the publish lock, after finishing any
 * publication a crash interrupted, its signing included (with `signing`; without it, a signing
 * still owed is a problem). The CLI prints the result; the catalog publisher refuses to push a tree
 * that fails it.
 */
export async function checkSite(
  paths: ProjectPaths,
  config: PortalConfig,
  options: {
    hashes?: boolean;
    onRecovered?: (result: RecoveryResult) => void;
    signing?: SiteSigning | null;
  } = {},
): Promise<SiteCheckResult> {
  return withPublishLock(
    paths,
    async () => {
      const problems: string[] = [];
      try {
        if (settleOwedSigning(paths, options.signing) === "owed") problems.push(owedSigningProblem(paths));
      } catch (error) {
        problems.push(`signing: ${error instanceof Error ? error.message : String(error)}`);
      }
      const inputs = loadSiteInputs(config, paths.recordsDir);
      // The render reads each existing document once to keep its timestamp and says which are
      // byte for byte on disk: those are not read again. Each file is compared as it is made; only
      // the JSON documents the contract rules read are kept (the pages are let go once compared, so
      // the check does not hold the whole site).
      const expected = new Set<string>();
      const expectedJson = new Map<string, string>();
      const committedJson = new Map<string, string>();
      let missing = false;
      renderSiteFiles(inputs, paths.siteDir, (path, text, known) => {
        expected.add(path);
        const keep = path.endsWith(".json");
        if (keep) expectedJson.set(path, text);
        if (known === "same") {
          if (keep) committedJson.set(path, text);
          return;
        }
        const full = join(paths.siteDir, path);
        if (!existsSync(full)) {
          missing = true;
          problems.push(`missing: site/${path} (run svc build)`);
          return;
        }
        const actual = readFileSync(full, "utf8");
        if (keep) committedJson.set(path, actual);
        if (actual !== text)
          problems.push(`drift: site/${path} differs from what svc build writes (hand edit or stale build)`);
      });
      for (const path of listGeneratedFiles(paths.siteDir)) {
        if (!expected.has(path)) problems.push(`stale: site/${path} is not produced by svc build`);
      }
      for (const failure of checkContractRules(missing ? expectedJson : committedJson)) {
        problems.push(`${failure.rule}: ${failure.message}`);
      }
      const artifacts = await checkLocalArtifacts(inputs, paths.siteDir, { hashes: options.hashes === true });
      problems.push(...artifacts.problems);
      return { problems, files: expected.size, artifacts: artifacts.checked };
    },
    options.onRecovered ? { onRecovered: options.onRecovered } : {},
  );
}
