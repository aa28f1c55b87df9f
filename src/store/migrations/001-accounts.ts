import type { Migration } from "../store.ts";

export const ACCOUNTS_MIGRATION: Migration = {
  version: 1,
  name: "accounts_sessions_api_keys_rate_limits_audit",
  sql: `
CREATE TABLE accounts (
id text PRIMARY KEY,
email text NOT NULL,
email_normalized text NOT NULL UNIQUE,
display_name text NOT NULL,
roles text[] NOT NULL,
created_at timestamptz NOT NULL,
verified_at timestamptz,
updated_at timestamptz NOT NULL,
CONSTRAINT accounts_roles_known CHECK (roles <@ ARRAY['player','modder','moderator','admin']::text[])
);

CREATE TABLE verification_tokens (
token_hash text PRIMARY KEY,
account_id text NOT NULL REFERENCES accounts(id),
created_at timestamptz NOT NULL,
expires_at timestamptz NOT NULL,
consumed_at timestamptz
);
CREATE INDEX verification_tokens_account ON verification_tokens (account_id);

CREATE TABLE magic_link_tokens (
token_hash text PRIMARY KEY,
account_id text NOT NULL REFERENCES accounts(id),
created_at timestamptz NOT NULL,
expires_at timestamptz NOT NULL,
consumed_at timestamptz
);
CREATE INDEX magic_link_tokens_account ON magic_link_tokens (account_id);

CREATE TABLE sessions (
id_hash text PRIMARY KEY,
account_id text NOT NULL REFERENCES accounts(id),
created_at timestamptz NOT NULL,
expires_at timestamptz NOT NULL,
ended_at timestamptz
);
CREATE INDEX sessions_account ON sessions (account_id);

CREATE TABLE api_keys (
id text PRIMARY KEY,
account_id text NOT NULL REFERENCES accounts(id),
name text NOT NULL,
display_prefix text NOT NULL,
key_hash text NOT NULL UNIQUE,
created_at timestamptz NOT NULL,
last_used_at timestamptz,
revoked_at timestamptz
);
CREATE INDEX api_keys_account ON api_keys (account_id, created_at);

CREATE TABLE rate_limit_buckets (
bucket text NOT NULL,
subject text NOT NULL,
window_start timestamptz NOT NULL,
hits integer NOT NULL,
expires_at timestamptz NOT NULL,
PRIMARY KEY (bucket, subject, window_start)
);
CREATE INDEX rate_limit_buckets_expiry ON rate_limit_buckets (expires_at);

CREATE TABLE audit_events (
seq bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
id text PRIMARY KEY,
actor_account_id text,
action text NOT NULL CONSTRAINT audit_action_snake_case CHECK (action ~ '^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)+$'),
target_type text NOT NULL,
target_id text NOT NULL,
created_at timestamptz NOT NULL,
metadata jsonb NOT NULL
);
CREATE INDEX audit_events_action ON audit_events (action, seq);
CREATE INDEX audit_events_actor ON audit_events (actor_account_id, seq);
CREATE INDEX audit_events_target ON audit_events (target_type, target_id, seq);

-- Append-only in the database itself, not only by convention in the code.
CREATE FUNCTION svc_audit_events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
RAISE EXCEPTION 'audit_events is append-only: % is not allowed', TG_OP;
END
$$;
CREATE TRIGGER audit_events_no_update_delete BEFORE UPDATE OR DELETE ON audit_events
FOR EACH ROW EXECUTE FUNCTION svc_audit_events_append_only();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
FOR EACH STATEMENT EXECUTE FUNCTION svc_audit_events_append_only();

-- Named rows to lock with SELECT ... FOR UPDATE when a check spans many rows (last admin).
CREATE TABLE store_locks (name text PRIMARY KEY);
INSERT INTO store_locks (name) VALUES ('account_roles');
`,
};
