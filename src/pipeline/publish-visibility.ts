/**
 * Visibility is reconciled, not dispatched (issue 24, item 4). GitHub keeps one pending run per
 * concurrency group and cancels the one it replaces, so a hide that lived only in a dispatch's inputs
 * could be dropped while the pull request said "hidden". Every publish run (push, schedule, any
 * dispatch) therefore reads the moderators' decisions where they are stored, the app's sealed status
 * comment on each submission pull request, and applies what it has not applied yet:
 *
 * - where to look: closed pull requests labelled `state:hidden` (one listing), the versions the
 *   pipeline hid whose pull request lost that label, and the pull request a dispatch names. The label
 *   only says where to look: the sealed state decides (anyone with triage can set a label);
 * - what it applied is in the publication ledger (records/publication/), with the time of the sealed
 *   state that decided it: an older state never overrides a newer decision, and a version hidden
 *   outside the bot (the CLI, an admin) is never unhidden here;
 * - hiding withdraws the version's bytes from GitHub Releases (release-artifact-store.ts,
 *   withdrawReleaseArtifact): the record keeps its artifact URL, which answers 404 for good and can
 *   never serve other bytes. An unhide of withdrawn bytes is refused (`visibility_withdrawn`): the
 *   modder publishes a new version.
 *
 * The bot's dispatch still starts a run at once; its inputs are checked against the pull request as
 * before (anyone with write access can dispatch), and a mismatch fails the run with nothing applied.
 */
import type { PublishReceipt } from "../bot/receipt-comments.ts";
import { inlineCode } from "../bot/comments.ts";
import { visibilityReceiptComment } from "../bot/receipt-comments.ts";
import { deriveSubmission, readStoredStatus } from "../bot/derive.ts";
import { fetchPullRequestInfo } from "../bot/fetch.ts";
import type { StatusKey } from "../bot/status-seal.ts";
import type { ArtifactKey } from "../catalog/artifact-store.ts";
import {
  emptyLedgerEntry,
  type LedgerEntry,
  readLedgerEntry,
  type WithdrawalOutcome,
  writeLedgerEntry,
} from "../catalog/publication-ledger.ts";
import { hideRelease, type PublisherOptions, unhideRelease } from "../catalog/publisher.ts";
import { loadReleaseRecords } from "../catalog/records.ts";
import type { ReleaseRecord } from "../contracts/records.ts";
import { schemaFiles, schemaRegistry } from "../contracts/schemas.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import { type ErrorCode, isSvcError, SvcError } from "../errors.ts";
import type { GitHubApi, RepoRef } from "../github/api.ts";
import { submissionPath } from "../github/submission-files.ts";

export type VisibilityAction = "hide" | "unhide";

export interface VisibilityRequest {
  action: VisibilityAction;
  modId: string;
  version: string;
  pullRequest: number;
}

/** Stable codes of a refused dispatch (nothing is applied, no receipt is posted). */
export type VisibilityRefusalCode = Extract<
  ErrorCode,
  | "visibility_input_invalid"
  | "visibility_not_a_release"
  | "visibility_release_mismatch"
  | "visibility_state_mismatch"
>;

export class VisibilityRefusal extends SvcError<VisibilityRefusalCode> {
  override name = "VisibilityRefusal";
}

/** One entry of the receipts file for a hide/unhide (beside the publications' entries). */
export interface VisibilityEntry {
  path: string;
  pullRequest: number;
  visibility: VisibilityAction;
  /** The release's status after the change (hidden, published or superseded); null when it failed. */
  status: string | null;
  receipt: PublishReceipt;
  /** A hide: what happened to the version's GitHub release. */
  withdrawal?: WithdrawalOutcome;
}

/** The state the bot moves the pull request to before it dispatches. */
const EXPECTED_STATE = { hide: "hidden", unhide: "published" } as const;

interface StringDef {
  minLength?: number;
  maxLength?: number;
  pattern: string;
}

