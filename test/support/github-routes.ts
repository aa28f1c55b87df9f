/**
 * The answers of the fake GitHub over one repository's state (github-repository.ts): one function
 * per modelled route (`METHOD /template`), each reading and writing the state, so the next call sees
 * what the last one wrote. Bodies name what the state knows; the server completes the rest from
 * GitHub's examples.
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  contentFile,
  githubUser,
  issueComment,
  pullRequest,
  pullRequestFileEntry,
  releaseAssetOf,
  releaseOf,
  repositoryIssueComment,
  simplePullRequest,
} from "./github-fixtures.ts";
import type {
  AssetState,
  CommentState,
  GitHubRepository,
  PullRequestState,
  ReleaseState,
} from "./github-repository.ts";
import type { RecordedRequest, Reply, ReplyFunction } from "./github-server.ts";

export const NOT_FOUND: Reply = { status: 404, body: { message: "Not Found" } };

/** The answer of each modelled route, reading and writing `repo`'s state. */
export function repositoryRoutes(repo: GitHubRepository): Record<string, ReplyFunction> {
  const withPull =
    (answer: (pr: PullRequestState, req: RecordedRequest) => Reply) => (req: RecordedRequest) => {
      const pr = repo.pulls.get(Number(req.params.pull_number ?? req.params.issue_number));
      return pr ? answer(pr, req) : NOT_FOUND;
    };
  const withRelease =
    (answer: (release: ReleaseState, req: RecordedRequest) => Reply) => (req: RecordedRequest) => {
      const release = repo.releases.find((r) => r.id === Number(req.params.release_id));
      return release ? answer(release, req) : NOT_FOUND;
    };
  const releaseBody = (release: ReleaseState) =>
    releaseOf(repo.fullName, repo.github.url, repo.immutable, release);
  return {
    "GET /repos/{owner}/{repo}/installation": () => ({ body: { id: repo.installationId } }),
    "POST /app/installations/{installation_id}/access_tokens": (req) => {
      repo.tokenRequests.push(req.body);
      return {
        body: {
          token: repo.appToken,
          expires_at: "2099-01-01T00:00:00Z",
          permissions: (req.body as { permissions?: unknown } | undefined)?.permissions ?? {},
        },
      };
    },
    "GET /repos/{owner}/{repo}/commits": (req) => commits(repo, req),
    "GET /repos/{owner}/{repo}/commits/{commit_sha}/pulls": (req) => ({
      body: (repo.commitPulls.get(req.params.commit_sha!) ?? []).map((n) =>
        simplePullRequest(repo.fullName, repo.pulls.get(n)!),
      ),
    }),
    "GET /repos/{owner}/{repo}/pulls": (req) => {
      const state = req.query.get("state") ?? "open";
      const head = req.query.get("head");
      const pulls = [...repo.pulls.values()].filter(
        (pr) =>
          (state === "all" || pr.state === state) &&
          (!head || head === `${pr.headRepo.split("/")[0]}:${pr.headRef}`),
      );
      // Numbers stand for creation order; GitHub lists newest first unless asked otherwise.
      pulls.sort((a, b) =>
        req.query.get("direction") === "asc" ? a.number - b.number : b.number - a.number,
      );
      return { body: pulls.map((pr) => simplePullRequest(repo.fullName, pr)) };
    },
    "POST /repos/{owner}/{repo}/pulls": (req) => {
      const body = req.body as { title: string; head: string; base: string; body?: string };
      const ref = body.head.includes(":") ? body.head.split(":")[1]! : body.head;
      const branch = repo.branches.get(ref);
      if (!branch)
        return {
          status: 422,
          body: {
            message: "Validation Failed",
            errors: [{ resource: "PullRequest", field: "head", code: "invalid" }],
          },
        };
      const open = [...repo.pulls.values()].find(
        (pr) => pr.state === "open" && pr.headRef === ref && pr.headRepo === repo.fullName,
      );
      if (open)
        return {
          status: 422,
          body: {
            message: "Validation Failed",
            errors: [
              {
                resource: "PullRequest",
                code: "custom",
                message: `A pull request already exists for ${repo.fullName.split("/")[0]}:${ref}.`,
              },
            ],
          },
        };
      const number = Math.max(0, ...repo.pulls.keys()) + 1;
      const pr = repo.openPullRequest(number, Object.fromEntries(branch.files), repo.botLogin, {
        authorType: "Bot",
        body: body.body ?? "",
        headSha: branch.sha,
        headRef: ref,
        headRepo: repo.fullName,
      });
      return { status: 201, body: simplePullRequest(repo.fullName, pr) };
    },
    "GET /repos/{owner}/{repo}": () => ({
      body: {
        id: repo.repositoryId,
        name: repo.fullName.split("/")[1],
        full_name: repo.fullName,
        owner: githubUser(repo.fullName.split("/")[0], repo.ownerId),
        private: false,
        default_branch: "main",
      },
    }),
    "POST /repos/{owner}/{repo}/git/refs": (req) => {
      const { ref, sha } = req.body as { ref: string; sha: string };
      const name = ref.replace(/^refs\/heads\//, "");
      if (repo.branches.has(name) || name === "main")
        return { status: 422, body: { message: "Reference already exists" } };
      repo.branches.set(name, { sha, files: new Map() });
      return { status: 201, body: { ref, object: { sha, type: "commit" } } };
    },
    // GitHub's answer for a branch that is not there (never was, or already deleted) is 422.
    "DELETE /repos/{owner}/{repo}/git/refs/{ref}": (req) => {
      const name = decodeURIComponent(req.params.ref!).replace(/^heads\//, "");
      if (name === "main" || !repo.branches.has(name))
        return { status: 422, body: { message: "Reference does not exist" } };
      repo.branches.delete(name);
      repo.deletedBranches.push(name);
      return { status: 204 };
    },
    "PUT /repos/{owner}/{repo}/contents/{path}": (req) => {
      const path = req.params.path!;
      const body = req.body as { content: string; branch?: string; sha?: string };
      const branch = repo.branches.get(body.branch ?? "");
      if (!branch) return { status: 404, body: { message: "Branch not found" } };
      const existing = repo.contentAt(path, body.branch ?? null);
      if (existing && !body.sha)
        return { status: 422, body: { message: 'Invalid request.\n\n"sha" wasn\'t supplied.' } };
      const bytes = Buffer.from(body.content, "base64");
      branch.files.set(path, bytes);
      branch.sha = randomBytes(20).toString("hex");
      // A commit to the head branch of an open pull request is a push to it.
      for (const pr of repo.pulls.values())
        if (pr.state === "open" && pr.headRef === body.branch && pr.headRepo === repo.fullName) {
          pr.headSha = branch.sha;
          pr.files = [...branch.files].map(([filename, content]) => ({ filename, status: "added", content }));
        }
      return {
        status: existing ? 200 : 201,
        body: { content: contentFile(path, bytes), commit: { sha: branch.sha } },
      };
    },
    "GET /repos/{owner}/{repo}/actions/runs": () => {
      const runs = [...repo.workflowRuns].sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
      return {
        body: {
          total_count: runs.length,
          workflow_runs: runs.map((r) => ({
            id: r.id,
            status: r.status,
            conclusion: r.status === "completed" ? "success" : null,
            created_at: r.createdAt,
            updated_at: r.updatedAt,
            run_started_at: r.createdAt,
            event: "workflow_dispatch",
            actor: {
              ...githubUser((r.actor ?? r.triggeringActor).login, 7),
              type: (r.actor ?? r.triggeringActor).type,
            },
            triggering_actor: { ...githubUser(r.triggeringActor.login, 8), type: r.triggeringActor.type },
          })),
        },
      };
    },
    "GET /repos/{owner}/{repo}/pulls/{pull_number}": withPull((pr) => ({
      body: pullRequest(repo.fullName, pr),
    })),
    "GET /repos/{owner}/{repo}/pulls/{pull_number}/files": withPull((pr) => ({
      body: pr.files.map((f, i) => pullRequestFileEntry(repo.fullName, pr, f, i)),
    })),
    "GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews": withPull((pr) => ({
      body: pr.reviews.map((r) => ({ ...r, user: { ...r.user, id: 1 } })),
    })),
    "GET /repos/{owner}/{repo}/issues": (req) => {
      const labels = (req.query.get("labels") ?? "").split(",").filter(Boolean);
      const state = req.query.get("state") ?? "open";
      const open = [...repo.pulls.values()]
        .filter((pr) => (state === "all" || pr.state === state) && labels.every((l) => pr.labels.includes(l)))
        .sort((a, b) => a.number - b.number);
      return {
        body: open.map((pr) => ({
          number: pr.number,
          state: pr.state,
          pull_request: { url: `https://api.github.com/repos/${repo.fullName}/pulls/${pr.number}` },
          labels: pr.labels.map((name) => ({ name })),
        })),
      };
    },
    "GET /repos/{owner}/{repo}/issues/{issue_number}/comments": withPull((pr) => ({
      body: pr.comments.map(issueComment),
    })),
    "GET /repos/{owner}/{repo}/issues/comments": (req) => {
      // GitHub filters by the time a comment was last updated; the order is by creation (or update).
      const since = req.query.get("since");
      const key = req.query.get("sort") === "updated" ? "updatedAt" : "createdAt";
      const all = [...repo.pulls.values()].flatMap((pr) => pr.comments.map((comment) => ({ pr, comment })));
      const listed = all
        .filter(({ comment }) => !since || (comment.updatedAt ?? "") >= since)
        .sort((a, b) => ((a.comment[key] ?? "") < (b.comment[key] ?? "") ? -1 : 1));
      if (req.query.get("direction") === "desc") listed.reverse();
      const perPage = Number(req.query.get("per_page") ?? 30);
      return {
        body: listed
          .slice(0, perPage)
          .map(({ pr, comment }) =>
            repositoryIssueComment(comment, { repo: repo.fullName, number: pr.number }),
          ),
      };
    },
    "POST /repos/{owner}/{repo}/issues/{issue_number}/comments": withPull((pr, req) => {
      const at = new Date().toISOString();
      const comment: CommentState = {
        createdAt: at,
        updatedAt: at,
        id: repo.newId(),
        body: (req.body as { body: string }).body,
        user: { login: repo.botLogin, type: "Bot" },
      };
      pr.comments.push(comment);
      return { status: 201, body: issueComment(comment) };
    }),
    "PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}": (req) => {
      const comment = repo.comment(Number(req.params.comment_id));
      if (!comment) return NOT_FOUND;
      comment.body = (req.body as { body: string }).body;
      comment.updatedAt = new Date().toISOString();
      return { body: issueComment(comment) };
    },
    "DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}": (req) => {
      for (const pr of repo.pulls.values())
        pr.comments = pr.comments.filter((c) => c.id !== Number(req.params.comment_id));
      return { status: 204 };
    },
    "POST /repos/{owner}/{repo}/issues/{issue_number}/labels": withPull((pr, req) => {
      for (const name of (req.body as { labels: string[] }).labels)
        if (!pr.labels.includes(name)) pr.labels.push(name);
      return { body: pr.labels.map((name) => ({ name })) };
    }),
    "DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}": withPull((pr, req) => {
      pr.labels = pr.labels.filter((l) => l !== req.params.name);
      return { body: pr.labels.map((name) => ({ name })) };
    }),
    "POST /repos/{owner}/{repo}/check-runs": (req) => {
      const run = {
        id: repo.checkRuns.length + 1,
        ...(req.body as Record<string, unknown>),
        appId: repo.appId,
      };
      repo.checkRuns.push(run);
      return { status: 201, body: { id: run.id } };
    },
    "GET /repos/{owner}/{repo}/contents/{path}": (req) => contents(repo, req),
    "GET /repos/{owner}/{repo}/actions/runs/{run_id}/artifacts": (req) => {
      const artifacts = repo.artifacts.filter((a) => a.runId === Number(req.params.run_id));
      return {
        body: {
          total_count: artifacts.length,
          artifacts: artifacts.map((a) => ({
            id: a.id,
            name: a.name,
            size_in_bytes: a.bytes.length,
            expired: false,
          })),
        },
      };
    },
    "GET /repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}": (req) => {
      const artifact = repo.artifacts.find((a) => a.id === Number(req.params.artifact_id));
      if (!artifact) return NOT_FOUND;
      const location = repo.github.serveRaw(`/blob/artifacts/${artifact.id}.zip`, (_req, res) => {
        res
          .writeHead(200, {
            "content-type": "application/zip",
            "content-length": String(artifact.bytes.length),
          })
          .end(artifact.bytes);
      });
      return { status: 302, headers: { location } };
    },
    "GET /repos/{owner}/{repo}/releases": () => ({
      body: [...repo.releases].reverse().map((r) => releaseBody(r)),
    }),
    "GET /repos/{owner}/{repo}/releases/tags/{tag}": (req) => {
      const release = repo.published(req.params.tag!);
      return release ? { body: releaseBody(release) } : NOT_FOUND;
    },
    "GET /repos/{owner}/{repo}/git/ref/{ref}": (req) => {
      const ref = req.params.ref!;
      if (ref.startsWith("heads/")) {
        const name = ref.slice("heads/".length);
        const sha =
          name === "main" ? (repo.remote?.head() ?? repo.defaultBranchSha) : repo.branches.get(name)?.sha;
        return sha ? { body: { ref: `refs/${ref}`, object: { sha, type: "commit" } } } : NOT_FOUND;
      }
      const tag = ref.replace(/^tags\//, "");
      if (!ref.startsWith("tags/") || !(repo.tags.has(tag) || repo.burnedTags.has(tag))) return NOT_FOUND;
      return { body: { ref: `refs/tags/${tag}` } };
    },
    "POST /repos/{owner}/{repo}/releases": (req) => {
      const body = req.body as { tag_name: string; draft?: boolean };
      if (!body.draft && (repo.tags.has(body.tag_name) || repo.burnedTags.has(body.tag_name)))
        return {
          status: 422,
          body: { message: "Validation Failed", errors: [{ code: "already_exists" }] },
        };
      const release: ReleaseState = {
        id: repo.newId(),
        tag: body.tag_name,
        draft: body.draft ?? false,
        assets: [],
      };
      if (!release.draft) repo.tags.add(release.tag);
      repo.releases.push(release);
      return { status: 201, body: releaseBody(release) };
    },
    "POST /repos/{owner}/{repo}/releases/{release_id}/assets": withRelease((release, req) => {
      if (!release.draft && repo.immutable)
        return { status: 422, body: { message: "Cannot upload assets to an immutable release." } };
      const asset: AssetState = {
        id: repo.newId(),
        name: req.query.get("name")!,
        bytes: Buffer.from(req.bytes),
      };
      release.assets.push(asset);
      repo.onUpload?.(release);
      return { status: 201, body: releaseAssetOf(repo.fullName, repo.github.url, release, asset) };
    }),
    "GET /repos/{owner}/{repo}/releases/assets/{asset_id}": (req) => {
      const asset = repo.releases.flatMap((r) => r.assets).find((a) => a.id === Number(req.params.asset_id));
      if (!asset) return NOT_FOUND;
      const location = repo.github.serveRaw(`/blob/${asset.id}`, (_req, res) => {
        res.writeHead(200, { "content-type": "application/octet-stream" }).end(asset.bytes);
      });
      return { status: 302, headers: { location } };
    },
    "PATCH /repos/{owner}/{repo}/releases/{release_id}": withRelease((release, req) => {
      if ((req.body as { draft?: boolean }).draft === false && release.draft) {
        release.draft = false;
        repo.tags.add(release.tag);
        repo.onPublish?.(release);
      }
      return { body: releaseBody(release) };
    }),
    "DELETE /repos/{owner}/{repo}/releases/{release_id}": withRelease((release) => {
      repo.releases.splice(repo.releases.indexOf(release), 1);
      if (!release.draft && repo.immutable) repo.burnedTags.add(release.tag);
      return { status: 204 };
    }),
    "GET /repos/{owner}/{repo}/deployments": () => ({
      body: repo.deployments.slice(0, 1).map((d) => ({ id: d.id, sha: d.sha, environment: "github-pages" })),
    }),
    "GET /repos/{owner}/{repo}/deployments/{deployment_id}/statuses": (req) => {
      const d = repo.deployments.find((x) => x.id === Number(req.params.deployment_id));
      return { body: d ? [{ state: d.state }] : [] };
    },
  };
}

function contents(repo: GitHubRepository, req: RecordedRequest): Reply {
  const path = req.params.path!;
  const bytes = repo.contentAt(path, req.query.get("ref"));
  if (!bytes) return NOT_FOUND;
  return { body: contentFile(path, bytes) };
}

/** The default branch's commits (touching `path`), from the git remote's log. */
function commits(repo: GitHubRepository, req: RecordedRequest): Reply {
  if (!repo.remote) return NOT_FOUND;
  const args = ["log", "--format=%H", `refs/heads/${req.query.get("sha") ?? "HEAD"}`];
  const path = req.query.get("path");
  if (path) args.push("--", path);
  let shas: string[];
  try {
    shas = execFileSync("git", args, { cwd: repo.remote.bare }).toString().trim().split("\n").filter(Boolean);
  } catch {
    return NOT_FOUND;
  }
  return {
    body: shas.map((sha) => ({
      sha,
      url: `https://api.github.com/repos/${repo.fullName}/commits/${sha}`,
      html_url: `https://github.com/${repo.fullName}/commit/${sha}`,
    })),
  };
}
