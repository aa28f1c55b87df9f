import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import type { ZipFinding, ZipReasonCode } from "../zip/reader.ts";
import { ARCHIVE_KINDS } from "../zip/sniff.ts";
import {
  blocked,
  contentBlocker,
  extensionOf,
  failuresOf,
  ownerOf,
  passed,
  structureBlocker,
} from "./common.ts";

const ID = "archive_content_policy";

export const archiveContentPolicy = {
  id: ID,
  scope: "package",
  required: true,
  pack: "file_list",
  description:
    "Contents comply with the portal policy for extensions, native binaries, scripts, configs, nested archives and bundled assets.",
  reasons: {
    package_too_large: {
      meaning: "The package is larger than maxPackageBytes.",
      fix: "Shrink the package below the limit.",
    },
    too_many_entries: {
      meaning: "The ZIP has more entries than the policy allows.",
      fix: "Pack assets into fewer files.",
    },
    entry_too_large: {
      meaning: "An entry declares an uncompressed size above the per-entry cap.",
      fix: "Split or shrink the file.",
    },
    total_uncompressed_too_large: {
      meaning: "The declared uncompressed total exceeds the policy cap.",
      fix: "Shrink the package contents.",
    },
    compression_ratio_exceeded: {
      meaning: "An entry or the whole archive compresses more than the policy's ratio cap (a ZIP bomb sign).",
      fix: "Remove padding or generated filler from the package.",
    },
    encrypted_entry: {
      meaning: "An entry is encrypted; encrypted content cannot be inspected.",
      fix: "Rebuild the ZIP without a password.",
    },
    unsupported_compression_method: {
      meaning: "An entry uses a compression method other than stored (0) or deflate (8).",
      fix: "Rebuild the ZIP with deflate compression.",
    },
    nested_archive: {
      meaning: "The package contains another archive (zip, 7z, rar, gzip, ...).",
      fix: "Unpack the inner archive into the package instead of nesting it.",
    },
    forbidden_extension: {
      meaning: "A file has an extension the policy forbids (drivers, installers, disk images, ...).",
      fix: "Remove the file.",
    },
    config_not_text: {
      meaning: "A config file (.json, .ini, .toml, .cfg) is not plain text.",
      fix: "Save config files as UTF-8 text.",
    },
    extension_not_allowed: {
      meaning: "A file extension is not on the policy's allow list.",
      fix: "Remove the file or convert it to an allowed type (see the log for the list).",
    },
    script_file: {
      meaning: "The package contains a script or shortcut (.bat, .cmd, .ps1, .vbs, .lnk, ...).",
      fix: "Remove scripts; mods must not run commands on players' machines.",
    },
    double_extension: {
      meaning: "A file name hides its real type behind a double extension (readme.txt.exe, image.png.dll).",
      fix: "Rename the file to a single, truthful extension.",
    },
  },
  run: checkArchiveContentPolicy,
} as const satisfies PackageCheck;

const { failedWithFindings } = failuresOf(archiveContentPolicy);

/** A finding of this check: the reader's, or one of its own. */
type Finding = ZipFinding<ZipReasonCode | keyof (typeof archiveContentPolicy)["reasons"]>;

// Presentation only (which reason code a forbidden extension reports); the policy decides what is forbidden.
const SCRIPT_LIKE = new Set([
  ".bat",
  ".cmd",
  ".ps1",
  ".psm1",
  ".vbs",
  ".vbe",
  ".js",
  ".jse",
  ".wsf",
  ".wsh",
  ".hta",
  ".lnk",
  ".reg",
  ".sh",
  ".scr",
  ".pif",
  ".com",
  ".cpl",
]);
const ARCHIVE_LIKE = new Set([
  ".zip",
  ".7z",
  ".rar",
  ".gz",
  ".tgz",
  ".tar",
  ".cab",
  ".iso",
  ".bz2",
  ".xz",
  ".zst",
  ".jar",
]);
const TEXT_KINDS = new Set(["text", "empty"]);

