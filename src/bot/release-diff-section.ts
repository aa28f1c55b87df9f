/**
 * The release diff's section of the status comment: written between its markers by the bot from a
 * validation report (releaseDiffSection), read back from a comment body only when its text is the
 * one the sealed status names (readDiffSection).
 */
import { type ReleaseDiff, renderReleaseDiffMarkdown } from "../contracts/release-diff.ts";
import { sha256Hex } from "../lib/hash.ts";
import { formatBytes } from "../lib/format-bytes.ts";
import { inlineCode } from "./comments.ts";

/** The release diff's section of the status comment starts and ends with these. */
export const DIFF_MARKER = "<!-- svc:diff -->";
export const DIFF_END_MARKER = "<!-- /svc:diff -->";
/** The diff's share of a status comment (GitHub takes at most 65,536 characters in a comment). */
export const DIFF_MAX_CHARS = 24_000;

/** What the release diff section shows: a diff, or why there is none. */
export type ReleaseDiffContent =
  | {
      kind: "diff";
      diff: ReleaseDiff;
      /** Files in the package, and how many the report listed (fewer when its list was capped). */
      fileCount: number;
      listed: number;
    }
  | { kind: "records_unreadable"; modId: string; message: string };

/**
 * The release diff as the status comment shows it, between its markers: the risk summary, the
 * changed files and the manifest changes against the mod's last published version (a first release
 * lists its files). Never longer than DIFF_MAX_CHARS: fewer rows first, then only the summary.
 */
export function releaseDiffSection(content: ReleaseDiffContent): string {
  const wrap = (lines: string[]) => [DIFF_MARKER, ...lines, DIFF_END_MARKER].join("\n");
  if (content.kind === "records_unreadable")
    return wrap([
      "#### Release diff",
      "",
      `Not shown: the published records of \`${content.modId}\` on the default branch cannot be read (${inlineCode(content.message, 300)}). Compare the files with the last published version before approving.`,
    ]);
  const capped =
    content.listed < content.fileCount
      ? [
          "",
          `The package has ${content.fileCount} files and the validation report lists the first ${content.listed}, so files are not compared one by one: only the size and the manifest.`,
        ]
      : [];
  for (const [maxFiles, maxPaths] of [
    [50, 20],
    [10, 5],
    [0, 0],
  ] as const) {
    const section = wrap([
      renderReleaseDiffMarkdown(content.diff, { maxFiles, maxPaths }).trimEnd(),
      ...capped,
    ]);
    if (section.length <= DIFF_MAX_CHARS) return section;
  }
  return wrap([
    `### Changes in ${inlineCode(content.diff.version, 64)}`,
    "",
    `Too long to show here (package ${formatBytes(content.diff.size.packageBytes.after)}, ${content.fileCount} files, ${content.diff.risks.length} findings): compare the files with the last published version before approving.`,
  ]);
}

/**
 * The release diff section of a status comment body: the text from DIFF_MARKER to a DIFF_END_MARKER
 * whose sha256 is the sealed digest. Anything else (an edited section, a marker inside a file name)
 * is no diff at all.
 */
export function readDiffSection(body: string, digest: string): string | null {
  const start = body.indexOf(DIFF_MARKER);
  if (start < 0) return null;
  for (
    let end = body.indexOf(DIFF_END_MARKER, start);
    end >= 0;
    end = body.indexOf(DIFF_END_MARKER, end + 1)
  ) {
    const section = body.slice(start, end + DIFF_END_MARKER.length);
    if (sha256Hex(section) === digest) return section;
  }
  return null;
}
