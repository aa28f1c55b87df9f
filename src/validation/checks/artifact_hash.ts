import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import { blocked, failuresOf, ownerOf, passed } from "./common.ts";

const ID = "artifact_hash";

export const artifactHash = {
  id: ID,
  scope: "package",
  required: true,
  pack: null,
  description: "SHA256 and size are computed from the exact immutable artifact bytes and match the sidecar.",
  reasons: {
    sha256_mismatch: {
      meaning: "The package's SHA-256 differs from the sidecar's declared sha256.",
      fix: "Recompute the hash of the exact file you publish (sha256sum) and put it in the sidecar.",
    },
    size_mismatch: {
      meaning: "The package's byte size differs from the sidecar's declared size.",
      fix: "Put the exact byte size of the published file in the sidecar.",
    },
  },
  run: checkArtifactHash,
} as const satisfies PackageCheck;

const { failed } = failuresOf(artifactHash);

export function checkArtifactHash(ctx: CheckContext): CheckOutcome {
  const sidecar = ctx.sidecar.valid;
  if (!sidecar)
    return blocked(ID, "sidecar_schema", "the declared sha256 and size are read from a valid sidecar");
  const pkg = ctx.pkg;
  if (pkg.sha256 === null || pkg.sizeBytes === null) {
    const code = pkg.unreadable?.code ?? "package_too_large";
    return blocked(ID, ownerOf(ctx, code), pkg.unreadable?.message ?? "the package bytes were not read");
  }
  const log = [
    `computed: sha256 ${pkg.sha256}, ${pkg.sizeBytes} bytes`,
    `declared: sha256 ${sidecar.package.sha256}, ${sidecar.package.sizeBytes} bytes`,
  ];
  if (pkg.sha256 !== sidecar.package.sha256) return failed("sha256_mismatch", log);
  if (pkg.sizeBytes !== sidecar.package.sizeBytes) return failed("size_mismatch", log);
  return passed(ID, [`sha256 ${pkg.sha256} and size ${pkg.sizeBytes} match the exact package bytes`]);
}
