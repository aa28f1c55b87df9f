/**
 * Changes of who may publish a mod (collaborators, trusted publishers, source repository, transfer):
 * one journaled commit of the mod's owners shard (records/owners/{shard}.json) and its detail document, under the
 * publish lock, signed after the commit like a publication.
 */
import { join, relative } from "node:path";
import type { ModOwnership } from "../contracts/ownership.ts";
import { formatIssues, schemaRegistry } from "../contracts/schemas.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import { SvcError } from "../errors.ts";
import { commitFiles } from "./atomic-files.ts";
import { owingSignature } from "./owed-signing.ts";
import { locked, type PublisherOptions } from "./publisher.ts";
import { loadOwnership, ownershipWrite } from "./records.ts";
import { loadSiteInputs, renderSite } from "./site.ts";

export interface OwnershipChangeResult {
  ownership: ModOwnership;
  written: string[];
  deleted: string[];
}

/**
 * Applies `change` to the mod's current ownership (null: unclaimed) and commits the result with the
 * detail document it shows in. `change` throws a SvcError to refuse (forbidden, not_found, conflict).
 */
export async function changeOwnership(
  options: Pick<
    PublisherOptions,
    "root" | "recordsDir" | "siteDir" | "config" | "now" | "lockTimeoutMs" | "signing"
  >,
  modId: string,
  change: (current: ModOwnership | null, at: string) => ModOwnership,
): Promise<OwnershipChangeResult> {
  const now = options.now ?? (() => new Date());
  const registry = schemaRegistry(options.config.baseUrl);
  return locked(options as PublisherOptions, async () => {
    const current = loadOwnership(options.recordsDir, modId, registry);
    const at = now().toISOString();
    const next = { ...change(current, at), updatedAt: at };
    const valid = registry.validate("mod-ownership", next);
    if (!valid.ok)
      throw new SvcError("invalid_payload", `ownership of ${modId}: ${formatIssues(valid.issues)}`);
    const inputs = loadSiteInputs(options.config, options.recordsDir);
    const ownerships = new Map(inputs.ownerships);
    ownerships.set(modId, next);
    const owners = ownershipWrite(options.recordsDir, next, registry);
    const write = new Map<string, string>([
      [rel(options.root, join(options.recordsDir, owners.path)), owners.text],
    ]);
    // A mod with no visible version has no detail document: the record alone changes.
    const detail = renderSite({ ...inputs, ownerships }, options.siteDir, now, {
      onlyMods: new Set([modId]),
    }).get(SITE_PATHS.modDetail(modId));
    if (detail !== undefined)
      write.set(rel(options.root, join(options.siteDir, SITE_PATHS.modDetail(modId))), detail);
    const result = commitFiles(options.root, { write }, owingSignature(options, options.signing));
    return { ownership: next, written: result.written, deleted: result.deleted };
  });
}

function rel(root: string, path: string): string {
  return relative(root, path).split("\\").join("/");
}
