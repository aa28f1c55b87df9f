/**
 * The publish action's core, between the adapter (actions/publish/main.ts: inputs, tokens, outputs)
 * and the pieces it wires: route the event, make the change (reconcile publications and the
 * moderators' hide/unhide decisions, whatever started the run), push it through the catalog commit
 * path, and decide whether Pages must deploy. Every outcome the workflow needs is a value here; the
 * adapter only renders it.
 */
import { SvcError } from "../errors.ts";
import type { PublisherOptions } from "../catalog/publisher.ts";
import { inlineCode } from "../bot/comments.ts";
import type { StatusKey } from "../bot/status-seal.ts";
import type { GitHubApi, RepoRef } from "../github/api.ts";
import { type CatalogPushResult, pushCatalogCommit } from "../github/catalog-push.ts";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { FetchLike } from "../github/download.ts";
import { RECORD_PATHS } from "../contracts/records.ts";
import type { RefusalPolicy } from "./publish-refusals.ts";
import { type PublicationEntry, reconcilePublications, type ScannerProblem } from "./publish-reconcile.ts";
import {
  parseVisibilityInputs,
  type ReconcileVisibilityInput,
  reconcileVisibility,
  type VisibilityEntry,
  verifyVisibilityDispatch,
} from "./publish-visibility.ts";

export type PublishRunEntry = PublicationEntry | VisibilityEntry;

export interface PublishRunInput {
  eventName: string;
  event: Record<string, unknown>;
  /** GITHUB_REF: the workflow must run on the default branch (the checkout is what gets pushed). */
  ref: string;
  /** The checkout's commit (GITHUB_SHA). */
  sha: string;
  repo: RepoRef;
  branch: string;
  /** The publisher over the checkout, its artifact store writing with the app's client. */
  publisher: (writer: GitHubApi) => PublisherOptions;
  botLogins: readonly string[];
  /** The workflow token: reads pull requests and Pages deployments. */
  reader: GitHubApi;
  /**
   * Mints the app's installation token: a client (releases, staged drafts) and the token for git,
   * and the key the app's records are sealed with (derived from the same private key). Called only
   * once the run is known to be legitimate (default branch, valid dispatch inputs).
   */
  connect: () => Promise<{ writer: GitHubApi; pushToken: string; statusKey: StatusKey }>;
  /** svc check over the checkout; throws on drift. */
  verify: () => Promise<void>;
  /**
   * Brings site/ (a build output, restored from the previous deployment or absent) in line with the
   * checkout's records; resolves whether it had to build. Called before the change and again after
   * the commit path rebases onto, or resets to, a new head.
   */
  materialize?: () => Promise<boolean>;
  /** The sidecars whose version has a release record: the publication commit deletes them. */
  retire?: () => string[];
  /** Withdraws a hidden version's bytes from the artifact store, writing with the app's client. */
  withdraw: (writer: GitHubApi) => ReconcileVisibilityInput["withdraw"];
  /** Why antivirus_scan cannot pass now (no scanner, no usable signatures), or null. */
  scannerCheck?: () => Promise<ScannerProblem | null>;
  refusalPolicy?: RefusalPolicy;
  now?: () => Date;
  fetch?: FetchLike;
  allowHttp?: boolean;
  log?: (line: string) => void;
}

export interface PublishRun {
  kind: "reconcile" | "visibility";
  entries: PublishRunEntry[];
  /** The entries the receipts job posts on their pull requests. */
  receipts: PublishRunEntry[];
  message: string;
  push: CatalogPushResult;
  /** Whether the Pages deploy job should run. */
  deploy: boolean;
  /** Whether site/ had to be built (no previous deployment restored, or it had drifted). */
  siteRebuilt: boolean;
}

export class PublishRunError extends SvcError<"not_default_branch"> {
  override name = "PublishRunError";
}

/** A dispatch names a visibility change when any of its inputs is set (the bot sends all four). */
export function dispatchAsksVisibility(inputs: unknown): boolean {
  if (!inputs || typeof inputs !== "object") return false;
  const { visibility, modId, version, pullRequest } = inputs as Record<string, unknown>;
  const set = (v: unknown) => typeof v === "string" && v.trim() !== "";
  return set(visibility) || set(modId) || set(version) || set(pullRequest);
}

