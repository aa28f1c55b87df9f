/**
 * Every reason code the ZIP reader, the name rules and the extra-field rules report. Each is a
 * check's reason code (checks/index.ts holds them all and asserts so at compile time); they are
 * listed here so that zip/ needs nothing from checks/.
 */
export type ZipReasonCode =
  | "absolute_path"
  | "backslash_in_name"
  | "bidi_character_in_name"
  | "case_insensitive_collision"
  | "central_directory_invalid"
  | "colon_in_name"
  | "compression_ratio_exceeded"
  | "control_character_in_name"
  | "corrupt_entry_data"
  | "crc_mismatch"
  | "data_after_central_directory"
  | "data_before_first_entry"
  | "data_between_entries"
  | "declared_size_mismatch"
  | "dot_path_segment"
  | "duplicate_entry_name"
  | "empty_path_segment"
  | "encrypted_entry"
  | "entry_too_large"
  | "entry_type_mismatch"
  | "eocd_invalid"
  | "eocd_missing"
  | "file_directory_collision"
  | "forbidden_character_in_name"
  | "local_header_invalid"
  | "local_header_mismatch"
  | "name_field_mismatch"
  | "name_too_long"
  | "non_utf8_name"
  | "not_a_zip"
  | "overlapping_entries"
  | "path_too_deep"
  | "path_traversal"
  | "reserved_device_name"
  | "symlink_entry"
  | "too_many_entries"
  | "total_uncompressed_too_large"
  | "trailing_dot_or_space"
  | "unicode_normalization_collision"
  | "unsafe_file_mode"
  | "unsupported_compression_method"
  | "zip64_unsupported"
  | "zip_extra_field_invalid"
  | "zip_extra_field_mismatch"
  | "zip_extra_field_unsupported"
  | "zip_flags_unsupported"
  | "zip_version_unsupported";

/** A finding about the package: a reason code (the reader's own by default), what it means here, and the entry. */
export interface ZipFinding<Code extends string = ZipReasonCode> {
  code: Code;
  message: string;
  entry?: string;
}
