/**
 * Publication as a reconciliation (the publish workflow on push, on its schedule and on a plain
 * dispatch): every sidecar under submissions/ on the default branch that has no release record yet
 * is published when, and only when, the pull request that added it earns it:
 *
 * - the commits that touched the file on the default branch lead to a merged pull request whose
 *   changed files are exactly that one added sidecar (a push that smuggles a second sidecar beside an
 *   approved one finds no such pull request for the second);
 * - the bot's status comment (only the bot's login counts, and only with the app's seal) says
 *   `approved` for that pull request's head commit;
 * - the person who submitted it is known (the author, or the app's sealed record of the person
 *   behind a release or upload) and may submit the mod: the publisher claims an unclaimed mod id for
 *   them or refuses someone who neither owns nor collaborates on it;
 * - the file on the default branch is byte for byte the approved one (its git blob sha equals the
 *   blob sha the pull request's files API reports at that head);
 * - the package downloaded now hashes to the sidecar's sha256.
 *
 * An already published version with the same sha256 is a no-op (no API call at all); a different
 * sha256 for a published version is refused. So a cancelled or failed run is simply caught up by the
 * next one, and running twice publishes nothing twice. A refusal is written to the publication
 * ledger and the sidecar waits, with no API call, until something changes (publish-refusals.ts).
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { PublishReceipt } from "../bot/receipt-comments.ts";
import { readStoredStatus, submitterOf, type TrustOptions } from "../bot/derive.ts";
import type { StatusKey } from "../bot/status-seal.ts";
import type { Principal } from "../contracts/ownership.ts";
import {
  emptyLedgerEntry,
  type LedgerEntry,
  readLedgerEntry,
  writeLedgerEntry,
} from "../catalog/publication-ledger.ts";
import type { PublisherOptions } from "../catalog/publisher.ts";
import { publishRelease } from "../catalog/publisher.ts";
import { findReleaseRecord, hasRelease } from "../catalog/records.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import { isSvcError } from "../errors.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import type { GitHubApi, RepoRef } from "../github/api.ts";
import { type DownloadResult, downloadCapped, type FetchLike } from "../github/download.ts";
import { findStagingRelease } from "../github/open-submission-pr.ts";
import {
  parseSubmissionPath,
  STAGING_TAG_PREFIX,
  SUBMISSIONS_DIR,
  type SubmissionPath,
  stagedUploadId,
} from "../github/submission-files.ts";
import {
  DEFAULT_REFUSAL_POLICY,
  dueReason,
  type RefusalPolicy,
  readRetrySignals,
  recordRefusal,
  refusalIsNews,
  waitingRefusals,
} from "./publish-refusals.ts";

/** Stable codes of a sidecar that is not published (nothing is written for it). */
export const PUBLISH_REFUSALS = {
  sidecar_unreadable: "the sidecar on the default branch is not a JSON object",
  sidecar_path_mismatch: "the sidecar's modId/version differ from its path",
  published_sha256_differs: "this version is published with other bytes; published versions are immutable",
  no_pull_request: "no merged pull request brought this file to the default branch",
  pull_request_mismatch:
    "the merged pull request that brought this file did not add exactly this one sidecar",
  not_approved:
    "the bot's status comment on the pull request does not say approved (or is not sealed by the app)",
  submitter_unknown:
    "the person who submitted the pull request cannot be established (a bot account, or the app's submitter record is missing or edited)",
  approval_stale: "the approval is for another commit than the one merged",
  sidecar_changed: "the file on the default branch is not the approved file",
} as const;
export type PublishRefusalCode = keyof typeof PUBLISH_REFUSALS;

/** waiting: refused earlier and not judged again this run (nothing read, nothing downloaded). */
export type PublishOutcome = "published" | "already_published" | "refused" | "failed" | "waiting";

/** One sidecar's result; the receipts job posts `receipt` on `pullRequest` when `notify` says so. */
export interface PublicationEntry {
  path: string;
  pullRequest: number | null;
  outcome: PublishOutcome;
  receipt: PublishReceipt;
  /** A publication, or a refusal that is new or has a new reason: worth a comment on the pull request. */
  notify?: boolean;
  /** A waiting or new refusal: when it is judged again. */
  retryAt?: string;
}