function publishMessage(entries: readonly PublishRunEntry[]): string {
  const published = entries.filter((e): e is PublicationEntry => "outcome" in e && e.outcome === "published");
  const names = published.map(
    (e) => `${e.receipt.modId}@${e.receipt.version}${e.pullRequest ? ` (#${e.pullRequest})` : ""}`,
  );
  const visibility = entries
    .filter((e): e is VisibilityEntry => isVisibility(e) && e.receipt.ok)
    .map(
      (e) =>
        `${e.visibility === "hide" ? "Hide" : "Unhide"} ${e.receipt.modId}@${e.receipt.version} (#${e.pullRequest})`,
    );
  const refused = entries.filter(
    (e) => "outcome" in e && (e.outcome === "refused" || e.outcome === "failed"),
  ).length;
  const lines = [
    ...(names.length === 0
      ? []
      : names.length <= 3
        ? [`Publish ${names.join(", ")}`]
        : [`Publish ${names.length} releases\n\n${names.join("\n")}`]),
    ...visibility,
  ];
  if (lines.length === 0) return refused > 0 ? `Record ${refused} refusal(s)` : "Rebuild the catalog";
  return lines.join("\n");
}

const isVisibility = (e: PublishRunEntry): e is VisibilityEntry => "visibility" in e;

/**
 * Whether the pushed commit changed what site/ is built from: records/ other than the publication
 * ledger (a commit of the ledger, or of retired sidecars, alone deploys nothing).
 */
async function siteChanged(cwd: string, before: string): Promise<boolean> {
  try {
    await promisify(execFile)(
      "git",
      [
        "diff",
        "--quiet",
        before,
        "HEAD",
        "--",
        "records",
        `:(exclude)records/${RECORD_PATHS.publicationDir}`,
      ],
      { cwd },
    );
    return false;
  } catch {
    return true;
  }
}

/**
 * Pages serves what the last successful deploy uploaded. A run that pushed but was cancelled before
 * its deploy leaves Pages behind git: the next scheduled run deploys when the newest github-pages
 * deployment is not a success for the commit it checked out. Unknown means deploy.
 */
export async function pagesBehind(api: GitHubApi, repo: RepoRef, sha: string): Promise<boolean> {
  try {
    const { data: deployments } = await api.rest.repos.listDeployments({
      ...repo,
      environment: "github-pages",
      per_page: 1,
    });
    const newest = deployments[0];
    if (!newest || newest.sha !== sha) return true;
    const { data: statuses } = await api.rest.repos.listDeploymentStatuses({
      ...repo,
      deployment_id: newest.id,
      per_page: 1,
    });
    return statuses[0]?.state !== "success";
  } catch {
    return true;
  }
}

export async function runPublish(input: PublishRunInput): Promise<PublishRun> {
  if (input.ref !== `refs/heads/${input.branch}`)
    throw new PublishRunError(
      "not_default_branch",
      `publish runs on ${input.branch} only (this run is on ${input.ref}): the checkout is what it pushes`,
    );
  const visibility =
    input.eventName === "workflow_dispatch" && dispatchAsksVisibility(input.event.inputs)
      ? parseVisibilityInputs(input.event.inputs)
      : null;
  const { writer, pushToken, statusKey } = await input.connect();
  if (visibility)
    await verifyVisibilityDispatch(input.reader, {
      repo: input.repo,
      request: visibility,
      botLogins: input.botLogins,
      statusKey,
    });
  const publisher = input.publisher(writer);
  const withdraw = input.withdraw(writer);
  let scannerAnswer: Promise<ScannerProblem | null> | undefined;
  // Asked at most once a run, and only when a sidecar reaches its download.
  const scannerCheck = input.scannerCheck ? () => (scannerAnswer ??= input.scannerCheck!()) : undefined;
  let entries: PublishRunEntry[] = [];
  const change = async () => {
    const publications = await reconcilePublications({
      repo: input.repo,
      branch: input.branch,
      publisher,
      botLogins: input.botLogins,
      statusKey,
      reader: input.reader,
      writer,
      ...(scannerCheck ? { scannerCheck } : {}),
      ...(input.refusalPolicy ? { refusalPolicy: input.refusalPolicy } : {}),
      ...(input.now ? { now: input.now } : {}),
      ...(input.log ? { log: input.log } : {}),
      ...(input.fetch ? { fetch: input.fetch } : {}),
      ...(input.allowHttp ? { allowHttp: true } : {}),
    });
    const decisions = await reconcileVisibility({
      repo: input.repo,
      publisher,
      botLogins: input.botLogins,
      statusKey,
      reader: input.reader,
      withdraw,
      dispatched: visibility,
      ...(input.now ? { now: input.now } : {}),
      ...(input.log ? { log: input.log } : {}),
    });
    entries = [...publications, ...decisions];
  };
  const siteRebuilt = (await input.materialize?.()) ?? false;
  await change();
  const message = () => publishMessage(entries);
  const push = await pushCatalogCommit({
    cwd: publisher.root,
    branch: input.branch,
    token: pushToken,
    message,
    verify: input.verify,
    redo: change,
    ...(input.retire ? { retire: input.retire } : {}),
    ...(input.materialize
      ? {
          materialize: async () => {
            await input.materialize!();
          },
        }
      : {}),
    ...(input.log ? { log: input.log } : {}),
  });
  // A refusal is posted once, when it is new or its reason changed (the ledger remembers it), on
  // whatever run met it: a scheduled run's failure reaches the pull request too.
  const receipts = entries.filter((e) => isVisibility(e) || (e.pullRequest !== null && e.notify === true));
  const deploy =
    siteRebuilt ||
    (push.commit !== null && (await siteChanged(publisher.root, input.sha))) ||
    input.eventName !== "schedule" ||
    (await pagesBehind(input.reader, input.repo, input.sha));
  return {
    kind: visibility ? "visibility" : "reconcile",
    entries,
    receipts,
    message: message(),
    push,
    deploy,
    siteRebuilt,
  };
}

/** The job summary: one row per sidecar that is not a no-op, then the commit. */
export function publishSummary(run: PublishRun): string {
  const out = ["## svc publish", ""];
  const rows = run.entries.filter(
    (e) => !("outcome" in e) || (e.outcome !== "already_published" && e.outcome !== "waiting"),
  );
  const waiting = run.entries.filter((e): e is PublicationEntry => "outcome" in e && e.outcome === "waiting");
  const unchanged = run.entries.length - rows.length - waiting.length;
  if (rows.length > 0) {
    out.push("| sidecar | pull request | result | artifact or page |", "|---|---|---|---|");
    for (const e of rows) {
      const result = e.receipt.ok
        ? "visibility" in e
          ? `:white_check_mark: ${e.visibility}: ${e.status}`
          : ":white_check_mark: published"
        : `:x: \`${e.receipt.error?.code}\`: ${inlineCode(e.receipt.error?.message ?? "", 300).replace(/\|/g, "\\|")}`;
      const link = e.receipt.ok ? (e.receipt.artifactUrl ?? e.receipt.detailUrl ?? "") : "";
      out.push(`| \`${e.path}\` | ${e.pullRequest ? `#${e.pullRequest}` : ""} | ${result} | ${link} |`);
    }
  } else out.push("Nothing to publish.");
  if (unchanged > 0) out.push("", `${unchanged} sidecar(s) already published with the same sha256 (no-op).`);
  if (waiting.length > 0) {
    out.push(
      "",
      `${waiting.length} refused sidecar(s) wait for a change (not downloaded, not read):`,
      "",
      "| sidecar | pull request | refused for | judged again after |",
      "|---|---|---|---|",
    );
    for (const e of waiting)
      out.push(
        `| \`${e.path}\` | ${e.pullRequest ? `#${e.pullRequest}` : ""} | \`${e.receipt.error?.code}\` | ${e.retryAt ?? ""} |`,
      );
  }
  out.push(
    "",
    run.push.commit
      ? `Catalog commit ${run.push.commit} (push attempts: ${run.push.attempts}, rebased: ${run.push.rebased}, redone: ${run.push.redone}).`
      : "No catalog commit (nothing changed).",
  );
  return `${out.join("\n")}\n`;
}
