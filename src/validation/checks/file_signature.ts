import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import type { ZipFinding, ZipReasonCode } from "../zip/reader.ts";
import { ARCHIVE_KINDS, NATIVE_KINDS } from "../zip/sniff.ts";
import { blocked, contentBlocker, extensionOf, failuresOf, ownerOf, passed } from "./common.ts";

const ID = "file_signature";

export const fileSignature = {
  id: ID,
  scope: "package",
  required: true,
  pack: "built_zip",
  description:
    "The archive and native binaries match allowed file signatures for their extensions before review or publication.",
  reasons: {
    not_a_zip: {
      meaning: "The package is not a ZIP file.",
      fix: "Upload a .zip archive (not 7z, RAR or a renamed file).",
    },
    eocd_missing: {
      meaning: "The ZIP end-of-central-directory record is missing or truncated.",
      fix: "The file is truncated or damaged; rebuild and re-upload it.",
    },
    eocd_invalid: {
      meaning:
        "The end-of-central-directory record lies (counts, sizes or offsets do not match the file), is ambiguous, or spans disks.",
      fix: "Rebuild the ZIP with a standard tool.",
    },
    zip64_unsupported: {
      meaning: "The ZIP uses ZIP64 records; packages are capped at 100 MiB and never need them.",
      fix: "Rebuild the ZIP without ZIP64 (for example zip -fz- or a tool default for small archives).",
    },
    zip_version_unsupported: {
      meaning:
        "An entry declares a 'version needed to extract' above 2.0 (or for a system other than MS-DOS): unzip skips such an entry and Python's zipfile refuses the archive, while other tools extract it, so what players get depends on their tool.",
      fix: "Rebuild the ZIP with a standard tool using stored or deflate entries without ZIP64 or encryption (they declare 1.0 or 2.0).",
    },
    zip_flags_unsupported: {
      meaning:
        "An entry sets general-purpose flags that extractors handle differently (compressed patched data, enhanced deflating, reserved bits), or is stored with a data descriptor that streaming extractors cannot delimit.",
      fix: "Rebuild the ZIP with a standard tool (zip, 7-Zip, Windows 'Send to compressed folder'); avoid streaming writers' stored-with-descriptor mode.",
    },
    central_directory_invalid: {
      meaning: "A central directory record is malformed or runs past the directory.",
      fix: "Rebuild the ZIP with a standard tool.",
    },
    local_header_invalid: {
      meaning: "A local file header is missing, malformed or runs past the file.",
      fix: "Rebuild the ZIP with a standard tool.",
    },
    local_header_mismatch: {
      meaning:
        "A local file header disagrees with its central directory record (name, method, flags, CRC or sizes).",
      fix: "Rebuild the ZIP with a standard tool; this is a classic smuggling technique.",
    },
    zip_extra_field_invalid: {
      meaning:
        "An entry's extra field is malformed: a block runs past the field, bytes are left over, a block appears twice, or an accepted block (NTFS, timestamp, Info-ZIP Unix, Unicode Path, JAR marker) is not in its standard form. Extractors parse such a field differently (Python refuses the archive, bsdtar the entry).",
      fix: "Rebuild the ZIP with a standard tool (zip, 7-Zip, bsdtar, Windows 'Send to compressed folder').",
    },
    zip_extra_field_unsupported: {
      meaning:
        "An entry carries an extra field block svc does not accept: ASi Unix (0x756e) or PKWARE Unix (0x000d), which carry a mode and link target of their own, libarchive's 'xl' (0x6c78), from which bsdtar takes the type and mode, a Unicode Comment in a local header, or any block other than NTFS, extended timestamp, Info-ZIP Unix, Unicode Path or Comment and the JAR marker.",
      fix: "Rebuild the ZIP with a standard tool; do not add Unix symlink, mode or vendor extra fields.",
    },
    zip_extra_field_mismatch: {
      meaning:
        "An entry's local header and central directory carry the same extra field block with different content (owner, times), or a Unicode Comment block differs from the entry comment: bsdtar and unzip read the local header, 7-Zip the central directory.",
      fix: "Rebuild the ZIP with a standard tool; this is a smuggling technique.",
    },
    data_before_first_entry: {
      meaning: "Bytes precede the first entry (a self-extractor stub or a polyglot file).",
      fix: "Upload a plain ZIP, not a self-extracting archive.",
    },
    data_between_entries: {
      meaning: "Unaccounted bytes sit between entries or before the central directory.",
      fix: "Rebuild the ZIP with a standard tool.",
    },
    data_after_central_directory: {
      meaning: "Bytes follow the central directory or the end record.",
      fix: "Rebuild the ZIP; do not append data to it.",
    },
    overlapping_entries: {
      meaning: "Entries share or overlap bytes (a ZIP bomb technique).",
      fix: "Rebuild the ZIP with a standard tool.",
    },
    declared_size_mismatch: {
      meaning: "An entry's data does not inflate to exactly its declared size, or has trailing bytes.",
      fix: "Rebuild the ZIP with a standard tool.",
    },
    corrupt_entry_data: {
      meaning: "An entry's compressed data is corrupt.",
      fix: "Rebuild the ZIP; the file is damaged.",
    },
    crc_mismatch: {
      meaning: "An entry's CRC-32 does not match its data.",
      fix: "Rebuild the ZIP; the file is damaged or tampered with.",
    },
    disguised_executable: {
      meaning:
        "A file carries a native executable signature (PE/ELF/Mach-O) under a non-binary extension, such as a PE named .png.",
      fix: "Remove the file, or name it for what it is and place it under Binaries/Win64 if it is a Windows library.",
    },
    non_windows_binary: {
      meaning: "A file is an ELF or Mach-O binary; only Windows PE binaries are allowed.",
      fix: "Remove the binary.",
    },
    forbidden_signature: {
      meaning:
        "A file's content has a type the policy refuses whatever its name (for example a Windows shortcut or a Java class).",
      fix: "Remove the file.",
    },
    signature_mismatch: {
      meaning: "A file's content does not match the signatures the policy allows for its extension.",
      fix: "Make sure the file is really of the type its extension says (for example a .dll is a PE file).",
    },
  },
  run: checkFileSignature,
} as const satisfies PackageCheck;

