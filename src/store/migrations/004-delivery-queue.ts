import type { Migration } from "../store.ts";

export const DELIVERY_QUEUE_MIGRATION: Migration = {
  version: 4,
  name: "github_delivery_queue",
  sql: `
CREATE TABLE github_deliveries (
  id text PRIMARY KEY,
  app text NOT NULL CONSTRAINT github_deliveries_app_known CHECK (app IN ('portal', 'intake')),
  event text NOT NULL,
  payload jsonb NOT NULL,
  serial_key text NOT NULL,
  state text NOT NULL CONSTRAINT github_deliveries_state_known CHECK (state IN ('queued', 'running', 'done', 'failed')),
  attempts integer NOT NULL DEFAULT 0,
  not_before timestamptz NOT NULL,
  lease_owner text,
  lease_expires_at timestamptz,
  last_error text,
  result text,
  received_at timestamptz NOT NULL,
  finished_at timestamptz
);
CREATE INDEX github_deliveries_ready ON github_deliveries (state, not_before);
CREATE INDEX github_deliveries_key ON github_deliveries (serial_key, received_at);

-- One row per key while a delivery of that key runs: the per-pull-request (per-release) lock.
CREATE TABLE github_delivery_keys (
  serial_key text PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);
`,
};