let defs: { modId: StringDef; semver: StringDef } | undefined;
/** modId and semver exactly as schemas/schemas/common.schema.json defines them for sidecars and records. */
function commonDefs(): { modId: StringDef; semver: StringDef } {
  if (!defs) {
    const common = schemaFiles().find((f) => f.name === "common");
    if (!common) throw new Error("schemas/schemas/common.schema.json is missing");
    const $defs = (JSON.parse(common.text) as { $defs: Record<string, StringDef> }).$defs;
    defs = { modId: $defs.modId!, semver: $defs.semver! };
  }
  return defs;
}

function matches(def: StringDef, value: string): boolean {
  return (
    value.length >= (def.minLength ?? 0) &&
    value.length <= (def.maxLength ?? Number.POSITIVE_INFINITY) &&
    new RegExp(def.pattern, "u").test(value)
  );
}

/** Strict parse of the workflow_dispatch inputs; every failure is visibility_input_invalid. */
export function parseVisibilityInputs(inputs: unknown): VisibilityRequest {
  const fail = (message: string) => new VisibilityRefusal("visibility_input_invalid", message);
  if (!inputs || typeof inputs !== "object" || Array.isArray(inputs))
    throw fail("the dispatch carries no inputs");
  const { visibility, modId, version, pullRequest } = inputs as Record<string, unknown>;
  if (visibility !== "hide" && visibility !== "unhide")
    throw fail(`visibility must be hide or unhide, not ${inlineCode(String(visibility ?? ""), 40)}`);
  if (typeof modId !== "string" || !matches(commonDefs().modId, modId))
    throw fail(`modId ${inlineCode(String(modId ?? ""), 80)} is not a mod id (a lower-case slug)`);
  if (typeof version !== "string" || !matches(commonDefs().semver, version))
    throw fail(`version ${inlineCode(String(version ?? ""), 80)} is not a semantic version`);
  if (typeof pullRequest !== "string" || !/^[1-9][0-9]{0,9}$/.test(pullRequest))
    throw fail(`pullRequest ${inlineCode(String(pullRequest ?? ""), 40)} is not a pull request number`);
  return { action: visibility, modId, version, pullRequest: Number(pullRequest) };
}

export interface VerifyDispatchInput {
  repo: RepoRef;
  request: VisibilityRequest;
  botLogins: readonly string[];
  /** The stored state counts only sealed by the app. */
  statusKey: StatusKey;
}

/**
 * A dispatch the pull request does not back is refused (VisibilityRefusal, thrown): it must be a
 * merged submission of exactly that release whose sealed state already says hidden (hide) or
 * published (unhide). The change itself is made by reconcileVisibility, like any other.
 */
export async function verifyVisibilityDispatch(api: GitHubApi, input: VerifyDispatchInput): Promise<void> {
  const { request } = input;
  const release = `${request.modId}@${request.version}`;
  const view = deriveSubmission(await fetchPullRequestInfo(api, input.repo, request.pullRequest), {
    botLogins: [...input.botLogins],
    statusKey: input.statusKey,
  });
  if (view.shape.kind !== "submission" || !view.merged) {
    throw new VisibilityRefusal(
      "visibility_not_a_release",
      `#${request.pullRequest} is not a merged submission pull request`,
    );
  }
  const sidecar = view.shape.sidecar;
  if (sidecar.modId !== request.modId || sidecar.version !== request.version) {
    throw new VisibilityRefusal(
      "visibility_release_mismatch",
      `#${request.pullRequest} submitted ${sidecar.modId}@${sidecar.version}, not ${release}`,
    );
  }
  const expected = EXPECTED_STATE[request.action];
  if (view.state !== expected || view.statusVoid) {
    throw new VisibilityRefusal(
      "visibility_state_mismatch",
      view.statusVoid
        ? `#${request.pullRequest} has no state sealed by the app (its status comment was edited, or never written by it): ${request.action} applies only to a ${expected} submission the app recorded`
        : `#${request.pullRequest} is ${view.state} in the bot's status comment; ${request.action} applies only to a ${expected} submission (the bot records the decision before it dispatches)`,
    );
  }
}

export interface ReconcileVisibilityInput {
  repo: RepoRef;
  publisher: PublisherOptions;
  botLogins: readonly string[];
  statusKey: StatusKey;
  /** Lists labelled pull requests and reads their comments (the workflow token). */
  reader: GitHubApi;
  /** Withdraws a hidden version's bytes (the GitHub Releases store, with the app's token). */
  withdraw: (key: ArtifactKey, recordedUrl: string) => Promise<{ outcome: WithdrawalOutcome; tag: string }>;
  /** A dispatch verified by verifyVisibilityDispatch: its pull request is looked at even without the label. */
  dispatched?: VisibilityRequest | null;
  now?: () => Date;
  log?: (line: string) => void;
}

