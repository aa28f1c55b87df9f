import type { RandomBytes } from "../accounts/secrets.ts";
import { deriveStatusKey } from "../bot/status-seal.ts";
import { filesystemArtifactStore } from "../catalog/artifact-store.ts";
import type { PublisherOptions } from "../catalog/publisher.ts";
import { runnerValidator } from "../catalog/validator.ts";
import type { PortalConfig } from "../config/portal-config.ts";
import type { RuntimeSettings } from "../config/settings.ts";
import type { SiteSigning } from "../distribution/tuf-repository.ts";
import { appInstallation } from "../github/app-auth.ts";
import type { Store } from "../store/store.ts";
import type { SubmissionBackend } from "../submissions/backend.ts";
import { type LocalBackendOptions, LocalSubmissionBackend } from "../submissions/local-backend.ts";
import { recoverSubmissionsAtStart, type StartupRecovery } from "../submissions/recovery.ts";
import { scannerFromSettings } from "../submissions/scanner-settings.ts";
import { startValidationWorker } from "../submissions/worker.ts";
import { GitHubSubmissionBackend } from "./github-backend.ts";
import { createGitHubLink, type GitHubLink, reportOnce } from "./github-submissions.ts";

export interface SubmissionsSetup {
  config: PortalConfig;
  settings: RuntimeSettings;
  store: Store;
  root: string;
  recordsDir: string;
  siteDir: string;
  now: () => Date;
  random: RandomBytes;
  log: (line: string) => void;
  /** Online signing keys: every publication, hide and unhide signs the site (see PublisherOptions.signing). */
  signing?: SiteSigning | null;
  /**
   * A serving worker of `svc serve --workers N`: start-up recovery and the validation worker run once,
   * in the primary; this process only serves, and an upload's kick is handed to the primary here.
   */
  serveOnly?: { kickWorker: () => void };
}

const NOTHING_RECOVERED: StartupRecovery = {
  partialFiles: 0,
  orphanedPackages: 0,
  resumedValidations: 0,
  completedPublications: [],
  reconciledVisibility: [],
};

/** The GitHub link the settings ask for (GitHub-backed submissions), or null. */
export function githubLinkFromSettings(
  settings: RuntimeSettings,
  log: (line: string) => void,
): GitHubLink | null {
  if (!settings.github) return null;
  const installation = appInstallation(settings.github);
  return createGitHubLink({
    repository: settings.github.repository,
    api: installation.api,
    botLogins: installation.botLogins,
    statusKey: deriveStatusKey(settings.github.privateKey),
    log,
  });
}

/** The submissions of a Vercel function (GitHub-backed, takes no package bytes, publishes nothing), or null without a GitHub App. */
export function createFunctionSubmissions(setup: {
  config: PortalConfig;
  settings: RuntimeSettings;
  /** The ownership records the function carries (records/owners, vercel.json includeFiles). */
  recordsDir?: string;
  store: Store;
  now: () => Date;
  random: RandomBytes;
  log: (line: string) => void;
}): SubmissionBackend | null {
  const github = githubLinkFromSettings(setup.settings, setup.log);
  if (!github) return null;
  return new GitHubSubmissionBackend(
    {
      store: setup.store,
      config: setup.config,
      now: setup.now,
      random: setup.random,
      storageRoot: setup.settings.dataDir,
      publisher: null,
      ...(setup.recordsDir ? { recordsDir: setup.recordsDir } : {}),
      kickWorker: () => {},
      acceptsPackageBytes: false,
      log: setup.log,
    },
    github,
  );
}

/** The upload pipeline of one process: private storage, the publisher over the filesystem store, the worker. */
export function createSubmissionsRuntime(setup: SubmissionsSetup) {
  const github = githubLinkFromSettings(setup.settings, setup.log);
  const scanner = scannerFromSettings(setup.settings, setup.config.limits.maxPackageBytes);
  const publisher: PublisherOptions = {
    root: setup.root,
    recordsDir: setup.recordsDir,
    siteDir: setup.siteDir,
    config: setup.config,
    store: filesystemArtifactStore({
      root: setup.root,
      siteDir: setup.siteDir,
      baseUrl: setup.config.baseUrl,
    }),
    validate: runnerValidator({ siteDir: setup.siteDir, scanner: scanner.create(), clock: setup.now }),
    now: setup.now,
    signing: setup.signing ?? null,
  };
  // What a crash of the previous process left (orphaned uploads, held leases, stranded publications)
  // is put right before the worker claims anything. PGlite holds its data folder exclusively.
  const ready = setup.serveOnly
    ? Promise.resolve(NOTHING_RECOVERED)
    : recoverSubmissionsAtStart({
        store: setup.store,
        config: setup.config,
        now: setup.now,
        random: setup.random,
        storageRoot: setup.settings.dataDir,
        exclusive: setup.store.kind === "pglite",
        publisher,
        log: setup.log,
      });
  const worker = setup.serveOnly
    ? { kick: setup.serveOnly.kickWorker, stop: async () => {} }
    : startValidationWorker(
        {
          store: setup.store,
          config: setup.config,
          now: setup.now,
          random: setup.random,
          siteDir: setup.siteDir,
          storageRoot: setup.settings.dataDir,
          scanner: scanner.create,
          log: setup.log,
          ...(github
            ? {
                onCompleted: async (id: string) => {
                  await reportOnce(setup, github, id);
                },
              }
            : {}),
        },
        { startAfter: ready.catch(() => null) },
      );
  const local: LocalBackendOptions = {
    store: setup.store,
    config: setup.config,
    now: setup.now,
    random: setup.random,
    storageRoot: setup.settings.dataDir,
    publisher,
    kickWorker: worker.kick,
    acceptsPackageBytes: true,
    log: setup.log,
  };
  const backend: SubmissionBackend = github
    ? new GitHubSubmissionBackend(local, github)
    : new LocalSubmissionBackend(local);
  return {
    ready,
    scannerDescription: scanner.describe,
    githubDescription: github
      ? `pull requests on ${github.repository} (uploads open a submission PR through the app)`
      : "off: submissions live in the database (set SVC_PORTAL_REPOSITORY and the app's id and key for GitHub-backed submissions)",
    worker,
    publisher,
    backend,
  };
}
