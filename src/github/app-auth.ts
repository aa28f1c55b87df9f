/**
 * The GitHub App's installation on the portal repository, for the API server (uploads opening pull
 * requests, decisions written to them). @octokit/auth-app signs the app's JWT and exchanges it for
 * installation tokens, refreshing them before they expire.
 */
import { createAppAuth } from "@octokit/auth-app";
import { Octokit } from "@octokit/rest";
import type { GitHubSettings } from "../config/settings.ts";
import { type GitHubApi, splitRepository } from "./api.ts";

export interface AppInstallation {
  api: () => Promise<GitHubApi>;
  botLogins: () => Promise<string[]>;
}

export function appInstallation(settings: GitHubSettings): AppInstallation {
  const appClient = new Octokit({
    authStrategy: createAppAuth,
    auth: { appId: settings.appId, privateKey: settings.privateKey },
    baseUrl: settings.apiUrl,
  });
  let installation: Promise<GitHubApi> | null = null;
  let logins: Promise<string[]> | null =
    settings.botLogins.length > 0 ? Promise.resolve(settings.botLogins) : null;
  return {
    api: () => {
      installation ??= (async () => {
        const { data } = await appClient.rest.apps.getRepoInstallation({
          ...splitRepository(settings.repository),
        });
        return new Octokit({
          authStrategy: createAppAuth,
          auth: { appId: settings.appId, privateKey: settings.privateKey, installationId: data.id },
          baseUrl: settings.apiUrl,
        });
      })();
      // Not cached when it failed: an app installed later is found by the next request.
      installation.catch(() => {
        installation = null;
      });
      return installation;
    },
    botLogins: () => {
      logins ??= appClient.rest.apps.getAuthenticated().then(({ data }) => [`${data?.slug ?? "svc"}[bot]`]);
      logins.catch(() => {
        logins = null;
      });
      return logins;
    },
  };
}
