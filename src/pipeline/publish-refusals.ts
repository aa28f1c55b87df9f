/**
 * Refusals end (issue 24, item 5). A sidecar the publish job refused (merged without approval, a
 * dead or replaced asset, a check that failed) is recorded with its reason in the publication ledger
 * (src/catalog/publication-ledger.ts) and judged again only when something changed:
 *
 * - its file on the default branch (the sidecar's git blob; read from the checkout, free);
 * - the bot's state of its pull request: a closed pull request newly labelled `state:approved`
 *   (one listing for all of them; the label only says where to look, the sealed state decides);
 * - a `/svc revalidate` on its pull request by its submitter or a moderator login, after the refusal
 *   (one listing of the repository's newest comments for all of them);
 * - or its backoff ended: base, 2 x base, 4 x base ... capped (the asset's bytes, a URL that came
 *   back: nothing tells without downloading, so that is bounded by time).
 *
 * A refusal that is not the package's fault and not the approval's (no usable scanner) is due at the
 * next run. Everything else waits without a download, a scan or a pull request read: a refused
 * sidecar costs nothing until then, whatever the number of runs.
 */
import type { LedgerEntry, RefusalEntry } from "../catalog/publication-ledger.ts";
import type { GitHubApi, RepoRef } from "../github/api.ts";

export interface RefusalPolicy {
  /** The first wait after a refusal; each refusal in a row doubles it. */
  backoffMs: number;
  /** The longest wait: a refused sidecar is judged again at least this often. */
  maxBackoffMs: number;
}

export const DEFAULT_REFUSAL_POLICY: RefusalPolicy = {
  backoffMs: 60 * 60_000,
  maxBackoffMs: 24 * 60 * 60_000,
};

/** Codes whose cause is outside the package and the approval: judged again at the next run. */
export const RETRY_NEXT_RUN = new Set(["scanner_unavailable"]);

/** When a sidecar refused `attempts` times in a row, the last at `at`, is judged again. */
export function nextRetryAt(at: Date, attempts: number, code: string, policy: RefusalPolicy): string {
  if (RETRY_NEXT_RUN.has(code)) return at.toISOString();
  const wait = Math.min(policy.backoffMs * 2 ** Math.max(0, Math.min(attempts - 1, 30)), policy.maxBackoffMs);
  return new Date(at.getTime() + wait).toISOString();
}

/** Why a refused sidecar is judged again now, or null while it waits. */
export function dueReason(
  refusal: RefusalEntry,
  sidecarBlob: string,
  now: Date,
  signals: ReadonlyMap<number, string>,
): string | null {
  if (refusal.sidecarBlob !== sidecarBlob) return "the sidecar changed";
  if (Date.parse(refusal.retryAt) <= now.getTime()) return "its backoff ended";
  const signal = refusal.pullRequest === null ? undefined : signals.get(refusal.pullRequest);
  return signal ?? null;
}

/** The ledger's refusal after a new judgement refused the sidecar again (or for the first time). */
export function recordRefusal(
  previous: RefusalEntry | null,
  fields: Pick<
    RefusalEntry,
    "code" | "message" | "retryable" | "pullRequest" | "submitter" | "sidecarBlob" | "state"
  >,
  now: Date,
  policy: RefusalPolicy,
): RefusalEntry {
  const attempts = previous && previous.code === fields.code ? previous.attempts + 1 : 1;
  const at = now.toISOString();
  return {
    ...fields,
    firstRefusedAt: previous?.firstRefusedAt ?? at,
    refusedAt: at,
    attempts,
    retryAt: nextRetryAt(now, attempts, fields.code, policy),
  };
}

/** A refusal is worth a receipt on its pull request when it is new or its reason changed. */
export function refusalIsNews(previous: RefusalEntry | null, code: string): boolean {
  return previous === null || previous.code !== code;
}

const REVALIDATE = /^\s*\/svc\s+revalidate\b/i;

/**
 * The signals of the waiting refusals that have a pull request, from two listings for all of them
 * (never one read per refused sidecar): pull requests labelled `state:approved` that were refused in
 * another state, and `/svc revalidate` comments made after their refusal by their submitter or a
 * moderator login. A listing that fails gives no signal (the backoff still bounds the wait).
 */
export async function readRetrySignals(
  reader: GitHubApi,
  repo: RepoRef,
  waiting: readonly RefusalEntry[],
  moderators: readonly string[],
  now: Date,
  log: (line: string) => void = () => {},
): Promise<Map<number, string>> {
  const signals = new Map<number, string>();
  const byPull = new Map<number, RefusalEntry>();
  for (const r of waiting) if (r.pullRequest !== null) byPull.set(r.pullRequest, r);
  if (byPull.size === 0) return signals;
  try {
    const approved = await reader.paginate(reader.rest.issues.listForRepo, {
      ...repo,
      labels: "state:approved",
      state: "closed",
      per_page: 100,
    });
    for (const issue of approved) {
      const refusal = byPull.get(issue.number);
      if (issue.pull_request && refusal && refusal.state !== "approved")
        signals.set(issue.number, "its pull request was approved since");
    }
  } catch (error) {
    log(
      `listing approved pull requests failed (${(error as Error).message}); waiting refusals keep their backoff`,
    );
  }
  const since = waiting.map((r) => r.refusedAt).reduce((a, b) => (a < b ? a : b), now.toISOString());
  const allowed = new Set(moderators.map((m) => m.toLowerCase()));
  try {
    const { data: comments } = await reader.rest.issues.listCommentsForRepo({
      ...repo,
      since,
      sort: "created",
      direction: "desc",
      per_page: 100,
    });
    for (const c of comments) {
      const number = Number(/\/issues\/(\d+)$/.exec(c.issue_url)?.[1]);
      const refusal = byPull.get(number);
      const login = (c.user?.login ?? "").toLowerCase();
      if (!refusal || !REVALIDATE.test(c.body ?? "") || c.created_at <= refusal.refusedAt) continue;
      if (allowed.has(login) || login === (refusal.submitter ?? "").toLowerCase())
        signals.set(number, `${c.user?.login} asked for /svc revalidate`);
    }
  } catch (error) {
    log(`listing comments failed (${(error as Error).message}); waiting refusals keep their backoff`);
  }
  return signals;
}

/** The waiting refusals of the entries (a refusal whose sidecar changed or whose backoff ended is due anyway). */
export function waitingRefusals(
  entries: ReadonlyArray<{ ledger: LedgerEntry | null; sidecarBlob: string }>,
  now: Date,
): RefusalEntry[] {
  const out: RefusalEntry[] = [];
  for (const e of entries) {
    const refusal = e.ledger?.refusal;
    if (refusal && dueReason(refusal, e.sidecarBlob, now, new Map()) === null) out.push(refusal);
  }
  return out;
}