const HIDDEN_LABEL = "state:hidden";

/** The pull request number a record was published from, when it is one of this repository's. */
function pullOf(record: ReleaseRecord, repo: RepoRef): number | null {
  const url = record.source.kind === "pull_request" ? record.source.pullRequestUrl : undefined;
  const m = url ? /^https:\/\/[^/]+\/([^/]+)\/([^/]+)\/pull\/([1-9][0-9]{0,9})$/.exec(url) : null;
  if (
    !m ||
    m[1]!.toLowerCase() !== repo.owner.toLowerCase() ||
    m[2]!.toLowerCase() !== repo.repo.toLowerCase()
  )
    return null;
  return Number(m[3]);
}

/**
 * Applies every moderator decision on visibility that the pipeline has not applied yet (module
 * comment); one entry per change made or refused, which the receipts job posts.
 */
export async function reconcileVisibility(input: ReconcileVisibilityInput): Promise<VisibilityEntry[]> {
  const now = (input.now ?? (() => new Date()))();
  const { publisher, repo } = input;
  const records = loadReleaseRecords(publisher.recordsDir, schemaRegistry(publisher.config.baseUrl));
  const byPull = new Map<number, ReleaseRecord>();
  for (const r of records) {
    const n = pullOf(r, repo);
    if (n !== null) byPull.set(n, r);
  }
  const labelled = new Set(
    (
      await input.reader.paginate(input.reader.rest.issues.listForRepo, {
        ...repo,
        labels: HIDDEN_LABEL,
        state: "closed",
        per_page: 100,
      })
    )
      .filter((i) => i.pull_request)
      .map((i) => i.number),
  );
  const ledgerOf = (r: ReleaseRecord) => readLedgerEntry(publisher.recordsDir, r.modId, r.version);
  const candidates: Array<{ action: VisibilityAction; pull: number; record: ReleaseRecord | null }> = [];
  for (const pull of labelled) {
    const record = byPull.get(pull);
    const decided = record ? ledgerOf(record)?.visibility : null;
    if (record && !(decided?.state === "hidden" && decided.pullRequest === pull))
      candidates.push({ action: "hide", pull, record });
  }
  for (const [pull, record] of byPull) {
    const decided = ledgerOf(record)?.visibility;
    if (decided?.state === "hidden" && decided.unhideRefusedAt === null && !labelled.has(pull))
      candidates.push({ action: "unhide", pull, record });
  }
  const d = input.dispatched;
  if (d && !candidates.some((c) => c.pull === d.pullRequest && c.action === d.action)) {
    const record = records.find((r) => r.modId === d.modId && r.version === d.version) ?? null;
    candidates.push({ action: d.action, pull: d.pullRequest, record });
  }
  const entries: VisibilityEntry[] = [];
  for (const c of candidates) {
    const entry = await applyDecision(input, c, now);
    if (entry) entries.push(entry);
  }
  return entries;
}

async function sealedState(input: ReconcileVisibilityInput, pull: number) {
  const comments = await input.reader.paginate(input.reader.rest.issues.listComments, {
    ...input.repo,
    issue_number: pull,
    per_page: 100,
  });
  return readStoredStatus(
    comments.map((c) => ({ id: c.id, body: c.body ?? "", authorLogin: c.user?.login ?? "" })),
    { repository: `${input.repo.owner}/${input.repo.repo}`, pullRequest: pull },
    { botLogins: input.botLogins, statusKey: input.statusKey },
  ).stored;
}

