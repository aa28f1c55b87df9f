/**
 * The one path by which a workflow writes the default branch (publish and sync): stage records/ only
 * (site/ is a build output deployed to Pages, never committed), delete the published sidecars the
 * caller names (submissions/ keeps the pending ones only), refuse anything else and any package
 * bytes, commit, and push with the GitHub App's installation token (the branch protection's bypass
 * actor). A push that lost a race (the branch moved since checkout: another merge, a sync) is
 * retried: fetch the new head, rebase onto it, prove the tree is still consistent, push again. A
 * rebase that conflicts (both sides rewrote the same record) is not merged by hand: the change is
 * dropped, the checkout reset to the new head and the change made again from there (publication and
 * sync are idempotent reconciliations). The git CLI does the work, as on a runner; nothing here
 * reads the environment.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type ErrorCode, SvcError } from "../errors.ts";
import { checkSite } from "../catalog/site-check.ts";
import { projectPaths } from "../catalog/site.ts";
import { loadPortalConfig } from "../contracts/portal-config.ts";

export type CatalogPushCode = Extract<
  ErrorCode,
  | "zip_staged"
  | "unexpected_staged_path"
  | "site_staged"
  | "push_protected"
  | "push_failed"
  | "push_retries_exhausted"
  | "git_failed"
  | "catalog_inconsistent"
>;

export class CatalogPushError extends SvcError<CatalogPushCode> {
  override name = "CatalogPushError";
}

/** What a catalog commit may add or change: the records, never the site or package bytes. */
export const CATALOG_PATHS = ["records"] as const;

/** The build output: deployed to Pages from the workflow's workspace, never committed. */
export const SITE_PATH = "site";

/**
 * Why a staged path may not be committed, or null when it may. `retired`: the published sidecars
 * the commit deletes; a deletion of one of them is the only change allowed outside records/.
 */
export function refusedCatalogPath(
  path: string,
  retired: ReadonlySet<string> = new Set(),
  deleted = false,
): CatalogPushCode | null {
  if (deleted && retired.has(path)) return null;
  // git refuses files over 100 MiB and Pages caps a site at 1 GB: packages live in the artifact store.
  if (path.toLowerCase().endsWith(".zip") || path.startsWith(`${SITE_PATH}/downloads/`)) return "zip_staged";
  if (path.startsWith(`${SITE_PATH}/`)) return "site_staged";
  if (!CATALOG_PATHS.some((root) => path.startsWith(`${root}/`))) return "unexpected_staged_path";
  return null;
}

export interface CatalogPushOptions {
  /** The checkout (actions/checkout's workspace). */
  cwd: string;
  /** The branch to update, e.g. main. */
  branch: string;
  /** The app's installation token: the only credential any remote git command here uses. */
  token: string;
  /** Read when the commit is made (after a redo the change, and so its message, may differ). */
  message: () => string;
  author?: { name: string; email: string };
  remote?: string;
  /** Proves the tree is consistent before a commit is pushed (svc check); throw to refuse. */
  verify?: () => Promise<void>;
  /** Makes the change again on a checkout reset to the new head (after a conflicting rebase). */
  redo: () => Promise<void>;
  /**
   * The sidecars (paths under submissions/) whose version now has a release record: the commit
   * deletes them. Asked after each change (a redo may publish more, or fewer).
   */
  retire?: () => string[];
  /**
   * Brings site/ (the build output the verify step checks) in line with the checkout's records
   * after a rebase onto, or a reset to, the new head: the other side's records are not in it.
   */
  materialize?: () => Promise<void>;
  /** Push attempts before push_retries_exhausted (default 5). */
  maxAttempts?: number;
  log?: (line: string) => void;
}

export interface CatalogPushResult {
  /** The commit now at the head of the branch, null when there was nothing to commit. */
  commit: string | null;
  attempts: number;
  rebased: number;
  redone: number;
}

interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

