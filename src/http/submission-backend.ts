import { defaultRandomBytes } from "../accounts/secrets.ts";
import { SvcError } from "../errors.ts";
import type { SubmissionBackend } from "../submissions/backend.ts";
import { LocalSubmissionBackend } from "../submissions/local-backend.ts";
import { type AppContext, storeOf } from "./context.ts";

/** The deployment's submission backend, or not_implemented when it serves no submissions. */
export function submissionsOf(app: AppContext): SubmissionBackend {
  if (!app.submissions)
    throw new SvcError(
      "not_implemented",
      "submissions are not served by this deployment: on Vercel they need GitHub-backed submissions (SVC_PORTAL_REPOSITORY with the GitHub App's id and key)",
    );
  return app.submissions;
}

const databaseReaders = new WeakMap<AppContext, SubmissionBackend>();

/**
 * The backend for the read routes (upload_status, list_uploads, moderation_queue). A deployment
 * without one (Vercel with no GitHub App) still answers them from the database, as it always did;
 * only the routes that change a submission are not_implemented there.
 */
export function submissionReadsOf(app: AppContext): SubmissionBackend {
  if (app.submissions) return app.submissions;
  let reader = databaseReaders.get(app);
  if (!reader) {
    reader = new LocalSubmissionBackend({
      store: storeOf(app),
      config: app.config,
      now: app.now,
      random: defaultRandomBytes,
      storageRoot: app.settings.dataDir,
      publisher: null,
      kickWorker: () => {},
      acceptsPackageBytes: false,
      log: app.log,
    });
    databaseReaders.set(app, reader);
  }
  return reader;
}
