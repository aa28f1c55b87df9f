/**
 * Metadata carried forward (issue 25, item 4): a new version of a mod starts from its last published
 * version's page metadata. A sidecar (svc.mod-release-submission.v1) may leave out any of
 * CARRIED_FIELDS; each one it leaves out is taken from the mod's last published version (its newest
 * visible release: what its detail document and page show). A field the modder sends wins, even an
 * empty one (an empty description or `[]` of tags clears it). A mod's first release has nothing to
 * carry: there, authors is required.
 */
import type { Author, Links, ReleaseRecord } from "./records.ts";
import * as semver from "./semver.ts";

/** The page metadata a new version takes from the last published one when its sidecar leaves it out. */
export const CARRIED_FIELDS = ["description", "links", "tags", "license", "authors"] as const;
export type CarriedField = (typeof CARRIED_FIELDS)[number];

/** Where carried metadata comes from: a release record, or a mod detail document (license null: none). */
export interface CarrySource {
  description?: string;
  links?: Links;
  tags?: string[];
  license?: string | null;
  authors?: Author[];
}

/** The fields a sidecar may carry forward, as the schema allows them (each optional). */
export interface CarriedMetadata {
  description?: string;
  links?: Links;
  tags?: string[];
  license?: string;
  authors?: Author[];
}

/**
 * The sidecar with every carried field it leaves out taken from `previous` (a field `previous` lacks
 * stays out, and a null license is no license), and the names of the fields taken.
 */
export function carryForward<T extends CarriedMetadata>(
  sidecar: T,
  previous: CarrySource | null,
): { sidecar: T; carried: CarriedField[] } {
  if (!previous) return { sidecar, carried: [] };
  const next: CarriedMetadata = { ...sidecar };
  const carried: CarriedField[] = [];
  for (const field of CARRIED_FIELDS) {
    if (sidecar[field] !== undefined) continue;
    const value = previous[field];
    if (value === undefined || value === null) continue;
    (next as Record<string, unknown>)[field] = structuredClone(value);
    carried.push(field);
  }
  return { sidecar: next as T, carried };
}

/**
 * The release a new version of `modId` carries metadata from: its newest visible release (the one its
 * detail document describes), leaving out `version` itself; null when no other version is visible.
 */
export function lastPublished(
  records: readonly ReleaseRecord[],
  modId: string,
  version?: string,
): ReleaseRecord | null {
  const visible = records
    .filter((r) => r.modId === modId && r.version !== version && r.status !== "hidden")
    .sort((a, b) => semver.rcompare(a.version, b.version));
  return visible[0] ?? null;
}
