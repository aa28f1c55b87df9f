import type { CheckContext, CheckOutcome } from "../types.ts";
import type { ZipFinding } from "../zip/reader.ts";
import { ARCHIVE_KINDS, NATIVE_KINDS } from "../zip/sniff.ts";
import { blocked, contentBlocker, extensionOf, failedWithFindings, ownerOf, passed } from "./common.ts";

const ID = "file_signature";

export function checkFileSignature(ctx: CheckContext): CheckOutcome {
  const pkg = ctx.pkg;
  if (pkg.unreadable) return blocked(ID, ownerOf(pkg.unreadable.code), pkg.unreadable.message);
  const { signatures, content } = ctx.policy;
  const findings: ZipFinding[] = (pkg.structure?.findings ?? []).filter((f) => ownerOf(f.code) === ID);
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
  if (findings.length > 0) return failedWithFindings(ID, findings);
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
