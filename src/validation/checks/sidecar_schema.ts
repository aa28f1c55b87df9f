import { validateSidecar } from "../documents.ts";
import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import { failuresOf, passed } from "./common.ts";

const ID = "sidecar_schema";

export const sidecarSchema = {
  id: ID,
  scope: "package",
  required: true,
  pack: null,
  description:
    "Sidecar metadata uses the sidecar schema id (svc.mod-release-submission.v1) and matches that schema.",
  reasons: {
    sidecar_missing: {
      meaning: "No sidecar release metadata was supplied.",
      fix: "Pass the release metadata JSON (schema svc.mod-release-submission.v1) with --metadata.",
    },
    sidecar_invalid_json: {
      meaning: "The sidecar is not valid JSON (or has duplicate keys, invalid UTF-8, or is nested too deep).",
      fix: "Save the sidecar as UTF-8 JSON without duplicate keys.",
    },
    sidecar_schema_mismatch: {
      meaning:
        "The sidecar does not match svc.mod-release-submission.v1 (unknown fields, wrong types, bad ids).",
      fix: "Fix each field named in the log; remove fields the schema does not define.",
    },
  },
  run: checkSidecarSchema,
} as const satisfies PackageCheck;

const { failed } = failuresOf(sidecarSchema);

export function checkSidecarSchema(ctx: CheckContext): CheckOutcome {
  const { raw, parseError } = ctx.sidecar;
  if (parseError !== undefined)
    return failed("sidecar_invalid_json", [`the sidecar is not acceptable JSON: ${parseError}`]);
  if (raw === undefined) return failed("sidecar_missing", ["no sidecar release metadata was supplied"]);
  const result = validateSidecar(raw, ctx.schemaBaseUrl);
  if (result.ok) return passed(ID, ["the sidecar matches svc.mod-release-submission.v1"]);
  return failed(
    "sidecar_schema_mismatch",
    result.issues.slice(0, 50).map((i) => `sidecar${i.path === "/" ? "" : i.path}: ${i.message}`),
  );
}
