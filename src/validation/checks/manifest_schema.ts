import { readManifest } from "../documents.ts";
import type { CheckContext, CheckOutcome } from "../types.ts";
import { blocked, contentBlocker, failed, passed } from "./common.ts";

const ID = "manifest_schema";

export function checkManifestSchema(ctx: CheckContext): CheckOutcome {
  const fileName = ctx.policy.manifestFileName;
  const blocker = contentBlocker(ctx);
  // The manifest itself may still have been read when only other entries were refused.
  if (blocker && !ctx.pkg.files.has(fileName)) return blocked(ID, blocker.check, blocker.why);
  const read = readManifest(ctx.pkg, fileName, ctx.schemaBaseUrl);
  if (read.ok) return passed(ID, [`${fileName} matches svc.mod-manifest.v1`]);
  return failed(ID, read.code, read.log);
}
