/**
 * The release diff a validation report brings to the status comment: the package's files and
 * manifest facts as the validator measured them, against the mod's last published record on the
 * default branch (a first release lists its files). Pure: fetch read the records.
 */
import { computeReleaseDiff, lastPublishedRecord, recordSide } from "../contracts/release-diff.ts";
import { NATIVE_RULES } from "../contracts/validation-contract.ts";
import type { SubmissionReport } from "../github/submission-report.ts";
import { releaseDiffSection } from "./release-diff-section.ts";
import type { SubmissionView } from "./derive.ts";
import type { ModReleasesRead } from "./fetch.ts";

/**
 * The section for the status comment; null when the report carries no package facts (an older
 * validator, a package whose entries did not all inflate, an invalid sidecar) or nothing was read.
 * The mod id and version are the ones the bot reads from the sidecar's path, never the report's.
 */
export function releaseDiffFor(
  view: SubmissionView,
  report: SubmissionReport,
  releases: ModReleasesRead | undefined,
): string | null {
  const facts = report.package;
  if (!facts || !releases || view.shape.kind !== "submission") return null;
  const { modId, version } = view.shape.sidecar;
  if (releases.kind === "unreadable")
    return releaseDiffSection({ kind: "records_unreadable", modId, message: releases.message });
  const baseline = lastPublishedRecord(releases.kind === "found" ? releases.releases : [], version);
  // A capped list cannot say what was removed: the files are then not compared, only size and manifest.
  const capped = facts.files.length < facts.fileCount;
  const diff = computeReleaseDiff(
    {
      version,
      packageSizeBytes: report.report?.packageSizeBytes ?? 0,
      files: facts.files,
      entrypoints: facts.entrypoints,
      dependencies: facts.dependencies,
      modConfig: facts.modConfig,
    },
    baseline ? { ...recordSide(baseline), ...(capped ? { files: null } : {}) } : null,
    NATIVE_RULES,
  );
  const risks =
    capped && baseline?.files ? diff.risks.filter((r) => r.code !== "baseline_files_unknown") : diff.risks;
  return releaseDiffSection({
    kind: "diff",
    diff: { ...diff, risks },
    fileCount: facts.fileCount,
    listed: facts.files.length,
  });
}
