import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import type { ZipFinding, ZipReasonCode } from "../zip/reader.ts";
import { blocked, extensionOf, failuresOf, isUnderDirectory, passed, structureBlocker } from "./common.ts";

const ID = "zip_path_safety";

export const zipPathSafety = {
  id: ID,
  scope: "package",
  required: true,
  pack: "file_list",
  description:
    "ZIP entries are relative, have no traversal or ambiguous names, and executables stay under Binaries/Win64.",
  reasons: {
    path_traversal: {
      meaning: "An entry name has a '..' segment and would escape the install folder.",
      fix: "Rebuild the ZIP from the mod folder so every name is relative and inside it.",
    },
    absolute_path: {
      meaning:
        "An entry name is absolute (starts with '/', a drive letter such as C:, or a UNC \\\\server prefix).",
      fix: "Rebuild the ZIP with relative names.",
    },
    backslash_in_name: {
      meaning: "An entry name contains a backslash; ZIP names must use '/'.",
      fix: "Rebuild the ZIP with a tool that writes '/' separators.",
    },
    control_character_in_name: {
      meaning: "An entry name contains NUL or another control character.",
      fix: "Rename the file to printable characters.",
    },
    bidi_character_in_name: {
      meaning: "An entry name contains a bidirectional-override or invisible formatting character.",
      fix: "Rename the file; such characters disguise the real extension.",
    },
    colon_in_name: {
      meaning: "An entry name contains ':' (NTFS alternate data stream or drive syntax).",
      fix: "Rename the file without ':'.",
    },
    forbidden_character_in_name: {
      meaning: 'An entry name contains a character Windows cannot store (< > " | ? *).',
      fix: "Rename the file without those characters.",
    },
    trailing_dot_or_space: {
      meaning: "A name segment ends with a dot or a space, which Windows silently strips.",
      fix: "Rename the file or folder.",
    },
    reserved_device_name: {
      meaning:
        "A name segment is a Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9), with or without extension.",
      fix: "Rename the file or folder.",
    },
    empty_path_segment: {
      meaning: "An entry name is empty or has an empty segment ('a//b').",
      fix: "Rebuild the ZIP from the mod folder.",
    },
    dot_path_segment: {
      meaning: "An entry name has a '.' segment ('a/./b').",
      fix: "Rebuild the ZIP from the mod folder.",
    },
    name_too_long: {
      meaning: "An entry name is longer than the policy's name length cap.",
      fix: "Shorten the path.",
    },
    path_too_deep: {
      meaning: "An entry is nested deeper than the policy's path depth cap.",
      fix: "Flatten the folder structure.",
    },
    non_utf8_name: {
      meaning: "An entry name has non-ASCII bytes without the ZIP UTF-8 flag, or invalid UTF-8.",
      fix: "Rebuild the ZIP with a tool that writes UTF-8 names (sets general purpose flag bit 11).",
    },
    name_field_mismatch: {
      meaning:
        "An Info-ZIP Unicode Path extra field (0x7075) in the local header or the central directory names the entry differently from its header name: bsdtar renames the entry from either header, unzip and 7-Zip from the central one, Python never.",
      fix: "Rebuild the ZIP with a standard tool.",
    },
    duplicate_entry_name: {
      meaning: "Two entries have the same name; extractors disagree on which one wins.",
      fix: "Rebuild the ZIP so each file appears once.",
    },
    case_insensitive_collision: {
      meaning: "Two entries differ only by letter case and collide on Windows.",
      fix: "Rename one of them.",
    },
    unicode_normalization_collision: {
      meaning: "Two entries have the same name after Unicode NFC normalization.",
      fix: "Rename one of them.",
    },
    file_directory_collision: {
      meaning: "A name is used both as a file and as a folder.",
      fix: "Rename the file or the folder.",
    },
    symlink_entry: {
      meaning:
        "An entry is a symbolic link (or a device, FIFO or socket) in the Unix mode of its external attributes; bsdtar, unzip and 7-Zip create the link.",
      fix: "Replace links with the real files.",
    },
    unsafe_file_mode: {
      meaning:
        "An entry's Unix mode is setuid, setgid, sticky or world-writable; extractors apply it as it is (bsdtar run as root keeps setuid).",
      fix: "Rebuild the ZIP from files with ordinary permissions (for example chmod -R u=rwX,go=rX before zipping).",
    },
    entry_type_mismatch: {
      meaning:
        "An entry's attributes give it another type than its name: a folder mode or the MS-DOS folder bit without a trailing '/' (bsdtar and 7-Zip make a folder, unzip and Python a file), or a regular-file mode on a name ending with '/'.",
      fix: "Rebuild the ZIP with a standard tool.",
    },
    native_binary_outside_allowed_directory: {
      meaning:
        "An executable or library is outside the folders where the policy allows native binaries (Binaries/Win64).",
      fix: "Move DLLs under Binaries/Win64/ and reference them from there.",
    },
  },
  run: checkZipPathSafety,
} as const satisfies PackageCheck;

const { failedWithFindings } = failuresOf(zipPathSafety);

export function checkZipPathSafety(ctx: CheckContext): CheckOutcome {
  const blocker = structureBlocker(ctx);
  if (blocker) return blocked(ID, blocker.check, blocker.why);
  const { nativeBinaryExtensions, nativeBinaryDirectory } = ctx.policy.content;
  const native = new Set(nativeBinaryExtensions.map((e) => e.toLowerCase()));
  const findings: ZipFinding<ZipReasonCode | keyof (typeof zipPathSafety)["reasons"]>[] = [
    ...ctx.pkg.nameFindings,
  ];
  for (const { entry } of ctx.pkg.entries) {
    if (entry.isDirectory || !native.has(extensionOf(entry.name))) continue;
    if (!isUnderDirectory(entry.name, nativeBinaryDirectory)) {
      findings.push({
        code: "native_binary_outside_allowed_directory",
        entry: entry.name,
        message: `${JSON.stringify(entry.name)}: native binaries may only live under ${nativeBinaryDirectory}/`,
      });
    }
  }
  if (findings.length > 0) return failedWithFindings(findings);
  const files = ctx.pkg.entries.filter((e) => !e.entry.isDirectory).length;
  return passed(ID, [
    `${files} file name(s) are relative, unambiguous and portable; native binaries stay under ${nativeBinaryDirectory}/`,
  ]);
}
