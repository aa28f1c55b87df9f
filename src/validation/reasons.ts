/**
 * Every reason code a check can report, with the check that owns it, what it means and how to fix
 * it. docs/validation.md lists the same codes; a test keeps the two in step.
 */
export interface ReasonInfo {
  check: string;
  meaning: string;
  fix: string;
}

export const REASONS = {
  // sidecar_schema
  sidecar_missing: {
    check: "sidecar_schema",
    meaning: "No sidecar release metadata was supplied.",
    fix: "Pass the release metadata JSON (schema svc.mod-release-submission.v1) with --metadata.",
  },
  sidecar_invalid_json: {
    check: "sidecar_schema",
    meaning: "The sidecar is not valid JSON (or has duplicate keys, invalid UTF-8, or is nested too deep).",
    fix: "Save the sidecar as UTF-8 JSON without duplicate keys.",
  },
  sidecar_schema_mismatch: {
    check: "sidecar_schema",
    meaning:
      "The sidecar does not match svc.mod-release-submission.v1 (unknown fields, wrong types, bad ids).",
    fix: "Fix each field named in the log; remove fields the schema does not define.",
  },
  // manifest_schema
  manifest_missing: {
    check: "manifest_schema",
    meaning: "The package has no svc-mod.json manifest at the archive root.",
    fix: "Add svc-mod.json at the root of the ZIP (not inside a folder).",
  },
  manifest_invalid_json: {
    check: "manifest_schema",
    meaning: "svc-mod.json is not valid UTF-8 JSON, has duplicate keys, or is too large or too deep.",
    fix: "Save svc-mod.json as UTF-8 JSON without duplicate keys.",
  },
  manifest_schema_mismatch: {
    check: "manifest_schema",
    meaning: "svc-mod.json does not match the mod manifest schema.",
    fix: "Fix each field named in the log; remove fields the schema does not define.",
  },
  // manifest_identity
  identity_mismatch: {
    check: "manifest_identity",
    meaning: "id, name, version or targetGameBuild differ between the sidecar and svc-mod.json.",
    fix: "Make the sidecar and svc-mod.json carry identical id, name, version and targetGameBuild.",
  },
  // semantic_version
  version_not_semver: {
    check: "semantic_version",
    meaning: "The version is not a semantic version (MAJOR.MINOR.PATCH[-pre][+build]).",
    fix: "Use a semantic version such as 1.2.0.",
  },
  version_exists: {
    check: "semantic_version",
    meaning: "The catalog already has this version of this mod; published versions are immutable.",
    fix: "Bump the version (for example the patch number) and rebuild the package.",
  },
  artifact_url_exists: {
    check: "semantic_version",
    meaning: "The artifact URL is already used by a published release; artifacts are never replaced.",
    fix: "Publish the new version under a new, unused URL.",
  },
  // target_game_build
  game_build_unsupported: {
    check: "target_game_build",
    meaning: "targetGameBuild is not one of the supportedGameBuilds of the game-build matrix.",
    fix: "Build against, and declare, one of the supported game builds listed in the log.",
  },
  game_builds_unavailable: {
    check: "*",
    meaning: "The game-build compatibility matrix could not be read, so the build cannot be checked.",
    fix: "Point --site at a portal site with api/v1/game-builds/latest.json.",
  },
  // dependency_contract
  dependency_mismatch: {
    check: "dependency_contract",
    meaning: "The sidecar and svc-mod.json declare different dependencies.",
    fix: "Declare the same dependencies (id and version range) in both files.",
  },
  dependency_unknown_mod: {
    check: "dependency_contract",
    meaning: "A dependency names a mod that is not in the catalog.",
    fix: "Depend only on mods published in the catalog, or publish the dependency first.",
  },
  dependency_invalid_range: {
    check: "dependency_contract",
    meaning: "A dependency version range is not a valid semver range.",
    fix: "Use a semver range such as ^1.2.0 or >=1.0.0 <2.0.0.",
  },
  dependency_unsatisfiable: {
    check: "dependency_contract",
    meaning: "No published version of the dependency satisfies the declared range.",
    fix: "Widen the range or publish a matching version of the dependency first.",
  },
  dependency_self: {
    check: "dependency_contract",
    meaning: "The mod depends on itself.",
    fix: "Remove the self-dependency.",
  },
  dependency_cycle: {
    check: "dependency_contract",
    meaning: "The dependencies form a cycle through published mods.",
    fix: "Break the cycle; a mod must not (indirectly) depend on itself.",
  },
  dependency_duplicate: {
    check: "dependency_contract",
    meaning: "The same dependency id is declared more than once.",
    fix: "Declare each dependency once.",
  },
  catalog_unavailable: {
    check: "*",
    meaning: "The catalog could not be read, so catalog-aware checks cannot run.",
    fix: "Point --site at a portal site with api/v1/catalog.json.",
  },
  // zip_path_safety
  path_traversal: {
    check: "zip_path_safety",
    meaning: "An entry name has a '..' segment and would escape the install folder.",
    fix: "Rebuild the ZIP from the mod folder so every name is relative and inside it.",
  },
  absolute_path: {
    check: "zip_path_safety",
    meaning:
      "An entry name is absolute (starts with '/', a drive letter such as C:, or a UNC \\\\server prefix).",
    fix: "Rebuild the ZIP with relative names.",
  },
  backslash_in_name: {
    check: "zip_path_safety",
    meaning: "An entry name contains a backslash; ZIP names must use '/'.",
    fix: "Rebuild the ZIP with a tool that writes '/' separators.",
  },
  control_character_in_name: {
    check: "zip_path_safety",
    meaning: "An entry name contains NUL or another control character.",
    fix: "Rename the file to printable characters.",
  },
  bidi_character_in_name: {
    check: "zip_path_safety",
    meaning: "An entry name contains a bidirectional-override or invisible formatting character.",
    fix: "Rename the file; such characters disguise the real extension.",
  },
  colon_in_name: {
    check: "zip_path_safety",
    meaning: "An entry name contains ':' (NTFS alternate data stream or drive syntax).",
    fix: "Rename the file without ':'.",
  },
  forbidden_character_in_name: {
    check: "zip_path_safety",
    meaning: 'An entry name contains a character Windows cannot store (< > " | ? *).',
    fix: "Rename the file without those characters.",
  },
  trailing_dot_or_space: {
    check: "zip_path_safety",
    meaning: "A name segment ends with a dot or a space, which Windows silently strips.",
    fix: "Rename the file or folder.",
  },
  reserved_device_name: {
    check: "zip_path_safety",
    meaning:
      "A name segment is a Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9), with or without extension.",
    fix: "Rename the file or folder.",
  },
  empty_path_segment: {
    check: "zip_path_safety",
    meaning: "An entry name is empty or has an empty segment ('a//b').",
    fix: "Rebuild the ZIP from the mod folder.",
  },
  dot_path_segment: {
    check: "zip_path_safety",
    meaning: "An entry name has a '.' segment ('a/./b').",
    fix: "Rebuild the ZIP from the mod folder.",
  },
  name_too_long: {
    check: "zip_path_safety",
    meaning: "An entry name is longer than the policy's name length cap.",
    fix: "Shorten the path.",
  },
  path_too_deep: {
    check: "zip_path_safety",
    meaning: "An entry is nested deeper than the policy's path depth cap.",
    fix: "Flatten the folder structure.",
  },
  non_utf8_name: {
    check: "zip_path_safety",
    meaning: "An entry name has non-ASCII bytes without the ZIP UTF-8 flag, or invalid UTF-8.",
    fix: "Rebuild the ZIP with a tool that writes UTF-8 names (sets general purpose flag bit 11).",
  },
  name_field_mismatch: {
    check: "zip_path_safety",
    meaning: "An Info-ZIP Unicode path extra field names the entry differently from its header name.",
    fix: "Rebuild the ZIP with a standard tool.",
  },
  duplicate_entry_name: {
    check: "zip_path_safety",
    meaning: "Two entries have the same name; extractors disagree on which one wins.",
    fix: "Rebuild the ZIP so each file appears once.",
  },
  case_insensitive_collision: {
    check: "zip_path_safety",
    meaning: "Two entries differ only by letter case and collide on Windows.",
    fix: "Rename one of them.",
  },
  unicode_normalization_collision: {
    check: "zip_path_safety",
    meaning: "Two entries have the same name after Unicode NFC normalization.",
    fix: "Rename one of them.",
  },
  file_directory_collision: {
    check: "zip_path_safety",
    meaning: "A name is used both as a file and as a folder.",
    fix: "Rename the file or the folder.",
  },
  symlink_entry: {
    check: "zip_path_safety",
    meaning: "An entry is a symbolic link (or another special file) in its Unix mode bits.",
    fix: "Replace links with the real files.",
  },
  native_binary_outside_allowed_directory: {
    check: "zip_path_safety",
    meaning:
      "An executable or library is outside the folders where the policy allows native binaries (Binaries/Win64).",
    fix: "Move DLLs under Binaries/Win64/ and reference them from there.",
  },
  // antivirus_scan
  malware_detected: {
    check: "antivirus_scan",
    meaning: "The antivirus scanner reported a signature in the package or one of its entries.",
    fix: "Remove the infected file; if you believe it is a false positive, contact the moderators.",
  },
  scanner_unavailable: {
    check: "antivirus_scan",
    meaning: "No antivirus scanner was reachable; validation fails closed.",
    fix: "Run clamd (or install clamscan) and pass --clamd or --clamscan; the portal never passes unscanned packages.",
  },
  scanner_timeout: {
    check: "antivirus_scan",
    meaning: "The scanner did not answer in time; validation fails closed.",
    fix: "Retry; if it persists, check the scanner's load and limits.",
  },
  scanner_error: {
    check: "antivirus_scan",
    meaning: "The scanner answered with an error (for example a size limit); validation fails closed.",
    fix: "See the log line; raise clamd StreamMaxLength/MaxScanSize/MaxFileSize to the package cap.",
  },
  antivirus_disabled: {
    check: "antivirus_scan",
    meaning: "Scanning was turned off (--no-antivirus), so the package cannot pass.",
    fix: "Run again with a scanner (--clamd or --clamscan).",
  },
  // file_signature
  not_a_zip: {
    check: "file_signature",
    meaning: "The package is not a ZIP file.",
    fix: "Upload a .zip archive (not 7z, RAR or a renamed file).",
  },
  eocd_missing: {
    check: "file_signature",
    meaning: "The ZIP end-of-central-directory record is missing or truncated.",
    fix: "The file is truncated or damaged; rebuild and re-upload it.",
  },
  eocd_invalid: {
    check: "file_signature",
    meaning:
      "The end-of-central-directory record lies (counts, sizes or offsets do not match the file), is ambiguous, or spans disks.",
    fix: "Rebuild the ZIP with a standard tool.",
  },
  zip64_unsupported: {
    check: "file_signature",
    meaning: "The ZIP uses ZIP64 records; packages are capped at 100 MiB and never need them.",
    fix: "Rebuild the ZIP without ZIP64 (for example zip -fz- or a tool default for small archives).",
  },
  zip_version_unsupported: {
    check: "file_signature",
    meaning:
      "An entry declares a 'version needed to extract' above 2.0 (or for a system other than MS-DOS): unzip skips such an entry and Python's zipfile refuses the archive, while other tools extract it, so what players get depends on their tool.",
    fix: "Rebuild the ZIP with a standard tool using stored or deflate entries without ZIP64 or encryption (they declare 1.0 or 2.0).",
  },
  zip_flags_unsupported: {
    check: "file_signature",
    meaning:
      "An entry sets general-purpose flags that extractors handle differently (compressed patched data, enhanced deflating, reserved bits), or is stored with a data descriptor that streaming extractors cannot delimit.",
    fix: "Rebuild the ZIP with a standard tool (zip, 7-Zip, Windows 'Send to compressed folder'); avoid streaming writers' stored-with-descriptor mode.",
  },
  central_directory_invalid: {
    check: "file_signature",
    meaning: "A central directory record is malformed or runs past the directory.",
    fix: "Rebuild the ZIP with a standard tool.",
  },
  local_header_invalid: {
    check: "file_signature",
    meaning: "A local file header is missing, malformed or runs past the file.",
    fix: "Rebuild the ZIP with a standard tool.",
  },
  local_header_mismatch: {
    check: "file_signature",
    meaning:
      "A local file header disagrees with its central directory record (name, method, flags, CRC or sizes).",
    fix: "Rebuild the ZIP with a standard tool; this is a classic smuggling technique.",
  },
  data_before_first_entry: {
    check: "file_signature",
    meaning: "Bytes precede the first entry (a self-extractor stub or a polyglot file).",
    fix: "Upload a plain ZIP, not a self-extracting archive.",
  },
  data_between_entries: {
    check: "file_signature",
    meaning: "Unaccounted bytes sit between entries or before the central directory.",
    fix: "Rebuild the ZIP with a standard tool.",
  },
  data_after_central_directory: {
    check: "file_signature",
    meaning: "Bytes follow the central directory or the end record.",
    fix: "Rebuild the ZIP; do not append data to it.",
  },
  overlapping_entries: {
    check: "file_signature",
    meaning: "Entries share or overlap bytes (a ZIP bomb technique).",
    fix: "Rebuild the ZIP with a standard tool.",
  },
  declared_size_mismatch: {
    check: "file_signature",
    meaning: "An entry's data does not inflate to exactly its declared size, or has trailing bytes.",
    fix: "Rebuild the ZIP with a standard tool.",
  },
  corrupt_entry_data: {
    check: "file_signature",
    meaning: "An entry's compressed data is corrupt.",
    fix: "Rebuild the ZIP; the file is damaged.",
  },
  crc_mismatch: {
    check: "file_signature",
    meaning: "An entry's CRC-32 does not match its data.",
    fix: "Rebuild the ZIP; the file is damaged or tampered with.",
  },
  disguised_executable: {
    check: "file_signature",
    meaning:
      "A file carries a native executable signature (PE/ELF/Mach-O) under a non-binary extension, such as a PE named .png.",
    fix: "Remove the file, or name it for what it is and place it under Binaries/Win64 if it is a Windows library.",
  },
  non_windows_binary: {
    check: "file_signature",
    meaning: "A file is an ELF or Mach-O binary; only Windows PE binaries are allowed.",
    fix: "Remove the binary.",
  },
  forbidden_signature: {
    check: "file_signature",
    meaning:
      "A file's content has a type the policy refuses whatever its name (for example a Windows shortcut or a Java class).",
    fix: "Remove the file.",
  },
  signature_mismatch: {
    check: "file_signature",
    meaning: "A file's content does not match the signatures the policy allows for its extension.",
    fix: "Make sure the file is really of the type its extension says (for example a .dll is a PE file).",
  },
  // archive_content_policy
  package_too_large: {
    check: "archive_content_policy",
    meaning: "The package is larger than maxPackageBytes.",
    fix: "Shrink the package below the limit.",
  },
  too_many_entries: {
    check: "archive_content_policy",
    meaning: "The ZIP has more entries than the policy allows.",
    fix: "Pack assets into fewer files.",
  },
  entry_too_large: {
    check: "archive_content_policy",
    meaning: "An entry declares an uncompressed size above the per-entry cap.",
    fix: "Split or shrink the file.",
  },
  total_uncompressed_too_large: {
    check: "archive_content_policy",
    meaning: "The declared uncompressed total exceeds the policy cap.",
    fix: "Shrink the package contents.",
  },
  compression_ratio_exceeded: {
    check: "archive_content_policy",
    meaning: "An entry or the whole archive compresses more than the policy's ratio cap (a ZIP bomb sign).",
    fix: "Remove padding or generated filler from the package.",
  },
  encrypted_entry: {
    check: "archive_content_policy",
    meaning: "An entry is encrypted; encrypted content cannot be inspected.",
    fix: "Rebuild the ZIP without a password.",
  },
  unsupported_compression_method: {
    check: "archive_content_policy",
    meaning: "An entry uses a compression method other than stored (0) or deflate (8).",
    fix: "Rebuild the ZIP with deflate compression.",
  },
  nested_archive: {
    check: "archive_content_policy",
    meaning: "The package contains another archive (zip, 7z, rar, gzip, ...).",
    fix: "Unpack the inner archive into the package instead of nesting it.",
  },
  forbidden_extension: {
    check: "archive_content_policy",
    meaning: "A file has an extension the policy forbids (drivers, installers, disk images, ...).",
    fix: "Remove the file.",
  },
  config_not_text: {
    check: "archive_content_policy",
    meaning: "A config file (.json, .ini, .toml, .cfg) is not plain text.",
    fix: "Save config files as UTF-8 text.",
  },
  extension_not_allowed: {
    check: "archive_content_policy",
    meaning: "A file extension is not on the policy's allow list.",
    fix: "Remove the file or convert it to an allowed type (see the log for the list).",
  },
  script_file: {
    check: "archive_content_policy",
    meaning: "The package contains a script or shortcut (.bat, .cmd, .ps1, .vbs, .lnk, ...).",
    fix: "Remove scripts; mods must not run commands on players' machines.",
  },
  double_extension: {
    check: "archive_content_policy",
    meaning: "A file name hides its real type behind a double extension (readme.txt.exe, image.png.dll).",
    fix: "Rename the file to a single, truthful extension.",
  },
  // entrypoint_presence
  entrypoint_missing: {
    check: "entrypoint_presence",
    meaning: "A manifest entrypoint path does not exist in the ZIP.",
    fix: "Fix the path in svc-mod.json or add the file to the package.",
  },
  entrypoint_unsafe: {
    check: "entrypoint_presence",
    meaning: "An entrypoint path is not a safe relative path, or points at a folder.",
    fix: "Use a relative path to a file inside the package, with '/' separators.",
  },
  entrypoint_mismatch: {
    check: "entrypoint_presence",
    meaning: "The sidecar and svc-mod.json declare different entrypoints.",
    fix: "Declare the same entrypoints in both files.",
  },
  // mod_config_contract
  config_path_unsafe: {
    check: "mod_config_contract",
    meaning: "A modConfig file path escapes the package or is not a .json path.",
    fix: "Use a relative .json path inside the package.",
  },
  config_file_missing: {
    check: "mod_config_contract",
    meaning: "A modConfig file is not in the package.",
    fix: "Add the config file to the package or fix its path.",
  },
  config_file_invalid: {
    check: "mod_config_contract",
    meaning: "A modConfig file is not valid JSON.",
    fix: "Save the config file as UTF-8 JSON.",
  },
  config_setting_invalid: {
    check: "mod_config_contract",
    meaning:
      "A select setting has no options, duplicate option values, or a default that is not one of its options.",
    fix: "Give each select setting unique options and a default taken from them.",
  },
  config_mismatch: {
    check: "mod_config_contract",
    meaning: "The sidecar and svc-mod.json declare different modConfig.",
    fix: "Declare the same modConfig in both files.",
  },
  // artifact_hash
  sha256_mismatch: {
    check: "artifact_hash",
    meaning: "The package's SHA-256 differs from the sidecar's declared sha256.",
    fix: "Recompute the hash of the exact file you publish (sha256sum) and put it in the sidecar.",
  },
  size_mismatch: {
    check: "artifact_hash",
    meaning: "The package's byte size differs from the sidecar's declared size.",
    fix: "Put the exact byte size of the published file in the sidecar.",
  },
  // detail_page
  detail_page_incomplete: {
    check: "detail_page",
    meaning:
      "The sidecar lacks something the public detail page requires (name, summary, description or release notes, authors).",
    fix: "Fill in each requirement the log marks as missing.",
  },
  markup_in_text: {
    check: "detail_page",
    meaning: "The name or summary contains HTML markup; they are shown as plain text.",
    fix: "Remove tags such as <b> or <script> from the name and summary.",
  },
  unsafe_link: {
    check: "detail_page",
    meaning:
      "A link is not an https URL (javascript:, data:, http: and relative links are refused) or contains markup.",
    fix: "Use https:// links only.",
  },
  // manager_catalog_parse
  manager_parse_failed: {
    check: "manager_catalog_parse",
    meaning: "The catalog with this version added is rejected by the reference manager reader.",
    fix: "See the log; usually a field the manager cannot read (version, URL, hash or dependency format).",
  },
  // backend_readiness
  backend_not_ready: {
    check: "backend_readiness",
    meaning: "The readiness document reports blockers or services that are not live.",
    fix: "Resolve the listed blockers before uploads go live.",
  },
  readiness_unavailable: {
    check: "backend_readiness",
    meaning: "The readiness document is missing or malformed.",
    fix: "Regenerate readiness.json with svc build.",
  },
  // public_smoke
  smoke_failed: {
    check: "public_smoke",
    meaning: "The post-publish smoke report shows a failed step.",
    fix: "See the failed steps in the log; fix the deployment and rerun svc smoke.",
  },
  smoke_report_unavailable: {
    check: "public_smoke",
    meaning: "No post-publish smoke report (svc.post-publish-smoke.v1) was supplied or it is malformed.",
    fix: "Run the public smoke after publication.",
  },
  // any check
  check_error: {
    check: "*",
    meaning: "The check itself failed unexpectedly; it fails closed.",
    fix: "Report the log line to the portal maintainers.",
  },
  policy_invalid: {
    check: "*",
    meaning:
      "The framework validation contract is missing something the check needs; the check fails closed.",
    fix: "Regenerate game-publishing-validation.v1.json with svc build.",
  },
} as const satisfies Record<string, ReasonInfo>;

export type ReasonCode = keyof typeof REASONS;

/**
 * A check that cannot run because an earlier one failed reports `blocked_by_<check id>`: it is a
 * failure, never a pass.
 */
export function blockedBy(checkId: string): string {
  return `blocked_by_${checkId}`;
}

export function fixFor(code: string): string | undefined {
  return (REASONS as Record<string, ReasonInfo>)[code]?.fix;
}
