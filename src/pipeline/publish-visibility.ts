/**
 * The publish workflow's hide/unhide path (workflow_dispatch from the bot after `/svc hide` or
 * `/svc unhide`): validates the dispatch inputs, re-reads the named pull request through the API and
 * requires the bot's status comment to already say `hidden` (hide) or `published` (unhide) for
 * exactly that release, then applies the change with the publisher (records -> site, one
 * transaction). Anyone with write access can dispatch a workflow, so the inputs alone authorize
 * nothing: the stored state, which only the bot can write, does.
 */
import type { PublishReceipt } from "../bot/comments.ts";
import { inlineCode, visibilityReceiptComment } from "../bot/comments.ts";
import { deriveSubmission } from "../bot/derive.ts";
import { fetchPullRequestInfo } from "../bot/fetch.ts";
import type { StatusKey } from "../bot/status-seal.ts";
import { hideRelease, type PublisherOptions, unhideRelease } from "../catalog/publisher.ts";
import { schemaFiles } from "../contracts/schemas.ts";
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

/** One entry of the receipts file for a hide/unhide (beside publish-merged's MergedSubmission entries). */
export interface VisibilityEntry {
  path: string;
  pullRequest: number;
  visibility: VisibilityAction;
  /** The release's status after the change (hidden, published or superseded); null when it failed. */
  status: string | null;
  receipt: PublishReceipt;
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

export interface ApplyVisibilityInput {
  repo: RepoRef;
  request: VisibilityRequest;
  botLogins: string[];
  /** The stored state counts only sealed by the app. */
  statusKey: StatusKey;
  publisher: PublisherOptions;
}

/**
 * Verifies the pull request, then hides or unhides the release. A dispatch the pull request does not
 * back is refused (VisibilityRefusal, thrown); a verified request that the publisher cannot apply
 * (unknown_release, illegal_transition) comes back as a failed receipt for the moderators.
 */
export async function applyVisibility(api: GitHubApi, input: ApplyVisibilityInput): Promise<VisibilityEntry> {
  const { request } = input;
  const release = `${request.modId}@${request.version}`;
  const view = deriveSubmission(await fetchPullRequestInfo(api, input.repo, request.pullRequest), {
    botLogins: input.botLogins,
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
  const base = input.publisher.config.baseUrl;
  const entry = (status: string | null, receipt: Omit<PublishReceipt, "modId" | "version">) => ({
    path: submissionPath(request.modId, request.version),
    pullRequest: request.pullRequest,
    visibility: request.action,
    status,
    receipt: { modId: request.modId, version: request.version, ...receipt },
  });
  try {
    const apply = request.action === "hide" ? hideRelease : unhideRelease;
    const result = await apply(input.publisher, request.modId, request.version);
    return entry(result.record.status, {
      ok: true,
      catalogUrl: `${base}/${SITE_PATHS.catalog}`,
      detailUrl: `${base}/${SITE_PATHS.modDetail(request.modId)}`,
    });
  } catch (error) {
    if (!isSvcError(error)) throw error;
    const code = error.code === "not_found" ? "unknown_release" : error.code;
    const message =
      error.code === "not_found"
        ? `${release} is not a release in records/: nothing to ${request.action}`
        : error.message;
    return entry(null, { ok: false, error: { code, message } });
  }
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
