import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import type { PortalConfig } from "../config/portal-config.ts";
import { SvcError } from "../errors.ts";
import { commitFiles, FileExistsError, withPublishLock } from "./atomic-files.ts";
import { assertCanSign, type SiteSigning, signAfterCommit } from "../distribution/tuf-repository.ts";
import { checkContractRules } from "./contract-rules.ts";
import { clearOwedSigning, owedSigningError, owingSignature, settleOwedSigning } from "./owed-signing.ts";
import { listGeneratedFiles, loadSiteInputs, renderSiteFiles, type SiteInputs } from "./site.ts";

export interface RebuildOptions {
  root: string;
  recordsDir: string;
  siteDir: string;
  config: PortalConfig;
  now?: () => Date;
  lockTimeoutMs?: number;
  /** Online signing keys (local portal): the committed site is signed under the same lock. */
  signing?: SiteSigning | null;
}

export interface RecordUpdate {
  /** Path below records/, e.g. manager.json. */
  path: string;
  text: string;
  /** The same change applied to the loaded inputs, so the site is rendered from the new records. */
  apply: (inputs: SiteInputs) => SiteInputs;
}

function rel(root: string, path: string): string {
  const r = relative(root, path);
  if (r.startsWith(".."))
    throw new SvcError("config_invalid", `${path} must be inside the project root ${root}`);
  return r.split("\\").join("/");
}

/**
 * Writes record files and the site they imply as one transaction under the publish lock (the same
 * lock publishers take): sync and `smoke --record` never interleave with a publication.
 */
export async function commitRecordUpdates(
  options: RebuildOptions,
  updates: readonly RecordUpdate[],
  artifacts: ReadonlyArray<{ path: string; bytes: Uint8Array; sha256: string }> = [],
): Promise<{ written: string[]; deleted: string[] }> {
  const tree = { root: options.root, siteDir: options.siteDir };
  try {
    return await withPublishLock(
      tree,
      () => {
        assertCanSign(options.siteDir, options.signing);
        if (settleOwedSigning(tree, options.signing) === "owed") throw owedSigningError(tree);
        let inputs = loadSiteInputs(options.config, options.recordsDir);
        for (const update of updates) inputs = update.apply(inputs);
        const files = new Map<string, string>();
        // Documents the render found byte for byte on disk are left out of the commit unread again.
        const unchanged = new Set<string>();
        renderSiteFiles(
          inputs,
          options.siteDir,
          (path, text, onDisk) => {
            files.set(path, text);
            if (onDisk === "same") unchanged.add(path);
          },
          options.now ?? (() => new Date()),
        );
        const failures = checkContractRules(files);
        if (failures.length > 0) {
          throw new SvcError(
            "invalid_payload",
            `the update would break contract rules; nothing was written:\n${failures
              .slice(0, 20)
              .map((f) => `  ${f.rule}: ${f.message}`)
              .join("\n")}${failures.length > 20 ? `\n  ... and ${failures.length - 20} more` : ""}`,
            { details: failures },
          );
        }
        const siteRel = rel(options.root, options.siteDir);
        const recordsRel = rel(options.root, options.recordsDir);
        const write = new Map<string, string>();
        for (const update of updates) write.set(`${recordsRel}/${update.path}`, update.text);
        for (const [path, text] of files) if (!unchanged.has(path)) write.set(`${siteRel}/${path}`, text);
        const stale = listGeneratedFiles(options.siteDir)
          .filter((p) => !files.has(p))
          .map((p) => `${siteRel}/${p}`);
        const siteArtifacts = artifacts.map((a) => ({ ...a, path: `${siteRel}/${a.path}` }));
        const result = commitFiles(
          options.root,
          { write, delete: stale, create: new Map(siteArtifacts.map((a) => [a.path, a.bytes])) },
          owingSignature(tree, options.signing, {
            // The recorded hash must be the hash of the file as stored; anything else rolls back.
            beforeCommit: () => {
              for (const a of siteArtifacts) {
                const stored = createHash("sha256")
                  .update(readFileSync(join(options.root, a.path)))
                  .digest("hex");
                if (stored !== a.sha256)
                  throw new SvcError("internal_error", `${a.path} does not hash to ${a.sha256}`);
              }
            },
          }),
        );
        signAfterCommit(options.siteDir, options.signing, result);
        if (options.signing) clearOwedSigning(tree);
        return { written: result.written, deleted: result.deleted };
      },
      { timeoutMs: options.lockTimeoutMs ?? 60_000 },
    );
  } catch (error) {
    if (error instanceof FileExistsError)
      throw new SvcError("artifact_exists", `${error.path} already exists and is never replaced`);
    throw error;
  }
}
