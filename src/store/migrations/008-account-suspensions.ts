import type { Migration } from "../store.ts";

export const ACCOUNT_SUSPENSIONS_MIGRATION: Migration = {
  // A moderator's suspension of an account's uploads, with its reason; an admin lifts it (lifted_*),
  // and the row stays as history. At most one suspension of an account is in force at a time.
  version: 8,
  name: "account_suspensions",
  sql: `
CREATE TABLE account_suspensions (
id text PRIMARY KEY,
account_id text NOT NULL REFERENCES accounts(id),
reason text NOT NULL,
suspended_by text NOT NULL REFERENCES accounts(id),
suspended_at timestamptz NOT NULL,
submission_id text,
lifted_by text REFERENCES accounts(id),
lifted_at timestamptz,
lift_reason text
);
CREATE UNIQUE INDEX account_suspensions_in_force ON account_suspensions (account_id) WHERE lifted_at IS NULL;
CREATE INDEX account_suspensions_account ON account_suspensions (account_id, suspended_at);
`,
};
