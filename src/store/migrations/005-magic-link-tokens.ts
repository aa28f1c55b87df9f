import type { Migration } from "../store.ts";

export const MAGIC_LINK_TOKENS_MIGRATION: Migration = {
  // request_magic_link writes one token row for every address, known or not, so a verified, an
  // unverified and an unknown address cost the same insert (SECURITY.md, enumeration by timing).
  // The row of an address that cannot sign in is born expired; an unknown one has no account, and
  // without the foreign key no insert pays a lookup the others skip. Redemption still requires a
  // live, verified account (confirmMagicLink reads it), so a dangling id signs nothing in.
  version: 5,
  name: "magic_link_tokens_for_every_address",
  sql: `
ALTER TABLE magic_link_tokens DROP CONSTRAINT magic_link_tokens_account_id_fkey;
ALTER TABLE magic_link_tokens ALTER COLUMN account_id DROP NOT NULL;
`,
};
