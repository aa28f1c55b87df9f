import type { Migration } from "../store.ts";

/**
 * Submissions, their moderation decisions and the mod-validation queue. Appended after the
 * accounts migration; never edited once applied.
 */
export const SUBMISSIONS_MIGRATION: Migration = {
  version: 2,
  name: "submissions_decisions_validation_queue",
  sql: `
CREATE TABLE submissions (
  id text PRIMARY KEY,
  owner_account_id text NOT NULL REFERENCES accounts(id),
  mod_id text NOT NULL,
  version text NOT NULL,
  state text NOT NULL,
  revision integer NOT NULL DEFAULT 1,
  package_file_name text NOT NULL,
  package_size_bytes bigint NOT NULL,
  package_content_type text NOT NULL,
  package_sha256 text NOT NULL,
  metadata_sha256 text NOT NULL,
  metadata jsonb NOT NULL,
  staging_path text,
  validation_checks jsonb NOT NULL,
  detail_page jsonb,
  publication jsonb,
  state_before_hidden text,
  pending_since timestamptz,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  CONSTRAINT submissions_state_known CHECK (state IN ('draft','uploaded','validating','validation_failed','cancelled',
    'pending_review','changes_requested','approved','published','rejected','hidden','superseded'))
);
CREATE INDEX submissions_state ON submissions (state, pending_since);
CREATE INDEX submissions_owner ON submissions (owner_account_id, created_at);
-- One open submission per mod version: a second upload of the same version waits for the first to end.
CREATE UNIQUE INDEX submissions_open_version ON submissions (mod_id, version)
  WHERE state NOT IN ('cancelled', 'rejected', 'validation_failed');

CREATE TABLE submission_decisions (
  id text PRIMARY KEY,
  submission_id text NOT NULL REFERENCES submissions(id),
  decision text NOT NULL,
  reviewer_account_id text NOT NULL REFERENCES accounts(id),
  notes text NOT NULL,
  from_state text NOT NULL,
  to_state text NOT NULL,
  decided_at timestamptz NOT NULL,
  waited_seconds integer
);
CREATE INDEX submission_decisions_submission ON submission_decisions (submission_id, decided_at);
CREATE INDEX submission_decisions_decided ON submission_decisions (decided_at);

-- The mod-validation queue. A row is claimed by setting locked_until; a worker that dies leaves a
-- lock that expires, so the job is picked up again and no submission stays in validating.
CREATE TABLE validation_jobs (
  submission_id text PRIMARY KEY REFERENCES submissions(id),
  queue text NOT NULL DEFAULT 'mod-validation',
  revision integer NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  run_after timestamptz NOT NULL,
  locked_until timestamptz,
  last_error text,
  created_at timestamptz NOT NULL
);
CREATE INDEX validation_jobs_due ON validation_jobs (queue, run_after);
`,
};
