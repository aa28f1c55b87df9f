/**
 * The pull requests the app opens for a submission (an upload through the portal API, a release
 * through release intake) and the note release intake leaves when a limit refuses a release.
 */
import { claimNote, inlineCode, renderSubmitterMarker, SAFE_URL, type SubmitterRecord } from "./comments.ts";

/** The pull request the portal opens for an upload through POST /api/v1/uploads. */
export function uploadPullRequest(input: {
  submissionId: string;
  modId: string;
  version: string;
  ownerAccountId: string;
  staged: boolean;
  /** Seals the submitter record for the branch (src/bot/status-seal.ts). */
  seal: (record: SubmitterRecord, branch: string) => SubmitterRecord;
}): { title: string; body: string; branch: string } {
  const branch = `svc/upload/${input.submissionId}`;
  return {
    title: `Submit ${input.modId}@${input.version}`,
    branch,
    body: [
      renderSubmitterMarker(
        input.seal(
          { login: `portal:${input.ownerAccountId}`, source: `upload ${input.submissionId}` },
          branch,
        ),
      ),
      `Submission \`${input.submissionId}\` of \`${input.modId}@${input.version}\`, uploaded through the portal API by the account \`${input.ownerAccountId}\`.`,
      "",
      input.staged
        ? "The package is held privately by the portal (a draft release asset of this repository) until it is approved and published; the portal's own validation worker checks it and reports here. `GET /api/v1/uploads/" +
          input.submissionId +
          "` and this pull request show the same state."
        : "The sidecar names the package by its immutable URL; the validate-submission workflow downloads it, checks the sha256 and size, and runs every check.",
    ].join("\n"),
  };
}

/**
 * The branch of a release's submission pull request: one per source repository (by id), so a
 * release of the same mod version from another repository never finds this one's pull request.
 */
export function releaseBranch(repositoryId: number, modId: string, version: string): string {
  return `${RELEASE_BRANCH_PREFIX}${repositoryId}/${modId}/${version}`;
}

/** Every intake branch starts so: the bot deletes such a branch when its pull request is closed. */
export const RELEASE_BRANCH_PREFIX = "svc/release/";

export function releasePullRequest(input: {
  modId: string;
  version: string;
  source: { fullName: string; id: number };
  releaseUrl: string;
  /** The person behind the release (never a bot account). */
  submitter: string;
  /** The mod id is unclaimed: publishing this release makes the submitter its owner. */
  claim: boolean;
  seal: (record: SubmitterRecord, branch: string) => SubmitterRecord;
}): { title: string; body: string; branch: string } {
  const branch = releaseBranch(input.source.id, input.modId, input.version);
  const record: SubmitterRecord = {
    login: input.submitter,
    source: input.source.fullName,
    repository: input.source,
    ...(input.claim ? { claim: true } : {}),
  };
  return {
    title: `Submit ${input.modId}@${input.version}`,
    branch,
    body: [
      renderSubmitterMarker(input.seal(record, branch)),
      `Submission of \`${input.modId}@${input.version}\`, opened by the svc app for the release ${
        SAFE_URL.test(input.releaseUrl) ? input.releaseUrl : "(release)"
      } of \`${input.source.fullName}\` (repository id ${input.source.id}) published by @${input.submitter}.`,
      "",
      "The sidecar names the release asset by its immutable URL with the sha256 and size the app measured from the downloaded bytes.",
      ...(input.claim
        ? ["", `> ${claimNote({ modId: input.modId, repository: input.source.fullName }, input.submitter)}`]
        : []),
    ].join("\n"),
  };
}

/**
 * The note left on a source repository's newest open submission pull request when release intake
 * refused a release for going over a limit (the modder watches that pull request; the intake app
 * cannot write to their repository).
 */
export function intakeRateLimitedNote(input: {
  submitter: string;
  release: string;
  releaseUrl: string;
  scope: "repository" | "owner";
  source: string;
  limit: number;
  windowSeconds: number;
  retryAt: Date;
  now: Date;
}): string {
  const minutes = Math.max(1, Math.ceil((input.retryAt.getTime() - input.now.getTime()) / 60_000));
  const window =
    input.windowSeconds % 3600 === 0
      ? `${input.windowSeconds / 3600} hour${input.windowSeconds === 3600 ? "" : "s"}`
      : `${Math.ceil(input.windowSeconds / 60)} minutes`;
  const who =
    input.scope === "repository"
      ? `the repository ${inlineCode(input.source, 140)}`
      : `the repositories of ${inlineCode(input.source, 80)}`;
  return [
    `@${input.submitter} thank you for the release ${
      SAFE_URL.test(input.releaseUrl)
        ? `[${inlineCode(input.release, 140)}](${input.releaseUrl})`
        : inlineCode(input.release, 140)
    }. It was not submitted: ${who} already opened ${input.limit} submission pull requests in the last ${window}, the most this portal takes, so that every modder's releases are validated promptly.`,
    "",
    `You can submit it again from ${input.retryAt.toISOString()} (in about ${minutes} minute${minutes === 1 ? "" : "s"}) by publishing it again as a new release with the same files (delete this one first, or use a new tag if your repository's releases are immutable). Nothing of this release was kept.`,
  ].join("\n");
}
