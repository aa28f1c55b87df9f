import type { CheckContext, CheckOutcome } from "../types.ts";
import type { ZipFinding } from "../zip/reader.ts";
import {
  blocked,
  extensionOf,
  failedWithFindings,
  isUnderDirectory,
  passed,
  structureBlocker,
} from "./common.ts";

const ID = "zip_path_safety";

export function checkZipPathSafety(ctx: CheckContext): CheckOutcome {
  const blocker = structureBlocker(ctx);
  if (blocker) return blocked(ID, blocker.check, blocker.why);
  const { nativeBinaryExtensions, nativeBinaryDirectory } = ctx.policy.content;
  const native = new Set(nativeBinaryExtensions.map((e) => e.toLowerCase()));
  const findings: ZipFinding[] = [...ctx.pkg.nameFindings];
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
  if (findings.length > 0) return failedWithFindings(ID, findings);
  const files = ctx.pkg.entries.filter((e) => !e.entry.isDirectory).length;
  return passed(ID, [
    `${files} file name(s) are relative, unambiguous and portable; native binaries stay under ${nativeBinaryDirectory}/`,
  ]);
}
