/**
 * fetch: everything the bot reads from GitHub about one submission pull request, as plain data.
 * Nothing here decides anything.
 */
import type { ModOwnership } from "../contracts/ownership.ts";
import type { ModRecords, ReleaseRecord } from "../contracts/records.ts";
import { type OwnersShard, RECORD_PATHS, recordShard } from "../contracts/records.ts";
import { formatIssues, SOURCE_SCHEMA_BASE, schemaRegistry } from "../contracts/schemas.ts";
import { isNotFound, type GitHubApi, type RepoRef } from "../github/api.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { STATE_LABEL_PREFIX } from "./comments.ts";
import { shapeOf } from "./derive.ts";
import type { PullRequestInfo } from "./pull-request.ts";

export interface ModeratorPolicy {
  logins: string[];
  /** org/team-slug, resolved through the teams API. */
  team: string | null;
}

export const PORTAL_CONFIG_PATH = "portal.config.json";

export async function fetchPullRequestInfo(
  api: GitHubApi,
  repo: RepoRef,
  number: number,
): Promise<PullRequestInfo> {
  const { data: pr } = await api.rest.pulls.get({ ...repo, pull_number: number });
  const files = await api.paginate(api.rest.pulls.listFiles, { ...repo, pull_number: number, per_page: 100 });
  const comments = await api.paginate(api.rest.issues.listComments, {
    ...repo,
    issue_number: number,
    per_page: 100,
  });
  const reviews = await api.paginate(api.rest.pulls.listReviews, {
    ...repo,
    pull_number: number,
    per_page: 100,
  });
  const queue = await api.paginate(api.rest.issues.listForRepo, {
    ...repo,
    state: "open",
    labels: `${STATE_LABEL_PREFIX}pending_review`,
    sort: "created",
    direction: "asc",
    per_page: 100,
  });
  const changed = files.map((f) => ({ filename: f.filename, status: f.status }));
  const changedFiles = typeof pr.changed_files === "number" ? pr.changed_files : null;
  const shape = shapeOf({ files: changed, changedFiles });
  let sidecar: unknown = null;
  if (shape.kind === "submission") sidecar = await readJsonFile(api, repo, shape.sidecar.path, pr.head.sha);
  return {
    repo,
    defaultBranch: pr.base.repo.default_branch,
    number,
    htmlUrl: pr.html_url,
    open: pr.state === "open",
    merged: pr.merged === true,
    authorLogin: pr.user.login,
    authorType: pr.user.type ?? "",
    body: pr.body ?? "",
    headSha: pr.head.sha,
    headRef: pr.head.ref,
    headRepository: pr.head.repo?.full_name ?? null,
    updatedAt: pr.updated_at ?? null,
    mergeable: typeof pr.mergeable === "boolean" ? pr.mergeable : null,
    files: changed,
    changedFiles,
    labels: pr.labels.map((l) => l.name),
    comments: comments.map((c) => ({
      id: c.id,
      body: c.body ?? "",
      authorLogin: c.user?.login ?? "",
      authorType: c.user?.type ?? "",
    })),
    reviews: reviews.map((r) => ({
      id: r.id,
      state: r.state,
      authorLogin: r.user?.login ?? "",
      commitId: r.commit_id ?? null,
    })),
    pendingQueue: queue.filter((i) => i.pull_request).map((i) => i.number),
    sidecar,
  };
}

/**
 * A small JSON file at a ref (default: the default branch), read as data through the contents API;
 * null when missing or invalid.
 */
