/**
 * A submission's publication as the database records it: approved -> published with where the
 * release lives (and older releases superseded), and the statuses of a mod's other rows settled
 * after a hide or unhide, each in the caller's transaction with its audit event.
 */
import { appendAuditEvent } from "../accounts/audit.ts";
import type { PortalConfig } from "../config/portal-config.ts";
import { portalUrls } from "../contracts/urls.ts";
import type { SqlExecutor } from "../store/store.ts";
import {
  type ActorRef,
  applySubmissionActionIn,
  type Publication,
  SUBMISSION_AUDIT,
  type SubmissionDeps,
  type SubmissionRow,
} from "./service.ts";

export function publicationOf(
  config: PortalConfig,
  record: { modId: string; packageUrl: string; publishedAt: string },
): Publication {
  const urls = portalUrls(config.baseUrl);
  return {
    packageUrl: record.packageUrl,
    catalogUrl: urls.catalog,
    detailUrl: urls.modDetail(record.modId),
    versionsUrl: urls.modVersions(record.modId),
    pageUrl: urls.modPage(record.modId),
    publishedAt: record.publishedAt,
  };
}

/**
 * Records that an approved submission's release is in the catalog, in one transaction: approved ->
 * published, its publication, the catalog.published audit event, and every other published
 * submission of the mod -> superseded when this release is the mod's newest (the records' rule). A
 * crash therefore leaves either none of it or all of it; the caller removes the staged bytes after.
 */
export async function completePublication(
  deps: SubmissionDeps,
  submissionId: string,
  release: { modId: string; version: string; status: string; packageUrl: string; publishedAt: string },
  actorAccountId: string | null,
  metadata: Record<string, unknown> = {},
): Promise<SubmissionRow> {
  const system: ActorRef = { accountId: actorAccountId ?? "system", kind: "system" };
  return deps.store.transaction(async (tx) => {
    const publication = publicationOf(deps.config, release);
    const published = await applySubmissionActionIn(tx, deps, submissionId, "publish", system);
    const updated = await tx.query<SubmissionRow>(
      `UPDATE submissions SET publication = $2::jsonb, staging_path = NULL WHERE id = $1 RETURNING *`,
      [published.id, JSON.stringify(publication)],
    );
    await appendAuditEvent(
      tx,
      {
        actorAccountId,
        action: SUBMISSION_AUDIT.published,
        targetType: "submission",
        targetId: submissionId,
        metadata: { modId: release.modId, version: release.version, ...publication, ...metadata },
      },
      { now: deps.now(), random: deps.random },
    );
    if (release.status === "published") {
      const older = await tx.query<{ id: string }>(
        `SELECT id FROM submissions WHERE mod_id = $1 AND id <> $2 AND state = 'published' ORDER BY id`,
        [release.modId, submissionId],
      );
      for (const { id } of older.rows) await applySubmissionActionIn(tx, deps, id, "supersede", system);
    } else if (release.status === "superseded") {
      // An older version published after a newer one (a backport) is listed as superseded at once.
      return applySubmissionActionIn(tx, deps, submissionId, "supersede", system);
    }
    return updated.rows[0]!;
  });
}

/** What a row needs of its release's record: the bytes it is (sha256) and the settled status. */
export interface RecordStatus {
  sha256: string;
  status: "published" | "superseded" | "hidden";
}

/**
 * After a hide or unhide the publisher settles the mod's statuses (the newest visible version
 * published, older visible ones superseded): every other local row of the mod that is published or
 * superseded follows its release's record in the caller's transaction (supersede, or reinstate when
 * the newer versions were hidden), each with its own audit event. Rows of another release under the
 * same version, hidden rows and pull-request rows (they follow their pull requests) are left alone.
 */
export async function followReleaseStatuses(
  tx: SqlExecutor,
  deps: SubmissionDeps,
  modId: string,
  recordOf: (version: string) => RecordStatus | null,
  except: string | null = null,
): Promise<string[]> {
  const rows = await tx.query<SubmissionRow>(
    `SELECT * FROM submissions WHERE mod_id = $1 AND state IN ('published', 'superseded')
       AND github_pull_request IS NULL AND id <> $2 ORDER BY id`,
    [modId, except ?? ""],
  );
  const moved: string[] = [];
  for (const row of rows.rows) {
    const record = recordOf(row.version);
    if (!record || record.sha256 !== row.package_sha256) continue;
    if (record.status === "hidden" || record.status === row.state) continue;
    const action = record.status === "superseded" ? "supersede" : "reinstate";
    await applySubmissionActionIn(tx, deps, row.id, action, { accountId: "system", kind: "system" });
    moved.push(row.id);
  }
  return moved;
}
