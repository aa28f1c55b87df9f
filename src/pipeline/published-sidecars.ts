/**
 * The inbox keeps pending sidecars only: once a version has a release record (published by this
 * run or an earlier one), the publication commit deletes its sidecar from submissions/ on the
 * default branch. The pull request that added it, and git history, keep it.
 */
import { hasRelease } from "../catalog/records.ts";
import { listSidecars } from "./publish-reconcile.ts";

/** The sidecar paths (relative to the checkout) whose version has a release record. */
export function publishedSidecars(root: string, recordsDir: string): string[] {
  return listSidecars(root)
    .filter((s) => hasRelease(recordsDir, s.modId, s.version))
    .map((s) => s.path);
}
