import type { Migration } from "../store.ts";

/**
 * GitHub-backed submissions: the pull request an upload opened on the portal repository, its head
 * commit, and the revision whose validation result was last reported to it (a failed report is
 * retried the next time the submission is read).
 */
export const GITHUB_SUBMISSIONS_MIGRATION: Migration = {
  version: 3,
  name: "submissions_github_pull_requests",
  sql: `
ALTER TABLE submissions ADD COLUMN github_pull_request integer;
ALTER TABLE submissions ADD COLUMN github_pull_request_url text;
ALTER TABLE submissions ADD COLUMN github_reported_revision integer;
CREATE UNIQUE INDEX submissions_github_pull_request ON submissions (github_pull_request)
  WHERE github_pull_request IS NOT NULL;
`,
};
