/**
 * Stable codes of the signed-distribution chain. They are a manager's (and an operator's) outcomes,
 * not HTTP outcomes, so they live beside the client rather than in the portal's HTTP error table.
 */
export const DISTRIBUTION_CODES = {
  /** Metadata or a signed document whose bytes or signatures do not verify. */
  catalog_tampered: "the signed metadata or a signed document does not verify",
  /** A version number lower than one the client already trusts. */
  catalog_rollback: "the mirror offers older signed metadata than the client already trusts",
  /** Timestamp, snapshot, targets or root past its expiry: a frozen or stale mirror. */
  metadata_expired: "signed metadata has expired",
  /** Artifact bytes differ from the signed length or sha256 (swapped, truncated or overlong). */
  artifact_mismatch: "a download differs from its signed length or sha256",
  /** An archive entry name that would land outside the mod's install folder, or a link entry. */
  path_escape: "an archive entry would be written outside the install folder",
  /** A package whose files differ from the per-file sizes and sha256 its signed versions.json lists. */
  file_hash_mismatch: "the package's files differ from the signed per-file hashes",
  /** An archive the safe reader refuses to inflate (structure, caps, CRC). */
  archive_invalid: "the package archive is not safe to extract",
  /** A target the signed metadata does not list. */
  target_unknown: "the signed metadata does not list this file",
  /** A mod, version or dependency range with no satisfying release. */
  dependency_unresolved: "no published version satisfies a requirement",
  /** The mirror could not be reached or answered with an HTTP error. */
  download_failed: "a download failed",
  /** An installed file that differs from its manifest entry (verify reports it; repair rewrites it). */
  install_damaged: "installed files differ from the install manifest",
  /** No install manifest in the folder. */
  install_missing: "nothing is installed in this folder",
  tuf_key_invalid: "a TUF key file is malformed or inconsistent",
  tuf_key_mismatch: "the keys do not match the roles of the current root",
  tuf_keys_in_repository: "refusing to write private keys inside a git repository",
  tuf_not_initialized: "the site has no root metadata yet",
} as const;

export type DistributionCode = keyof typeof DISTRIBUTION_CODES;

export class DistributionError extends Error {
  readonly code: DistributionCode;
  readonly details: unknown;
  constructor(code: DistributionCode, message: string, details?: unknown) {
    super(message);
    this.name = "DistributionError";
    this.code = code;
    this.details = details;
  }
}

export function isDistributionError(error: unknown): error is DistributionError {
  return error instanceof DistributionError;
}
