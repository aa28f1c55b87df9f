import type { Migration } from "../store.ts";

/**
 * The sha256 of each webhook body as received. The delivery id is a header the signature does not
 * cover: a captured delivery resent under a new id would otherwise run again. A body already
 * recorded (per app) is a duplicate whatever its id; GitHub's own redeliveries keep their id.
 */
export const DELIVERY_PAYLOAD_HASH_MIGRATION: Migration = {
  version: 9,
  name: "github_delivery_payload_hash",
  sql: `
ALTER TABLE github_deliveries ADD COLUMN payload_sha256 text;
CREATE UNIQUE INDEX github_deliveries_payload ON github_deliveries (app, payload_sha256)
  WHERE payload_sha256 IS NOT NULL;
`,
};
