import { validateSidecar } from "../documents.ts";
import type { CheckContext, CheckOutcome } from "../types.ts";
import { failed, passed } from "./common.ts";

const ID = "sidecar_schema";

export function checkSidecarSchema(ctx: CheckContext): CheckOutcome {
  const { raw, parseError } = ctx.sidecar;
  if (parseError !== undefined)
    return failed(ID, "sidecar_invalid_json", [`the sidecar is not acceptable JSON: ${parseError}`]);
  if (raw === undefined) return failed(ID, "sidecar_missing", ["no sidecar release metadata was supplied"]);
  const result = validateSidecar(raw, ctx.schemaBaseUrl);
  if (result.ok) return passed(ID, ["the sidecar matches svc.mod-release-submission.v1"]);
  return failed(
    ID,
    "sidecar_schema_mismatch",
    result.issues.slice(0, 50).map((i) => `sidecar${i.path === "/" ? "" : i.path}: ${i.message}`),
  );
}