const { failedWithFindings } = failuresOf(fileSignature);

/** A finding of this check: the reader's, or one of its own. */
type Finding = ZipFinding<ZipReasonCode | keyof (typeof fileSignature)["reasons"]>;

export function checkFileSignature(ctx: CheckContext): CheckOutcome {
  const pkg = ctx.pkg;
  if (pkg.unreadable) return blocked(ID, ownerOf(ctx, pkg.unreadable.code), pkg.unreadable.message);
  const { signatures, content } = ctx.policy;
  const findings: Finding[] = (pkg.structure?.findings ?? []).filter((f) => ownerOf(ctx, f.code) === ID);
  // The structural findings are the precise ones (a self-extractor is data_before_first_entry);
  // the package's own signature matters only when they found nothing.
  if (findings.length === 0 && pkg.packageKind && !signatures.package.includes(pkg.packageKind)) {
    findings.push({
      code: "not_a_zip",
      message: `the package's signature is ${pkg.packageKind}; accepted: ${signatures.package.join(", ")}`,
    });
  }
  findings.push(...pkg.inflateFindings);
  if (pkg.contentInspected) {
    const native = new Set(content.nativeBinaryExtensions.map((e) => e.toLowerCase()));
    const forbidden = new Set(signatures.forbiddenAnywhere);
    for (const { entry, kind } of pkg.entries) {
      if (entry.isDirectory || kind === null) continue;
      const ext = extensionOf(entry.name);
      if (NATIVE_KINDS.has(kind) && !native.has(ext)) {
        findings.push({
          code: kind === "pe" ? "disguised_executable" : "non_windows_binary",
          entry: entry.name,
          message: `${JSON.stringify(entry.name)}: content is a ${kind} executable but the name says ${ext || "no extension"}`,
        });
        continue;
      }
      if (forbidden.has(kind) && !ARCHIVE_KINDS.has(kind)) {
        findings.push({
          code: NATIVE_KINDS.has(kind) ? "non_windows_binary" : "forbidden_signature",
          entry: entry.name,
          message: `${JSON.stringify(entry.name)}: content is ${kind}, which the policy refuses anywhere`,
        });
        continue;
      }
      const expected = signatures.byExtension[ext];
      if (expected && !expected.includes(kind)) {
        findings.push({
          code: "signature_mismatch",
          entry: entry.name,
          message: `${JSON.stringify(entry.name)}: a ${ext} file must be ${expected.join(" or ")}, but its content is ${kind}`,
        });
      }
    }
  }
  if (findings.length > 0) return failedWithFindings(findings);
  const blocker = contentBlocker(ctx);
  if (blocker) return blocked(ID, blocker.check, blocker.why);
  const counts = new Map<string, number>();
  for (const e of pkg.entries)
    if (e.kind && !e.entry.isDirectory) counts.set(e.kind, (counts.get(e.kind) ?? 0) + 1);
  return passed(ID, [
    "the package is a well-formed ZIP: every byte accounted for, local and central headers agree, sizes and CRC-32 verified",
    `entry signatures: ${[...counts].map(([k, n]) => `${k} x${n}`).join(", ") || "(no files)"}`,
  ]);
}
