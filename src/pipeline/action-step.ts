/**
 * What every action step sees and returns. The adapter (actions/run-step.ts) reads the runner's
 * context and inputs into a StepEnv and renders the step's outcome (outputs, job summary,
 * annotations, failure); the steps themselves never import the Actions toolkit or read the
 * environment.
 */
import { deriveStatusKey, type StatusKey } from "../bot/status-seal.ts";
import { SvcError } from "../errors.ts";
import type { RepoRef } from "../github/api.ts";
import { InstallationTokenError, mintInstallationToken } from "../github/installation-token.ts";
import { octokitFor, type PortalOctokit } from "../github/octokit.ts";

export interface ActionContext {
  eventName: string;
  payload: Record<string, unknown>;
  /** GITHUB_REF and GITHUB_SHA. */
  ref: string;
  sha: string;
  /** The repository the workflow runs in (read only when a step needs it: it throws when unset). */
  readonly repo: RepoRef;
  /** GITHUB_API_URL and GITHUB_SERVER_URL. */
  apiUrl: string;
  serverUrl: string;
  /** GITHUB_WORKSPACE: the checkout. */
  workspace: string;
  /** Where https://github.com downloads are fetched from, when the operator mirrors them. */
  downloadBase?: string;
}

export interface ActionIo {
  /** An input's value, "" when unset. */
  input: (name: string) => string;
  info: (line: string) => void;
  debug: (line: string) => void;
  warning: (line: string) => void;
  /** Masks a value in every later log line. */
  setSecret: (value: string) => void;
  /** The job's GitHub Actions OIDC token for an audience (needs `permissions: id-token: write`). */
  idToken: (audience: string) => Promise<string>;
}

export interface ActionOutcome {
  outputs: Record<string, string>;
  /** The job summary (Markdown or HTML), or null for none. */
  summary: string | null;
  warnings: string[];
  notices: string[];
  /** When set, the step fails with this message (after its outputs and summary are written). */
  failure: string | null;
}

/** One step's view of its run: the context, its inputs, its log and the clients it may build. */
export class StepEnv {
  constructor(
    readonly context: ActionContext,
    readonly io: ActionIo,
  ) {}

  input(name: string): string {
    return this.io.input(name);
  }

  required(name: string): string {
    const value = this.io.input(name);
    if (!value) throw new Error(`Input required and not supplied: ${name}`);
    return value;
  }

  /**
   * The bot logins a step trusts (input `bot-logins`, comma separated: the repository variable
   * SVC_BOT_LOGINS). There is no default: github-actions[bot] would be every workflow's token with
   * `issues: write`, so an unset variable is a configuration error, not a guess.
   */
  botLogins(): string[] {
    const logins = this.io
      .input("bot-logins")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    if (logins.length === 0)
      throw new SvcError(
        "config_invalid",
        "SVC_BOT_LOGINS is not set (input bot-logins): set the repository variable SVC_BOT_LOGINS to the portal app's `<app-slug>[bot]`, the only login whose status comments count",
      );
    return logins;
  }

  /** The key the app's records are sealed with, from the app's private key (input app-private-key). */
  statusKey(): StatusKey {
    const pem = this.required("app-private-key");
    try {
      return deriveStatusKey(pem);
    } catch {
      throw new InstallationTokenError(
        "app_config_invalid",
        "app-private-key must be the GitHub App's PEM private key (secrets.SVC_APP_PRIVATE_KEY)",
      );
    }
  }

  /** The job's OIDC token for `audience`, masked in every later log line. */
  async idToken(audience: string): Promise<string> {
    const token = await this.io.idToken(audience);
    this.io.setSecret(token);
    return token;
  }

  /** owner/name of the repository the workflow runs in. */
  get repository(): string {
    return `${this.context.repo.owner}/${this.context.repo.repo}`;
  }

  /**
   * The GitHub App's installation token for this repository (inputs app-id and app-private-key),
   * masked in every later log line.
   */
  async mintAppToken(permissions?: Record<string, "read" | "write">): Promise<string> {
    const minted = await mintInstallationToken({
      appId: this.required("app-id"),
      privateKey: this.required("app-private-key"),
      repository: this.repository,
      apiUrl: this.context.apiUrl,
      ...(permissions ? { permissions } : {}),
    });
    this.io.setSecret(minted.token);
    return minted.token;
  }

  /** The REST client for a token, with the runner's API URL and log. */
  octokit(token: string | null): PortalOctokit {
    return octokitFor(token, {
      baseUrl: this.context.apiUrl,
      log: { debug: this.io.debug, warn: this.io.warning },
    });
  }
}

export type ActionStep = (env: StepEnv) => Promise<ActionOutcome>;

export function outcome(partial: Partial<ActionOutcome>): ActionOutcome {
  return { outputs: {}, summary: null, warnings: [], notices: [], failure: null, ...partial };
}
