/**
 * The token the publish and sync jobs push the catalog commit with: an installation token of the
 * portal's GitHub App, minted in the job from the app id and private key, narrowed to the portal
 * repository and `contents: write`. The app is the default branch's bypass actor, so this token can
 * update a protected branch where the workflow's GITHUB_TOKEN is refused (GH006); it also creates the
 * releases of the artifact store. It expires after an hour, longer than any publication.
 */
import { createAppAuth } from "@octokit/auth-app";
import { Octokit } from "@octokit/rest";
import { SvcError } from "../errors.ts";
import { type RepoRef, splitRepository } from "./api.ts";

export class InstallationTokenError extends SvcError<"app_config_invalid" | "app_not_installed"> {
  override name = "InstallationTokenError";
}

export interface InstallationTokenRequest {
  appId: string;
  privateKey: string;
  /** owner/name of the portal repository: the only repository the token may touch. */
  repository: string;
  /** GitHub's REST API root (GITHUB_API_URL on a runner). */
  apiUrl?: string;
  /** What the token may do; default CATALOG_TOKEN_PERMISSIONS. */
  permissions?: Record<string, "read" | "write">;
}

export interface InstallationToken {
  token: string;
  expiresAt: string;
  repo: RepoRef;
}

/** What the token may do: write contents (the catalog commit, releases) and nothing else. */
export const CATALOG_TOKEN_PERMISSIONS = { contents: "write" } as const;

/**
 * The receipts job's token: the receipt, the state label and the status comment are written as the
 * app, because the bot takes an edit of its status comment by any other login (github-actions[bot]
 * included) for a forgery and restores it.
 */
export const RECEIPT_TOKEN_PERMISSIONS = { issues: "write", pull_requests: "write" } as const;

export async function mintInstallationToken(request: InstallationTokenRequest): Promise<InstallationToken> {
  if (!/^[1-9][0-9]*$/.test(request.appId.trim()))
    throw new InstallationTokenError(
      "app_config_invalid",
      "app-id must be the GitHub App's numeric id (vars.SVC_APP_ID)",
    );
  if (!request.privateKey.includes("PRIVATE KEY"))
    throw new InstallationTokenError(
      "app_config_invalid",
      "app-private-key must be the GitHub App's PEM private key (secrets.SVC_APP_PRIVATE_KEY)",
    );
  const repo = splitRepository(request.repository);
  // Secrets pasted into the UI sometimes arrive with literal \n instead of newlines.
  const privateKey = request.privateKey.includes("\\n")
    ? request.privateKey.replace(/\\n/g, "\n")
    : request.privateKey;
  const app = new Octokit({
    authStrategy: createAppAuth,
    auth: { appId: request.appId.trim(), privateKey },
    ...(request.apiUrl ? { baseUrl: request.apiUrl } : {}),
  });
  let installationId: number;
  try {
    ({
      data: { id: installationId },
    } = await app.rest.apps.getRepoInstallation({ owner: repo.owner, repo: repo.repo }));
  } catch (error) {
    if ((error as { status?: number }).status === 404)
      throw new InstallationTokenError(
        "app_not_installed",
        `the GitHub App ${request.appId} is not installed on ${request.repository}`,
      );
    throw error;
  }
  const minted = (await app.auth({
    type: "installation",
    installationId,
    repositoryNames: [repo.repo],
    permissions: request.permissions ?? CATALOG_TOKEN_PERMISSIONS,
    refresh: true,
  })) as { token: string; expiresAt: string };
  return { token: minted.token, expiresAt: minted.expiresAt, repo };
}
