/**
 * A loopback git remote over smart HTTP, served by git itself (`git http-backend`, the CGI git ships)
 * over a bare repository: a fake of github.com's git endpoint, named as one, that enforces what
 * GitHub enforces on a push to a protected default branch.
 *
 * - Credentials are the ones git sends to GitHub: Basic auth, user `x-access-token`, password a token.
 *   Each token is a principal: the workflow's GITHUB_TOKEN (read or write contents) or the GitHub
 *   App's installation token, which the branch protection lists as a bypass actor.
 * - A push without contents: write is refused with 403 (`Permission to ... denied`).
 * - A push that updates the protected branch by anyone but a bypass actor is refused from a
 *   pre-receive hook with GitHub's message (`GH006: Protected branch update failed for refs/heads/main.`).
 * - A non-fast-forward update is refused (receive.denyNonFastForwards; force pushes too).
 *
 * The bare repository is also reachable directly (commitAs) so a test can move the branch under a
 * running job, as a second merge does.
 */
import { execFile, execFileSync, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";

export interface GitPrincipal {
  login: string;
  /** contents: write */
  write: boolean;
  /** A bypass actor of the protected branch (the GitHub App). */
  bypass: boolean;
}

export interface AcceptedPush {
  login: string;
  ref: string;
  before: string;
  after: string;
}

export interface GitRemote {
  /** The clone URL, http://127.0.0.1:port/owner/repo.git */
  url: string;
  bare: string;
  /** Every update the remote accepted, in order (from a post-receive hook). */
  accepted(): AcceptedPush[];
  /** Every refusal git sent back, with who asked. */
  refused: Array<{ login: string; status: number; message: string }>;
  /** The commit the branch points at. */
  head(branch?: string): string;
  /** The file as committed on the branch, or null. */
  show(path: string, branch?: string): Buffer | null;
  /** Every path in the branch's tree. */
  files(branch?: string): string[];
  /** Commits on the branch directly (as a merge made on GitHub would), returning the new head. */
  commitAs(
    login: string,
    message: string,
    files: Record<string, string | Buffer | null>,
    branch?: string,
  ): string;
  /** Makes the next receive-pack request fail with this HTTP status (an outage). */
  failNextPush(status: number): void;
  stop(): Promise<void>;
}

const git = (cwd: string, args: string[], env: Record<string, string> = {}) =>
  execFileSync("git", args, {
    cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });

const IDENTITY = (login: string) => ({
  GIT_AUTHOR_NAME: login,
  GIT_AUTHOR_EMAIL: `${login}@users.noreply.github.com`,
  GIT_COMMITTER_NAME: login,
  GIT_COMMITTER_EMAIL: `${login}@users.noreply.github.com`,
});

const PRE_RECEIVE = (branch: string) => `#!/bin/sh
while read old new ref; do
  if [ "$ref" = "refs/heads/${branch}" ] && [ "$SVC_BYPASS" != "1" ]; then
    echo "error: GH006: Protected branch update failed for refs/heads/${branch}." >&2
    echo "error: Changes must be made through a pull request." >&2
    exit 1
  fi
done
exit 0
`;

const POST_RECEIVE = `#!/bin/sh
while read old new ref; do
  echo "$SVC_PUSHER $ref $old $new" >> "$GIT_DIR/svc-accepted.log"
done
`;

/**
 * Starts the remote with `tree` (path -> content) as the first commit of `branch`. `tokens` maps
 * each token to its principal.
 */
export async function startGitRemote(options: {
  repository: string;
  tree: string;
  tokens: Record<string, GitPrincipal>;
  branch?: string;
}): Promise<GitRemote> {
  const branch = options.branch ?? "main";
  const root = mkdtempSync(join(tmpdir(), "svc-git-remote-"));
  const bare = join(root, `${options.repository}.git`);
  mkdirSync(dirname(bare), { recursive: true });
  git(root, ["init", "-q", "--bare", `--initial-branch=${branch}`, bare]);
  git(bare, ["config", "receive.denyNonFastForwards", "true"]);
  git(bare, ["config", "http.receivepack", "true"]);
  for (const [name, text] of [
    ["pre-receive", PRE_RECEIVE(branch)],
    ["post-receive", POST_RECEIVE],
  ] as const) {
    writeFileSync(join(bare, "hooks", name), text);
    chmodSync(join(bare, "hooks", name), 0o755);
  }
  // The first commit, made from the given tree.
  const seed = join(root, "seed");
  execFileSync("cp", ["-a", options.tree, seed]);
  git(seed, ["init", "-q", `--initial-branch=${branch}`]);
  git(seed, ["add", "--all"]);
  git(seed, ["commit", "-q", "-m", "Portal"], IDENTITY("octocat"));
  git(seed, ["push", "-q", bare, `HEAD:refs/heads/${branch}`], { SVC_BYPASS: "1", SVC_PUSHER: "octocat" });
  rmSync(seed, { recursive: true, force: true });
  rmSync(join(bare, "svc-accepted.log"), { force: true });

  const refused: GitRemote["refused"] = [];
  let failNext: number | null = null;

  const principalOf = (req: IncomingMessage): GitPrincipal | null | undefined => {
    const header = req.headers.authorization;
    if (!header) return undefined;
    const m = /^basic\s+(.+)$/i.exec(header);
    if (!m) return null;
    const [, token] = Buffer.from(m[1]!, "base64").toString("utf8").split(":");
    return options.tokens[token ?? ""] ?? null;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "http://git.invalid");
    const receive =
      url.searchParams.get("service") === "git-receive-pack" || url.pathname.endsWith("/git-receive-pack");
    const principal = principalOf(req);
    const deny = (status: number, message: string, login = principal?.login ?? "anonymous") => {
      refused.push({ login, status, message });
      res.writeHead(status, {
        "content-type": "text/plain",
        ...(status === 401 ? { "www-authenticate": 'Basic realm="GitHub"' } : {}),
      });
      res.end(`${message}\n`);
    };
    if (principal === null) return deny(401, "Invalid username or token.");
    if (receive) {
      if (!principal) return deny(401, "Authentication required to push.");
      if (!principal.write)
        return deny(403, `Permission to ${options.repository}.git denied to ${principal.login}.`);
      if (failNext !== null && url.pathname.endsWith("/git-receive-pack")) {
        const status = failNext;
        failNext = null;
        return deny(status, "GitHub is unavailable (injected)");
      }
    }
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? "",
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: "1",
      PATH_INFO: url.pathname,
      QUERY_STRING: url.search.slice(1),
      REQUEST_METHOD: req.method ?? "GET",
      CONTENT_TYPE: req.headers["content-type"] ?? "",
      REMOTE_ADDR: "127.0.0.1",
      REMOTE_USER: principal?.login ?? "",
      SVC_PUSHER: principal?.login ?? "anonymous",
      SVC_BYPASS: principal?.bypass ? "1" : "0",
    };
    if (req.headers["content-encoding"]) env.HTTP_CONTENT_ENCODING = String(req.headers["content-encoding"]);
    if (req.headers["git-protocol"]) env.GIT_PROTOCOL = String(req.headers["git-protocol"]);
    const cgi = spawn("git", ["http-backend"], { env });
    req.pipe(cgi.stdin);
    const chunks: Buffer[] = [];
    cgi.stdout.on("data", (d: Buffer) => chunks.push(d));
    await new Promise<void>((resolve) => cgi.on("close", () => resolve()));
    const out = Buffer.concat(chunks);
    const split = out.indexOf("\r\n\r\n");
    const headerText = out.subarray(0, split < 0 ? 0 : split).toString("latin1");
    const body = split < 0 ? out : out.subarray(split + 4);
    let status = 200;
    const headers: Record<string, string> = {};
    for (const line of headerText.split("\r\n").filter(Boolean)) {
      const at = line.indexOf(":");
      const name = line.slice(0, at).trim();
      const value = line.slice(at + 1).trim();
      if (name.toLowerCase() === "status") status = Number.parseInt(value, 10);
      else headers[name] = value;
    }
    res.writeHead(status, headers);
    res.end(body);
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/${options.repository}.git`,
    bare,
    refused,
    accepted: () => {
      const log = join(bare, "svc-accepted.log");
      if (!existsSync(log)) return [];
      return readFileSync(log, "utf8")
        .trim()
        .split("\n")
        .filter(Boolean)
        .map((line) => {
          const [login, ref, before, after] = line.split(" ");
          return { login: login!, ref: ref!, before: before!, after: after! };
        });
    },
    head: (b = branch) =>
      git(bare, ["rev-parse", `refs/heads/${b}`])
        .toString()
        .trim(),
    show: (path, b = branch) => {
      try {
        return git(bare, ["show", `refs/heads/${b}:${path}`]);
      } catch {
        return null;
      }
    },
    files: (b = branch) =>
      git(bare, ["ls-tree", "-r", "--name-only", `refs/heads/${b}`])
        .toString()
        .trim()
        .split("\n")
        .filter(Boolean),
    commitAs(login, message, files, b = branch) {
      const work = mkdtempSync(join(tmpdir(), "svc-git-merge-"));
      try {
        git(work, ["clone", "-q", "--branch", b, bare, "."]);
        for (const [path, content] of Object.entries(files)) {
          const full = join(work, path);
          if (content === null) rmSync(full, { force: true });
          else {
            mkdirSync(dirname(full), { recursive: true });
            writeFileSync(full, content);
          }
        }
        git(work, ["add", "--all"]);
        git(work, ["commit", "-q", "-m", message], IDENTITY(login));
        git(work, ["push", "-q", "origin", `HEAD:refs/heads/${b}`], { SVC_BYPASS: "1", SVC_PUSHER: login });
        return git(work, ["rev-parse", "HEAD"]).toString().trim();
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    },
    failNextPush(status) {
      failNext = status;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          rmSync(root, { recursive: true, force: true });
          resolve();
        });
      }),
  };
}

/**
 * A workspace as actions/checkout leaves it: `git init`, origin set to the remote, a shallow fetch
 * (fetch-depth 1) of the branch with the workflow token, the branch checked out, and (unless
 * persist-credentials is false) the token persisted as http.<origin>/.extraheader in the local config.
 */
export async function checkoutLikeActions(
  remote: GitRemote,
  options: { token: string; persistCredentials?: boolean; branch?: string },
): Promise<string> {
  const branch = options.branch ?? "main";
  const dir = mkdtempSync(join(tmpdir(), "svc-workspace-"));
  const origin = new URL(remote.url);
  const key = `http.${origin.protocol}//${origin.host}/.extraheader`;
  const header = `AUTHORIZATION: basic ${Buffer.from(`x-access-token:${options.token}`).toString("base64")}`;
  // Asynchronous: the remote is served by this very process.
  const run = (args: string[]) =>
    promisify(execFile)("git", args, { cwd: dir, env: { ...process.env, GIT_TERMINAL_PROMPT: "0" } });
  await run(["init", "-q"]);
  await run(["remote", "add", "origin", remote.url]);
  await run([
    "-c",
    `${key}=${header}`,
    "fetch",
    "-q",
    "--no-tags",
    "--depth=1",
    "origin",
    `+refs/heads/${branch}:refs/remotes/origin/${branch}`,
  ]);
  await run(["checkout", "-q", "-B", branch, `refs/remotes/origin/${branch}`]);
  if (options.persistCredentials ?? true) await run(["config", "--local", key, header]);
  return dir;
}
