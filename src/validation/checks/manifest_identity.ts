import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import { blocked, failuresOf, firstNotPassed, passed } from "./common.ts";

const ID = "manifest_identity";

export const manifestIdentity = {
  id: ID,
  scope: "package",
  required: true,
  pack: null,
  description: "Manifest id, name, version and targetGameBuild match the sidecar.",
  reasons: {
    identity_mismatch: {
      meaning: "id, name, version or targetGameBuild differ between the sidecar and svc-mod.json.",
      fix: "Make the sidecar and svc-mod.json carry identical id, name, version and targetGameBuild.",
    },
  },
  run: checkManifestIdentity,
} as const satisfies PackageCheck;

const { failed } = failuresOf(manifestIdentity);

export function checkManifestIdentity(ctx: CheckContext): CheckOutcome {
  const missing = firstNotPassed(ctx, ["sidecar_schema", "manifest_schema"]);
  const sidecar = ctx.sidecar.valid;
  const manifest = ctx.manifest.valid;
  if (missing || !sidecar || !manifest) {
    return blocked(
      ID,
      missing ?? "manifest_schema",
      "identity is compared once the sidecar and the manifest are valid",
    );
  }
  const pairs: Array<[string, string, string]> = [
    ["id", sidecar.modId, manifest.id],
    ["name", sidecar.name, manifest.name],
    ["version", sidecar.version, manifest.version],
    ["targetGameBuild", sidecar.targetGameBuild, manifest.targetGameBuild],
  ];
  const diffs = pairs
    .filter(([, a, b]) => a !== b)
    .map(
      ([field, a, b]) =>
        `${field}: sidecar says ${JSON.stringify(a)}, svc-mod.json says ${JSON.stringify(b)}`,
    );
  if (diffs.length > 0) return failed("identity_mismatch", diffs);
  return passed(ID, [
    `${sidecar.modId}@${sidecar.version} "${sidecar.name}" for game build ${sidecar.targetGameBuild}`,
  ]);
}