export async function readJsonFile(
  api: GitHubApi,
  repo: RepoRef,
  path: string,
  ref?: string,
): Promise<unknown> {
  try {
    const { data } = await api.rest.repos.getContent({ ...repo, path, ...(ref ? { ref } : {}) });
    if (Array.isArray(data) || data.type !== "file" || !("content" in data)) return null;
    const parsed = parseUntrustedJson(Buffer.from(data.content, "base64"), {
      maxBytes: 256 * 1024,
      maxDepth: 32,
    });
    return parsed.ok ? parsed.value : null;
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/**
 * Moderators come from portal.config.json on the default branch, never from the pull request (a
 * pull request could otherwise name its author a moderator).
 */
export async function fetchModeratorPolicy(
  api: GitHubApi,
  repo: RepoRef,
  defaultBranch: string,
): Promise<ModeratorPolicy> {
  const config = (await readJsonFile(api, repo, PORTAL_CONFIG_PATH, defaultBranch)) as {
    moderators?: { logins?: unknown; team?: unknown };
  } | null;
  const logins = Array.isArray(config?.moderators?.logins)
    ? config.moderators.logins.filter((l): l is string => typeof l === "string")
    : [];
  const team = typeof config?.moderators?.team === "string" ? config.moderators.team : null;
  return { logins, team };
}

/** The mod's published records on the default branch, as the release diff reads them. */
export type ModReleasesRead =
  | { kind: "none" }
  | { kind: "found"; releases: ReleaseRecord[] }
  | { kind: "unreadable"; message: string };

/**
 * The mod's records file (records/mods/{shard}/{modId}.json) on the default branch, read through
 * the contents API as data and checked against its schema: the baseline of the release diff. No
 * file: nothing of the mod is published (a first release). A file that exists but cannot be read is
 * never taken for a first release: the status comment says the diff is unknown.
 */
export async function fetchModReleases(
  api: GitHubApi,
  repo: RepoRef,
  modId: string,
  defaultBranch: string,
): Promise<ModReleasesRead> {
  const path = `records/${RECORD_PATHS.modRecords(modId)}`;
  let file: Awaited<ReturnType<typeof fetchFile>>;
  try {
    file = await fetchFile(api, repo, path, defaultBranch);
  } catch (error) {
    // A token without contents: read (an Actions reporter set up before the diff) costs the diff,
    // never the report: the status comment says the records could not be read.
    const status = (error as { status?: number }).status;
    if (status !== 401 && status !== 403) throw error;
    return {
      kind: "unreadable",
      message: `${path} answered ${status}: the token cannot read the repository's contents`,
    };
  }
  if (file === null) return { kind: "none" };
  if ("unreadable" in file) return { kind: "unreadable", message: file.unreadable };
  // The contents API serves files up to 1 MB; past that the diff is unknown, never a first release.
  const parsed = parseUntrustedJson(file.bytes, { maxBytes: 1024 * 1024, maxDepth: 32 });
  if (!parsed.ok) return { kind: "unreadable", message: `${path}: ${parsed.message}` };
  const checked = schemaRegistry(SOURCE_SCHEMA_BASE).validate<ModRecords>("mod-records", parsed.value);
  if (!checked.ok) return { kind: "unreadable", message: `${path}: ${formatIssues(checked.issues, 3)}` };
  if (checked.value.modId !== modId || checked.value.releases.some((r) => r.modId !== modId))
    return { kind: "unreadable", message: `${path} holds records of another mod` };
  return { kind: "found", releases: checked.value.releases };
}

export async function isModerator(api: GitHubApi, policy: ModeratorPolicy, login: string): Promise<boolean> {
  if (policy.logins.some((l) => l.toLowerCase() === login.toLowerCase())) return true;
  if (!policy.team) return false;
  const [org, teamSlug] = policy.team.split("/");
  if (!org || !teamSlug) return false;
  try {
    const { data } = await api.rest.teams.getMembershipForUserInOrg({
      org,
      team_slug: teamSlug,
      username: login,
    });
    return data.state === "active";
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}

/** The mod's ownership record as the default branch holds it. */
export type OwnershipRead =
  | { kind: "unclaimed" }
  | { kind: "claimed"; ownership: ModOwnership }
  | { kind: "unreadable"; message: string };

/** A file of the default branch through the contents API: its bytes, null when absent, or why it is unreadable. */
async function fetchFile(
  api: GitHubApi,
  repo: RepoRef,
  path: string,
  ref: string,
): Promise<{ bytes: Buffer } | { unreadable: string } | null> {
  try {
    const { data } = await api.rest.repos.getContent({ ...repo, path, ref });
    if (Array.isArray(data) || data.type !== "file" || !("content" in data))
      return { unreadable: `${path} is not a file` };
    // The contents API leaves out the content of a file over 1 MB (encoding "none").
    if (data.encoding !== "base64")
      return { unreadable: `${path} is ${data.size} bytes, over what the contents API serves` };
    return { bytes: Buffer.from(data.content, "base64") };
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/**
 * The mod's entry of its owners shard (records/owners/{shard}.json) on the default branch, read
 * through the contents API and checked against its schema. A record that exists but cannot be read
 * is never taken for "unclaimed": the callers refuse what they cannot decide.
 */
export async function fetchOwnership(
  api: GitHubApi,
  repo: RepoRef,
  modId: string,
  defaultBranch: string,
): Promise<OwnershipRead> {
  const path = `records/${RECORD_PATHS.ownersShard(modId)}`;
  const file = await fetchFile(api, repo, path, defaultBranch);
  // A portal still on the layout before sharding has no shard file: its publish job refuses every
  // publication (records_layout_outdated) until `svc records migrate`, so nothing lands meanwhile.
  if (file === null) return { kind: "unclaimed" };
  if ("unreadable" in file) return { kind: "unreadable", message: file.unreadable };
  // The contents API serves files up to 1 MB: a shard reaches that only past ~250,000 mods.
  const parsed = parseUntrustedJson(file.bytes, { maxBytes: 1024 * 1024, maxDepth: 32 });
  if (!parsed.ok) return { kind: "unreadable", message: `${path}: ${parsed.message}` };
  const registry = schemaRegistry(SOURCE_SCHEMA_BASE);
  const checked = registry.validate<OwnersShard<ModOwnership>>("owners-shard", parsed.value);
  if (!checked.ok) return { kind: "unreadable", message: `${path}: ${formatIssues(checked.issues, 3)}` };
  if (checked.value.shard !== recordShard(modId))
    return { kind: "unreadable", message: `${path} names shard ${checked.value.shard}` };
  const ownership = checked.value.owners.find((o) => o.modId === modId);
  return ownership ? { kind: "claimed", ownership } : { kind: "unclaimed" };
}
