import type { CheckContext, CheckOutcome } from "../types.ts";
import type { ZipFinding } from "../zip/reader.ts";
import { ARCHIVE_KINDS } from "../zip/sniff.ts";
import {
  blocked,
  contentBlocker,
  extensionOf,
  failedWithFindings,
  ownerOf,
  passed,
  structureBlocker,
} from "./common.ts";

const ID = "archive_content_policy";

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
    return ownerOf(pkg.unreadable.code) === ID
      ? failedWithFindings(ID, [
          { code: pkg.unreadable.code as ZipFinding["code"], message: pkg.unreadable.message },
        ])
      : blocked(ID, ownerOf(pkg.unreadable.code), pkg.unreadable.message);
  }
  const findings: ZipFinding[] = (pkg.structure?.findings ?? []).filter((f) => ownerOf(f.code) === ID);
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
  const add = (name: string, code: ZipFinding["code"], why: string) =>
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
  if (findings.length > 0) return failedWithFindings(ID, findings);
  const blocker = contentBlocker(ctx);
  if (blocker) return blocked(ID, blocker.check, blocker.why);
  return passed(ID, [
    `${pkg.entries.filter((e) => !e.entry.isDirectory).length} file(s) within caps: ${pkg.structure?.totalUncompressedBytes ?? 0} bytes uncompressed, no nested archives, scripts or disallowed extensions`,
  ]);
}
