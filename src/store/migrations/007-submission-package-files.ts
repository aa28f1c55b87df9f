import type { Migration } from "../store.ts";

export const SUBMISSION_PACKAGE_FILES_MIGRATION: Migration = {
  // What the validation run read from a submission's package: every file entry with its size,
  // sha256 and detected signature, kept with the checks (a partial list for a package that failed),
  // so a moderator reviews the file list and the release diff without the package being read again.
  // NULL until a run finishes, and again once a new revision replaces the package.
  version: 7,
  name: "submission_package_files",
  sql: `
ALTER TABLE submissions ADD COLUMN package_files jsonb;
`,
};
