import { readManifest } from "../documents.ts";
import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import { blocked, contentBlocker, failuresOf, passed } from "./common.ts";

const ID = "manifest_schema";

export const manifestSchema = {
  id: ID,
  scope: "package",
  required: true,
  pack: "file_list",
  description: "The package manifest (svc-mod.json at the archive root) matches the mod manifest schema.",
  reasons: {
    manifest_missing: {
      meaning: "The package has no svc-mod.json manifest at the archive root.",
      fix: "Add svc-mod.json at the root of the ZIP (not inside a folder).",
    },
    manifest_invalid_json: {
      meaning: "svc-mod.json is not valid UTF-8 JSON, has duplicate keys, or is too large or too deep.",
      fix: "Save svc-mod.json as UTF-8 JSON without duplicate keys.",
    },
    manifest_schema_mismatch: {
      meaning: "svc-mod.json does not match the mod manifest schema.",
      fix: "Fix each field named in the log; remove fields the schema does not define.",
    },
  },
  run: checkManifestSchema,
} as const satisfies PackageCheck;

const { failed } = failuresOf(manifestSchema);

export function checkManifestSchema(ctx: CheckContext): CheckOutcome {
  const fileName = ctx.policy.manifestFileName;
  const blocker = contentBlocker(ctx);
  // The manifest itself may still have been read when only other entries were refused.
  if (blocker && !ctx.pkg.files.has(fileName)) return blocked(ID, blocker.check, blocker.why);
  const read = readManifest(ctx.pkg, fileName, ctx.schemaBaseUrl);
  if (read.ok) return passed(ID, [`${fileName} matches svc.mod-manifest.v1`]);
  return failed(read.code, read.log);
}