export function checkArchiveContentPolicy(ctx: CheckContext): CheckOutcome {
  const pkg = ctx.pkg;
  if (pkg.unreadable) {
    return ownerOf(ctx, pkg.unreadable.code) === ID
      ? failedWithFindings([
          { code: pkg.unreadable.code as Finding["code"], message: pkg.unreadable.message },
        ])
      : blocked(ID, ownerOf(ctx, pkg.unreadable.code), pkg.unreadable.message);
  }
  const findings: Finding[] = (pkg.structure?.findings ?? []).filter((f) => ownerOf(ctx, f.code) === ID);
  const structural = structureBlocker(ctx);
  if (structural && findings.length === 0) return blocked(ID, structural.check, structural.why);

  const { allowedExtensions, forbiddenExtensions, nativeBinaryExtensions, configExtensions } =
    ctx.policy.content;
  const allowed = new Set(allowedExtensions);
  const forbidden = new Set(forbiddenExtensions);
  const risky = new Set([...forbiddenExtensions, ...nativeBinaryExtensions]);
  const known = new Set([
    ...allowedExtensions,
    ...forbiddenExtensions,
    ...nativeBinaryExtensions,
    ".pdf",
    ".doc",
    ".docx",
    ".htm",
    ".html",
  ]);
  const configs = new Set(configExtensions);
  const add = (name: string, code: Finding["code"], why: string) =>
    findings.push({ code, entry: name, message: `${JSON.stringify(name)}: ${why}` });
  for (const { entry, kind } of pkg.entries) {
    if (entry.isDirectory) continue;
    const name = entry.name;
    const ext = extensionOf(name);
    if (forbidden.has(ext)) {
      if (ARCHIVE_LIKE.has(ext))
        add(name, "nested_archive", `${ext} archives may not be nested in a package`);
      else if (SCRIPT_LIKE.has(ext)) add(name, "script_file", `${ext} scripts and shortcuts are not allowed`);
      else add(name, "forbidden_extension", `${ext} files are not allowed`);
    } else if (!allowed.has(ext)) {
      add(
        name,
        "extension_not_allowed",
        ext ? `${ext} is not an allowed extension` : "files without an extension are not allowed",
      );
    }
    const base = name.slice(name.lastIndexOf("/") + 1);
    // Two dots at least, the first not opening the name: only then is split worth its arrays.
    const firstDot = base.indexOf(".");
    const parts = firstDot > 0 && base.indexOf(".", firstDot + 1) !== -1 ? base.split(".") : [];
    if (parts.length >= 3 && parts[0] !== "") {
      const inner = `.${parts[parts.length - 2]!.toLowerCase()}`;
      if (known.has(inner) && (risky.has(ext) || !allowed.has(ext) || risky.has(inner))) {
        add(name, "double_extension", `the name hides its type behind ${inner}${ext}`);
      }
    }
    const nestedByName = forbidden.has(ext) && ARCHIVE_LIKE.has(ext);
    if (kind !== null && ARCHIVE_KINDS.has(kind) && !nestedByName) {
      // Nested archives are never inspected, so even a policy depth above 0 cannot pass unread bytes.
      add(
        name,
        "nested_archive",
        `content is a ${kind} archive; nested archives are not allowed or inspected`,
      );
    }
    if (kind !== null && configs.has(ext) && !TEXT_KINDS.has(kind))
      add(name, "config_not_text", `config file content is ${kind}`);
  }
  if (findings.length > 0) return failedWithFindings(findings);
  const blocker = contentBlocker(ctx);
  if (blocker) return blocked(ID, blocker.check, blocker.why);
  return passed(ID, [
    `${pkg.entries.filter((e) => !e.entry.isDirectory).length} file(s) within caps: ${pkg.structure?.totalUncompressedBytes ?? 0} bytes uncompressed, no nested archives, scripts or disallowed extensions`,
  ]);
}
