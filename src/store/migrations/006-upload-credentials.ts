import type { Migration } from "../store.ts";

export const UPLOAD_CREDENTIALS_MIGRATION: Migration = {
  // Trusted publishing: one row per exchanged GitHub Actions OIDC token. The credential is stored
  // as its SHA-256 only. token_jti is unique, so a token is exchanged once (as PyPI refuses a
  // replayed one); a row is kept until both the credential and the token it came from have expired.
  version: 6,
  name: "upload_credentials",
  sql: `
CREATE TABLE upload_credentials (
id text PRIMARY KEY,
credential_hash text NOT NULL UNIQUE,
mod_id text NOT NULL,
owner_account_id text NOT NULL REFERENCES accounts(id),
token_jti text NOT NULL UNIQUE,
token_expires_at timestamptz NOT NULL,
actor text NOT NULL,
repository text NOT NULL,
repository_id bigint NOT NULL,
workflow text NOT NULL,
environment text,
ref text NOT NULL,
created_at timestamptz NOT NULL,
expires_at timestamptz NOT NULL,
used_at timestamptz,
submission_id text
);
CREATE INDEX upload_credentials_expiry ON upload_credentials (expires_at);
`,
};