export interface ReconcileInput {
  repo: RepoRef;
  /** The default branch the checkout is at. */
  branch: string;
  publisher: PublisherOptions;
  botLogins: readonly string[];
  /** The app's seal: a status or submitter record counts only when it verifies. */
  statusKey: StatusKey;
  /** Reads pull requests, their files and comments (the workflow token: pull-requests read). */
  reader: GitHubApi;
  /** Reads the private draft of a staged upload (the app token: contents write). */
  writer: GitHubApi;
  fetch?: FetchLike;
  allowHttp?: boolean;
  now?: () => Date;
  refusalPolicy?: RefusalPolicy;
  /** Why no scanner can pass antivirus_scan now (asked once, only before a download), or null. */
  scannerCheck?: () => Promise<ScannerProblem | null>;
  log?: (line: string) => void;
}

/**
 * Why antivirus_scan cannot pass in this run. `notInstalled`: the job installed no scanner because
 * its pending step found nothing to judge (a refusal judged again on an approval or a
 * `/svc revalidate`, which only the API tells): the next run installs it, so that is not news.
 */
export interface ScannerProblem {
  reason: string;
  notInstalled: boolean;
}

/** git's object id of a blob: what the pull request files API reports as `sha`. */
export function gitBlobSha(bytes: Uint8Array): string {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** Every sidecar path under submissions/ in the checkout, sorted. */
export function listSidecars(root: string): SubmissionPath[] {
  const dir = join(root, SUBMISSIONS_DIR);
  if (!existsSync(dir)) return [];
  const out: SubmissionPath[] = [];
  for (const modId of readdirSync(dir, { withFileTypes: true })) {
    if (!modId.isDirectory()) continue;
    for (const file of readdirSync(join(dir, modId.name))) {
      const parsed = parseSubmissionPath(`${SUBMISSIONS_DIR}/${modId.name}/${file}`);
      if (parsed) out.push(parsed);
    }
  }
  return out.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The sidecars of the checkout without a release record that a run would judge: a refused one whose
 * file is unchanged and whose backoff has not ended waits (a new approval or `/svc revalidate`, which
 * only the API tells, is judged by the next run that installs the scanner for another reason, or
 * when its backoff ends).
 */
export function pendingSidecars(root: string, recordsDir: string, now: Date = new Date()): SubmissionPath[] {
  return listSidecars(root).filter((s) => {
    if (hasRelease(recordsDir, s.modId, s.version)) return false;
    const refusal = readLedgerEntry(recordsDir, s.modId, s.version)?.refusal;
    if (!refusal) return true;
    const blob = gitBlobSha(readFileSync(join(root, s.path)));
    return dueReason(refusal, blob, now, new Map()) !== null;
  });
}

interface Sidecar {
  modId?: unknown;
  version?: unknown;
  package?: { url?: string; sha256?: string; fileName?: string };
}

type PullRequest = Awaited<
  ReturnType<GitHubApi["rest"]["repos"]["listPullRequestsAssociatedWithCommit"]>
>["data"][number];

class Refusal {
  constructor(
    readonly code: PublishRefusalCode,
    readonly message: string,
    readonly pullRequest: number | null = null,
  ) {}
}

/** The merged pull request that added exactly this sidecar, with the file's blob sha at its head. */
async function findAddingPullRequest(
  input: ReconcileInput,
  path: string,
): Promise<{ pr: PullRequest; blobSha: string }> {
  const { reader, repo } = input;
  const commits = await reader.paginate(reader.rest.repos.listCommits, {
    ...repo,
    sha: input.branch,
    path,
    per_page: 100,
  });
  const seen = new Set<number>();
  const mismatched: number[] = [];
  // Oldest first: the commit that added the file comes before any later edit of it.
  for (const commit of [...commits].reverse()) {
    const { data: pulls } = await reader.rest.repos.listPullRequestsAssociatedWithCommit({
      ...repo,
      commit_sha: commit.sha,
    });
    for (const pr of pulls) {
      if (!pr.merged_at || pr.base.ref !== input.branch || seen.has(pr.number)) continue;
      seen.add(pr.number);
      const files = await reader.paginate(reader.rest.pulls.listFiles, {
        ...repo,
        pull_number: pr.number,
        per_page: 100,
      });
      const only = files.length === 1 ? files[0] : undefined;
      if (only?.sha && only.filename === path && only.status === "added") return { pr, blobSha: only.sha };
      mismatched.push(pr.number);
    }
  }
  if (mismatched.length > 0)
    throw new Refusal(
      "pull_request_mismatch",
      `${path} reached ${input.branch} through ${mismatched.map((n) => `#${n}`).join(", ")}, which did not add exactly this one file; a sidecar is published only under the approval of the pull request that added it alone`,
      mismatched.length === 1 ? mismatched[0]! : null,
    );
  throw new Refusal(
    "no_pull_request",
    `${path} reached ${input.branch} without a merged submission pull request (${commits.length} commit(s) touched it)`,
  );
}

const trustOf = (input: ReconcileInput): TrustOptions => ({
  botLogins: input.botLogins,
  statusKey: input.statusKey,
});

/** The state the bot stored on the pull request: its own status comment, sealed for this pull request. */
async function storedStatus(input: ReconcileInput, number: number) {
  const comments = await input.reader.paginate(input.reader.rest.issues.listComments, {
    ...input.repo,
    issue_number: number,
    per_page: 100,
  });
  return readStoredStatus(
    comments.map((c) => ({ id: c.id, body: c.body ?? "", authorLogin: c.user?.login ?? "" })),
    { repository: `${input.repo.owner}/${input.repo.repo}`, pullRequest: number },
    trustOf(input),
  );
}

/** Who the publisher checks and claims for: the person behind the pull request, never a bot. */
function submitterOfPull(input: ReconcileInput, pr: PullRequest) {
  const { login, record } = submitterOf(
    {
      authorLogin: pr.user?.login ?? "",
      authorType: pr.user?.type ?? "",
      body: pr.body ?? "",
      headRef: pr.head.ref,
      repo: input.repo,
    },
    trustOf(input),
  );
  if (!login)
    throw new Refusal(
      "submitter_unknown",
      `#${pr.number}: ${PUBLISH_REFUSALS.submitter_unknown}; nothing is published for a submitter nobody can own`,
      pr.number,
    );
  const principal: Principal = login.startsWith("portal:") ? { account: login.slice(7) } : { github: login };
  return {
    identity: [principal],
    claimAs: principal,
    ...(record?.repository ? { sourceRepository: record.repository } : {}),
  };
}

async function downloadPackage(
  input: ReconcileInput,
  pr: PullRequest,
  sidecar: Sidecar,
): Promise<DownloadResult> {
  const maxBytes = input.publisher.config.limits.maxPackageBytes;
  const staged = sidecar.package?.url
    ? null
    : stagedUploadId(
        { ref: pr.head.ref, repository: pr.head.repo?.full_name ?? null },
        `${input.repo.owner}/${input.repo.repo}`,
      );
  if (staged)
    return downloadStagedPackage(input.writer, input.repo, staged, sidecar.package?.fileName ?? "", maxBytes);
  return downloadCapped(sidecar.package?.url ?? "", maxBytes, input.fetch, {
    allowHttp: input.allowHttp ?? false,
  });
}

/** What a judgement learned on the way, for the ledger: the bot's state and the submitter. */
interface Seen {
  state: string | null;
  submitter: string | null;
  retryable: boolean;
  notInstalled?: boolean;
}

/** Every failed check failed for want of a scanner (not the package): the same bytes may pass later. */
function scannerOnlyFailure(details: unknown): boolean {
  const checks = (details as { checks?: Array<{ status?: string; reasonCode?: string | null }> } | null)
    ?.checks;
  const failed = (checks ?? []).filter((c) => c.status === "failed");
  return failed.length > 0 && failed.every((c) => /^scanner_/.test(c.reasonCode ?? ""));
}

async function reconcileOne(
  input: ReconcileInput,
  sidecarPath: SubmissionPath,
  seen: Seen,
): Promise<PublicationEntry> {
  const { modId, version, path } = sidecarPath;
  const entry = (
    outcome: PublishOutcome,
    pullRequest: number | null,
    receipt: Omit<PublishReceipt, "modId" | "version">,
  ): PublicationEntry => ({ path, pullRequest, outcome, receipt: { modId, version, ...receipt } });
  const refuse = (
    code: string,
    message: string,
    pullRequest: number | null = null,
    outcome: PublishOutcome = "refused",
  ) => entry(outcome, pullRequest, { ok: false, error: { code, message } });
  try {
    const bytes = readFileSync(join(input.publisher.root, path));
    const parsed = parseUntrustedJson(bytes, { maxBytes: 256 * 1024, maxDepth: 32 });
    const sidecar = parsed.ok ? (parsed.value as Sidecar) : null;
    if (!sidecar || typeof sidecar !== "object" || Array.isArray(sidecar))
      throw new Refusal("sidecar_unreadable", `${path}: ${parsed.ok ? "not a JSON object" : parsed.message}`);
    if (sidecar.modId !== modId || sidecar.version !== version)
      throw new Refusal(
        "sidecar_path_mismatch",
        `${path} names ${String(sidecar.modId)}@${String(sidecar.version)}, not ${modId}@${version}`,
      );
    const record = findReleaseRecord(input.publisher.recordsDir, modId, version);
    if (record) {
      if (record.sha256 === sidecar.package?.sha256)
        return entry("already_published", null, {
          ok: true,
          artifactUrl: record.packageUrl,
          sha256: record.sha256,
        });
      throw new Refusal(
        "published_sha256_differs",
        `${modId}@${version} is published with sha256 ${record.sha256}; ${path} now says ${String(sidecar.package?.sha256)}. Published versions are immutable: submit a new version`,
      );
    }
    const { pr, blobSha } = await findAddingPullRequest(input, path);
    const status = await storedStatus(input, pr.number);
    const stored = status.stored;
    seen.state = stored?.state ?? null;
    if (stored?.state !== "approved")
      throw new Refusal(
        "not_approved",
        status.void
          ? `#${pr.number} has no state sealed by the app (its status comment was edited, or never written by it), so it counts for nothing; only an approved submission is published`
          : `#${pr.number} is ${stored?.state ?? "without a status from the bot"}; only an approved submission is published`,
        pr.number,
      );
    if (stored.headSha !== pr.head.sha)
      throw new Refusal(
        "approval_stale",
        `#${pr.number} was approved at ${stored.headSha} but merged at ${pr.head.sha}`,
        pr.number,
      );
    if (gitBlobSha(bytes) !== blobSha)
      throw new Refusal(
        "sidecar_changed",
        `${path} on ${input.branch} (blob ${gitBlobSha(bytes)}) is not the file #${pr.number} added and had approved (blob ${blobSha})`,
        pr.number,
      );
    const submitter = submitterOfPull(input, pr);
    seen.submitter = submitter.claimAs.github ?? null;
    const unavailable = await input.scannerCheck?.();
    if (unavailable) {
      seen.retryable = true;
      seen.notInstalled = unavailable.notInstalled;
      return refuse(
        "scanner_unavailable",
        `antivirus_scan cannot pass without a scanner, so nothing was downloaded or published: ${unavailable.reason}. Publication is retried by the next run`,
        pr.number,
        "failed",
      );
    }
    const download = await downloadPackage(input, pr, sidecar);
    if (!download.ok) return refuse(download.code, download.message, pr.number, "failed");
    if (download.sha256 !== sidecar.package?.sha256)
      return refuse(
        "hash_mismatch",
        `the package now hashes to ${download.sha256}, the approved sidecar says ${sidecar.package?.sha256}`,
        pr.number,
        "failed",
      );
    try {
      const published = await publishRelease(input.publisher, {
        packageBytes: download.bytes,
        sidecar,
        source: { kind: "pull_request", pullRequestUrl: pr.html_url },
        submitter,
      });
      const base = input.publisher.config.baseUrl;
      return entry("published", pr.number, {
        ok: true,
        ...(published.artifact
          ? {
              artifactUrl: published.artifact.url,
              sha256: published.artifact.sha256,
              sizeBytes: published.artifact.sizeBytes,
            }
          : {}),
        catalogUrl: `${base}/${SITE_PATHS.catalog}`,
        detailUrl: `${base}/${SITE_PATHS.modDetail(modId)}`,
      });
    } catch (error) {
      if (!isSvcError(error)) throw error;
      if (error.code === "invalid_payload" && scannerOnlyFailure(error.details)) {
        seen.retryable = true;
        return refuse(
          "scanner_unavailable",
          `${error.message}: the scanner failed, not the package; publication is retried by the next run`,
          pr.number,
          "failed",
        );
      }
      return refuse(error.code, error.message, pr.number, "failed");
    }
  } catch (error) {
    if (error instanceof Refusal) return refuse(error.code, error.message, error.pullRequest);
    throw error;
  }
}

/**
 * Publishes every approved, merged, unpublished sidecar of the checkout; one entry per sidecar.
 * A refused sidecar is written to the ledger and waits until it is due (publish-refusals.ts).
 * An unexpected error (GitHub down, a release that could not be published) propagates: the caller
 * then pushes nothing, and the next run starts over from the records in git.
 */
export async function reconcilePublications(input: ReconcileInput): Promise<PublicationEntry[]> {
  const now = (input.now ?? (() => new Date()))();
  const policy = input.refusalPolicy ?? DEFAULT_REFUSAL_POLICY;
  const recordsDir = input.publisher.recordsDir;
  const sidecars = listSidecars(input.publisher.root).map((s) => {
    const bytes = readFileSync(join(input.publisher.root, s.path));
    const published = hasRelease(recordsDir, s.modId, s.version);
    return {
      sidecar: s,
      sidecarBlob: gitBlobSha(bytes),
      ledger: published ? null : readLedgerEntry(recordsDir, s.modId, s.version),
    };
  });
  const waiting = waitingRefusals(sidecars, now);
  const signals =
    waiting.length > 0
      ? await readRetrySignals(
          input.reader,
          input.repo,
          waiting,
          input.publisher.config.moderators?.logins ?? [],
          now,
          input.log,
        )
      : new Map<number, string>();
  const entries: PublicationEntry[] = [];
  for (const { sidecar, sidecarBlob, ledger } of sidecars) {
    const previous = ledger?.refusal ?? null;
    if (previous) {
      const due = dueReason(previous, sidecarBlob, now, signals);
      if (!due) {
        entries.push({
          path: sidecar.path,
          pullRequest: previous.pullRequest,
          outcome: "waiting",
          receipt: {
            ok: false,
            modId: sidecar.modId,
            version: sidecar.version,
            error: { code: previous.code, message: previous.message },
          },
          retryAt: previous.retryAt,
        });
        continue;
      }
      input.log?.(
        `${sidecar.path}: refused ${previous.attempts} time(s) (${previous.code}); judged again: ${due}`,
      );
    }
    const seen: Seen = { state: null, submitter: null, retryable: false };
    const entry = await reconcileOne(input, sidecar, seen);
    entries.push(recordInLedger(recordsDir, ledger, sidecar, sidecarBlob, entry, seen, now, policy));
  }
  return entries;
}

/** Writes the judgement to the ledger; the entry says whether its receipt is news. */
function recordInLedger(
  recordsDir: string,
  ledger: LedgerEntry | null,
  sidecar: SubmissionPath,
  sidecarBlob: string,
  entry: PublicationEntry,
  seen: Seen,
  now: Date,
  policy: RefusalPolicy,
): PublicationEntry {
  // A published version's sidecar with other bytes costs no API call: nothing to remember.
  if (entry.outcome === "already_published" || entry.receipt.error?.code === "published_sha256_differs")
    return entry;
  const previous = ledger?.refusal ?? null;
  const base = ledger ?? emptyLedgerEntry(sidecar.modId, sidecar.version);
  if (entry.outcome === "published") {
    if (previous) writeLedgerEntry(recordsDir, { ...base, refusal: null });
    return { ...entry, notify: true };
  }
  if (seen.notInstalled && previous) {
    // Judged again without a scanner in this run: due at the next one, which installs it.
    writeLedgerEntry(recordsDir, { ...base, refusal: { ...previous, retryAt: now.toISOString() } });
    return { ...entry, outcome: "waiting", receipt: { ...entry.receipt, retryable: true }, notify: false };
  }
  const code = entry.receipt.error?.code ?? "internal_error";
  const refusal = recordRefusal(
    previous,
    {
      code,
      message: entry.receipt.error?.message ?? "",
      retryable: seen.retryable,
      pullRequest: entry.pullRequest,
      submitter: seen.submitter,
      sidecarBlob,
      state: seen.state,
    },
    now,
    policy,
  );
  writeLedgerEntry(recordsDir, { ...base, refusal });
  return {
    ...entry,
    receipt: { ...entry.receipt, retryable: refusal.retryable, retryAt: refusal.retryAt },
    notify: refusalIsNews(previous, code),
    retryAt: refusal.retryAt,
  };
}

/**
 * The package of an upload the portal staged privately: the asset of the draft release
 * svc-upload-{submissionId}, read through the API with a token that sees drafts (contents: write).
 */
export async function downloadStagedPackage(
  api: GitHubApi,
  repo: RepoRef,
  submissionId: string,
  fileName: string,
  maxBytes: number,
): Promise<DownloadResult> {
  const tag = `${STAGING_TAG_PREFIX}${submissionId}`;
  const release = await findStagingRelease(api, repo, submissionId);
  const asset = release?.assets.find((a) => a.name === fileName);
  if (!asset)
    return {
      ok: false,
      code: "download_failed",
      message: `the staged package ${fileName} of upload ${submissionId} is not in the draft release ${tag}`,
    };
  if (asset.size > maxBytes)
    return {
      ok: false,
      code: "package_too_large",
      message: `${fileName} is ${asset.size} bytes; the limit is ${maxBytes}`,
    };
  const { data } = await api.request("GET /repos/{owner}/{repo}/releases/assets/{asset_id}", {
    ...repo,
    asset_id: asset.id,
    headers: { accept: "application/octet-stream" },
  });
  const bytes = Buffer.from(data as unknown as ArrayBuffer);
  if (bytes.length > maxBytes)
    return { ok: false, code: "package_too_large", message: `${fileName} is over ${maxBytes} bytes` };
  return {
    ok: true,
    bytes,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    sizeBytes: bytes.length,
  };
}
