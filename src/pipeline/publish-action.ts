/**
 * The publish action's core, between the adapter (actions/publish/main.ts: inputs, tokens, outputs)
 * and the pieces it wires: route the event, make the change (reconcile publications, or apply a
 * bot-dispatched hide/unhide), push it through the catalog commit path, and decide whether Pages
 * must deploy. Every outcome the workflow needs is a value here; the adapter only renders it.
 */
import { SvcError } from "../errors.ts";
import type { PublisherOptions } from "../catalog/publisher.ts";
import { inlineCode } from "../bot/comments.ts";
import type { StatusKey } from "../bot/status-seal.ts";
import type { GitHubApi, RepoRef } from "../github/api.ts";
import { type CatalogPushResult, pushCatalogCommit } from "../github/catalog-push.ts";
import { type PublicationEntry, reconcilePublications } from "./publish-reconcile.ts";
import { applyVisibility, parseVisibilityInputs, type VisibilityEntry } from "./publish-visibility.ts";
import type { FetchLike } from "../github/download.ts";

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

/** Paths the push added or changed: a refusal is posted on its pull request only then, not every half hour. */
function pushedPaths(event: Record<string, unknown>): Set<string> {
  const commits = Array.isArray(event.commits) ? (event.commits as Array<Record<string, unknown>>) : [];
  const paths = new Set<string>();
  for (const commit of commits)
    for (const key of ["added", "modified"])
      for (const path of Array.isArray(commit[key]) ? (commit[key] as unknown[]) : [])
        if (typeof path === "string") paths.add(path);
  return paths;
}

function publishMessage(entries: readonly PublicationEntry[]): string {
  const published = entries.filter((e) => e.outcome === "published");
  const names = published.map(
    (e) => `${e.receipt.modId}@${e.receipt.version}${e.pullRequest ? ` (#${e.pullRequest})` : ""}`,
  );
  if (names.length === 0) return "Rebuild the catalog";
  if (names.length <= 3) return `Publish ${names.join(", ")}`;
  return `Publish ${names.length} releases\n\n${names.join("\n")}`;
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
  const publisher = input.publisher(writer);
  let entries: PublishRunEntry[] = [];
  const change = async () => {
    entries = visibility
      ? [
          await applyVisibility(input.reader, {
            repo: input.repo,
            request: visibility,
            botLogins: [...input.botLogins],
            statusKey,
            publisher,
          }),
        ]
      : await reconcilePublications({
          repo: input.repo,
          branch: input.branch,
          publisher,
          botLogins: input.botLogins,
          statusKey,
          reader: input.reader,
          writer,
          ...(input.fetch ? { fetch: input.fetch } : {}),
          ...(input.allowHttp ? { allowHttp: true } : {}),
        });
  };
  await change();
  const message = () =>
    visibility
      ? `${visibility.action === "hide" ? "Hide" : "Unhide"} ${visibility.modId}@${visibility.version} (#${visibility.pullRequest})`
      : publishMessage(entries as PublicationEntry[]);
  const push = await pushCatalogCommit({
    cwd: publisher.root,
    branch: input.branch,
    token: pushToken,
    message,
    verify: input.verify,
    redo: change,
    ...(input.log ? { log: input.log } : {}),
  });
  const pushed = new Set(input.eventName === "push" ? pushedPaths(input.event) : []);
  const receipts = visibility
    ? entries
    : (entries as PublicationEntry[]).filter(
        (e) =>
          e.outcome === "published" ||
          (e.pullRequest !== null &&
            (e.outcome === "refused" || e.outcome === "failed") &&
            pushed.has(e.path)),
      );
  const deploy =
    push.commit !== null ||
    input.eventName !== "schedule" ||
    (await pagesBehind(input.reader, input.repo, input.sha));
  return {
    kind: visibility ? "visibility" : "reconcile",
    entries,
    receipts,
    message: message(),
    push,
    deploy,
  };
}

/** The job summary: one row per sidecar that is not a no-op, then the commit. */
export function publishSummary(run: PublishRun): string {
  const out = ["## svc publish", ""];
  const rows = run.entries.filter((e) => !("outcome" in e) || e.outcome !== "already_published");
  const unchanged = run.entries.length - rows.length;
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
  out.push(
    "",
    run.push.commit
      ? `Catalog commit ${run.push.commit} (push attempts: ${run.push.attempts}, rebased: ${run.push.rebased}, redone: ${run.push.redone}).`
      : "No catalog commit (nothing changed).",
  );
  return `${out.join("\n")}\n`;
}