function git(cwd: string, args: string[], env: Record<string, string> = {}): Promise<GitResult> {
  return new Promise((resolve) => {
    execFile(
      "git",
      args,
      {
        cwd,
        env: { ...process.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C", ...env },
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
  });
}

async function gitOk(cwd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  const result = await git(cwd, args, env);
  if (result.code !== 0)
    throw new CatalogPushError(
      "git_failed",
      `git ${args[0]} failed: ${tail(result.stderr || result.stdout)}`,
    );
  return result.stdout;
}

function tail(text: string, lines = 8): string {
  return text.trim().split("\n").slice(-lines).join("\n");
}

/**
 * Git config through the environment (command-line level, read last) rather than argv, so the token
 * is not in the process list. The header is set for the remote's origin URL: actions/checkout
 * persists the workflow token as http.<origin>/.extraheader, and a plain http.extraheader would lose
 * to that more specific key; an empty value first clears whatever was persisted.
 */
async function authEnv(cwd: string, remote: string, token: string): Promise<Record<string, string>> {
  const url = new URL((await gitOk(cwd, ["remote", "get-url", remote])).trim());
  const key = `http.${url.protocol}//${url.host}/.extraheader`;
  const basic = Buffer.from(`x-access-token:${token}`).toString("base64");
  return {
    GIT_CONFIG_COUNT: "2",
    GIT_CONFIG_KEY_0: key,
    GIT_CONFIG_VALUE_0: "",
    GIT_CONFIG_KEY_1: key,
    GIT_CONFIG_VALUE_1: `AUTHORIZATION: basic ${basic}`,
  };
}

/**
 * Stages records/ and the deletion of each `retired` sidecar, and returns the staged paths; refuses
 * (and unstages) anything else, and a checkout that still tracks site/ (a portal from before site/
 * became a build output: docs/github.md says how to move it out of git).
 */
export async function stageCatalog(cwd: string, retired: readonly string[] = []): Promise<string[]> {
  // Committed at the checkout's head: every publication would leave it modified (and a rebase stuck).
  const committed = (await gitOk(cwd, ["ls-tree", "--name-only", "HEAD", "--", SITE_PATH])).trim();
  if (committed !== "")
    throw new CatalogPushError(
      "site_staged",
      `${SITE_PATH}/ is committed on this branch: it is a build output deployed to Pages, never committed; run git rm -r --cached ${SITE_PATH}, add /${SITE_PATH}/ to .gitignore and commit that (docs/github.md, section 2)`,
    );
  const roots = CATALOG_PATHS.filter((p) => existsSync(join(cwd, p)));
  if (roots.length > 0) await gitOk(cwd, ["add", "--all", "--", ...roots]);
  const retiring = new Set(retired);
  // Only a sidecar the branch holds is deleted; the same path staged as new is refused below.
  const held =
    retiring.size === 0
      ? []
      : (await gitOk(cwd, ["ls-tree", "-r", "-z", "--name-only", "HEAD", "--", ...literal(retiring)]))
          .split("\0")
          .filter(Boolean);
  if (held.length > 0) await gitOk(cwd, ["rm", "-q", "-f", "--ignore-unmatch", "--", ...literal(held)]);
  const status = (await gitOk(cwd, ["diff", "--cached", "--name-status", "--no-renames", "-z"]))
    .split("\0")
    .filter(Boolean);
  const staged: Array<{ path: string; deleted: boolean }> = [];
  for (let i = 0; i + 1 < status.length; i += 2)
    staged.push({ path: status[i + 1]!, deleted: status[i] === "D" });
  const refused = staged
    .map(({ path, deleted }) => ({ path, code: refusedCatalogPath(path, retiring, deleted) }))
    .filter((r) => r.code !== null);
  if (refused.length > 0) {
    await gitOk(cwd, ["reset", "-q"]);
    const zip = refused.find((r) => r.code === "zip_staged");
    const site = refused.find((r) => r.code === "site_staged");
    throw zip
      ? new CatalogPushError(
          "zip_staged",
          `refusing to commit package bytes to git (${zip.path}${refused.length > 1 ? ` and ${refused.length - 1} more` : ""}): packages live in the artifact store (GitHub Releases), records/ holds JSON only`,
        )
      : site
        ? new CatalogPushError(
            "site_staged",
            `refusing to commit ${site.path}: ${SITE_PATH}/ is a build output deployed to Pages, never committed`,
          )
        : new CatalogPushError(
            "unexpected_staged_path",
            `refusing to commit ${refused[0]!.path}: a catalog commit holds records/ and the deletion of published sidecars only`,
          );
  }
  return staged.map((s) => s.path);
}

/** Pathspecs that match exactly these paths (no glob magic in a file name). */
function literal(paths: Iterable<string>): string[] {
  return [...paths].map((p) => `:(literal)${p}`);
}

type PushOutcome =
  | { ok: true }
  | { ok: false; behind: true }
  | { ok: false; behind: false; error: CatalogPushError };

async function push(
  cwd: string,
  remote: string,
  branch: string,
  env: Record<string, string>,
): Promise<PushOutcome> {
  const result = await git(cwd, ["push", "--porcelain", remote, `HEAD:refs/heads/${branch}`], env);
  if (result.code === 0) return { ok: true };
  const text = `${result.stdout}\n${result.stderr}`;
  // GitHub's branch protection and rulesets answer from a pre-receive hook: GH006 / GH013.
  if (/GH006|GH013|protected branch|repository rule violations/i.test(text)) {
    const said = text
      .split("\n")
      .find((l) => /GH006|GH013/.test(l))
      ?.replace(/^remote:\s*/, "");
    return {
      ok: false,
      behind: false,
      error: new CatalogPushError(
        "push_protected",
        `${branch} refused the push: ${said ?? tail(text, 3)}. The GitHub App must be a bypass actor of ${branch}'s branch protection or ruleset (docs/github.md, section 1)`,
      ),
    };
  }
  if (/\[rejected\].*\((fetch first|non-fast-forward|stale info)\)/.test(text))
    return { ok: false, behind: true };
  return {
    ok: false,
    behind: false,
    error: new CatalogPushError("push_failed", `git push to ${branch} failed: ${tail(text)}`),
  };
}

/**
 * Commits and pushes the catalog; see the module comment. Returns the pushed commit, or null when
 * records/ had no change and no sidecar was retired (after a redo, too: another run may have
 * published it already).
 */
export async function pushCatalogCommit(options: CatalogPushOptions): Promise<CatalogPushResult> {
  const { cwd, branch } = options;
  const remote = options.remote ?? "origin";
  const log = options.log ?? (() => {});
  const maxAttempts = options.maxAttempts ?? 5;
  const author = options.author ?? {
    name: "svc-portal[bot]",
    email: "svc-portal[bot]@users.noreply.github.com",
  };
  const identity = {
    GIT_AUTHOR_NAME: author.name,
    GIT_AUTHOR_EMAIL: author.email,
    GIT_COMMITTER_NAME: author.name,
    GIT_COMMITTER_EMAIL: author.email,
  };
  const auth = await authEnv(cwd, remote, options.token);
  const result: CatalogPushResult = { commit: null, attempts: 0, rebased: 0, redone: 0 };

  const resetTo = async (ref: string) => {
    await gitOk(cwd, ["reset", "-q", "--hard", ref]);
    await gitOk(cwd, ["clean", "-fdq", "--", ...CATALOG_PATHS]);
  };
  const commitChange = async (): Promise<boolean> => {
    const staged = await stageCatalog(cwd, options.retire?.() ?? []);
    if (staged.length === 0) return false;
    await options.verify?.();
    await gitOk(cwd, ["commit", "--no-verify", "-q", "-m", options.message()], identity);
    return true;
  };

  if (!(await commitChange())) return result;
  for (;;) {
    result.attempts++;
    const outcome = await push(cwd, remote, branch, auth);
    if (outcome.ok) {
      result.commit = (await gitOk(cwd, ["rev-parse", "HEAD"])).trim();
      log(`pushed ${result.commit} to ${branch} (attempt ${result.attempts})`);
      return result;
    }
    if (!outcome.behind) throw outcome.error;
    if (result.attempts >= maxAttempts)
      throw new CatalogPushError(
        "push_retries_exhausted",
        `${branch} kept moving: ${result.attempts} pushes were rejected as non-fast-forward; the next run reconciles`,
      );
    log(`${branch} moved since checkout: fetching the new head`);
    await gitOk(cwd, ["fetch", "--no-tags", "-q", remote, `refs/heads/${branch}`], auth);
    const rebase = await git(cwd, ["rebase", "-q", "FETCH_HEAD"], identity);
    let consistent = rebase.code === 0;
    if (consistent) {
      try {
        await options.materialize?.();
        await options.verify?.();
      } catch (error) {
        log(`the rebased catalog is not consistent (${(error as Error).message}): redoing`);
        consistent = false;
      }
    } else {
      log(`the rebase onto the new head conflicts: redoing the change from the new head`);
      await git(cwd, ["rebase", "--abort"]);
    }
    if (consistent) {
      result.rebased++;
      continue;
    }
    await resetTo("FETCH_HEAD");
    result.redone++;
    await options.materialize?.();
    await options.redo();
    if (!(await commitChange())) {
      log(`nothing left to commit on the new head`);
      return result;
    }
  }
}

/**
 * `svc check` over a checkout (drift between records/ and the site the workflow built from them,
 * contract rules 1-6), run before every catalog commit the workflows push, so records that do not
 * build into a consistent site are never pushed. Throws with svc check's own report.
 */
export async function verifyCatalog(root: string): Promise<void> {
  const paths = projectPaths(root);
  const { problems } = await checkSite(paths, loadPortalConfig(paths.configPath));
  if (problems.length > 0) {
    throw new CatalogPushError(
      "catalog_inconsistent",
      `svc check: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}`).join("\n")}`,
    );
  }
}