async function applyDecision(
  input: ReconcileVisibilityInput,
  c: { action: VisibilityAction; pull: number; record: ReleaseRecord | null },
  now: Date,
): Promise<VisibilityEntry | null> {
  const dispatched = input.dispatched;
  const request =
    dispatched && dispatched.pullRequest === c.pull && dispatched.action === c.action ? dispatched : null;
  const modId = c.record?.modId ?? request?.modId ?? "";
  const version = c.record?.version ?? request?.version ?? "";
  const base = input.publisher.config.baseUrl;
  const entry = (status: string | null, receipt: Omit<PublishReceipt, "modId" | "version">) => ({
    path: submissionPath(modId, version),
    pullRequest: c.pull,
    visibility: c.action,
    status,
    receipt: { modId, version, ...receipt },
  });
  if (!c.record)
    return entry(null, {
      ok: false,
      error: {
        code: "unknown_release",
        message: `${modId}@${version} is not a release in records/: nothing to ${c.action}`,
      },
    });
  const record = c.record;
  const ledger: LedgerEntry = ledgerOrEmpty(input, record);
  const decided = ledger.visibility;
  const stored = await sealedState(input, c.pull);
  if (stored?.state !== EXPECTED_STATE[c.action] || !stored.at) {
    input.log?.(
      `#${c.pull}: ${c.action} not applied: the app's sealed state is ${stored?.state ?? "missing"}`,
    );
    return null;
  }
  if (decided && Date.parse(stored.at) <= Date.parse(decided.decidedAt)) {
    input.log?.(
      `#${c.pull}: the sealed ${stored.state} (${stored.at}) is not newer than the applied decision`,
    );
    return null;
  }
  const at = now.toISOString();
  const done = {
    catalogUrl: `${base}/${SITE_PATHS.catalog}`,
    detailUrl: `${base}/${SITE_PATHS.modDetail(modId)}`,
  };
  try {
    if (c.action === "hide") {
      if (record.status !== "hidden") await hideRelease(input.publisher, modId, version);
      const withdrawal = await input.withdraw(
        { modId, version, fileName: record.fileName },
        record.packageUrl,
      );
      writeLedgerEntry(input.publisher.recordsDir, {
        ...ledger,
        visibility: {
          state: "hidden",
          pullRequest: c.pull,
          decidedAt: stored.at,
          appliedAt: at,
          withdrawal: { ...withdrawal, at },
          unhideRefusedAt: null,
        },
      });
      return {
        ...entry("hidden", { ok: true, artifactUrl: record.packageUrl, ...done }),
        withdrawal: withdrawal.outcome,
      };
    }
    const outcome = decided?.withdrawal?.outcome;
    if (outcome === "deleted" || outcome === "gone") {
      writeLedgerEntry(input.publisher.recordsDir, {
        ...ledger,
        visibility: { ...decided!, unhideRefusedAt: stored.at },
      });
      return entry("hidden", {
        ok: false,
        error: {
          code: "visibility_withdrawn",
          message: `${modId}@${version} stays hidden: its package was withdrawn from GitHub Releases when it was hidden (release ${decided!.withdrawal!.tag}), and its artifact URL can never serve bytes again. Publish a new version instead`,
        },
      });
    }
    const result = record.status === "hidden" ? await unhideRelease(input.publisher, modId, version) : null;
    writeLedgerEntry(input.publisher.recordsDir, {
      ...ledger,
      visibility: {
        state: "published",
        pullRequest: c.pull,
        decidedAt: stored.at,
        appliedAt: at,
        withdrawal: null,
        unhideRefusedAt: null,
      },
    });
    return entry(result?.record.status ?? record.status, { ok: true, ...done });
  } catch (error) {
    if (!isSvcError(error)) throw error;
    return entry(null, { ok: false, error: { code: error.code, message: error.message } });
  }
}

function ledgerOrEmpty(input: ReconcileVisibilityInput, record: ReleaseRecord): LedgerEntry {
  return (
    readLedgerEntry(input.publisher.recordsDir, record.modId, record.version) ??
    emptyLedgerEntry(record.modId, record.version)
  );
}

export function isVisibilityEntry(value: unknown): value is VisibilityEntry {
  return typeof value === "object" && value !== null && "visibility" in value;
}

/** Posts the receipt on the pull request (the receipts job, after the Pages deploy). */
export async function postVisibilityReceipt(
  api: GitHubApi,
  repo: RepoRef,
  entry: VisibilityEntry,
): Promise<void> {
  await api.rest.issues.createComment({
    ...repo,
    issue_number: entry.pullRequest,
    body: visibilityReceiptComment(entry),
  });
}
